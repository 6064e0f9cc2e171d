"""Reductions: a source problem becomes a model task, the model becomes a protocol.

:func:`run_reduction` reads like the picture in DESIGN section 1::

    instances ──encode──▶ model inputs + split ──model protocol──▶ transcripts, outputs
        ──decode──▶ answers ──▶ report (bits vs bound, correctness, exactness, certificate)

Three plugin roles meet here:

* a :class:`Reduction` (``reduction`` registry kind) knows the source problem, how an
  instance is encoded into the model's tokens and who owns which position, how the
  model's output labels decode to the answer, and the lower bound for a model;
* a :class:`Simulator` (``simulator`` kind) wraps a model into party programs
  (e.g. the hidden-state handoff, Theorem 2 of [BHBK24]) and sweeps many instances at
  once; it also searches for certificates when the model's budget is below the bound;
* a model (``model`` kind), built from a spec by :func:`commsim.plugins.make_model`.

The engine checks what every plugin claims: a seeded subset of every sweep is re-run
through the real runner (:func:`commsim.core.runner.run_protocol`), whose outputs and bit
counts must equal the sweep's.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from commsim.certify.error import error_certificate
from commsim.core.errors import InputError
from commsim.pipeline.interfaces import Reduction
from commsim.pipeline.report import Report
from commsim.pipeline.stages import (
    MAX_EXHAUSTIVE_INSTANCES,
    RUNNER_CHECKS,
    _runner_check,
    protocol_for,
    select_instances,
)
from commsim.plugins import load_plugins, make_model


def run_reduction(reduction_id: str, model_spec: str | Any | None = None, n: int | None = None, *,
                  instances: int | None = None, seed: int = 0, audit: bool = False, certify: bool = True,
                  progress: Callable[[str, int, int], None] | None = None) -> Report:
    """Run a reduction end to end and report bits used against the lower bound.

    ``instances`` None means every instance; ``audit`` re-runs the checked instances with each
    party in its own process; ``progress(stage, done, total)`` is called during long work.
    """
    reg = load_plugins()
    reduction: Reduction = reg.get("reduction", reduction_id, param="REDUCTION")
    n = reduction.default_n if n is None else int(n)
    if n < 1:
        raise InputError(f"--n must be at least 1, got {n}", "--n")
    problem = reduction.problem(n)
    spec = model_spec if model_spec is not None else reduction.default_model
    model = make_model(spec, **reduction.model_context(n)) if isinstance(spec, str) else spec
    wrapper = protocol_for(model)
    reduction.check(model, wrapper, problem)

    if instances is None and problem.input_pairs > MAX_EXHAUSTIVE_INSTANCES:
        raise InputError(f"--instances all: the {problem.input_pairs} instances of {problem.name} at n = {n} are too "
                         f"many to run exhaustively (at most {MAX_EXHAUSTIVE_INSTANCES}); use --instances K to sample",
                         "--instances")
    A, B, described = select_instances(problem, instances, seed)
    expected = problem.evaluate_batch(A, B)
    encoded = reduction.encode(problem, A, B)
    wrapper.check_partition(model, encoded)

    stage = (lambda name: (lambda done, total: progress(name, done, total))) if progress else (lambda name: None)
    sweep = wrapper.sweep(model, encoded, progress=stage("sweep"))
    checks = np.arange(encoded.batch) if audit and encoded.batch <= RUNNER_CHECKS else \
        np.random.default_rng(seed + 1).choice(encoded.batch, size=min(RUNNER_CHECKS, encoded.batch), replace=False)
    _runner_check(wrapper, model, encoded, sweep, checks, audit, stage("runner check"))

    answers = reduction.decode(sweep.protocol_labels, B)
    direct_answers = reduction.decode(sweep.direct_labels, B)
    matches = np.asarray(sweep.exact_match, dtype=bool) & (answers == direct_answers)
    correct = answers == expected
    bound = reduction.lower_bound(model, wrapper, problem, encoded)
    totals = sweep.total_bits
    worst = int(np.argmax(totals))
    formula, formula_text = wrapper.bits_formula(model, encoded)

    certificate, searched = None, ""
    wrong = np.flatnonzero(~correct)
    # below the bound, the protocol's own certificate (it says *why* the model must fail) comes first;
    # a plain wrong instance is the certificate when that search finds nothing verified
    if certify and bound.applies and bound.bits is not None and int(totals.max()) < bound.bits:
        certificate, searched = wrapper.certificate(model, reduction, problem, bound, seed=seed,
                                                    progress=stage("certificate search"))
    if wrong.size and (certificate is None or not certificate.verified):
        certificate = error_certificate(reduction, problem, wrapper, model, A, B, expected, answers, int(wrong[0]))
        searched = (f"{searched}; " if searched else "") + \
            f"the model is wrong on {wrong.size} of {len(A)} instances; the first is the certificate"
    return Report(
        reduction=reduction.id, problem=problem.name, task=reduction.task, protocol=wrapper.name,
        model=getattr(model, "spec", spec if isinstance(spec, str) else type(model).__name__), n=n,
        seq_len=encoded.seq_len, instances=described, instances_run=len(A), bits_used=int(totals.max()),
        bits_by_direction={"alice_to_bob": int(sweep.alice_to_bob[worst]),
                           "bob_to_alice": int(sweep.bob_to_alice[worst])},
        rounds=int(np.max(sweep.rounds)), bits_formula=formula, bits_formula_text=formula_text,
        lower_bound=bound, model_accuracy=float(correct.mean()), model_correct=bool(correct.all()),
        protocol_matches_model=bool(matches.all()), runner_checked=len(checks), audited=audit,
        certificate=certificate, certificate_search=searched, transcript=sweep.transcript, details=sweep.details)
