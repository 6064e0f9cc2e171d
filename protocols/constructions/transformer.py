"""A multi-layer softmax-attention transformer with exact binary fixed-point semantics.

Used for the two-layer constructions (Theorem 6 of [BHBK24]), which no one-layer protocol can
simulate.  Every value is a code of a :class:`~commsim.core.precision.FixedPoint` format (value = code
* 2^-frac) and every operation is done on the integer codes, so the forward pass is exact and
reproducible (Appendix B.2: round *down*, saturate at the range ends):

* a linear map ``x W + b``: the exact integer sum of code products, shifted down by ``frac``
  (floor), plus ``b``;
* attention logits ``<q_i, k_j>`` the same way; stable softmax: ``M`` = the row maximum,
  ``e_j = [exp(A_ij - M)]`` (so every e_j is in [0, 1]), ``Z = sum e_j`` exactly,
  ``U = sum_j [e_j v_j]`` exactly, and the head output ``o = [U / Z]`` -- one division, exactly the
  semantics of :mod:`protocols.models.attention` (a one-layer model here computes what an
  :class:`~protocols.models.attention.AttentionLayer` with the same weights computes; the tests check it);
* the layer adds ``[o W_O]`` to its input (residual), then applies an optional ReLU MLP, again with a
  residual;
* a ``readout`` (any function of the last layer's vector at the query position) gives the label.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from commsim.core.precision import FixedPoint

__all__ = ["Layer", "MultiLayerAttention"]

_INT64_SAFE = 1 << 62
_FLOAT64_EXACT = 1 << 53


def _int_matmul(a: np.ndarray, b: np.ndarray, bound: int) -> np.ndarray:
    """Exact integer a @ b (batched).  When every partial sum stays below 2^53 in magnitude the
    product runs on float64 BLAS (integer-valued doubles are exact there), else on int64."""
    if bound < _FLOAT64_EXACT:
        return np.rint(np.matmul(a.astype(np.float64), b.astype(np.float64))).astype(np.int64)
    if bound >= _INT64_SAFE:  # pragma: no cover - only for very wide formats
        raise OverflowError("fixed-point product would overflow int64; use a narrower format")
    return np.matmul(a.astype(np.int64), b.astype(np.int64))


@dataclass(frozen=True)
class Layer:
    """One attention layer (one head) and its MLP, as real-valued matrices on the format's grid.

    ``W_Q``, ``W_K``: (d, m); ``W_V``: (d, m_v); ``W_O``: (m_v, d); MLP: ``W1`` (d, h), ``b1`` (h),
    ``W2`` (h, d), ``b2`` (d) or None."""

    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    W1: np.ndarray | None = None
    b1: np.ndarray | None = None
    W2: np.ndarray | None = None
    b2: np.ndarray | None = None

    @property
    def width(self) -> int:
        return int(self.W_Q.shape[1])

    @property
    def parameter_count(self) -> int:
        mats = [self.W_Q, self.W_K, self.W_V, self.W_O, self.W1, self.b1, self.W2, self.b2]
        return int(sum(np.asarray(m).size for m in mats if m is not None))


@dataclass
class MultiLayerAttention:
    """Token and position embeddings, then ``layers``; the output is read at ``query_position``
    (default: the last position) by ``readout(vector) -> label`` (vectorized over rows)."""

    token_embedding: np.ndarray          # (vocab, d)
    position_embedding: np.ndarray       # (seq_len, d)
    layers: list
    fmt: FixedPoint
    readout: Callable[[np.ndarray], np.ndarray]
    spec: str = ""
    description: str = ""
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.fmt, FixedPoint):
            raise TypeError("MultiLayerAttention computes in binary fixed point; got " + repr(self.fmt))
        q = self.fmt.quantize
        for name in ("token_embedding", "position_embedding"):
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            if not np.array_equal(q(arr), arr):
                raise ValueError(f"{name} is not on the {self.fmt.name} grid")
        self._tok = self.fmt.to_codes(self.token_embedding, "raise")
        self._pos = self.fmt.to_codes(self.position_embedding, "raise")
        self._layers = []
        for layer in self.layers:
            codes = {}
            for name in ("W_Q", "W_K", "W_V", "W_O", "W1", "b1", "W2", "b2"):
                m = getattr(layer, name)
                if m is None:
                    codes[name] = None
                    continue
                arr = np.asarray(m, dtype=np.float64)
                if not np.array_equal(q(arr), arr):
                    raise ValueError(f"layer parameter {name} is not on the {self.fmt.name} grid")
                codes[name] = self.fmt.to_codes(arr, "raise")
            self._layers.append(codes)

    # ---- sizes ---------------------------------------------------------------
    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @property
    def seq_len(self) -> int:
        return int(self.position_embedding.shape[0])

    @property
    def embedding_dim(self) -> int:
        return int(self.token_embedding.shape[1])

    @property
    def width(self) -> int:
        """The largest query/key width of any layer."""
        return max(layer.width for layer in self.layers)

    @property
    def precision(self) -> int:
        return self.fmt.bits

    @property
    def parameter_count(self) -> int:
        return int(self.token_embedding.size + self.position_embedding.size +
                   sum(layer.parameter_count for layer in self.layers))

    # ---- exact fixed-point arithmetic -------------------------------------------
    def _clip(self, codes: np.ndarray) -> np.ndarray:
        return np.clip(codes, self.fmt.min_code, self.fmt.max_code)

    def _matmul(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        """floor(x @ w) on the grid, from codes; exact in int64 (checked)."""
        bound = int(np.abs(x).max(initial=0)) * int(np.abs(w).max(initial=0)) * max(w.shape[0], 1)
        return self._clip(_int_matmul(x, w, bound) >> self.fmt.frac)

    def _attend(self, x: np.ndarray, layer: dict, query_index: np.ndarray | None,
                weights: list | None = None) -> np.ndarray:
        """One head: x (B, L, d) codes -> head output (B, Lq, m_v) codes (the weight codes are
        appended to ``weights`` when it is given)."""
        f = self.fmt.frac
        q = self._matmul(x if query_index is None else x[:, query_index], layer["W_Q"])
        k = self._matmul(x, layer["W_K"])
        v = self._matmul(x, layer["W_V"])
        bound = int(np.abs(q).max(initial=0)) * int(np.abs(k).max(initial=0)) * max(q.shape[-1], 1)
        logits = self._clip(_int_matmul(q, np.swapaxes(k, 1, 2), bound) >> f)
        shifted = (logits - logits.max(axis=-1, keepdims=True)).astype(np.float64) * 2.0 ** -f
        e = np.minimum(np.floor(np.exp(shifted) * 2.0 ** f), self.fmt.max_code).astype(np.int64)  # [exp] in [0, 1]
        Z = e.sum(axis=-1)                                                # exact; >= [1] (the maximum's term)
        if weights is not None:                                           # for display: [e_j / Z]
            weights.append((e << f) // Z[..., None])
        U = np.zeros(q.shape[:2] + (v.shape[-1],), dtype=np.int64)        # sum_j [e_j v_j], exact
        step = max(1, (1 << 22) // max(1, e.shape[0] * e.shape[1] * v.shape[-1]))
        for s in range(0, e.shape[2], step):
            U += ((e[:, :, s:s + step, None] * v[:, None, s:s + step, :]) >> f).sum(axis=2)
        return self._clip((U << f) // Z[..., None])                       # [U / Z]: one division
    def _mlp(self, x: np.ndarray, layer: dict) -> np.ndarray:
        if layer["W1"] is None:
            return x
        h = self._matmul(x, layer["W1"])
        if layer["b1"] is not None:
            h = self._clip(h + layer["b1"])
        h = np.maximum(h, 0)
        y = self._matmul(h, layer["W2"])
        if layer["b2"] is not None:
            y = self._clip(y + layer["b2"])
        return self._clip(x + y)

    def hidden(self, tokens: np.ndarray, query_position: int = -1, trace: dict | None = None) -> np.ndarray:
        """The last layer's output vectors (values, not codes) at ``query_position``, shape (B, d).

        With a ``trace`` dict, every layer's output vectors (``layers``, values) and attention weights
        (``weights``, values: (B, queries, L)) are recorded in it."""
        tokens = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
        B, L = tokens.shape
        if L != self.seq_len:
            raise ValueError(f"this model reads sequences of length {self.seq_len}, got {L}")
        if tokens.size and (tokens.min() < 0 or tokens.max() >= self._tok.shape[0]):
            raise ValueError(f"tokens must be in 0..{self._tok.shape[0] - 1}")
        x = self._clip(self._tok[tokens] + self._pos[None, :L])
        qpos = np.array([query_position % L])
        weights: list | None = [] if trace is not None else None
        for depth, layer in enumerate(self._layers):
            last = depth == len(self._layers) - 1
            qi = qpos if last else None
            att = self._matmul(self._attend(x, layer, qi, weights), layer["W_O"])
            base = x[:, qpos] if last else x
            x = self._mlp(self._clip(base + att), layer)
            if trace is not None:
                trace.setdefault("layers", []).append(self.fmt.from_codes(x))
        if trace is not None:
            trace["weights"] = [self.fmt.from_codes(w) for w in weights]
        return self.fmt.from_codes(x[:, 0])

    def forward(self, tokens: np.ndarray, batch: int | None = None) -> np.ndarray:
        """Labels (B,) read at the query position; runs in chunks to bound memory."""
        tokens = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
        L = tokens.shape[1]
        batch = batch or max(1, int(2e7 // max(L * L, 1)))
        outs = [np.asarray(self.readout(self.hidden(tokens[s:s + batch]))).reshape(-1)
                for s in range(0, tokens.shape[0], batch)]
        return np.concatenate(outs) if outs else np.zeros(0, dtype=np.int64)

    __call__ = forward
