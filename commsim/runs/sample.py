"""``commsim.sample``: the exact tokens commsim feeds a model for a reduction, and the labels a correct model
outputs on them -- so that users train on the same task the run judges.

The tokens are the reduction's own encoding (``reduction.encode``) of seeded instances of its source problem,
drawn by the problem's own sampler (``problem.sample``, the distribution ``run --instances K`` draws from) in
fixed seeded blocks so that a smaller sample is a prefix of a larger one with the same seed
(:func:`prefix_stable_sample`).  They are not the instances ``run --instances K --seed S`` judges: ``run`` keeps
drawing its K instances from one stream (``problem.sample(default_rng(S), K)``), unchanged, so that recorded
results reproduce.  The labels are the model's outputs at the output positions that :meth:`Reduction.decode`
turns into the source problem's answer, as the reduction declares them (:meth:`Reduction.labels`: by default the
one class that decodes to the answer at a single output position; MQAR declares a_i at query i); every label
batch is checked to decode to the answers.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from commsim.core.errors import NotApplicable
from commsim.core.limits import MAX_INSTANCES, check_seed, check_size
from commsim.runs.arguments import reduction_argument
from commsim.contract import Encoded, Reduction
from commsim.runs.stages import check_run_size
from commsim.plugins import load_plugins
from commsim.theory.problems import Problem

__all__ = ["sample", "sample_encoded", "prefix_stable_sample", "labels_for", "vocabulary"]


def _reduction(reduction: str | Reduction) -> Reduction:
    """The reduction object of an id or a Reduction (anything else: an InputError naming ``reduction``)."""
    reduction = reduction_argument(reduction)
    if isinstance(reduction, str):
        return load_plugins().get("reduction", reduction, param="reduction")
    return reduction


def sample_encoded(reduction: str | Reduction, n: int | None = None, size: int = 1, seed: int = 0, *,
                   max_size: int = MAX_INSTANCES) -> tuple[Reduction, Problem, np.ndarray, np.ndarray, Encoded]:
    """The reduction, its problem at size ``n`` (default: the reduction's), ``size`` seeded instances (A, B)
    and their encoding.  Sizes are checked before anything is allocated."""
    reduction = _reduction(reduction)
    n = reduction.default_n if n is None else check_run_size(reduction, n)
    size = check_size(size, "size", 1, max_size, "each sample is a full encoded sequence", noun="number of samples")
    seed = check_seed(seed, "seed")
    problem = reduction.problem(n)
    A, B = prefix_stable_sample(problem, seed, size)
    return reduction, problem, A, B, reduction.encode(problem, A, B)


#: the largest block of instances drawn from one stream (at most this many instances are drawn and dropped)
MAX_BLOCK = 1024


def _blocks(size: int):
    """The fixed blocks ``(j, start, length)`` covering instances 0..size-1: lengths 1, 1, 2, 4, ... up to
    :data:`MAX_BLOCK`, then :data:`MAX_BLOCK` each -- the same blocks whatever ``size`` is."""
    j, start, length = 0, 0, 1
    while start < size:
        yield j, start, length
        j, start = j + 1, start + length
        length = min(start, MAX_BLOCK)


def prefix_stable_sample(problem: Problem, seed: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``size`` seeded instances (A, B) of ``problem`` such that a smaller ``size`` gives a prefix of a larger one
    with the same seed: block j of :func:`_blocks` is drawn whole by ``problem.sample`` from its own stream
    (child j of ``SeedSequence(seed)``) and the last block is cut at ``size`` (at most twice the instances, and at
    most :data:`MAX_BLOCK` more, are drawn)."""
    alice, bob = [], []
    for j, start, length in _blocks(size):
        A, B = problem.sample(np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(j,))), length)
        keep = min(length, size - start)
        alice.append(np.asarray(A)[:keep])
        bob.append(np.asarray(B)[:keep])
    return np.concatenate(alice), np.concatenate(bob)


def labels_for(reduction: Reduction, problem: Problem, A, B, encoded: Encoded) -> np.ndarray:
    """The labels (batch, output positions) a correct model outputs on ``encoded``
    (:meth:`Reduction.labels`), checked to decode to the source problem's answers."""
    try:
        labels = np.asarray(reduction.labels(problem, A, B))
    except NotImplementedError as exc:
        raise NotApplicable(f"{exc}; the reduction must declare labels(problem, A, B)", "reduction") from None
    labels = labels[:, None] if labels.ndim == 1 else labels
    if labels.shape != (len(A), len(encoded.output_positions)) or \
            not np.array_equal(reduction.decode(labels, B), problem.evaluate_batch(A, B)):
        raise NotApplicable(f"{reduction.id}: its labels do not decode to the answers", "reduction")
    return labels


def sample(reduction: str | Any, n: int | None = None, size: int = 1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(tokens, labels)``: the tokens (size, seq_len) commsim feeds the model for ``size`` seeded instances
    of ``reduction`` at source size ``n`` -- a smaller ``size`` gives a prefix of a larger one with the same
    ``seed`` -- and the labels (size, output positions) a correct model outputs at the output positions."""
    reduction, problem, A, B, encoded = sample_encoded(reduction, n, size, seed)
    return np.asarray(encoded.tokens), labels_for(reduction, problem, A, B, encoded)


def vocabulary(reduction: str | Any, n: int | None = None) -> list[str]:
    """The names of the tokens of ``reduction``'s task at source size ``n``: token id i is ``vocabulary[i]``
    (a model's embedding needs ``len(vocabulary(...))`` rows)."""
    reduction = _reduction(reduction)
    n = reduction.default_n if n is None else check_run_size(reduction, n)
    return [str(name) for name in reduction.vocabulary(n)]
