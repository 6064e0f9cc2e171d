"""``commsim.sample``: the exact tokens commsim feeds a model for a reduction, and the labels a correct model
outputs on them -- so that users train on the same data the run judges.

The tokens are the reduction's own encoding (``reduction.encode``) of seeded instances of its source problem
(``problem.sample``), as :func:`commsim.pipeline.stages.select_instances` draws them for ``run --instances K
--seed S``.  The labels are the model's outputs at the output positions that :meth:`Reduction.decode` turns
into the source problem's answer:

* a reduction that declares them (a ``labels(problem, A, B)`` method) gives them itself;
* one output position: the unique class that decodes to the answer (``1 - answer`` for EQ -> INEQ, where the
  model outputs INEQ; the answer itself for INDEX, Match3, QSA, Dyck);
* several output positions whose tokens do not depend on Bob's input (MQAR: Bob's queries are public, b never
  enters the model): the label at output j is the class that decodes to the answer for Bob's probe input
  e_j (only position j set), which isolates output j.

Every derived label batch is checked: it must decode to the source problem's answers on the sampled
instances, or :class:`NotApplicable` says the reduction must declare its labels.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from commsim.core.errors import NotApplicable
from commsim.core.limits import MAX_INSTANCES, check_seed, check_size
from commsim.pipeline.interfaces import Encoded, Reduction
from commsim.pipeline.stages import check_run_size
from commsim.plugins import load_plugins
from commsim.theory.problems import Problem

__all__ = ["sample", "sample_encoded", "labels_for", "CLASSES"]

#: the output classes a label is searched among (every task's output is a binary decision per position)
CLASSES = (0, 1)


def _reduction(reduction: str | Reduction) -> Reduction:
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
    A, B = problem.sample(np.random.default_rng(seed), size)
    return reduction, problem, A, B, reduction.encode(problem, A, B)


def _single(reduction: Reduction, B: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """One output position: per instance, the unique class that decodes to the expected answer."""
    count = len(expected)
    fits = np.stack([reduction.decode(np.full((count, 1), c), B) == expected for c in CLASSES], axis=1)
    if not np.all(fits.sum(axis=1) == 1):
        raise NotApplicable(f"{reduction.id}: its decode does not determine the model's label from the answer; "
                            f"the reduction must declare labels(problem, A, B)", "reduction")
    return np.asarray(CLASSES)[np.argmax(fits, axis=1)][:, None]


def _several(reduction: Reduction, problem: Problem, A: np.ndarray, B: np.ndarray, encoded: Encoded) -> np.ndarray:
    """Several output positions, Bob's input not entering the tokens: output j probed with Bob input e_j."""
    B = np.asarray(B)
    outputs = len(encoded.output_positions)
    reason = (f"{reduction.id}: the labels at its {outputs} output positions cannot be derived from decode; "
              f"the reduction must declare labels(problem, A, B)")
    if B.ndim != 2 or B.shape[1] != outputs:
        raise NotApplicable(reason, "reduction")
    count = len(B)
    labels = np.zeros((count, outputs), dtype=np.int64)
    for j in range(outputs):
        probe = np.zeros_like(B)
        probe[:, j] = 1
        if not np.array_equal(reduction.encode(problem, A, probe).tokens, encoded.tokens):
            raise NotApplicable(reason, "reduction")
        expected = problem.evaluate_batch(A, probe)
        fits = []
        for c in CLASSES:
            trial = np.zeros((count, outputs), dtype=np.int64)
            trial[:, j] = c
            fits.append(reduction.decode(trial, probe) == expected)
        fits = np.stack(fits, axis=1)
        if not np.all(fits.sum(axis=1) == 1):
            raise NotApplicable(reason, "reduction")
        labels[:, j] = np.asarray(CLASSES)[np.argmax(fits, axis=1)]
    return labels


def labels_for(reduction: Reduction, problem: Problem, A, B, encoded: Encoded) -> np.ndarray:
    """The labels (batch, output positions) a correct model outputs on ``encoded``, checked to decode to the
    source problem's answers (see the module's docstring for how they are found)."""
    expected = problem.evaluate_batch(A, B)
    declared = getattr(reduction, "labels", None)
    if callable(declared):
        labels = np.asarray(declared(problem, A, B))
    elif len(encoded.output_positions) == 1:
        labels = _single(reduction, B, expected)
    else:
        labels = _several(reduction, problem, A, B, encoded)
    if labels.ndim == 1:
        labels = labels[:, None]
    if not np.array_equal(reduction.decode(labels, B), expected):  # pragma: no cover - a faulty declaration
        raise NotApplicable(f"{reduction.id}: the derived labels do not decode to the answers", "reduction")
    return labels


def sample(reduction: str | Any, n: int | None = None, size: int = 1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(tokens, labels)``: the tokens (size, seq_len) commsim feeds the model for ``size`` seeded instances
    of ``reduction`` at source size ``n`` -- the same as ``run --instances size --seed seed`` -- and the labels
    (size, output positions) a correct model outputs at the output positions."""
    reduction, problem, A, B, encoded = sample_encoded(reduction, n, size, seed)
    return np.asarray(encoded.tokens), labels_for(reduction, problem, A, B, encoded)
