"""``run_reduction``: a source problem becomes a model task, the model becomes a protocol, and the report
says how many bits it used against the lower bound.

It reads like this picture, one stage (:mod:`commsim.runs.stages`) per box::

    instances (+ the reduction's evaluation sets) ──encode──▶ model inputs + split
        ──simulator──▶ transcripts, outputs (audited by the runner) ──decode──▶ answers
        ──▶ bound ──▶ certificate ──▶ report

Three plugin roles meet here: a :class:`~commsim.contract.Reduction` (the problem, the
encoding and split, the decoding, the lower bound), a :class:`~commsim.contract.Simulator`
(the model as party programs, e.g. the hidden-state handoff of Theorem 2 of [BHBK24]; the vectorized
sweep; the certificate search) and a model (built from a spec by :func:`commsim.plugins.make_model`).
The engine checks what every plugin claims: a seeded subset of every sweep is re-run through the real
runner, whose outputs and bit counts must equal the sweep's.
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Any, Callable, Iterator

import numpy as np

from commsim.core.errors import InputError
from commsim.runs.arguments import instances_argument, run_arguments
from commsim.runs.assemble import make_report
from commsim.runs.certificates import find_certificate, in_task_terms, search_by_argument
from commsim.core.executors import check_workers
from commsim.runs.framework import recheck_certificate
from commsim.contract import EvaluationSet
from commsim.contract.framework import Framework
from commsim.runs.report import Report
from commsim.runs.shards import stream_exhaustive, streams
from commsim.plugins import load_plugins
from commsim.runs.stages import (
    Instances,
    Prepared,
    covers_all,
    evaluate,
    evaluation_sets,
    given_instances,
    lower_bound,
    prepare,
    select_instances,
)


@contextmanager
def modes_kept(model: Any) -> Iterator[None]:
    """Run with the caller's framework objects as they were after: every registered adapter that is a
    :class:`~commsim.contract.framework.Framework` holds its objects' train/eval state for the run
    (:meth:`~commsim.contract.framework.Framework.evaluating`: a torch module runs in eval mode -- no dropout,
    running batch-norm statistics -- and gets its own ``training`` flags back after).  The report holds numbers
    only, never the module, so nothing after the run needs eval mode; a :func:`prepare`'d setup does, and keeps
    the module in eval mode."""
    with ExitStack() as held:
        for entry in load_plugins().entries("adapter"):
            if isinstance(entry.obj, Framework):
                held.enter_context(entry.obj.evaluating(model))
        yield


def run_reduction(reduction_id: str | Any, model_spec: str | Any | None = None, n: int | None = None, *,
                  instances: int | str | None = None, seed: int = 0, audit: bool = False, certify: bool = True,
                  progress: Callable[[str, int, int], None] | None = None, simulator: str | None = None,
                  workers: int | None = None, q: int | None = None, value_dim: int | None = None) -> Report:
    """Run a reduction end to end and report bits used against the lower bound.

    ``reduction_id``: a registered id (or a Reduction); ``model_spec``: a spec string or a model object
    (default: the reduction's default model); ``n``: the source problem's size.  ``instances`` None or
    ``"all"`` means every instance (a count samples that many, with replacement); the model is also judged on
    the sets the reduction adds (``accuracy_by_set``);
    ``audit`` re-runs the checked instances with each party in its own process; ``certify`` searches for
    an input the model must fail on; ``progress(stage, done, total)`` is called during long work;
    ``simulator`` names the simulator to use (default: the model's kind selects it); ``workers``: the local
    processes of a streamed exhaustive run (default: one per core for a large run,
    :func:`commsim.runs.shards.sweep_workers`); ``q``, ``value_dim``: options of a reduction that declares
    them (:attr:`~commsim.contract.Reduction.options`; qsa-approx: the sparsity q and d').
    """
    reduction_id, model_spec = run_arguments(reduction_id, model_spec, audit=audit, certify=certify, progress=progress)
    instances = instances_argument(instances)
    if workers is not None:   # checked whether or not this run streams
        check_workers("processes", workers)
    given = {key: value for key, value in (("q", q), ("value_dim", value_dim)) if value is not None}
    reduction = load_plugins().get("reduction", reduction_id, param="reduction") if isinstance(reduction_id, str) \
        else reduction_id
    unknown = [key for key in given if key not in reduction.options]
    if unknown:
        raise InputError(f"{unknown[0]}: {reduction.id} takes no such option"
                         + (f" (its options: {', '.join(reduction.options)})" if reduction.options else ""), unknown[0])
    if reduction.judged_directly:
        for flag, value in (("audit", audit), ("simulator", simulator)):
            if value:
                raise InputError(f"{flag}: {reduction.id} runs no protocol (its bound is on the model's own size), so "
                                 f"there is no {'party to audit' if flag == 'audit' else 'simulator to choose'}", flag)
    with modes_kept(model_spec):
        direct = reduction.direct_report(model_spec, n, instances=instances, seed=seed, certify=certify, **given)
        if direct is not None:     # judged by a bound on the model's size: no protocol to run
            return direct
        return _run_reduction(reduction_id, model_spec, n, instances=instances, seed=seed, audit=audit,
                              certify=certify, progress=progress, simulator=simulator, workers=workers)


def _run_reduction(reduction_id, model_spec, n, *, instances, seed, audit, certify, progress, simulator,
                   workers) -> Report:
    """:func:`run_reduction` once its arguments are checked."""
    setup = prepare(reduction_id, model_spec, n, simulator=simulator)
    if streams(setup, instances):  # beyond what one in-memory batch holds: shards, in bounded memory
        return stream_exhaustive(setup, model_spec, seed=seed, audit=audit, certify=certify, progress=progress,
                                 workers=workers)
    chosen = select_instances(setup.problem, instances, seed)
    return evaluate_and_report(setup, chosen, evaluation_sets(setup, chosen, instances, seed), seed=seed, audit=audit,
                               certify=certify, progress=progress, exhaustive=covers_all(setup.problem, instances))


def run_instances(reduction_id: str | Any, model: str | Any, n: int, alice: np.ndarray, bob: np.ndarray, *,
                  described: str = "given instances", seed: int = 0, audit: bool = False, certify: bool = False,
                  progress: Callable[[str, int, int], None] | None = None) -> Report:
    """The run of :func:`run_reduction` on instances chosen by the caller (``alice``, ``bob``: aligned arrays of
    the source problem's inputs, checked as :func:`~commsim.runs.stages.given_instances` says) -- the same
    stages, runner audit and report builder; separations use it."""
    with modes_kept(model):
        setup = prepare(reduction_id, model, n)
        chosen = given_instances(setup.problem, alice, bob, described)
        return evaluate_and_report(setup, chosen, [EvaluationSet("given", chosen.alice, chosen.bob, described)],
                                   seed=seed, audit=audit, certify=certify, progress=progress, exhaustive=False)


def evaluate_and_report(setup: Prepared, chosen: Instances, sets: list[EvaluationSet], *, seed: int, audit: bool,
                        certify: bool, progress, exhaustive: bool) -> Report:
    """Every set through the audited batch, then the bound, the certificate and the report."""
    evaluated = [evaluate(setup, which, seed=seed, audit=audit, progress=progress) for which in sets]
    main = evaluated[0]
    plan = setup.plan(main.encoded)
    bound = lower_bound(setup, main.encoded, plan)
    tallies = [e.tally for e in evaluated]
    certificate, searched = find_certificate(setup, plan, tallies, bound, seed=seed, search=certify,
                                             progress=progress)
    return make_report(setup, plan, tallies, bound, certificate, searched, instances=chosen.described,
                       seq_len=main.encoded.seq_len, details=main.batch.details,
                       agreement_sample=(chosen.alice, chosen.bob), audit=audit, seed=seed, exhaustive=exhaustive)


def search_certificate(setup: Prepared, *, seed: int = 0, progress: Callable[[int, int], None] | None = None):
    """The engine's certificate search for a prepared setup, whatever the bits used: the argument its message plan
    calls for (pigeonhole one-way, rectangle two-way: :mod:`commsim.runs.certificates`), with the plan taken
    on a sampled instance's split.  Returns (certificate or None, what was searched); lessons use it."""
    A, B = setup.problem.sample(np.random.default_rng(seed), 1)
    plan = setup.plan(setup.reduction.encode(setup.problem, A, B))
    certificate, searched = search_by_argument(setup, plan, seed=seed, progress=progress)
    return recheck_certificate(setup, in_task_terms(setup, certificate)), searched
