"""Lemma 5 of [BHBK24]: for every balanced partition (S_A, S_B) of the N positions, a two-layer transformer
of width and precision O(log N) computes f(x) = 1[x_(S_A) != x_(S_B)] (the k-th position of S_A paired with the
k-th of S_B), which needs N/2 bits of communication between the holders of x_(S_A) and x_(S_B).

The model is Theorem 6's (``construct:eq2``) with its position codes renumbered: S_A's k-th position gets
the code of position k and S_B's k-th the code of position N/2 + k (the paper's proof).
:func:`communication_matrix` evaluates the model on every input and arranges its outputs as the 2^(N/2) x
2^(N/2) matrix M[x_(S_A), x_(S_B)], whose rank and fooling sets the engine's tools then compute.
"""
from __future__ import annotations

import numpy as np

from protocols.constructions.eq2 import build_eq2
from protocols.constructions.orthogonal import DEFAULT_GAMMA
from protocols.models.transformer import MultiLayerAttention

__all__ = ["lemma5_model", "balanced_partition", "communication_matrix", "lemma5_function"]


def balanced_partition(N: int, alice=None, rng=None) -> tuple[np.ndarray, np.ndarray]:
    """(S_A, S_B), 0-based and sorted: ``alice`` given (N/2 distinct positions), or a seeded random half."""
    S_A = np.sort(np.asarray(alice, dtype=np.int64)) if alice is not None else np.sort(rng.choice(N, N // 2, replace=False))
    return S_A, np.setdiff1d(np.arange(N), S_A)


def lemma5_model(N: int, S_A, S_B, *, gamma: float = DEFAULT_GAMMA, seed: int = 0) -> MultiLayerAttention:
    """Theorem 6's two-layer model with renumbered position codes: it computes 1[x_(S_A) != x_(S_B)]."""
    base = build_eq2(N // 2, gamma=gamma, seed=seed)
    pos = np.asarray(base.position_embedding)
    renumbered = np.empty_like(pos)
    renumbered[np.asarray(S_A)] = pos[:N // 2]
    renumbered[np.asarray(S_B)] = pos[N // 2:]
    model = MultiLayerAttention(base.token_embedding, renumbered, base.layers, base.format, base.readout,
                                spec=f"lemma5:N={N}", description="Lemma 5 of [BHBK24]: renumbered construct:eq2",
                                info={**base.info, "construction": "Lemma 5 of [BHBK24] (Theorem 6 renumbered)"})
    model.no_protocol_reason = base.no_protocol_reason
    return model


def lemma5_function(X: np.ndarray, S_A, S_B) -> np.ndarray:
    """f_(S_A, S_B)(x) = 1[x_(S_A) != x_(S_B)] for each row."""
    X = np.atleast_2d(X)
    return np.any(X[:, S_A] != X[:, S_B], axis=1).astype(np.int64)


def communication_matrix(model, S_A, S_B) -> tuple[np.ndarray, np.ndarray]:
    """The model's outputs on every x in {0,1}^N as M[a, b] (a = x_(S_A), b = x_(S_B) read as binary numbers,
    first position most significant), and the inputs X in the same row-major order."""
    half = len(S_A)
    codes = np.arange(1 << half)
    bits = ((codes[:, None] >> np.arange(half - 1, -1, -1)) & 1).astype(np.int64)
    X = np.zeros((1 << (2 * half), 2 * half), dtype=np.int64)
    X[:, S_A] = np.repeat(bits, 1 << half, axis=0)
    X[:, S_B] = np.tile(bits, (1 << half, 1))
    return np.asarray(model.forward(X)).reshape(1 << half, 1 << half), X
