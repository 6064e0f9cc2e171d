"""Attention over pairs (j, k): the higher-order units of [SHT23], with exact binary fixed-point semantics.

Both units let a query i attend jointly over all N^2 pairs of positions (j, k), the pair's logit a *trilinear*
form and its value a Khatri-Rao product (the column-wise Kronecker product of two N x m matrices is N^2 x m,
row (j, k) the entrywise product of row j and row k)::

    a_ijk = [<q_i, k1_j ⊙ k2_k>] = [sum_c q_ic k1_jc k2_kc]       one rounding of the exact integer sum
    v_jk  = [v1_j ⊙ v2_k]                                          each product rounded
    o_i   = the exact softmax of row i over the pairs (and a sink, below)   (the one attention kernel,
            :func:`protocols.models.attention_kernel.attend`: M, e = [exp(a - M)], Z, U exact, o = [U / Z])

* :class:`ThirdOrderAttention` ([SHT23]'s third-order self-attention): tokens s_1..s_N with an embedding
  table and position embeddings, x_i = [E(s_i) + P_i], q = [x W_Q], k1 = [x W_K1], ... (values may have
  their own width m_v), and a readout [o_i . w] + b > 0 at every position.
* :class:`PairGraphAttention` (commsim's definition of the higher-order *graph* unit the slides name): node
  i's token is its adjacency row X_i; q = [X_i W_Q + b_Q] (and k1, k2, v1, v2 alike), the pair logit reads
  the three edges of the triangle (i, j, k): kappa(a_ijk) = [a_ijk + beta (X_ij + X_jk + X_ki)], a sink with
  logit sigma and value 0 joins every row's softmax, and node i answers [o_i . w] + b > 0.

Every parameter must lie on the format's grid.  Values are codes (value = code · 2^-F); a product of two codes
is in units 2^-2F and of three in 2^-3F, so rounding down is an arithmetic shift by F or 2F.
"""
from __future__ import annotations

import numpy as np

from commsim.contract import FixedArithmetic, InputError
from commsim.core.precision import FixedPoint
from protocols.models.attention_kernel import attend

__all__ = ["trilinear_logits", "khatri_rao_values", "pair_attend", "ThirdOrderAttention", "PairGraphAttention"]

#: elements of the largest (batch x queries x pairs x width) product built at once
_BLOCK = 1 << 22


