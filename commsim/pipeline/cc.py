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
from commsim.core.party import Protocol, ProtocolError
from commsim.core.runner import AuditSession, run_protocol
from commsim.pipeline.stages import RUNNER_CHECKS, select_instances
from commsim.theory.problems import Problem, make_problem


@dataclass(frozen=True)
class BatchRun:
    """What a vectorized protocol run reports per instance."""

    outputs: np.ndarray
    alice_to_bob: np.ndarray
    bob_to_alice: np.ndarray
    rounds: np.ndarray


class CommunicationProtocol(Protocol):
    """A protocol for one source problem; subclasses set ``name``, ``problems`` and the party programs."""

    problems: tuple[str, ...] = ()
    description = ""

    def __init__(self, problem: Problem):
        if problem.name not in self.problems:
            raise InputError(f"protocol {self.name!r} is for {', '.join(self.problems)}, not {problem.name!r}",
                             "--protocol")
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
    """Run a plain protocol over all (or sampled) instances of a problem; worst-case bits and correctness."""
    problem = make_problem(problem_name, n)
    protocol = protocol_cls(problem)
    A, B, described = select_instances(problem, instances, seed)
    expected = problem.evaluate_batch(A, B)
    count = len(A)
    batch = None if audit else protocol.run_batch(A, B)
    checks = np.arange(count) if batch is None else \
        np.random.default_rng(seed + 1).choice(count, size=min(RUNNER_CHECKS, count), replace=False)
    outputs = np.zeros(count, dtype=np.int64) if batch is None else np.asarray(batch.outputs)
    a2b = np.zeros(count, dtype=np.int64) if batch is None else np.asarray(batch.alice_to_bob)
    b2a = np.zeros(count, dtype=np.int64) if batch is None else np.asarray(batch.bob_to_alice)
    rounds = np.zeros(count, dtype=np.int64) if batch is None else np.asarray(batch.rounds)
    session = AuditSession() if audit else None
    transcript = None
    try:
        for step, i in enumerate(checks):
            result = run_protocol(protocol, A[i], B[i], audit=session or False)
            t = result.transcript
            got = (int(result.output), t.bits_by_direction["alice_to_bob"], t.bits_by_direction["bob_to_alice"],
                   t.rounds)
            if batch is not None:
                want = (int(outputs[i]), int(a2b[i]), int(b2a[i]), int(rounds[i]))
                if got != want:
                    raise ProtocolError(f"{protocol.name}: batch path disagrees with the runner on instance {i}: "
                                        f"runner (output, a->b, b->a, rounds) = {got}, batch = {want}")
            else:
                outputs[i], a2b[i], b2a[i], rounds[i] = got
            if transcript is None or t.total_bits > transcript.total_bits:
                transcript = t
            if progress:
                progress(step + 1, len(checks))
    finally:
        if session is not None:
            session.close()
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
                    int(rounds.max(initial=0)), not wrong.size, int(wrong.size), len(checks), audit, transcript,
                    first_error)
