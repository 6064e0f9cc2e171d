"""The exact softmax-attention kernel every attention model computes with.

Given the rounded logits A and the values v of a set of positions, for G groups of queries at once (the
heads of a one-layer attention, :mod:`protocols.models.attention`; the query positions of one head of a
multi-layer model, :mod:`protocols.models.transformer`), in a number format's exact arithmetic
(:func:`~commsim.contract.arithmetic.arithmetic_for`)::

    M = max_i A_i                  exact
    e_i = [exp(A_i - M)]           in [0, 1]; [1] at the maximum, so Z > 0
    Z = sum_i e_i                  exact, in units of the format
    U = sum_i [w_i v_i]            each product rounded, the sum exact; w_i = e_i, or [e_i / Z] per weight
    o = [U / Z]                    one division (division once), or [U] (per weight)

:func:`softmax_sums` gives Z and U over any subset of the positions given the global maximum M: because the
sums are exact integers, sums over the parts of any partition add up to the whole -- what the attention
exchange's parties send (:mod:`protocols.simulators.attention`).  :func:`attend` is the whole head.
"""
from __future__ import annotations

import numpy as np

__all__ = ["BLOCK_ELEMENTS", "softmax_sums", "divide", "attend"]

#: elements of the largest temporary (batch x groups x positions x width) built at once
BLOCK_ELEMENTS = 1 << 21


def softmax_sums(ar, A: np.ndarray, V: np.ndarray | None, M: np.ndarray, Z=None, *,
                 width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(Z, U): Z = sum_i e_i (B, G) and U = sum_i [w_i v_i] (B, G, m), exact in units, over the positions of
    the logits A (B, G, n) and values V (B, n, G, m) under the maximum M (B, G); w_i = e_i or, given the
    *whole* Z (B, G), [e_i / Z].  V None: Z only (U is zeros of ``width`` columns).  In position blocks."""
    B, G, n = A.shape
    m = V.shape[-1] if V is not None else (width or 1)
    Zs, U = np.zeros((B, G), dtype=np.int64), np.zeros((B, G, m), dtype=np.int64)
    block = max(1, BLOCK_ELEMENTS // max(1, B * G * m))
    for s in range(0, n, block):
        e = ar.exp_weights(A[:, :, s:s + block], M)
        Zs = Zs + ar.sum_weights(e)
        if V is not None:   # [e_i / Z]: e_i in units (IEEE: exact), divided as U / Z is
            w = e if Z is None else ar.divide(e if ar.is_fixed else ar.exact_sum(e[..., None], -1), Z)
            U = U + ar.sum_products(w, V[:, s:s + block])
    return Zs, U


def divide(ar, U: np.ndarray, Z: np.ndarray, division: str = "once") -> np.ndarray:
    """o = [U / Z] (division once) or [U] (per weight: the weights were divided already), (B, G, m)."""
    if division == "once":
        return ar.divide(U, Z)
    one = np.full(np.shape(U)[:-1], 1 << ar.F if ar.is_fixed else ar.one_units, dtype=object)
    return ar.divide(U, one)   # the exact sum's value rounded (U / Z with Z exactly one)


def attend(ar, A: np.ndarray, V: np.ndarray, division: str = "once", weights: list | None = None) -> np.ndarray:
    """One softmax attention over every position: o (B, G, m) for logits A (B, G, n) and values V
    (B, n, G, m).  ``weights`` (fixed point): the weights' codes [e_i / Z] (B, G, n) are appended to it
    (for display)."""
    M = A.max(axis=-1)
    Z = softmax_sums(ar, A, None, M, width=V.shape[-1])[0] if division == "per-weight" else None
    Z, U = softmax_sums(ar, A, V, M, Z)
    if weights is not None:   # fixed point: (e_i << F) // Z, as the division rounds (not saturated)
        weights.append((ar.exp_weights(A, M) << ar.F) // Z[..., None])
    return divide(ar, U, Z, division)
