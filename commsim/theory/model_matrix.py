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

The answers come from a callable ``answers(A, B)`` (aligned rows of Alice and Bob inputs -> the model's answers);
the engine supplies the model's direct forward, decided by the model's decision rule
(``commsim.runs.model_function``).  A model may answer values other than 0 and 1 (a language-model head over
its whole vocabulary answers a token): its function is then many-valued and the matrix holds its answers as they
are.  The bounds stay bounds: a protocol of c bits partitions M into at most 2^c rectangles on each of which M is
constant, so the real rank of M, the GF(2) rank of each answer's indicator 1[M = v], the number of distinct rows
and a fooling set of any one value all bound c as for a 0/1 matrix.

The matrix itself is in the JSON report up to :data:`JSON_MATRIX_CELLS` cells (left out above that, saying so),
and :func:`matrix_csv` writes it whole (``commsim matrix --out FILE``).
"""
from __future__ import annotations

import csv
import io
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

#: the most cells of a matrix written into the JSON report (a 64 x 64 matrix); above it, ``--out FILE`` has it
JSON_MATRIX_CELLS = 1 << 12

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
    """M[i, j] = answers(alice_inputs[i], bob_inputs[j]) for every pair, a few rows of Alice at a time: uint8 when
    every answer is 0 or 1, else the answers as int64 (module docstring); an answer that is not an integer is an
    :class:`InputError` naming the model."""
    check_matrix_size(problem, max_cells)
    A, B = problem.alice_inputs(), problem.bob_inputs()
    M = np.empty((len(A), len(B)), dtype=np.int64)
    for s in range(0, len(A), chunk_rows):
        rows = A[s:s + chunk_rows]
        Ar = np.repeat(rows, len(B), axis=0)
        Bt = np.tile(B, (len(rows),) + (1,) * (B.ndim - 1))
        values = np.asarray(answers(Ar, Bt)).reshape(-1)
        if values.shape != (len(Ar),):
            raise InputError(f"model: gave {values.size} answers for {len(Ar)} instances", "model")
        whole = np.issubdtype(values.dtype, np.integer) or np.issubdtype(values.dtype, np.bool_)
        if not whole:
            bad = values[~np.isfinite(values.astype(np.float64)) | (values != np.round(values))]
            if bad.size or values.dtype.kind not in "fiu":
                shown = bad[0] if bad.size else values.dtype
                raise InputError(f"model: answered {shown!r} on an instance of {problem.name}; an answer is a class "
                                 f"label (an integer)", "model")
        M[s:s + len(rows)] = values.astype(np.int64).reshape(len(rows), len(B))
    if ((M == 0) | (M == 1)).all():
        M = M.astype(np.uint8)
    return CommMatrix(problem, M, A, B)


def is_binary(M: np.ndarray) -> bool:
    """Is every entry 0 or 1?"""
    return bool(((M == 0) | (M == 1)).all())


def answer_counts(M: np.ndarray) -> dict:
    """How many cells hold each answer, by answer."""
    values, counts = np.unique(M, return_counts=True)
    return {int(v): int(c) for v, c in zip(values, counts)}


def task_matrix(problem: Problem, *, max_cells: int = MAX_MODEL_CELLS) -> CommMatrix:
    """The task's own M[x, y] = f(x, y), in the same enumeration as :func:`function_matrix`."""
    return function_matrix(problem, problem.evaluate_batch, max_cells=max_cells)


def analyze(cm: CommMatrix, *, restarts: int = 4, seed: int = 0, known_fooling_size: int | None = None) -> MatrixReport:
    """A matrix's bounds (:class:`~commsim.theory.comm_matrix.MatrixReport`): ranks over the reals, GF(2) and
    GF(2^31 - 1) (when small), distinct rows, a searched and verified fooling set.  A many-valued matrix (module
    docstring): the GF(2) rank is the largest of its answers' indicators', the fooling set searched over every
    answer it holds."""
    M = cm.matrix
    mod_p = rank_mod_p(M) if min(M.shape) <= MOD_P_MAX_SIDE else None
    if is_binary(M):
        return MatrixReport(cm, rank_real(M), rank_gf2(M), mod_p, distinct_rows(M),
                            search_fooling_set(M, restarts=restarts, seed=seed), known_fooling_size)
    values = np.unique(M)
    gf2 = max(rank_gf2((M == v).astype(np.uint8)) for v in values)
    rows = int(len(np.unique(M, axis=0)))
    return MatrixReport(cm, rank_real(M), gf2, mod_p, rows,
                        search_fooling_set(M, restarts=restarts, seed=seed, values=tuple(int(v) for v in values)),
                        known_fooling_size)


def matrix_json(cm: CommMatrix, *, limit: int = JSON_MATRIX_CELLS) -> dict:
    """The matrix for the JSON report: Alice's inputs (rows), Bob's (columns) and the cells, row by row; above
    ``limit`` cells the inputs and cells are left out (None) and ``omitted`` says so and where to get them."""
    M = cm.matrix
    rows, cols = M.shape
    if M.size > limit:
        return {"rows": rows, "cols": cols, "alice_inputs": None, "bob_inputs": None, "cells": None,
                "omitted": f"{rows} x {cols} = {M.size} cells, more than the {limit} written into the JSON report: "
                           f"commsim matrix --out FILE writes the whole matrix as CSV"}
    return {"rows": rows, "cols": cols, "alice_inputs": [cm.input_text("alice", i) for i in range(rows)],
            "bob_inputs": [cm.input_text("bob", j) for j in range(cols)], "cells": M.astype(int).tolist(),
            "omitted": None}


def matrix_csv(cm: CommMatrix) -> str:
    """The whole matrix as CSV: a header of Bob's inputs, then one line per Alice input, her input first."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    M = cm.matrix
    writer.writerow(["alice \\ bob"] + [cm.input_text("bob", j) for j in range(M.shape[1])])
    for i, row in enumerate(M.astype(int).tolist()):
        writer.writerow([cm.input_text("alice", i)] + row)
    return out.getvalue()


def render_answers(M: np.ndarray) -> list[str]:
    """One text line per row: █ for 1, · for 0, ▒ for any other answer."""
    return ["".join("█" if v == 1 else "·" if v == 0 else "▒" for v in row) for row in M]


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
        own = self.model_matrix.to_dict()
        own["ones"] = int((self.model_matrix.matrix.matrix == 1).sum())     # cells answering 1, many-valued or not
        return {"reduction": self.reduction, "model": self.model, "problem": problem.name, "n": problem.n,
                "evaluated_by": self.evaluated_by, "model_function": own,
                "task": self.task_matrix.to_dict(), "disagreements": self.disagreements,
                "cells": int(self.task_matrix.matrix.matrix.size),
                "model_function_lower_bound_bits": self.model_matrix.two_way_bits,
                "model_function_one_way_bits": self.model_matrix.one_way_bits, "bounds": WHAT_IT_BOUNDS,
                "model_answers": answer_counts(self.model_matrix.matrix.matrix),
                "matrix": matrix_json(self.model_matrix.matrix)}


def analyze_model_matrix(problem: Problem, answers: Callable[[np.ndarray, np.ndarray], np.ndarray], *,
                         reduction: str, model: str, evaluated_by: str, restarts: int = 4, seed: int = 0,
                         max_cells: int = MAX_MODEL_CELLS) -> ModelMatrixReport:
    """The model's function matrix and the task's, each with its bounds."""
    check_matrix_size(problem, max_cells)
    own = analyze(function_matrix(problem, answers, max_cells=max_cells), restarts=restarts, seed=seed)
    task = analyze(task_matrix(problem, max_cells=max_cells), restarts=restarts, seed=seed)
    return ModelMatrixReport(reduction, model, evaluated_by, own, task)