def trilinear_logits(ar: FixedArithmetic, q: np.ndarray, k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
    """a[b, i, j·N + k] = [sum_c q_ic k1_jc k2_kc] for codes q (B, G, m), k1, k2 (B, N, m): (B, G, N^2), int64,
    rounded down once and saturated (exact: int64 while |products| stay below 2^62, Python integers beyond)."""
    B, G, m = q.shape
    N = k1.shape[1]
    pair = k1[:, :, None, :].astype(np.int64) * k2[:, None, :, :].astype(np.int64)   # (B, N, N, m): units 2^-2F
    pair = pair.reshape(B, N * N, m)
    largest = lambda a: max(-int(a.min(initial=0)), int(a.max(initial=0)))  # noqa: E731
    if largest(q) * largest(pair) * max(m, 1) >= 1 << 62:      # beyond int64: exact Python integers
        acc = np.einsum("bgc,bpc->bgp", q.astype(object), pair.astype(object))
        out = np.vectorize(lambda x: x >> (2 * ar.F), otypes=[object])(acc)
        return np.clip(out, ar.lo, ar.hi).astype(np.int64)
    acc = np.einsum("bgc,bpc->bgp", q.astype(np.int64), pair)
    return np.clip(acc >> (2 * ar.F), ar.lo, ar.hi)


def khatri_rao_values(ar: FixedArithmetic, v1: np.ndarray, v2: np.ndarray) -> np.ndarray:
    """v[b, j·N + k] = [v1_j ⊙ v2_k] for codes v1, v2 (B, N, m): (B, N^2, m), each product rounded and saturated."""
    B, N, m = v1.shape
    prod = v1[:, :, None, :].astype(np.int64) * v2[:, None, :, :].astype(np.int64)
    return np.clip(prod >> ar.F, ar.lo, ar.hi).reshape(B, N * N, m)


def pair_attend(ar: FixedArithmetic, logits: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The softmax of every query's row of pair logits (B, G, P) over the pair values (B, P, m): o (B, G, m)."""
    B, G, P = logits.shape
    m = values.shape[-1]
    return attend(ar, logits, np.broadcast_to(values[:, :, None, :], (B, P, G, m)))


def _grid_codes(fmt: FixedPoint, what: str, arr) -> np.ndarray:
    arr = np.asarray(arr, dtype=np.float64)
    if not np.array_equal(fmt.quantize(arr), arr):
        raise InputError(f"parameter {what} is not on the {fmt.name} grid", "model")
    return fmt.to_codes(arr, "raise").astype(np.int64)


def _chunks(B: int, per_row: int):
    step = max(1, _BLOCK // max(per_row, 1))
    return range(0, B, step), step


class ThirdOrderAttention:
    """[SHT23]'s third-order self-attention over tokens (module docstring):
    f(X) = softmax((X W_Q)((X W_K1) ⋆ (X W_K2))ᵀ)((X W_V1) ⋆ (X W_V2)), every position a query.

    ``token_embedding`` (V, d); ``position_embedding`` (N, d) or None; ``W_Q``, ``W_K1``, ``W_K2``: (d, m);
    ``W_V1``, ``W_V2``: (d, m_v); the readout ``w_out`` (m_v,), ``b_out``: position i answers [o_i . w] + b > 0.
    With a position table it reads sequences of exactly its length."""

    def __init__(self, fmt: FixedPoint, token_embedding, position_embedding, W_Q, W_K1, W_K2, W_V1, W_V2,
                 w_out, b_out: float = 0.0, *, spec: str = "third-order-attention", info=None):
        if not isinstance(fmt, FixedPoint):
            raise InputError("third-order attention computes in binary fixed point (precision=P[,frac=F])", "model")
        self.format, self.arithmetic = fmt, FixedArithmetic(fmt)
        c = lambda what, arr: _grid_codes(fmt, what, arr)  # noqa: E731
        self._tok = c("token_embedding", token_embedding)
        if self._tok.ndim != 2:
            raise InputError(f"token_embedding must be (vocab, d); got shape {self._tok.shape}", "model")
        self.vocab_size, self.dim = (int(s) for s in self._tok.shape)
        self._pos = None if position_embedding is None else c("position_embedding", position_embedding)
        if self._pos is not None and (self._pos.ndim != 2 or self._pos.shape[1] != self.dim):
            raise InputError(f"position_embedding must be (N, d = {self.dim}); got {self._pos.shape}", "model")
        self._W = {n: c(n, w) for n, w in (("W_Q", W_Q), ("W_K1", W_K1), ("W_K2", W_K2), ("W_V1", W_V1),
                                          ("W_V2", W_V2))}
        keys = {self._W[n].shape for n in ("W_Q", "W_K1", "W_K2")}
        values = {self._W[n].shape for n in ("W_V1", "W_V2")}
        if len(keys) != 1 or len(values) != 1 or any(s[0] != self.dim for s in keys | values):
            raise InputError(f"W_Q, W_K1, W_K2 must be (d = {self.dim}, m) alike and W_V1, W_V2 (d, m_v) alike; "
                             f"got {sorted(keys)}, {sorted(values)}", "model")
        self.width, self.value_width = int(next(iter(keys))[1]), int(next(iter(values))[1])
        self.seq_len = None if self._pos is None else int(self._pos.shape[0])
        self._w_out = c("w_out", np.asarray(w_out, dtype=np.float64).reshape(self.value_width, 1))
        self._b_out = int(c("b_out", np.array([b_out]))[0])
        self.spec, self.info = spec, dict(info or {})
        self.heads, self.num_layers = 1, 1
        self.no_protocol_reason = (
            f"{spec} is a third-order attention: its softmax runs jointly over the pairs (j, k) and a pair's logit "
            f"<q_i, k1_j ⊙ k2_k> mixes one of Alice's tokens with one of Bob's, so the partial-softmax exchange "
            f"(Theorem 4 of [BHBK24]: each party's exact sums over its own positions) does not factor and no "
            f"bound of one-layer attention applies; `commsim separate match3` sets it against that bound")

    @property
    def precision(self) -> int:
        """p: bits per number."""
        return self.format.bits

    def __repr__(self) -> str:
        return f"<ThirdOrderAttention {self.spec}>"

    def embed(self, tokens: np.ndarray) -> np.ndarray:
        """x_i = [E(s_i) + P_i] codes (B, N, d)."""
        tokens = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
        if tokens.size and (tokens.min() < 0 or tokens.max() >= self.vocab_size):
            raise InputError(f"tokens must be in 0..{self.vocab_size - 1}", "model")
        if self.seq_len is not None and tokens.shape[1] != self.seq_len:
            raise InputError(f"the model reads sequences of length {self.seq_len}; got {tokens.shape[1]}", "model")
        x = self._tok[tokens]
        if self._pos is not None:
            x = self.arithmetic.add(x, self._pos[None]).astype(np.int64)
        return x

    def outputs(self, tokens: np.ndarray) -> np.ndarray:
        """Every position's decision (B, N): 1 iff [o_i . w] + b > 0."""
        tokens = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
        B, N = tokens.shape
        rows, step = _chunks(B, N * N * N * self.width)
        return np.concatenate([self._outputs(tokens[s:s + step]) for s in rows]) if B else \
            np.zeros((0, N), dtype=np.int64)

    def logits(self, tokens: np.ndarray) -> np.ndarray:
        """The pair logits a_ijk (B, N, N^2) as codes."""
        ar = self.arithmetic
        x = self.embed(tokens)
        return trilinear_logits(ar, ar.matmul(x, self._W["W_Q"]), ar.matmul(x, self._W["W_K1"]),
                                ar.matmul(x, self._W["W_K2"]))

    def _outputs(self, tokens: np.ndarray) -> np.ndarray:
        ar = self.arithmetic
        x = self.embed(tokens)
        v1, v2 = ar.matmul(x, self._W["W_V1"]), ar.matmul(x, self._W["W_V2"])
        o = pair_attend(ar, self.logits(tokens), khatri_rao_values(ar, v1, v2))
        score = ar.add(ar.matmul(o, self._w_out)[..., 0], self._b_out)
        return (np.asarray(score) > 0).astype(np.int64)


class PairGraphAttention:
    """The higher-order graph unit (module docstring): attention of node i over the pairs (j, k) whose logit
    reads the triangle's edges X_ij, X_jk, X_ki, with a sink.  ``W_*`` (N, m) and ``b_*`` (m,) the affine maps
    of a node's row; ``beta`` the edge weight, ``sigma`` the sink's logit; ``w_out`` (m,), ``b_out``."""

    def __init__(self, fmt: FixedPoint, maps: dict, beta: float, sigma: float, w_out, b_out: float, *,
                 spec: str = "", info=None):
        if not isinstance(fmt, FixedPoint):
            raise InputError("the pair graph unit computes in binary fixed point (precision=P[,frac=F])", "model")
        self.format, self.arithmetic = fmt, FixedArithmetic(fmt)
        names = ("Q", "K1", "K2", "V1", "V2")
        if set(maps) != set(names):
            raise InputError(f"the pair graph unit needs the maps {', '.join(names)}; got {sorted(maps)}", "model")
        self._maps = {n: (_grid_codes(fmt, f"W_{n}", maps[n][0]), _grid_codes(fmt, f"b_{n}", maps[n][1]))
                      for n in names}
        shapes = {W.shape for W, _ in self._maps.values()}
        if len(shapes) != 1 or any(b.shape != (next(iter(shapes))[1],) for _, b in self._maps.values()):
            raise InputError(f"the maps must all be (N, m) with biases (m,); got {sorted(shapes)}", "model")
        self.nodes, self.width = (int(s) for s in next(iter(shapes)))
        self._beta = int(_grid_codes(fmt, "beta", np.array([beta]))[0])
        self._sigma = int(_grid_codes(fmt, "sigma", np.array([sigma]))[0])
        self._w_out = _grid_codes(fmt, "w_out", np.asarray(w_out, dtype=np.float64).reshape(self.width, 1))
        self._b_out = int(_grid_codes(fmt, "b_out", np.array([b_out]))[0])
        self.spec, self.info = spec, dict(info or {})
        self.heads, self.num_layers = 1, 1
        self.no_protocol_reason = (
            f"{spec or 'the pair graph unit'} attends over pairs (j, k) and its logit reads X_jk, an entry of node "
            f"j's row: with the nodes split, the pair logits mix one party's rows with the other's, so no exchange "
            f"of per-node keys and values computes them (the graph-exchange protocol does not factor); it is the "
            f"upper side of `commsim separate 3cycle`")

    @property
    def precision(self) -> int:
        """p: bits per number."""
        return self.format.bits

    @property
    def seq_len(self) -> int:
        """The input's length in tokens: N^2 adjacency bits."""
        return self.nodes * self.nodes

    def __repr__(self) -> str:
        return f"<PairGraphAttention {self.spec} N={self.nodes}>"

    def _affine(self, X: np.ndarray, name: str) -> np.ndarray:
        W, b = self._maps[name]
        return np.clip(X @ W + b, self.arithmetic.lo, self.arithmetic.hi)

    def node_outputs(self, X: np.ndarray) -> np.ndarray:
        """Every node's decision (B, N) for adjacency matrices X (B, N, N)."""
        X = np.asarray(X)
        if X.ndim == 2:
            X = X[None]
        if X.ndim != 3 or X.shape[1:] != (self.nodes, self.nodes) or (X.size and (X.min() < 0 or X.max() > 1)):
            raise InputError(f"the unit reads 0/1 adjacency matrices on N = {self.nodes} nodes; got shape {X.shape}",
                             "model")
        X = X.astype(np.int64)
        B, N = X.shape[0], self.nodes
        rows, step = _chunks(B, N * N * N * self.width)
        return np.concatenate([self._outputs(X[s:s + step]) for s in rows]) if B else \
            np.zeros((0, N), dtype=np.int64)

    def _outputs(self, X: np.ndarray) -> np.ndarray:
        ar = self.arithmetic
        B, N = X.shape[0], self.nodes
        q, k1, k2, v1, v2 = (self._affine(X, n) for n in ("Q", "K1", "K2", "V1", "V2"))
        logits = trilinear_logits(ar, q, k1, k2)                                     # (B, N, N^2)
        # the triangle's edges: X_ij + X_jk + X_ki for query i and pair (j, k)
        edges = X[:, :, :, None] + X[:, None, :, :] + np.swapaxes(X, 1, 2)[:, :, None, :]
        logits = ar.add(logits, self._beta * edges.reshape(B, N, N * N)).astype(np.int64)
        logits = np.concatenate([logits, np.full((B, N, 1), self._sigma, dtype=np.int64)], axis=2)
        values = np.concatenate([khatri_rao_values(ar, v1, v2), np.zeros((B, 1, self.width), dtype=np.int64)],
                                axis=1)
        o = pair_attend(ar, logits, values)
        score = ar.add(ar.matmul(o, self._w_out)[..., 0], self._b_out)
        return (np.asarray(score) > 0).astype(np.int64)

    def graph_labels(self, X: np.ndarray) -> np.ndarray:
        """The graph's label (B,): the OR of the nodes' decisions."""
        return self.node_outputs(X).max(axis=1)
