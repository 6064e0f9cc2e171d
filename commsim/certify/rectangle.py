"""The rectangle argument, executed: a certificate that a model must fail.

The rectangle property (behind Fact 4 of [BHBK24]): if two members (x1, y1), (x2, y2) of a fooling set get the same transcript,
then so do the crossed inputs (x1, y2) and (x2, y1), and the protocol gives them the member's
answer b — but at least one crossing has the other answer.  A protocol with fewer than
log2 |S| bits must have such a collision (pigeonhole), and when the protocol simulates a model
*exactly*, the model answers that crossing wrongly.

:func:`rectangle_certificate` runs this for any protocol that offers a vectorized ``evaluate``:

1. the members of the fooling set (:mod:`commsim.theory.fooling`) are run, in chunks, in shards by rank;
   each transcript is reduced to a row of integer keys (every message value, in order) and to its 128-bit
   digest (:func:`commsim.core.digests.row_digests`, vectorized), and a shard keeps only its distinct digests
   (:func:`commsim.core.digests.digest_shard`); the sweep stops at the first chunk with a wrong member or the
   first shard after which two members share a digest (:func:`sweep_fooling_set`);
2. if the protocol (hence the model) is already wrong on a member, that member is the certificate
   (kind ``"error"``), confirmed by a direct forward of the member alone;
3. otherwise two members with equal digests are found, inside a shard or across shards
   (:func:`commsim.core.digests.merge_digest_shards`), their real transcripts are produced by the
   runner and compared bit for bit, the crossing with the other answer is built
   (:func:`commsim.theory.fooling.cross`), its true value is checked with the problem's truth function,
   the runner's transcript on the crossing is compared too, and a direct forward of the model on
   the crossing must give the wrong answer.  Only then is the certificate ``verified``.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from commsim.certify.types import Certificate
from commsim.core.digests import DigestShard, digest_shard, merge_digest_shards
from commsim.core.errors import InputError
from commsim.theory.fooling import FOOLING_PROBLEMS, cross, fooling_set
from commsim.theory.problems import Problem

#: fooling-set members evaluated per vectorized call
CHUNK = 1 << 16

#: fooling-set members per shard of the sweep (a multiple of :data:`CHUNK`)
SHARD_MEMBERS = 1 << 20

#: the largest fooling set a search sweeps (its memory is one chunk plus the distinct transcripts)
MAX_MEMBERS = 1 << 26


class _Stop(Exception):
    """Ends a sweep at the first wrong member."""


class _SeenDigests:
    """The distinct digests of the shards swept so far, to tell after each shard whether a repeat has turned up
    (inside the new shard, or shared with an earlier one) without re-merging every shard each time: the first
    digest words of the earlier shards are kept as one sorted array (a new shard's are sorted already, and a
    stable sort of two sorted runs is one merge); a shared first word is only a candidate, settled by
    :func:`commsim.core.digests.merge_digest_shards` on the full digests."""

    def __init__(self):
        self.words = np.zeros(0, dtype=np.uint64)

    def repeat_after(self, shards: list[DigestShard]) -> bool:
        """Has the sweep, up to its last shard, a repeat (two members with one digest)?"""
        new = shards[-1]
        if new.pairs:
            return True
        words = np.ascontiguousarray(new.digests[:, 0]) if len(new.digests) else np.zeros(0, dtype=np.uint64)
        at = np.searchsorted(self.words, words)
        shared = bool(len(self.words)) and bool((self.words[np.minimum(at, len(self.words) - 1)] == words).any())
        if shared and merge_digest_shards(shards, limit=1):
            return True
        self.words = np.sort(np.concatenate([self.words, words]), kind="stable")
        return False


class FoolingSweep:
    """All members of a fooling set through a protocol, as digest shards, and the first wrong member."""

    def __init__(self, fs, shards: list[DigestShard], wrong: int | None, wrong_answer: int | None, swept: int):
        self.fooling = fs
        self.shards = shards
        self.wrong = wrong
        self.wrong_answer = wrong_answer
        self.swept = swept

    def first_collision(self) -> tuple[int, int] | None:
        """The earliest repeat in member order, (first member with the transcript, next member with it), inside
        a shard or across shards (:func:`commsim.core.digests.merge_digest_shards`); None when all differ."""
        pairs = merge_digest_shards(self.shards, limit=1)
        return pairs[0] if pairs else None

    @property
    def distinct(self) -> int:
        """How many different transcripts (digests) the swept members have."""
        if not self.shards:
            return 0
        return int(len(np.unique(np.concatenate([s.digests for s in self.shards]), axis=0)))


def sweep_fooling_set(fs, evaluate: Callable, *, one_way: bool = False, chunk: int = CHUNK,
                      progress: Callable | None = None, stop_at_error: bool = True,
                      stop_at_collision: bool = True, shard_size: int = SHARD_MEMBERS) -> FoolingSweep:
    """Run ``evaluate(A, B) -> (answers, keys)`` on the members of ``fs``, chunk by chunk, in shards of
    ``shard_size`` members by rank (with ``stop_at_collision``, the first shard is one chunk and each next one
    twice as large, up to ``shard_size``); each shard keeps its distinct transcript digests
    (:func:`commsim.core.digests.digest_shard`), so memory is one chunk plus the distinct digests.

    The sweep stops at the end of the first chunk holding a wrong member (``stop_at_error``), or at the end of
    the first shard after which two members share a transcript (``stop_at_collision``); ``swept`` says how
    many members it ran.  Stopping there changes no collision found: the earliest repeat in member order (the
    smallest second member, :meth:`FoolingSweep.first_collision`) lies in the shards swept, and any repeat a
    later shard could add has a larger second member.

    For a one-way set (Alice inputs only), Bob's input is fixed to the first one: a one-way
    protocol's transcript depends on Alice's input alone.
    """
    fixed_bob = fs.problem.bob_inputs()[:1] if fs.kind == "one-way" else None
    state = {"wrong": None, "answer": None, "done": 0}

    def keys_of(lo: int, hi: int) -> np.ndarray:
        A, B = fs.member_arrays(lo, hi)  # members by rank: a shard builds only its own
        if B is None:
            B = np.repeat(fixed_bob, len(A), axis=0)
        answers, keys = evaluate(A, B)
        if fs.kind == "two-way" and state["wrong"] is None:
            bad = np.flatnonzero(np.asarray(answers) != fs.value)
            if bad.size:
                state["wrong"], state["answer"] = lo + int(bad[0]), int(np.asarray(answers)[bad[0]])
        state["done"] = hi
        if progress:
            progress(hi, fs.size)
        if state["wrong"] is not None and stop_at_error:
            raise _Stop
        return keys

    shards: list[DigestShard] = []
    seen = _SeenDigests()
    lo, size = 0, min(chunk, shard_size) if stop_at_collision else shard_size   # shards grow to shard_size
    try:
        while lo < fs.size:
            shards.append(digest_shard(keys_of, lo, min(lo + size, fs.size), chunk))
            lo, size = lo + size, min(2 * size, shard_size)
            if stop_at_collision and lo < fs.size and seen.repeat_after(shards):
                break
    except _Stop:
        pass
    return FoolingSweep(fs, shards, state["wrong"], state["answer"], state["done"])


def _listed(x):
    return np.asarray(x).tolist()


def rectangle_certificate(problem: Problem, evaluate: Callable, direct: Callable, transcript: Callable | None = None,
                          *, one_way: bool = False, progress: Callable | None = None,
                          chunk: int = CHUNK) -> tuple[Certificate | None, str]:
    """Search the fooling set of ``problem`` for a certificate (module docstring).

    ``evaluate(A, B) -> (answers, keys)``: the protocol on a batch of instances — its answers to
    the source problem and integer transcript keys (equal keys iff equal transcripts);
    ``direct(A, B) -> answers``: the model's own direct forward;
    ``transcript(a, b) -> Transcript``: one instance through the real runner (optional);
    ``one_way``: the protocol is one-way from Alice (needed for a one-way fooling set).
    Returns (certificate or None, a sentence saying what was searched).
    """
    if problem.name not in FOOLING_PROBLEMS:
        return None, f"no fooling set is known for {problem.name}"
    try:
        fs = fooling_set(problem.name, problem.n)
    except InputError as exc:
        return None, f"no fooling set: {exc}"
    if fs.kind == "one-way" and not one_way:
        return None, (f"the {problem.name} fooling set bounds one-way protocols only, and this protocol is "
                      f"two-way: no rectangle argument")
    if fs.size > MAX_MEMBERS:
        return None, f"the fooling set has {fs.size} members, more than the 2^26 a search runs over"
    sweep = sweep_fooling_set(fs, evaluate, one_way=one_way, chunk=chunk, progress=progress)
    if sweep.wrong is not None:
        a, b = fs.member(sweep.wrong)
        model = int(np.asarray(direct(np.asarray(a)[None], np.asarray(b)[None]))[0])
        return Certificate(
            "error", _listed(a), _listed(b), int(fs.value), model,
            f"the model is already wrong on member {sweep.wrong + 1} of the fooling set ({fs.construction}): "
            f"it answers {model}, the answer is {fs.value} (confirmed by a direct forward of this member)",
            verified=model != fs.value,
            details={"member": sweep.wrong, "members_searched": sweep.swept, "fooling_set": fs.construction}), \
            (f"stopped at the first wrong fooling-set member, member {sweep.wrong + 1} of {fs.size}: the model is "
             f"wrong on it ({_swept(sweep, chunk)})")
    clash, distinct = sweep.first_collision(), sweep.distinct
    if clash is None:
        return None, (f"all {fs.size} fooling-set members have distinct transcripts: no collision, so no "
                      f"certificate (the protocol spends at least log2 {fs.size} bits on them)")
    i, j = clash
    (xi, yi), (xj, yj) = fs.member(i), fs.member(j)
    details = {"fooling_set": fs.construction, "members": fs.size, "members_searched": sweep.swept,
               "distinct_transcripts": distinct,
               "member_1": {"index": i, "alice": _listed(xi), "bob": None if yi is None else _listed(yi)},
               "member_2": {"index": j, "alice": _listed(xj), "bob": None if yj is None else _listed(yj)}}
    crossings = cross(fs, i, j)
    if fs.kind == "two-way":
        pick = next((c for c in crossings if c.value != fs.value), None)
        if pick is None:  # not a fooling set after all: report, do not certify
            return None, (f"members {i + 1} and {j + 1} collide but neither crossing changes the answer (not a fooling "
                          f"set?)")
        protocol_answer = int(fs.value)
    else:
        answers = [int(np.asarray(evaluate(np.asarray(c.alice)[None], np.asarray(c.bob).reshape(1, *np.shape(c.bob)))[0])[0])
                   for c in crossings]
        pick_index = next((k for k, c in enumerate(crossings) if answers[k] != c.value), 0)
        pick, protocol_answer = crossings[pick_index], answers[pick_index]
    a, b = np.asarray(pick.alice), np.asarray(pick.bob)
    model = int(np.asarray(direct(a[None], b.reshape(1, *b.shape)))[0])
    transcripts_equal = None
    if transcript is not None:
        t1 = transcript(xi, yi if yi is not None else b)
        t2 = transcript(xj, yj if yj is not None else b)
        tc = transcript(a, b)
        transcripts_equal = t1.digest() == t2.digest() == tc.digest()
        details.update({"transcript_digest": t1.digest(), "transcript_bits": t1.total_bits,
                        "transcripts_equal": transcripts_equal,
                        "crossing_transcript_digest": tc.digest()})
    details["crossing_true_value"] = int(pick.value)
    details["protocol_answer_on_crossing"] = protocol_answer
    verified = model != int(pick.value) and transcripts_equal is not False
    if fs.kind == "two-way":
        explanation = (
            f"fooling-set members {i + 1} and {j + 1} of {fs.size} ({fs.construction}) get the same transcript"
            f"{' (checked bit for bit by the runner)' if transcripts_equal else ''}; by the rectangle property "
            f"the crossed input (Alice's part of member {(i if np.array_equal(a, xi) else j) + 1}, Bob's part of member "
            f"{(j if np.array_equal(a, xi) else i) + 1}) gets it too, so the protocol — and the model it simulates "
            f"exactly — answers {fs.value}; its true answer is {int(pick.value)}.  A direct forward of the model "
            f"on it answers {model}{': wrong' if model != int(pick.value) else ' (NOT wrong: certificate fails)'}.")
    else:
        explanation = (
            f"Alice inputs {i + 1} and {j + 1} of the fooling set send the same one-way message; with Bob's input "
            f"{_listed(b)} the answers "
            f"differ, so the protocol is wrong on one of them; a direct forward of the model on Alice input "
            f"{_listed(a)} answers {model}, the true answer is {int(pick.value)}.")
    cert = Certificate("rectangle", _listed(a), _listed(b), int(pick.value), model, explanation, verified=verified,
                       details=details)
    if sweep.swept == fs.size:
        return cert, (f"swept all {fs.size} fooling-set members ({distinct} distinct "
                      f"transcript{'s' * (distinct != 1)}); members {i + 1} and {j + 1} collide")
    return cert, (f"stopped at the first collision: fooling-set members {i + 1} and {j + 1} of {fs.size} share a "
                  f"transcript ({_swept(sweep, chunk)}; {distinct} distinct transcript{'s' * (distinct != 1)} among "
                  f"them)")


def _swept(sweep: FoolingSweep, chunk: int) -> str:
    """How much of the fooling set a stopped sweep ran (its members run a chunk at a time)."""
    return f"{sweep.swept} of {sweep.fooling.size} members swept, {min(chunk, sweep.fooling.size)} at a time"
