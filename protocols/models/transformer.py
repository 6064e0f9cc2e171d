"""Multi-layer softmax-attention transformers with exact binary fixed-point semantics.

The models of the two-layer constructions (Theorems 6, 7 and 13 of [BHBK24]: :mod:`protocols.constructions`
builds their weights), which no one-layer protocol can simulate.  Every value is a code of a
:class:`~commsim.core.precision.FixedPoint` format (value = code * 2^-frac) and every operation is the exact
fixed-point arithmetic of :class:`~commsim.contract.arithmetic.FixedArithmetic` (Appendix B.2: round *down*,
saturate at the range ends):

* a linear map ``[x W]``: the exact integer sum of code products, rounded down once; a bias is then
  added (saturating);
* attention logits ``[<q_i, k_j>]`` the same way; then the softmax of the one attention kernel
  (:func:`protocols.models.attention_kernel.attend`, the kernel of the one-layer
  :class:`~protocols.models.attention.AttentionLayer` too): ``M`` = the row maximum, ``e_j = [exp(A_ij - M)]``,
  ``Z = sum e_j`` and ``U = sum_j [e_j v_j]`` exactly, and ``o = [U / Z]`` -- one division (a one-layer
  model here computes what an AttentionLayer with the same weights computes; the tests check it);
* a layer adds every head's ``[o W_O]`` to its input (residual), then applies an optional ReLU MLP, again
  with a residual;
* a ``readout`` (any function of the last layer's vector at the query position) gives the label.

:class:`MultiLayerAttention` has one head per layer (:class:`Layer`) and reads sequences of exactly its
length; :class:`MultiHeadAttention` allows H heads per layer (:class:`HeadsLayer`) and runs on prefixes
(the nearest-neighbour task of Theorem 7 is defined on every prefix (x_1, y_1, ..., x_k): no causal mask is
needed, the prefix is the whole input).  Both run the same forward.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from commsim.contract import FixedArithmetic
from commsim.core.precision import FixedPoint
from protocols.models.attention_kernel import attend

__all__ = ["Layer", "HeadsLayer", "as_heads", "MultiLayerAttention", "MultiHeadAttention"]

_HEAD = ("W_Q", "W_K", "W_V", "W_O")
_MLP = ("W1", "b1", "W2", "b2")


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


@dataclass(frozen=True)
class HeadsLayer:
    """H attention heads (each a :class:`Layer` whose ``W_Q, W_K, W_V, W_O`` are used, its MLP fields
    ignored) and one MLP (``W1`` (d, h), ``b1`` (h), ``W2`` (h, d), ``b2`` (d) or None)."""

    heads: tuple
    W1: np.ndarray | None = None
    b1: np.ndarray | None = None
    W2: np.ndarray | None = None
    b2: np.ndarray | None = None

    @property
    def width(self) -> int:
        """The largest query/key width of its heads."""
        return max(int(h.W_Q.shape[1]) for h in self.heads)

    @property
    def head_count(self) -> int:
        """H."""
        return len(self.heads)

    @property
    def parameter_count(self) -> int:
        """Numbers in every head's four matrices and the MLP."""
        heads = sum(np.asarray(getattr(h, n)).size for h in self.heads for n in _HEAD)
        return int(heads + sum(np.asarray(getattr(self, n)).size for n in _MLP if getattr(self, n) is not None))


def as_heads(layer) -> HeadsLayer:
    """A :class:`Layer` as a one-head :class:`HeadsLayer` (a HeadsLayer unchanged)."""
    if isinstance(layer, HeadsLayer):
        return layer
    head = Layer(layer.W_Q, layer.W_K, layer.W_V, layer.W_O)
    return HeadsLayer((head,), layer.W1, layer.b1, layer.W2, layer.b2)


