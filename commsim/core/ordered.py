"""The float64 dot product of an IEEE layer, summed in index order: sum_k X[..., k] W[:, k] from 0, each product
rounded, then added, k = 0, 1, ...  Row by row the same operations whatever the rows beside it, so a protocol run
(one row), a batch and the direct forward give the same bits (:class:`~commsim.contract.arithmetic.FloatArithmetic`)."""
from __future__ import annotations

import numpy as np

#: sums kept at once by :func:`ordered_dot` (2 MB of float64: a block of rows stays in cache)
ORDERED_BLOCK = 1 << 18


def ordered_dot(X, W) -> np.ndarray:
    """sum_k X[..., k] W[:, k] in float64, in index order k = 0, 1, ...; with many rows, in blocks of rows whose
    sums stay in cache, over the weight's columns made contiguous (the same operations on each row)."""
    acc = np.zeros(X.shape[:-1] + (W.shape[0],))
    with np.errstate(over="ignore", invalid="ignore"):
        if acc.size < ORDERED_BLOCK or X.ndim < 2:
            for j in range(X.shape[-1]):
                acc += X[..., j:j + 1] * W[:, j]
            return acc
        X2, out = X.reshape(-1, X.shape[-1]), acc.reshape(-1, W.shape[0])
        Wt = np.ascontiguousarray(W.T)
        rows = max(1, ORDERED_BLOCK // max(1, W.shape[0]))
        tmp = np.empty((min(rows, len(X2)), W.shape[0]))
        for s in range(0, len(X2), rows):
            a, x = out[s:s + rows], X2[s:s + rows]
            t = tmp[:len(a)]
            for j in range(X2.shape[1]):
                np.multiply(x[:, j:j + 1], Wt[j], out=t)
                a += t
    return acc
