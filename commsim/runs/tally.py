"""The tally: what a run found on one evaluation set, as counts that add up.

Every path of a run -- one in-memory batch, the chunks of a streamed shard, shards merged from any executor --
reduces its instances to a :class:`Tally` (:func:`tally_batch`), and tallies of adjacent rank ranges add
(:func:`add_tallies`).  :func:`commsim.runs.stages.make_report` builds the one report from tallies, so
the in-memory, the streamed and the separations' runs report the same fields for the same instances.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from commsim.core.channel import Transcript
from commsim.core.errors import InputError


@dataclass
class Tally:
    """What a set of instances (ranks ``start..stop-1``) gave, as counts: instances, wrong answers (and the
    first wrong one, with its inputs, its true answer and the protocol's), protocol runs that differ from the
    model, the costliest instance's bits, the most rounds, the instances the runner re-ran and the costliest
    transcript it saw, the simulator's details.  ``name``/``described`` name the evaluation set;
    ``peak_rss_bytes`` and ``seconds`` describe the run, not the result (they are left out of ``==``)."""

    start: int
    stop: int
    instances: int = 0
    wrong: int = 0
    first_wrong: int | None = None
    #: the first wrong instance: (Alice's input, Bob's input, the true answer, the protocol's answer)
    first_wrong_instance: tuple | None = None
    mismatches: int = 0
    bits_used: int = -1
    bits_rank: int = -1
    alice_to_bob: int = 0
    bob_to_alice: int = 0
    rounds: int = 0
    runner_checked: int = 0
    transcript: Transcript | None = None
    details: dict = field(default_factory=dict)
    detail_sums: dict = field(default_factory=dict)
    #: how many batches were added up (details of more than one need :func:`merged_details`)
    parts: int = 1
    shards: int = 1
    chunk: int = 0
    name: str = ""
    described: str = ""
    peak_rss_bytes: int = field(default=0, compare=False)
    seconds: float = field(default=0.0, compare=False)

    @property
    def accuracy(self) -> float:
        return (self.instances - self.wrong) / self.instances if self.instances else 1.0

    def set_row(self) -> dict:
        """The report's ``evaluation_sets`` entry of this set."""
        return {"name": self.name, "description": self.described, "instances": self.instances, "wrong": self.wrong,
                "accuracy": self.accuracy, "protocol_matches_model": self.mismatches == 0}


def _int_details(details: dict) -> dict:
    """The integer-valued details (candidates for per-instance counts, summed over chunks)."""
    return {k: int(v) for k, v in details.items() if isinstance(v, (int, np.integer)) and not isinstance(v, bool)}


def tally_batch(batch, outcome, alice: np.ndarray, bob: np.ndarray, *, start: int = 0, runner_checked: int = 0,
                transcript: Transcript | None = None, name: str = "", described: str = "", chunk: int = 0) -> Tally:
    """One simulator batch (:class:`~commsim.contract.BatchResult`) and its decoded outcome
    (:class:`~commsim.runs.stages.Outcome`) on the instances ``alice``/``bob`` of ranks ``start...``."""
    count = len(alice)
    wrong = np.flatnonzero(~outcome.correct)
    first = None
    if wrong.size:
        i = int(wrong[0])
        first = (np.asarray(alice[i]).tolist(), np.asarray(bob[i]).tolist(), int(outcome.expected[i]),
                 int(outcome.answers[i]))
    if not count:
        return Tally(start, start, name=name, described=described, chunk=chunk)
    total = batch.total_bits
    worst = int(np.argmax(total))
    return Tally(start, start + count, instances=count, wrong=int(wrong.size),
                 first_wrong=start + int(wrong[0]) if wrong.size else None, first_wrong_instance=first,
                 mismatches=int((~outcome.matches).sum()), bits_used=int(total[worst]), bits_rank=start + worst,
                 alice_to_bob=int(batch.alice_to_bob[worst]), bob_to_alice=int(batch.bob_to_alice[worst]),
                 rounds=int(np.max(batch.rounds)), runner_checked=runner_checked, transcript=transcript,
                 details=dict(batch.details), detail_sums=_int_details(batch.details), chunk=chunk, name=name,
                 described=described)


def _merge_details(a: dict, b: dict) -> dict:
    """Details both parts agree on (a value that differs between parts is a count: see ``detail_sums``)."""
    return {k: v for k, v in a.items() if k in b and b[k] == v}


def _sum_details(a: dict, b: dict) -> dict:
    return {k: a[k] + b[k] for k in a if k in b}


def add_tallies(a: Tally, b: Tally) -> Tally:
    """Two tallies of adjacent rank ranges (``a`` first) as one."""
    if not (a.instances and b.instances):
        keep = a if a.instances else b
        return Tally(**{**keep.__dict__, "start": min(a.start, b.start), "stop": max(a.stop, b.stop),
                        "runner_checked": a.runner_checked + b.runner_checked,
                        "peak_rss_bytes": max(a.peak_rss_bytes, b.peak_rss_bytes), "seconds": a.seconds + b.seconds})
    costly = a if (a.bits_used, -a.bits_rank) >= (b.bits_used, -b.bits_rank) else b
    wrong = a if a.first_wrong is not None else b
    ta, tb = a.transcript, b.transcript
    transcript = tb if ta is None or (tb is not None and tb.total_bits > ta.total_bits) else ta
    return Tally(
        min(a.start, b.start), max(a.stop, b.stop), a.instances + b.instances, a.wrong + b.wrong,
        wrong.first_wrong, wrong.first_wrong_instance, a.mismatches + b.mismatches, costly.bits_used,
        costly.bits_rank, costly.alice_to_bob, costly.bob_to_alice, max(a.rounds, b.rounds),
        a.runner_checked + b.runner_checked, transcript, _merge_details(a.details, b.details),
        _sum_details(a.detail_sums, b.detail_sums), a.parts + b.parts, a.shards + b.shards, max(a.chunk, b.chunk),
        a.name or b.name, a.described or b.described, max(a.peak_rss_bytes, b.peak_rss_bytes), a.seconds + b.seconds)


def merge_tallies(tallies: Iterable[Tally]) -> Tally:
    """The tallies as one (in rank order, whatever order they come in); the ranks must tile one range."""
    tallies = sorted(tallies, key=lambda r: r.start)
    if not tallies:
        raise InputError("shards: there are no shard results to merge", "shards")
    for prev, nxt in zip(tallies, tallies[1:]):
        if prev.stop != nxt.start:
            raise InputError(f"shards: ranks {prev.start}..{prev.stop - 1} and {nxt.start}..{nxt.stop - 1} do not "
                             f"tile one range (a shard is missing or repeated)", "shards")
    return functools.reduce(add_tallies, tallies)
