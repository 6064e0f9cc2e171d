"""The float64 reference forward of an :class:`~protocols.models.attention.AttentionLayer`: the same rounded
parameters, no intermediate rounding -- what the exact layer is compared with to show how far finite precision
moves it (the lessons, the tests)."""
from __future__ import annotations

import numpy as np

from protocols.models.attention_positions import alibi_float, rotate_float


def float_embedding(layer, tokens: np.ndarray) -> np.ndarray:
    """x_i = E_tok(s_i) + E_pos(i) in float64 (the rounded parameters, the sum not rounded)."""
    val = layer.arithmetic.to_values
    tok = val(layer._token_rep(tokens))
    pos = layer._position_rep(np.arange(tokens.shape[1]))
    return tok if pos is None else tok + val(pos)[None]


def float_forward(layer, tokens, query: int | None = None) -> np.ndarray:
    """A plain float64 forward with the same (rounded) parameters: no intermediate rounding."""
    tokens = np.atleast_2d(np.asarray(tokens))
    N = tokens.shape[1]
    qpos = layer.query_position(N) if query is None else int(query)
    val = layer.arithmetic.to_values
    x = float_embedding(layer, tokens)
    keep = layer.attended(N, qpos)
    Wq, Wk, Wv = val(layer.W_Q), val(layer.W_K), val(layer.W_V)
    q = np.einsum("hmd,bd->bhm", Wq, x[:, qpos])
    k = np.einsum("hmd,bnd->bnhm", Wk, x[:, keep])
    v = np.einsum("hmd,bnd->bnhm", Wv, x[:, keep])
    if layer.rope:
        q, k = rotate_float(q[:, None], [qpos], layer.config)[:, 0], rotate_float(k, keep, layer.config)
    A = np.einsum("bhm,bnhm->bhn", q, k) + (0.0 if layer.alibi is None else alibi_float(layer.alibi, keep, qpos))
    w = np.exp(A - A.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    o = np.einsum("bhn,bnhm->bhm", w, v).reshape(len(tokens), -1)
    y = o @ val(layer.W_O).T
    if layer.residual_coords is not None:
        y = np.concatenate([y, x[:, qpos][:, layer.residual_coords]], axis=1)
    if layer.psi_fn is not None:
        return np.asarray(layer.psi_fn(y), dtype=np.float64).reshape(len(tokens), -1)
    for i, (W, b) in enumerate(layer.psi_layers):
        y = y @ val(W).T + val(b)
        if i < len(layer.psi_layers) - 1:
            y = np.maximum(y, 0.0)
    return y
