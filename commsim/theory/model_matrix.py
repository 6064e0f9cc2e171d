"""The communication matrix of a **model's own function** under a reduction's partition, at small n.

For a model and a reduction, M_model[x, y] is the model's answer (its direct forward, decoded by the reduction)
on the instance whose Alice input is x and Bob input is y -- every pair, rows Alice's inputs and columns Bob's,
in the problem's enumeration order, exactly as the task's own matrix M_task[x, y] = f(x, y)
(:mod:`commsim.theory.comm_matrix`).  The bounds read off M_model -- log-rank over the reals and GF(2), the
one-way bound ceil(log2 #distinct rows), a verified fooling set -- bound the bits of **any** protocol whose
output is this model's output on every instance, with Alice holding her input's positions and Bob his: the
model's function, at any depth (a two-layer transformer, which no one-layer protocol simulates, included).
They say nothing about the model's size (width, precision, layers): a model computing a full-rank function
may be tiny, and a huge one may compute a constant.

The answers come from a callable ``answers(A, B)`` (aligned rows of Alice and Bob inputs -> the model's 0/1
answers); the engine supplies the model's direct forward (``commsim.pipeline.model_function``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from commsim.core.errors import InputError
from commsim.core.limits import show_size
from commsim.theory.comm_matrix import (
    MOD_P_MAX_SIDE,
    CommMatrix,
    MatrixReport,
    distinct_rows,
    rank_gf2,
    rank_mod_p,
    rank_real,
    search_fooling_set,
)
from commsim.theory.problems import Problem

#: the most cells (each one model forward) a model's matrix is built from
MAX_MODEL_CELLS = 1 << 16

#: what the model's matrix bounds, in words (every report says it)
WHAT_IT_BOUNDS = ("these bounds hold for any protocol that outputs this model's answers on every instance of this "
                  "partition: they bound the model's function, not its size (width, precision, layers)")


def check_matrix_size(problem: Problem, max_cells: int = MAX_MODEL_CELLS) -> None:
    """Refuse (naming n) a problem whose matrix has more than ``max_cells`` cells, counted before anything is
    enumerated."""
    cells = problem.input_pairs
    if cells > max_cells:
        raise InputError(f"n: the {problem.name} matrix at n = {problem.n} has {show_size(cells)} cells, each a "
                         f"forward of the model; at most {show_size(max_cells)} are built", "n")


def function_matrix(problem: Problem, answers: Callable[[np.ndarray, np.ndarray], np.ndarray], *,
                    max_cells: int = MAX_MODEL_CELLS, chunk_rows: int = 64) -> CommMatrix:
    """M[i, j] = answers(alice_inputs[i], bob_inputs[j]) for every pair, a few rows of Alice at a time; the
    answers must be 0 or 1 (an :class:`InputError` naming the model otherwise)."""
    check_matrix_size(problem, max_cells)
    A, B = problem.alice_inputs(), problem.bob_inputs()
    M = np.empty((len(A), len(B)), dtype=np.uint8)
    for s in range(0, len(A), chunk_rows):
        rows = A[s:s + chunk_rows]
        Ar = np.repeat(rows, len(B), axis=0)
        Bt = np.tile(B, (len(rows),) + (1,) * (B.ndim - 1))
        values = np.asarray(answers(Ar, Bt)).reshape(-1)
        if values.shape != (len(Ar),):
            raise InputError(f"model: gave {values.size} answers for {len(Ar)} instances", "model")
        bad = values[(values != 0) & (values != 1)]
        if bad.size:
            raise InputError(f"model: answered {bad[0]!r} on an instance of {problem.name}; the matrix needs answers "
                             f"0 or 1", "model")
        M[s:s + len(rows)] = values.reshape(len(rows), len(B))
    return CommMatrix(problem, M, A, B)


def task_matrix(problem: Problem, *, max_cells: int = MAX_MODEL_CELLS) -> CommMatrix:
    """The task's own M[x, y] = f(x, y), in the same enumeration as :func:`function_matrix`."""
    return function_matrix(problem, problem.evaluate_batch, max_cells=max_cells)


def analyze(cm: CommMatrix, *, restarts: int = 4, seed: int = 0, known_fooling_size: int | None = None) -> MatrixReport:
    """A matrix's bounds (:class:`~commsim.theory.comm_matrix.MatrixReport`): ranks over the reals, GF(2) and
    GF(2^31 - 1) (when small), distinct rows, a searched and verified fooling set."""
    M = cm.matrix
    mod_p = rank_mod_p(M) if min(M.shape) <= MOD_P_MAX_SIDE else None
    return MatrixReport(cm, rank_real(M), rank_gf2(M), mod_p, distinct_rows(M),
                        search_fooling_set(M, restarts=restarts, seed=seed), known_fooling_size)


@dataclass(frozen=True)
class ModelMatrixReport:
    """The model's function matrix beside the task's (module docstring)."""

    reduction: str
    model: str
    evaluated_by: str
    model_matrix: MatrixReport
    task_matrix: MatrixReport

    @property
    def disagreements(self) -> int:
        """Instances on which the model's answer is not the task's."""
        return int((self.model_matrix.matrix.matrix != self.task_matrix.matrix.matrix).sum())

    def to_dict(self) -> dict:
        problem = self.task_matrix.matrix.problem
        return {"reduction": self.reduction, "model": self.model, "problem": problem.name, "n": problem.n,
                "evaluated_by": self.evaluated_by, "model_function": self.model_matrix.to_dict(),
                "task": self.task_matrix.to_dict(), "disagreements": self.disagreements,
                "cells": int(self.task_matrix.matrix.matrix.size),
                "model_function_lower_bound_bits": self.model_matrix.two_way_bits,
                "model_function_one_way_bits": self.model_matrix.one_way_bits, "bounds": WHAT_IT_BOUNDS}


def analyze_model_matrix(problem: Problem, answers: Callable[[np.ndarray, np.ndarray], np.ndarray], *,
                         reduction: str, model: str, evaluated_by: str, restarts: int = 4, seed: int = 0,
                         max_cells: int = MAX_MODEL_CELLS) -> ModelMatrixReport:
    """The model's function matrix and the task's, each with its bounds."""
    check_matrix_size(problem, max_cells)
    own = analyze(function_matrix(problem, answers, max_cells=max_cells), restarts=restarts, seed=seed)
    task = analyze(task_matrix(problem, max_cells=max_cells), restarts=restarts, seed=seed)
    return ModelMatrixReport(reduction, model, evaluated_by, own, task)
