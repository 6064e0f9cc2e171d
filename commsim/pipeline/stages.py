"""The stages of the pipeline that run_reduction and cc compose."""
from __future__ import annotations

from typing import Callable

import numpy as np

from commsim.core.errors import NotApplicable
from commsim.core.party import ProtocolError
from commsim.core.runner import AuditSession, run_protocol
from commsim.pipeline.interfaces import Encoded, Simulator, Sweep
from commsim.plugins import load_plugins
from commsim.theory.problems import Problem


def protocol_for(model) -> Simulator:
    """The registered model protocol that accepts this model (the model's kind selects it).

    When none does, a model may say why in ``no_protocol_reason`` (e.g. a two-layer transformer,
    which no protocol of the one-layer kind can simulate); that reason is the refusal."""
    reg = load_plugins()
    for entry in reg.entries("simulator"):
        if entry.obj.accepts(model):
            return entry.obj
    reason = getattr(model, "no_protocol_reason", None)
    raise NotApplicable(reason or f"no registered protocol wraps a model of type {type(model).__name__}", "--model")


def _runner_check(wrapper: Simulator, model, encoded: Encoded, sweep: Sweep, indices, audit: bool,
                  progress: Callable | None) -> None:
    """Re-run some instances through the real runner; they must match the sweep exactly."""
    protocol = wrapper.make_protocol(model, encoded)
    session = AuditSession() if audit else None
    try:
        for step, i in enumerate(indices):
            alice, bob = encoded.shares(int(i))
            result = run_protocol(protocol, alice, bob, audit=session or False)
            labels = np.asarray(result.output[0]).reshape(-1)
            t = result.transcript
            got = (labels.tolist(), t.bits_by_direction["alice_to_bob"], t.bits_by_direction["bob_to_alice"],
                   t.rounds)
            want = (np.asarray(sweep.protocol_labels[i]).reshape(-1).tolist(), int(sweep.alice_to_bob[i]),
                    int(sweep.bob_to_alice[i]), int(sweep.rounds[i]))
            if got != want:
                raise ProtocolError(f"{wrapper.name}: the vectorized sweep disagrees with the runner on instance "
                                    f"{int(i)}: runner (labels, a->b, b->a, rounds) = {got}, sweep = {want}")
            if sweep.transcript is None or t.total_bits > sweep.transcript.total_bits:
                sweep.transcript = t
            if progress:
                progress(step + 1, len(indices))
    finally:
        if session is not None:
            session.close()


#: the most instances ``--instances all`` enumerates (beyond: sample with ``--instances K``)
MAX_EXHAUSTIVE_INSTANCES = 1 << 24


#: instances of every batch sweep that also go through the per-instance runner
RUNNER_CHECKS = 64


def select_instances(problem: Problem, instances: int | None, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """Every (alice, bob) pair when ``instances`` is None, else that many seeded samples."""
    if instances is None:
        return (*problem.all_pairs(), getattr(problem, "all_description", "all"))
    return (*problem.sample(np.random.default_rng(seed), instances), f"{instances} sampled (seed {seed})")
