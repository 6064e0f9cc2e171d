"""A multi-layer softmax-attention transformer with exact binary fixed-point semantics.

Used for the two-layer constructions (Theorem 6 of [BHBK24]), which no one-layer protocol can
simulate.  Every value is a code of a :class:`~commsim.core.precision.FixedPoint` format (value = code
* 2^-frac) and every operation is the exact fixed-point arithmetic of
:class:`~commsim.core.arithmetic.FixedArithmetic` (Appendix B.2: round *down*, saturate at the range
ends), the same kernels as the one-layer attention model:

* a linear map ``[x W]``: the exact integer sum of code products, rounded down once; a bias is then
  added (saturating);
* attention logits ``[<q_i, k_j>]`` the same way; stable softmax: ``M`` = the row maximum,
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

from commsim.core.arithmetic import FixedArithmetic
from commsim.core.precision import FixedPoint

__all__ = ["Layer", "MultiLayerAttention"]

#: elements of the largest (batch x queries x positions x width) product built at once
_BLOCK_ELEMENTS = 1 << 22


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
        """The query/key width m."""
        return int(self.W_Q.shape[1])

    @property
    def parameter_count(self) -> int:
        """Numbers in the layer's matrices and biases."""
        mats = [self.W_Q, self.W_K, self.W_V, self.W_O, self.W1, self.b1, self.W2, self.b2]
        return int(sum(np.asarray(m).size for m in mats if m is not None))


@dataclass
class MultiLayerAttention:
    """Token and position embeddings, then ``layers``; the output is read at ``query_position``
    (default: the last position) by ``readout(vector) -> label`` (vectorized over rows).  ``format``
    is the number format (p = :attr:`precision`), ``arithmetic`` its exact kernels."""

    token_embedding: np.ndarray          # (vocab, d)
    position_embedding: np.ndarray       # (seq_len, d)
    layers: list
    format: FixedPoint
    readout: Callable[[np.ndarray], np.ndarray]
    spec: str = ""
    description: str = ""
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.format, FixedPoint):
            raise TypeError("MultiLayerAttention computes in binary fixed point; got " + repr(self.format))
        self.arithmetic = FixedArithmetic(self.format)
        q = self.format.quantize
        for name in ("token_embedding", "position_embedding"):
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            if not np.array_equal(q(arr), arr):
                raise ValueError(f"{name} is not on the {self.format.name} grid")
        self._tok = self.format.to_codes(self.token_embedding, "raise")
        self._pos = self.format.to_codes(self.position_embedding, "raise")
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
                    raise ValueError(f"layer parameter {name} is not on the {self.format.name} grid")
                codes[name] = self.format.to_codes(arr, "raise")
            self._layers.append(codes)

    # ---- sizes ---------------------------------------------------------------
    @property
    def num_layers(self) -> int:
        """How many attention layers."""
        return len(self.layers)

    @property
    def seq_len(self) -> int:
        """The sequence length N (rows of the position table)."""
        return int(self.position_embedding.shape[0])

    @property
    def embedding_dim(self) -> int:
        """The embedding dimension d."""
        return int(self.token_embedding.shape[1])

    @property
    def width(self) -> int:
        """The largest query/key width of any layer."""
        return max(layer.width for layer in self.layers)

    @property
    def precision(self) -> int:
        """p: bits per number."""
        return self.format.bits

    @property
    def parameter_count(self) -> int:
        """Numbers in the embeddings and every layer."""
        return int(self.token_embedding.size + self.position_embedding.size +
                   sum(layer.parameter_count for layer in self.layers))

    # ---- the forward, in the exact fixed-point arithmetic ---------------------------------------
    def _attend(self, x: np.ndarray, layer: dict, query_index: np.ndarray | None,
                weights: list | None = None) -> np.ndarray:
        """One head: x (B, L, d) codes -> head output (B, Lq, m_v) codes (the weight codes are
        appended to ``weights`` when it is given)."""
        ar, f = self.arithmetic, self.format.frac
        q = ar.matmul(x if query_index is None else x[:, query_index], layer["W_Q"])
        k = ar.matmul(x, layer["W_K"])
        v = ar.matmul(x, layer["W_V"])
        logits = ar.matmul(q, np.swapaxes(k, 1, 2))                      # (B, Lq, L)
        e = ar.exp_weights(logits, logits.max(axis=-1))                   # [exp(A - M)] in [0, 1]
        Z = ar.sum_weights(e)                                             # exact; >= [1] (the maximum's term)
        if weights is not None:                                           # for display: [e_j / Z]
            weights.append((e << f) // Z[..., None])
        B, Lq, L = e.shape
        U = np.zeros((B, Lq, v.shape[-1]), dtype=np.int64)                # sum_j [e_j v_j], exact
        step = max(1, _BLOCK_ELEMENTS // max(1, B * Lq * v.shape[-1]))
        for s in range(0, L, step):
            block = v[:, s:s + step]                                      # (B, n, m_v): every query reads it
            U = U + ar.sum_products(e[:, :, s:s + step], np.broadcast_to(
                block[:, :, None, :], (B, block.shape[1], Lq, block.shape[2])))
        return ar.divide(U, Z)                                            # [U / Z]: one division

    def _mlp(self, x: np.ndarray, layer: dict) -> np.ndarray:
        """x + [W2 relu([W1 x] + b1)] + b2 (each sum saturating); x itself without an MLP."""
        if layer["W1"] is None:
            return x
        ar = self.arithmetic
        h = ar.matmul(x, layer["W1"])
        if layer["b1"] is not None:
            h = ar.add(h, layer["b1"])
        h = ar.relu(h)
        y = ar.matmul(h, layer["W2"])
        if layer["b2"] is not None:
            y = ar.add(y, layer["b2"])
        return ar.add(x, y)

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
        ar = self.arithmetic
        x = ar.add(self._tok[tokens], self._pos[None, :L])
        qpos = np.array([query_position % L])
        weights: list | None = [] if trace is not None else None
        for depth, layer in enumerate(self._layers):
            last = depth == len(self._layers) - 1
            qi = qpos if last else None
            att = ar.matmul(self._attend(x, layer, qi, weights), layer["W_O"])
            base = x[:, qpos] if last else x
            x = self._mlp(ar.add(base, att), layer)
            if trace is not None:
                trace.setdefault("layers", []).append(self.format.from_codes(x))
        if trace is not None:
            trace["weights"] = [self.format.from_codes(w) for w in weights]
        return self.format.from_codes(x[:, 0])

    def forward(self, tokens: np.ndarray, batch: int | None = None) -> np.ndarray:
        """Labels (B,) read at the query position; runs in chunks to bound memory."""
        tokens = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
        L = tokens.shape[1]
        batch = batch or max(1, int(2e7 // max(L * L, 1)))
        outs = [np.asarray(self.readout(self.hidden(tokens[s:s + batch]))).reshape(-1)
                for s in range(0, tokens.shape[0], batch)]
        return np.concatenate(outs) if outs else np.zeros(0, dtype=np.int64)

    __call__ = forward
