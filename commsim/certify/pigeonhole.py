"""One-way pigeonhole certificates: the input on which a model below the bound must fail.

In a one-way protocol Bob's output is a function of Alice's message and his own input.  If the
message has L bits and Alice has more than 2^L inputs, two different Alice inputs x, x' send the
same message (pigeonhole).  For a Bob input y with f(x, y) != f(x', y), the protocol -- and so the
model it simulates -- gives the same answer on (x, y) and (x', y), and that answer is wrong on one
of them.  This is the executable form of the one-way lower bounds used with Theorem 2 of [BHBK24].

:func:`collision_certificate` is generic: it needs the problem, a function computing Alice's
message bits for a batch of Alice inputs, and a function computing the model's answers by a
direct forward.  It searches all Alice inputs when there are at most 2^20 of them, and otherwise a
seeded sample (uniform inputs plus one-bit neighbourhoods), hashing the messages; collisions are
confirmed bit for bit, the separating Bob input is found from the problem's truth function, and the
failure is verified by running the model directly on both inputs.
"""
from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np

from commsim.certify.types import Certificate
from commsim.core.bits import Bits
from commsim.core.digests import GROUPS_TRIED, collision_groups, digest_shard, merge_digest_shards
from commsim.core.limits import MAX_EXHAUSTIVE_BITS
from commsim.theory.bounds import log2_exact
from commsim.theory.problems import DyckProblem, Problem
from commsim.theory.ranks import inputs_at

#: Alice input spaces of at most 2^this many members are searched exhaustively (sharded, streaming)
EXHAUSTIVE_ALICE_BITS = MAX_EXHAUSTIVE_BITS

#: Alice inputs per shard of an exhaustive search
SHARD_INPUTS = 1 << 18


#: sampled search: this many uniform Alice inputs, and about half as many one-bit neighbours
SAMPLED_INPUTS = 1 << 17
#: bytes the sampled Alice inputs may take (fewer samples for long inputs), and bytes of one encoded chunk
SAMPLE_BYTES = 1 << 27
CHUNK_BYTES = 1 << 26


def _is_bits(x: np.ndarray) -> bool:
    return x.dtype.kind in "iub" and x.size > 0 and bool(np.isin(x, (0, 1)).all())


def alice_search_space(problem: Problem) -> tuple[float, int]:
    """(log2 of the number of Alice inputs, symbols per Alice input)."""
    if isinstance(problem, DyckProblem):
        half = problem.n // 2
        return half * math.log2(2 * problem.types), half
    return log2_exact(int(problem.alice_input_count)), problem.n   # n for bit strings; n log2 n for n^n functions


