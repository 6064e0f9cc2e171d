"""``run_reduction``: a source problem becomes a model task, the model becomes a protocol, and the report
says how many bits it used against the lower bound.

It reads like this picture, one stage (:mod:`commsim.pipeline.stages`) per box::

    instances (+ the reduction's evaluation sets) ──encode──▶ model inputs + split
        ──simulator──▶ transcripts, outputs (audited by the runner) ──decode──▶ answers
        ──▶ bound ──▶ certificate ──▶ report

Three plugin roles meet here: a :class:`~commsim.pipeline.interfaces.Reduction` (the problem, the
encoding and split, the decoding, the lower bound), a :class:`~commsim.pipeline.interfaces.Simulator`
(the model as party programs, e.g. the hidden-state handoff of Theorem 2 of [BHBK24]; the vectorized
sweep; the certificate search) and a model (built from a spec by :func:`commsim.plugins.make_model`).
The engine checks what every plugin claims: a seeded subset of every sweep is re-run through the real
runner, whose outputs and bit counts must equal the sweep's.
"""
from __future__ import annotations

from typing import Any, Callable

from commsim.pipeline.report import Report
from commsim.pipeline.shards import stream_exhaustive, streams
from commsim.pipeline.stages import (
    evaluate,
    evaluation_sets,
    find_certificate,
    lower_bound,
    make_report,
    prepare,
    select_instances,
)


def run_reduction(reduction_id: str | Any, model_spec: str | Any | None = None, n: int | None = None, *,
                  instances: int | None = None, seed: int = 0, audit: bool = False, certify: bool = True,
                  progress: Callable[[str, int, int], None] | None = None) -> Report:
    """Run a reduction end to end and report bits used against the lower bound.

    ``reduction_id``: a registered id (or a Reduction); ``model_spec``: a spec string or a model object
    (default: the reduction's default model); ``n``: the source problem's size.  ``instances`` None means
    every instance; the model is also judged on the sets the reduction adds (``accuracy_by_set``);
    ``audit`` re-runs the checked instances with each party in its own process; ``certify`` searches for
    an input the model must fail on; ``progress(stage, done, total)`` is called during long work.
    """
    setup = prepare(reduction_id, model_spec, n)
    if streams(setup, instances):  # beyond what one in-memory sweep holds: shards, in bounded memory
        return stream_exhaustive(setup, model_spec, seed=seed, audit=audit, certify=certify, progress=progress)
    chosen = select_instances(setup.problem, instances, seed)
    evaluated = [evaluate(setup, which, seed=seed, audit=audit, progress=progress)
                 for which in evaluation_sets(setup, chosen, instances, seed)]
    bound = lower_bound(setup, evaluated[0].encoded)
    certificate, searched = find_certificate(setup, evaluated, bound, seed=seed, search=certify, progress=progress)
    return make_report(setup, chosen, evaluated, bound, certificate, searched, audit=audit)
