"""Plain communication protocols for the source problems, and sweeps over their instances.

A :class:`CommunicationProtocol` is a :class:`~commsim.core.party.Protocol` bound to a
problem.  It may also offer ``run_batch`` — the same protocol evaluated for many
instances at once with numpy — which :func:`run_cc` uses for large sweeps; a
seeded subset of the instances is always run through the real runner as well and
must agree with the batch path in output and in bits, or the sweep fails.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from commsim.core.channel import Transcript
from commsim.core.errors import InputError
from commsim.core.limits import MAX_SEQUENCE_LENGTH, check_size
from commsim.core.party import Protocol
from commsim.pipeline.stages import BatchRun, check_instances, select_instances, sweep_and_audit
from commsim.theory.problems import Problem, make_problem

__all__ = ["BatchRun", "CommunicationProtocol", "CcReport", "run_cc"]


class CommunicationProtocol(Protocol):
    """A protocol for one source problem; subclasses set ``name``, ``problems`` and the party programs."""

    problems: tuple[str, ...] = ()
    description = ""

    def __init__(self, problem: Problem):
        if problem.name not in self.problems:
            raise InputError(f"protocol {self.name!r} is for {', '.join(self.problems)}, not {problem.name!r}",
                             "protocol")
        self.problem = problem

    def run_batch(self, A: np.ndarray, B: np.ndarray) -> BatchRun | None:
        """Optional vectorized path (None: use the runner for every instance)."""
        return None


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

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("problem", "protocol", "n", "instances_run", "instances", "bits_used",
                                             "bits_by_direction", "rounds", "correct", "errors", "runner_checked",
                                             "audited", "first_error")}
        d["transcript"] = self.transcript.to_dict() if self.transcript is not None else None
        return d


def run_cc(problem_name: str, n: int, protocol_cls: type, *, instances: int | None = None, seed: int = 0,
           audit: bool = False, progress: Callable | None = None) -> CcReport:
    """Run a plain protocol over all (or sampled) instances of a problem; worst-case bits and correctness.

    The protocol's vectorized path (when it has one, and not under ``audit``) is held to the runner on a
    seeded subset by the same stage ``commsim run`` uses (:func:`commsim.pipeline.stages.sweep_and_audit`);
    without it every instance goes through the runner."""
    n = check_size(n, "n", 1, MAX_SEQUENCE_LENGTH, "inputs are n-bit arrays")
    problem = make_problem(problem_name, n)
    check_instances(problem, instances, seed)
    protocol = protocol_cls(problem)
    A, B, described = select_instances(problem, instances, seed)
    expected = problem.evaluate_batch(A, B)
    count = len(A)
    audited = sweep_and_audit(protocol, count, lambda i: (A[i], B[i]),
                              batch=None if audit else protocol.run_batch(A, B), read_output=int, seed=seed,
                              audit=audit, progress=progress)
    run = audited.run
    outputs = np.asarray(run.outputs)
    a2b, b2a, rounds = (np.asarray(x, dtype=np.int64) for x in (run.alice_to_bob, run.bob_to_alice, run.rounds))
    wrong = np.flatnonzero(outputs != expected)
    total = a2b + b2a
    worst = int(np.argmax(total)) if count else 0
    first_error = None
    if wrong.size:
        i = int(wrong[0])
        first_error = {"alice_input": A[i], "bob_input": B[i], "expected": int(expected[i]),
                       "protocol_output": int(outputs[i])}
    return CcReport(problem.name, protocol.name, n, count, described, int(total.max(initial=0)),
                    {"alice_to_bob": int(a2b[worst]), "bob_to_alice": int(b2a[worst])},
                    int(rounds.max(initial=0)), not wrong.size, int(wrong.size), audited.runner_checked, audit,
                    audited.transcript, first_error)
