"""Plain communication protocols for the source problems, and sweeps over their instances.

A :class:`CommunicationProtocol` is a :class:`~commsim.core.party.Protocol` bound to a
problem.  It may also offer ``run_batch`` — the same protocol evaluated for many
instances at once with numpy — which :func:`run_cc` uses for large sweeps; a
seeded subset of the instances is always run through the real runner as well and
must agree with the batch path in output and in bits, or the sweep fails.

A :class:`RandomizedProtocol` flips coins (public or private, :class:`~commsim.core.party.Flip`) and
promises an error of at most ``promised_error`` on every input.  Instance i of a sweep seeded with s
draws its coins from ``CoinSource(s, i)``: the runner records them in the transcript, the audit mode
hands them to the parties' processes, and the vectorized path (``run_batch_coins``) reads the same ones,
so a seed reproduces a randomized sweep exactly.  :func:`run_cc` then measures the error over the
instances and the coins, with a confidence interval (:func:`commsim.core.stats.rate_interval`), and
says whether the measurement is consistent with the promise.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from commsim.contract.cc import CommunicationProtocol, RandomizedProtocol
from commsim.core.channel import Transcript
from commsim.core.coins import CoinSource
from commsim.core.errors import InputError
from commsim.core.limits import MAX_SEQUENCE_LENGTH, check_size
from commsim.core.stats import rate_interval
from commsim.runs.stages import (
    BatchRun,
    Instances,
    check_instances,
    select_instances,
    sweep_and_audit,
)
from commsim.theory.bounds import RANDOMIZED
from commsim.theory.problems import make_problem

__all__ = ["BatchRun", "CommunicationProtocol", "RandomizedProtocol", "CcReport", "run_cc"]


@dataclass
class CcReport:
    problem: str
    protocol: str
    n: int
    instances_run: int
    instances: str
    bits_used: int
    bits_by_direction: dict
    rounds: int
    correct: bool
    errors: int
    runner_checked: int
    audited: bool
    transcript: Transcript | None = None
    first_error: dict | None = None
    extra: dict = field(default_factory=dict)
    #: a randomized protocol's coins, promise and measured error (None for a deterministic one)
    randomized: dict | None = None

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("problem", "protocol", "n", "instances_run", "instances", "bits_used",
                                             "bits_by_direction", "rounds", "correct", "errors", "runner_checked",
                                             "audited", "first_error")}
        r = self.randomized or {}
        for key in RANDOMIZED_KEYS:
            d[key] = r.get(key)
        d["coins"] = r.get("coins", "none")
        d["transcript"] = self.transcript.to_dict() if self.transcript is not None else None
        return d


#: the report keys of a randomized run (None for a deterministic one; ``coins`` is then "none")
RANDOMIZED_KEYS = ("coin_seed", "error_promised", "promise", "may_err_on", "input_distribution", "measured_error",
                   "error_interval", "measured_error_detail", "measured_error_by_answer", "consistent_with_promise", "randomized_bound", "randomness_note")


def run_cc(problem_name: str, n: int, protocol_cls: type, *, instances: int | None = None, seed: int = 0,
           audit: bool = False, progress: Callable | None = None, error: float | None = None,
           confidence: float = 0.95) -> CcReport:
    """Run a plain protocol over all (or sampled) instances of a problem; worst-case bits and correctness.

    The protocol's vectorized path (when it has one, and not under ``audit``) is held to the runner on a
    seeded subset by the same stage ``commsim run`` uses (:func:`commsim.runs.stages.sweep_and_audit`);
    without it every instance goes through the runner.  A randomized protocol (``error``: the error asked
    for) draws instance i's coins from ``CoinSource(seed, i)`` and its sampled instances from its own
    ``sample``; the report then carries the measured error with its ``confidence`` interval."""
    n = check_size(n, "n", 1, MAX_SEQUENCE_LENGTH, "inputs are n-bit arrays")
    problem = make_problem(problem_name, n)
    check_instances(problem, instances, seed)
    randomized = getattr(protocol_cls, "coins", "none") != "none"
    if randomized:
        protocol = protocol_cls(problem, error=error)
    elif error is not None:
        raise InputError(f"error: {protocol_cls.name!r} is deterministic (exact on every input); an error "
                         f"target is for the randomized protocols", "error")
    else:
        protocol = protocol_cls(problem)
    if randomized and instances is not None:
        A, B = protocol.sample(np.random.default_rng(seed), instances)
        chosen = Instances(A, B, f"{instances} sampled (seed {seed}): {protocol.input_distribution}")
    else:
        chosen = select_instances(problem, instances, seed)
    A, B, described = chosen
    expected = problem.evaluate_batch(A, B)
    count = len(A)
    batch = None if audit else (protocol.run_batch_coins(A, B, seed) if randomized else protocol.run_batch(A, B))
    audited = sweep_and_audit(protocol, count, lambda i: (A[i], B[i]), batch=batch, read_output=int, seed=seed,
                              audit=audit, progress=progress,
                              coins=(lambda i: CoinSource(seed, i)) if randomized else None)
    run = audited.run
    outputs = np.asarray(run.outputs)
    a2b, b2a, rounds = (np.asarray(x, dtype=np.int64) for x in (run.alice_to_bob, run.bob_to_alice, run.rounds))
    wrong = outputs != expected
    total = a2b + b2a
    worst = int(np.argmax(total)) if count else 0
    first_error = None
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        first_error = {"alice_input": A[i], "bob_input": B[i], "expected": int(expected[i]),
                       "protocol_output": int(outputs[i]), "instance": i}
    report = CcReport(problem.name, protocol.name, n, count, described, int(total.max(initial=0)),
                      {"alice_to_bob": int(a2b[worst]), "bob_to_alice": int(b2a[worst])},
                      int(rounds.max(initial=0)), not wrong.any(), int(wrong.sum()), audited.runner_checked, audit,
                      audited.transcript, first_error)
    if randomized:
        report.randomized = measure_error(protocol, expected, wrong, seed, int(total.max(initial=0)), confidence)
    return report


def measure_error(protocol: RandomizedProtocol, expected: np.ndarray, wrong: np.ndarray, seed: int,
                  bits_used: int, confidence: float = 0.95) -> dict:
    """The measured error of a randomized sweep against the protocol's promise.

    The promise bounds the error on every input, so the error averaged over any input distribution (and the
    coins) is at most ``promised_error`` too: the measurement is consistent with the promise when the lower
    end of each confidence interval (over all instances, and per true answer) is at most the promise, and the
    protocol never erred on an answer it promises to get right (``may_err_on``)."""
    promised = protocol.promised_error
    overall = rate_interval(int(wrong.sum()), len(wrong), confidence=confidence)
    by_answer = {}
    for value in (0, 1):
        mask = expected == value
        if mask.any():
            by_answer[str(value)] = rate_interval(int(wrong[mask].sum()), int(mask.sum()), confidence=confidence)
    sides_ok = all(iv.events == 0 for v, iv in by_answer.items() if int(v) not in protocol.may_err_on)
    consistent = sides_ok and all(iv.low <= promised for iv in (overall, *by_answer.values()))
    bound = protocol.randomized_bound()
    bound_dict = None
    if bound is not None:
        bound_dict = {**bound.to_dict(), "satisfied": bound.satisfied_by(bits_used)}
    return {"coins": protocol.coins, "coin_seed": seed, "error_promised": promised, "promise": protocol.promise,
            "may_err_on": list(protocol.may_err_on), "input_distribution": protocol.input_distribution,
            "measured_error": overall.rate, "error_interval": [overall.low, overall.high],
            "measured_error_detail": overall.to_dict(),
            "measured_error_by_answer": {k: iv.to_dict() for k, iv in by_answer.items()},
            "consistent_with_promise": consistent, "randomized_bound": bound_dict,
            "randomness_note": RANDOMIZED[protocol.problem.name][1] if protocol.problem.name in RANDOMIZED else None}
