"""Embedding tables of a folded attention layer as functions of (position, token), computed for the pairs asked.

A folded layer's embedding x(i, s) (:mod:`.fold`) is a function of the position i and the token s: the residual
stream e(i, s) = [wte[s] + wpe[i]], a per-position norm of it [pre(e(i, s))], a constant coordinate, stored
residual coordinates.  A :class:`Grid` is such a (positions, tokens, dim) table that holds only what it is built
from (the embedding matrices, the norm) and computes the rows of the (position, token) pairs it is asked for.
:func:`~.fold.build_attention` writes the whole table out when it is small (an exhaustive run reads every row
many times) and otherwise keeps the grid, so that a sampled run at a GPT-2 width and vocabulary computes the
rows of the pairs its instances hold and nothing else.

Exact: every row is computed by the same operations, row by row, as the whole table
(:meth:`Grid.dense` is :meth:`Grid.rows` of every pair), and the maps applied are batch-independent (a row's
value does not depend on the rows beside it), so a row is the same bits whichever pairs are asked with it.
"""
from __future__ import annotations

import numpy as np

from commsim.core.precision import NumberFormat


class Grid:
    """A (positions, tokens, dim) table x(i, s) computed row by row on demand (module docstring)."""

    shape: tuple[int, int, int]

    def rows(self, positions, tokens) -> np.ndarray:
        """x(i, s) as float64 values for ``positions`` and ``tokens`` broadcast together: (..., dim)."""
        raise NotImplementedError

    def dense(self) -> np.ndarray:
        """The whole table (positions, tokens, dim): every row, as :meth:`rows` computes it."""
        P, V, _ = self.shape
        return self.rows(np.arange(P)[:, None], np.arange(V)[None, :])

    def __getitem__(self, index):
        """``grid[i]``: the (tokens, dim) rows of position i (the one indexing the folding code uses)."""
        return self.rows(np.full(self.shape[1], int(index)), np.arange(self.shape[1]))


class ArrayGrid(Grid):
    """A table given whole: (positions, tokens, dim) float64 values."""

    def __init__(self, table):
        self.table = np.asarray(table, dtype=np.float64)
        self.shape = tuple(int(s) for s in self.table.shape)

    def rows(self, positions, tokens):
        return self.table[np.asarray(positions, dtype=np.int64), np.asarray(tokens, dtype=np.int64)]

    def dense(self):
        return self.table


def as_grid(table) -> Grid:
    """A grid as is; a whole table as an :class:`ArrayGrid`."""
    return table if isinstance(table, Grid) else ArrayGrid(table)


class SumGrid(Grid):
    """e(i, s) = wte[s] + wpe[i] (wpe None: wte[s]), rounded to ``fmt`` when given (each term is already)."""

    def __init__(self, wte: np.ndarray, wpe: np.ndarray | None, vocab: int, positions: int,
                 fmt: NumberFormat | None = None):
        # copies of the rows used: a task's few tokens do not keep a 50,257-token matrix alive
        self.wte = np.array(np.asarray(wte, dtype=np.float64)[:vocab])
        self.wpe = None if wpe is None else np.array(np.asarray(wpe, dtype=np.float64)[:positions])
        self.fmt = fmt
        self.shape = (int(positions), int(vocab), int(self.wte.shape[1]))

    def rows(self, positions, tokens):
        positions, tokens = np.broadcast_arrays(np.asarray(positions, dtype=np.int64),
                                                np.asarray(tokens, dtype=np.int64))
        e = self.wte[tokens] if self.wpe is None else self.wte[tokens] + self.wpe[positions]
        return e if self.fmt is None else self.fmt.quantize(e)


class MappedGrid(Grid):
    """x(i, s) = [pre(base(i, s))]: a batch-independent map of one row (a LayerNorm, an RMSNorm), rounded to
    ``fmt``."""

    def __init__(self, base: Grid, pre, fmt: NumberFormat, dim: int | None = None):
        self.base, self.pre, self.fmt = base, pre, fmt
        P, V, d = base.shape
        if dim is None:   # the map's output width, from one row
            dim = int(np.asarray(pre(np.zeros((1, d)))).shape[-1])
        self.shape = (P, V, int(dim))

    def rows(self, positions, tokens):
        return self.of_base(self.base.rows(positions, tokens))

    def of_base(self, e: np.ndarray) -> np.ndarray:
        """The map of base rows ``e`` (..., d): the rows it gives wherever ``e`` came from."""
        lead = e.shape[:-1]
        return self.fmt.quantize(np.asarray(self.pre(e.reshape(-1, e.shape[-1]))).reshape(lead + (-1,)))

    def depends_only_on(self, grid: Grid) -> bool:
        """Is every row a function of ``grid``'s row at the same (position, token) alone?"""
        return self.base is grid or (isinstance(self.base, MappedGrid) and self.base.depends_only_on(grid))

    def of(self, grid: Grid, e: np.ndarray) -> np.ndarray:
        """This grid's rows from ``grid``'s rows ``e`` (:meth:`depends_only_on` ``grid``)."""
        inner = e if self.base is grid else self.base.of(grid, e)
        return self.of_base(inner)


class StackedGrid(Grid):
    """The folded layer's embedding: its input grids side by side (``parts``: (grid, first coordinate)), the
    constant coordinate (``const``: (coordinate, value) or None) and the stored residual grid (``residual``:
    (grid, first coordinate) or None), in a row of ``dim`` coordinates (zero elsewhere)."""

    def __init__(self, parts, const, residual, dim: int):
        self.parts, self.const, self.residual = list(parts), const, residual
        P, V, _ = self.parts[0][0].shape
        self.shape = (P, V, int(dim))

    def rows(self, positions, tokens):
        positions, tokens = np.broadcast_arrays(np.asarray(positions, dtype=np.int64),
                                                np.asarray(tokens, dtype=np.int64))
        e = None if self.residual is None else self.residual[0].rows(positions, tokens)
        return self.assemble(e, lambda grid: grid.rows(positions, tokens), positions.shape)

    def assemble(self, e, rows_of, lead) -> np.ndarray:
        """A row per (position, token) of shape ``lead``: each part's rows (``rows_of(grid)``, or computed from
        the residual rows ``e`` when the part is the residual grid or a map of it alone)."""
        out = np.zeros(tuple(lead) + (self.shape[2],))
        stream = None if self.residual is None else self.residual[0]
        for grid, start in self.parts:
            if e is not None and grid is stream:
                block = e
            elif e is not None and isinstance(grid, MappedGrid) and grid.depends_only_on(stream):
                block = grid.of(stream, e)
            else:
                block = rows_of(grid)
            out[..., start:start + grid.shape[2]] = block
        if self.const is not None:
            out[..., self.const[0]] = self.const[1]
        if self.residual is not None:
            out[..., self.residual[1]:self.residual[1] + stream.shape[2]] = e
        return out

    def message_is_residual(self) -> bool:
        """Does the residual stream determine the row (every part a function of it alone)?  Then the one-way
        message is those coordinates and the receiver computes the rest (:meth:`from_residual`)."""
        if self.residual is None:
            return False
        stream = self.residual[0]
        return all(grid is stream or (isinstance(grid, MappedGrid) and grid.depends_only_on(stream))
                   for grid, _ in self.parts)

    def from_residual(self, e: np.ndarray) -> np.ndarray:
        """The rows (B, dim) whose residual coordinates are ``e`` (B, r) (:meth:`message_is_residual`)."""
        e = np.asarray(e, dtype=np.float64)
        return self.assemble(e, None, e.shape[:-1])
