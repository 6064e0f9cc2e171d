"""Keys and values per (position, token) pair: k_i = [W_K x_i] and v_i = [W_V x_i] depend on position i and token
s_i alone (the embedding is a function of the pair and the projection is rounded row by row), so an attention
layer projects each distinct pair of a batch once (:func:`distinct_pairs`) and, where a row is costly (a GPT-2
width: 1537 x 1536 products), keeps the projected rows for the next call (:class:`PairCache`): the parties of
every sampled instance and the direct forward then share them.  The same bits as projecting every row: a row's
value does not depend on the rows beside it."""
from __future__ import annotations

from typing import Callable

import numpy as np

#: a projected row costing at least this many products is kept across calls
CACHED_ROW_PRODUCTS = 1 << 16

#: bytes of projected rows kept per layer (past it, new pairs are computed and not kept)
CACHE_BYTES = 256 << 20


def distinct_pairs(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (column, token) pairs of tokens (B, n) (non-negative ids): (columns, tokens, inverse), the
    pairs in order of (column, token) and, for each entry of ``tokens`` in row-major order, its pair's index."""
    tokens = np.asarray(tokens, dtype=np.int64)
    span = int(tokens.max()) + 1
    codes = np.arange(tokens.shape[1], dtype=np.int64) * span + tokens   # exact: n * span < 2^63 for any table
    unique, inverse = np.unique(codes.reshape(-1), return_inverse=True)
    return unique // span, unique % span, inverse.reshape(-1)


class PairCache:
    """Projected rows by (position, token), kept when a row costs ``products`` >= :data:`CACHED_ROW_PRODUCTS`,
    up to :data:`CACHE_BYTES`; pickled empty (a copy of the layer sent to another process starts afresh)."""

    def __init__(self, products: int):
        self.active = products >= CACHED_ROW_PRODUCTS
        self.kept: dict[tuple[int, int], np.ndarray] = {}
        self.bytes = 0

    def __getstate__(self):
        return {"active": self.active, "kept": {}, "bytes": 0}

    def rows(self, positions: np.ndarray, tokens: np.ndarray,
             compute: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
        """The projected rows (u, width) of the pairs (positions[j], tokens[j]): ``compute(positions, tokens)``
        for the pairs not kept, the kept rows for the others."""
        if not self.active:
            return compute(positions, tokens)
        keys = list(zip(positions.tolist(), tokens.tolist()))
        missing = [j for j, key in enumerate(keys) if key not in self.kept]
        fresh = compute(positions[missing], tokens[missing]) if missing else None
        if fresh is not None and len(missing) == len(keys):
            out = fresh
        else:
            first = fresh[0] if fresh is not None else self.kept[keys[0]]
            out = np.empty((len(keys),) + first.shape, dtype=first.dtype)
            at = dict(zip(missing, range(len(missing))))
            for j, key in enumerate(keys):
                out[j] = fresh[at[j]] if j in at else self.kept[key]
        if fresh is not None and self.bytes + fresh.nbytes <= CACHE_BYTES:
            for j, row in zip(missing, fresh):
                self.kept[keys[j]] = row
            self.bytes += fresh.nbytes
        return out