def _alice_inputs(problem: Problem, seed: int, exhaustive_bits: int, samples: int) -> tuple[np.ndarray, bool, str]:
    log_size, length = alice_search_space(problem)
    if log_size <= exhaustive_bits:
        A = problem.alice_inputs()
        return A, True, f"all {len(A)} Alice inputs (2^{log_size:g}, exhaustive)"
    rng = np.random.default_rng(seed)
    A = np.asarray(problem.sample(rng, samples)[0])
    what = f"{samples} uniformly sampled Alice inputs"
    if _is_bits(A[:64]) and A.ndim == 2:
        bases = max(1, samples // (2 * length))
        base = np.asarray(problem.sample(rng, bases)[0])
        flips = np.repeat(base, length, axis=0)
        cols = np.tile(np.arange(length), bases)
        flips[np.arange(len(flips)), cols] ^= 1
        A = np.concatenate([A, base, flips])
        what += f" and {bases} more with all their one-bit neighbours ({bases * (length + 1)} inputs)"
    return A, False, what + f" (seed {seed})"


def _bob_candidates(problem: Problem, x1: np.ndarray, x2: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Bob inputs worth trying to separate x1 from x2: structured ones first, then all or a sample."""
    probe = np.asarray(problem.sample(np.random.default_rng(0), 1)[1])
    if probe.ndim == 1:  # an index (INDEX): the positions where x1 and x2 differ, then every index
        all_b = np.asarray(problem.bob_inputs())
        differ = np.flatnonzero(np.asarray(x1).reshape(-1) != np.asarray(x2).reshape(-1))
        differ = differ[differ < len(all_b)]
        return np.concatenate([all_b[differ], all_b])
    width = probe.shape[1]
    parts = []
    if np.asarray(x1).shape == (width,) and _is_bits(np.asarray(x1)) and _is_bits(np.asarray(x2)):
        eye = np.eye(width, dtype=probe.dtype)
        differ = np.flatnonzero(x1 != x2)
        parts += [np.stack([x1, x2, 1 - x1, 1 - x2]).astype(probe.dtype), eye[differ], eye]
    log_size, _ = alice_search_space(problem)
    if log_size <= 16:
        parts.append(np.asarray(problem.bob_inputs()))
    parts.append(np.asarray(problem.sample(rng, 4096)[1]))
    return np.concatenate([p.reshape(len(p), width).astype(probe.dtype) for p in parts if len(p)])


def separating_bob_input(problem: Problem, x1, x2, rng: np.random.Generator | None = None, like=None):
    """A Bob input y with f(x1, y) != f(x2, y), or None when none was found.  A problem that knows its own
    (``problem.separating_bob(x1, x2, like)``: e.g. composition, keeping the public query of ``like``) gives it."""
    if hasattr(problem, "separating_bob"):
        return problem.separating_bob(x1, x2, like)
    rng = rng or np.random.default_rng(0)
    Y = _bob_candidates(problem, np.asarray(x1), np.asarray(x2), rng)
    X1 = np.repeat(np.asarray(x1)[None], len(Y), axis=0)
    X2 = np.repeat(np.asarray(x2)[None], len(Y), axis=0)
    hit = np.flatnonzero(problem.evaluate_batch(X1, Y) != problem.evaluate_batch(X2, Y))
    return None if not hit.size else Y[int(hit[0])]


def _message(name: str) -> str:
    """The message as a noun: a short name ("hidden state h_8", "count") as is, a description in parentheses."""
    return name if len(name.split()) <= 3 else f"message ({name})"


def _show(x) -> str:
    arr = np.asarray(x)
    if arr.ndim == 0:
        return str(int(arr))
    if _is_bits(arr) and arr.ndim == 1:
        return "".join(map(str, arr.tolist()))
    return str(arr.tolist())


def _jsonable(x):
    arr = np.asarray(x)
    return int(arr) if arr.ndim == 0 else arr.tolist()


def collision_certificate(problem: Problem, alice_messages: Callable[..., np.ndarray],
                          direct_answers: Callable[[np.ndarray, np.ndarray], np.ndarray], *, message_bits: int,
                          seed: int = 0, exhaustive_bits: int = EXHAUSTIVE_ALICE_BITS,
                          samples: int = SAMPLED_INPUTS, chunk: int = 1 << 15,
                          progress: Callable[[int, int], None] | None = None,
                          message_name: str = "message", shard_size: int = SHARD_INPUTS,
                          bob_like=None) -> tuple[Certificate | None, str]:
    """Search for two Alice inputs with the same one-way message and a Bob input separating them.

    ``alice_messages(A, B=None)`` returns Alice's message for each row of ``A`` (Bob's input fixed, or the rows
    of ``B``) as a row of integers: packed bytes (:func:`commsim.core.digests.message_rows`) or any integer keys
    equal iff the messages are; ``direct_answers(A, B)`` the model's answers from a direct forward.
    A problem that offers ``collision_candidates(rng)`` (its cheapest places for a short message to lose
    information) is searched on those; ``bob_like`` is the Bob input the messages were computed with (a problem's
    ``separating_bob`` keeps its public part).
    An exhaustive search (at most 2^``exhaustive_bits`` Alice inputs) runs in shards of ``shard_size`` inputs by
    rank, each streamed ``chunk`` inputs at a time into digests (:func:`commsim.core.digests.digest_shard`);
    a repeat inside a shard is tried at once, and the shards' digests are merged for repeats across shards
    (:func:`commsim.core.digests.merge_digest_shards`); every pair is then confirmed bit for bit and by a direct
    forward.  Returns (certificate or None, a description of what was searched).
    """
    length = max(1, alice_search_space(problem)[1])
    chunk = min(chunk, max(64, CHUNK_BYTES // (8 * length)))           # long inputs: smaller encoded chunks
    log_size = alice_search_space(problem)[0]
    candidates = hasattr(problem, "collision_candidates")
    confirm = functools.partial(_confirm_pairs, problem, alice_messages, direct_answers, message_bits, seed,
                                message_name, bob_like, exhaustive=log_size <= exhaustive_bits and not candidates)
    if log_size <= exhaustive_bits and not candidates:
        return _sharded_search(problem, alice_messages, confirm, log_size, chunk, shard_size, progress, message_bits,
                               message_name)
    if candidates:
        A = np.asarray(problem.collision_candidates(np.random.default_rng(seed))[0])
        what = f"{len(A):,} Alice inputs ({problem.candidates_described}, seed {seed})"
    else:
        samples = min(samples, max(1024, SAMPLE_BYTES // length))      # long inputs: fewer samples
        A, _, what = _alice_inputs(problem, seed, exhaustive_bits, samples)
    total = len(A)
    first = alice_messages(A[:min(chunk, total)])
    rows = np.empty((total, first.shape[1]), dtype=first.dtype)
    rows[:len(first)] = first
    for s in range(len(first), total, chunk):
        if progress:
            progress(s, total)
        rows[s:s + chunk] = alice_messages(A[s:s + chunk])
    if progress:
        progress(total, total)
    collisions = collision_groups(rows)
    pairs, groups = collisions.pairs(A, GROUPS_TRIED), len(collisions)
    searched = (f"searched {what}: Alice's {message_bits}-bit messages ({message_name}), hashed and compared "
                f"bit for bit")
    if not pairs:
        return None, (f"{searched}; no two different Alice inputs share a {message_name}: no certificate (the search "
                      f"was not exhaustive, so the model may still fail on inputs not searched)")
    searched += f"; {groups} group(s) of Alice inputs share a {message_name}"
    return confirm([(A[i], A[j]) for i, j in pairs], total, searched)


def _sharded_search(problem: Problem, alice_messages, confirm, log_size: float, chunk: int, shard_size: int,
                    progress, message_bits: int, message_name: str) -> tuple[Certificate | None, str]:
    """The exhaustive search, shard by shard (module docstring of :mod:`commsim.runs.shards`)."""
    total = int(problem.alice_input_count)

    def rows_of(lo: int, hi: int) -> np.ndarray:
        return alice_messages(inputs_at(problem, "alice", np.arange(lo, hi)))

    def inputs(pairs):
        return [tuple(inputs_at(problem, "alice", [i, j])) for i, j in pairs]

    shards = []
    what = f"all {total} Alice inputs (2^{log_size:g}, exhaustive"
    for lo in range(0, total, shard_size):
        shards.append(digest_shard(rows_of, lo, min(lo + shard_size, total), chunk))
        if progress:
            progress(shards[-1].stop, total)
        if shards[-1].pairs:  # a repeat inside this shard: try it before sweeping further
            done = shards[-1].stop
            distinct = len(np.unique(np.concatenate([s.digests for s in shards]), axis=0))
            forced = (f"; by pigeonhole any 2^{message_bits} + 1 = {(1 << message_bits) + 1} inputs hold a repeat"
                      if (1 << min(message_bits, 64)) < total else "")
            where = (f"searched all {total} Alice inputs" if done == total else
                     f"stopped at the first shard holding a verified repeat, after {done} of {total} Alice inputs")
            cert, searched = confirm(inputs(shards[-1].pairs), done, (
                f"{where} (an exhaustive search "
                f"of 2^{log_size:g}, in shards of {shard_size}): Alice's {message_bits}-bit messages "
                f"({message_name}) digested and compared bit for bit; these {done} inputs send only {distinct} "
                f"distinct message{'s' * (distinct != 1)}{forced}"))
            if cert is not None and cert.verified:
                return cert, searched
    pairs = merge_digest_shards(shards)
    searched = (f"searched {what}, {len(shards)} shard(s) of {shard_size}, digests merged across shards): Alice's "
                f"{message_bits}-bit messages ({message_name}) digested and compared bit for bit")
    if not pairs:
        return None, (f"{searched}; no two different Alice inputs share a {message_name}: no certificate (the search "
                      f"was exhaustive, so these messages tell all Alice inputs apart)")
    return confirm(inputs(pairs), total, searched + f"; {len(pairs)} pair(s) of Alice inputs share a {message_name}")


def _confirm_pairs(problem: Problem, alice_messages, direct_answers, message_bits: int, seed: int, message_name: str,
                   bob_like, pairs, searched_count: int, searched: str, *, exhaustive: bool
                   ) -> tuple[Certificate | None, str]:
    """Phase two: each candidate pair (x1, x2) with a separating Bob input y, the messages recomputed on the
    real instances (x1, y), (x2, y) and compared value for value, the failure confirmed by a direct forward;
    the first verified certificate (else the first built)."""
    rng = np.random.default_rng(seed + 7)
    unverified = None
    for x1, x2 in pairs:
        y = separating_bob_input(problem, x1, x2, rng, like=bob_like)
        if y is None:
            continue
        A2 = np.stack([x1, x2])
        B2 = np.stack([y, y]) if np.asarray(y).ndim else np.array([y, y])
        expected = np.asarray(problem.evaluate_batch(A2, B2)).astype(int)
        answers = np.asarray(direct_answers(A2, B2)).astype(int)
        again = np.asarray(alice_messages(A2, B2))
        same_message = bool(np.array_equal(again[0], again[1]))
        fail = 0 if answers[0] != expected[0] else 1
        other = 1 - fail
        verified = same_message and answers[0] == answers[1] and answers[fail] != expected[fail]
        # a scalar Bob input is an index into Alice's string (INDEX): a reader counts its position from 1
        xs, ys = (x1, x2), (f"index {int(y) + 1}" if np.ndim(y) == 0 else _show(y))
        packed = again.dtype == np.uint8 and again.shape[1] == -(-message_bits // 8)   # the message's own bytes
        message = Bits(again[0], message_bits) if packed else None
        log_size = alice_search_space(problem)[0]
        if log_size > message_bits:   # counting forces a repeat
            why = (f"pigeonhole: {f'2^{log_size:g}' if exhaustive else 'the'} Alice inputs outnumber the "
                   f"2^{message_bits} possible messages")
        else:                         # it does not: the model's message map is simply not one-to-one
            why = (f"not forced by counting: the 2^{log_size:g} Alice inputs do not outnumber the 2^{message_bits} "
                   f"possible messages; this model's message just does not tell these two apart")
        explanation = (
            f"Alice inputs {_show(xs[fail])} and {_show(xs[other])} hand off the same {message_bits}-bit "
            f"{_message(message_name)} ({why}). Bob's input {ys} separates them "
            f"({problem.name} = {expected[fail]} vs {expected[other]}), but Bob sees the same message, so the model "
            f"answers the same on both and must be wrong on one: on ({_show(xs[fail])}, {ys}) it answers "
            f"{answers[fail]} where the answer is {expected[fail]}. "
            + ("A direct forward of the model confirms this." if verified else
               "NOT confirmed by the direct forward: "
               + ("the recomputed messages differ" if not same_message else
                  f"the direct forward answers {answers[0]} and {answers[1]}")))
        details = {
            "colliding_alice_input": _jsonable(xs[other]), "other_expected": int(expected[other]),
            "other_model_output": int(answers[other]), "message_bits": int(message_bits),
            "message": str(message) if message is not None and message_bits <= 256 else None,
            "search": "exhaustive" if exhaustive else "sampled", "alice_inputs_searched": int(searched_count),
        }
        cert = Certificate("collision", _jsonable(xs[fail]), _jsonable(y), int(expected[fail]), int(answers[fail]),
                           explanation, bool(verified), details)
        if verified:
            return cert, searched
        unverified = unverified or cert
    if unverified is not None:
        return unverified, searched + "; no collision could be verified by a direct forward"
    return None, searched + "; but no Bob input separates the colliding Alice inputs tried"