@dataclass
class MultiLayerAttention:
    """Token and position embeddings, then ``layers`` (one head each); the output is read at
    ``query_position`` (default: the last position) by ``readout(vector) -> label`` (vectorized over rows).
    ``format`` is the number format (p = :attr:`precision`), ``arithmetic`` its exact kernels."""

    token_embedding: np.ndarray          # (vocab, d)
    position_embedding: np.ndarray       # (seq_len, d)
    layers: list
    format: FixedPoint
    readout: Callable[[np.ndarray], np.ndarray]
    spec: str = ""
    description: str = ""
    info: dict = field(default_factory=dict)

    #: does :meth:`hidden` accept sequences shorter than the position table (a prefix: positions 1..L)?
    prefixes = False

    def __post_init__(self):
        if not isinstance(self.format, FixedPoint):
            raise TypeError(f"{type(self).__name__} computes in binary fixed point; got " + repr(self.format))
        self.arithmetic = FixedArithmetic(self.format)
        fmt = self.format

        def codes(what, arr):
            arr = np.asarray(arr, dtype=np.float64)
            if not np.array_equal(fmt.quantize(arr), arr):
                raise ValueError(f"{what} is not on the {fmt.name} grid")
            return fmt.to_codes(arr, "raise")

        self._tok = codes("token_embedding", self.token_embedding)
        self._pos = codes("position_embedding", self.position_embedding)
        self._layers = []   # per layer: (the heads' weight codes, the MLP's)
        for layer in self.layers:
            layer = as_heads(layer)
            heads = [{n: codes(f"layer parameter {n}", getattr(h, n)) for n in _HEAD} for h in layer.heads]
            mlp = {n: (None if getattr(layer, n) is None else codes(f"layer parameter {n}", getattr(layer, n)))
                   for n in _MLP}
            self._layers.append((heads, mlp))

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
    def _attend(self, x: np.ndarray, head: dict, query_index: np.ndarray | None,
                weights: list | None = None) -> np.ndarray:
        """One head: x (B, L, d) codes -> head output (B, Lq, m_v) codes, every query at once (the weight
        codes are appended to ``weights`` when it is given)."""
        ar = self.arithmetic
        q = ar.matmul(x if query_index is None else x[:, query_index], head["W_Q"])
        k = ar.matmul(x, head["W_K"])
        v = ar.matmul(x, head["W_V"])
        logits = ar.matmul(q, np.swapaxes(k, 1, 2))                      # (B, Lq, L): the queries are the groups
        B, L, m_v = v.shape
        values = np.broadcast_to(v[:, :, None, :], (B, L, logits.shape[1], m_v))   # every query reads them
        return attend(ar, logits, values, weights=weights)

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
        """The last layer's output vectors (values, not codes) at ``query_position`` of each row, shape (B, d).

        With a ``trace`` dict, every layer's output vectors (``layers``, values) and attention weights
        (``weights``, values: (B, queries, L)) are recorded in it."""
        tokens = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
        B, L = tokens.shape
        if self.prefixes and not 1 <= L <= self.seq_len:
            raise ValueError(f"this model reads sequences of length 1..{self.seq_len}, got {L}")
        if not self.prefixes and L != self.seq_len:
            raise ValueError(f"this model reads sequences of length {self.seq_len}, got {L}")
        if tokens.size and (tokens.min() < 0 or tokens.max() >= self._tok.shape[0]):
            raise ValueError(f"tokens must be in 0..{self._tok.shape[0] - 1}")
        ar = self.arithmetic
        x = ar.add(self._tok[tokens], self._pos[None, :L])
        qpos = np.array([query_position % L])
        weights: list | None = [] if trace is not None else None
        for depth, (heads, mlp) in enumerate(self._layers):
            last = depth == len(self._layers) - 1
            qi = qpos if last else None
            y = x[:, qpos] if last else x
            for head in heads:
                y = ar.add(y, ar.matmul(self._attend(x, head, qi, weights), head["W_O"]))
            x = self._mlp(y, mlp)
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


class MultiHeadAttention(MultiLayerAttention):
    """:class:`MultiLayerAttention` whose layers may have several heads (:class:`HeadsLayer`; a
    :class:`Layer` is read as one head) and which runs on prefixes."""

    prefixes = True

    def __post_init__(self):
        self.layers = [as_heads(layer) for layer in self.layers]
        super().__post_init__()

    @property
    def heads(self) -> int:
        """The most heads of any layer."""
        return max(layer.head_count for layer in self.layers)
