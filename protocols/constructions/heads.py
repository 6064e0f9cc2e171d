"""Several heads per layer, and runs on prefixes: what Theorems 7 and 13 of [BHBK24] need beyond
:class:`~protocols.constructions.transformer.MultiLayerAttention`.

A :class:`HeadsLayer` holds H heads (each a :class:`~protocols.constructions.transformer.Layer` whose
``W_Q, W_K, W_V, W_O`` are used, its MLP fields ignored) and one ReLU MLP.  The layer adds every head's
``[o_h W_O^h]`` to its input (residual), then applies the MLP with a residual — the same exact
fixed-point kernels, one head at a time, as the one-head class (a one-head :class:`HeadsLayer`
computes exactly what the one-head :class:`Layer` computes; the tests check it).

:meth:`MultiHeadAttention.hidden` also accepts sequences *shorter* than the position table: the
nearest-neighbour task of Theorem 7 is defined on every prefix (x_1, y_1, ..., x_k) and the model's
answer at x_k is its output on that prefix (no causal mask is needed: the prefix is the whole input).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commsim.core.arithmetic import FixedArithmetic
from protocols.constructions.transformer import Layer, MultiLayerAttention

__all__ = ["HeadsLayer", "MultiHeadAttention", "as_heads", "no_protocol_reason"]

_HEAD = ("W_Q", "W_K", "W_V", "W_O")
_MLP = ("W1", "b1", "W2", "b2")


@dataclass(frozen=True)
class HeadsLayer:
    """H attention heads and one MLP (``W1`` (d, h), ``b1`` (h), ``W2`` (h, d), ``b2`` (d) or None)."""

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


class MultiHeadAttention(MultiLayerAttention):
    """:class:`MultiLayerAttention` whose layers may have several heads and which runs on prefixes."""

    def __post_init__(self):
        self.layers = [as_heads(layer) for layer in self.layers]
        self.arithmetic = FixedArithmetic(self.format)
        fmt = self.format

        def codes(name, arr):
            arr = np.asarray(arr, dtype=np.float64)
            if not np.array_equal(fmt.quantize(arr), arr):
                raise ValueError(f"{name} is not on the {fmt.name} grid")
            return fmt.to_codes(arr, "raise")

        self._tok = codes("token_embedding", self.token_embedding)
        self._pos = codes("position_embedding", self.position_embedding)
        self._layers = []
        for layer in self.layers:
            heads = [{n: codes(n, getattr(h, n)) for n in _HEAD} for h in layer.heads]
            mlp = {n: (None if getattr(layer, n) is None else codes(n, getattr(layer, n))) for n in _MLP}
            self._layers.append((heads, mlp))

    @property
    def heads(self) -> int:
        """The most heads of any layer."""
        return max(layer.head_count for layer in self.layers)

    def hidden(self, tokens: np.ndarray, query_position: int = -1, trace: dict | None = None) -> np.ndarray:
        """The last layer's vectors (values) at ``query_position`` of each row, shape (B, d).  Rows may be
        shorter than the position table (a prefix: positions 1..L)."""
        tokens = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
        B, L = tokens.shape
        if not 1 <= L <= self.seq_len:
            raise ValueError(f"this model reads sequences of length 1..{self.seq_len}, got {L}")
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


def no_protocol_reason(kind: str, task: str) -> str:
    """Why no one-layer protocol wraps a two-layer construction (Lemma 5 of [BHBK24]), and where the numbers are."""
    return (f"{kind} is a two-layer transformer ({task}); the attention protocol (Theorem 4 of [BHBK24]) simulates "
            f"one layer only, and no protocol of that kind exists for two layers: for every balanced partition "
            f"some two-layer width-O(log N) transformer needs >= N/2 bits of communication (Lemma 5 and Corollary "
            f"13.1, Appendix F.4 of [BHBK24]); `commsim separate two-layers` computes that communication matrix's "
            f"rank and fooling set on random balanced partitions")
