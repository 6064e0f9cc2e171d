"""Graph transformers on a digraph's adjacency matrix, with exact binary fixed-point semantics ([SHT23]).

The input is the adjacency matrix X in {0,1}^{N x N} of a digraph on the nodes 0..N-1; node i's token is row i
(X_ij = 1 iff the edge i -> j).  Every value is a code of a :class:`~commsim.core.precision.FixedPoint` format
and every operation the exact fixed-point arithmetic of :class:`~commsim.contract.arithmetic.FixedArithmetic`
(round down once, saturate), as in :mod:`protocols.models.transformer`::

    h^0_i   = [sum_j X_ij E_j + b_E]                 the row's embedding: E (N x d), an exact sum of codes, saturated
                                                     (then relu, for ``embed_activation="relu"``)
    per layer l = 1..L and head t = 1..H:
      q_i = [h_i W_Q] + b_Q,  k_i = [h_i W_K] + b_K,  v_i = [h_i W_V] + b_V      (m numbers each; biases optional)
      A_ij = kappa(X_ij, [<q_i, k_j>])               kappa reads the edge bit X_ij:
                                                     ``mask``: A_ij if X_ij = 1, else the format's lowest code;
                                                     ``bias``: [A_ij + beta_t X_ij] (saturating)
      o_i  = the exact softmax of row i over j = 0..N-1   (:func:`protocols.models.attention_kernel.attend`:
             M the row maximum, e_j = [exp(A_ij - M)], Z, U exact sums in units, o = [U / Z]);
             under ``mask`` with ``empty="zero"``, o_i = 0 when row i has no edge (an empty neighbourhood)
    y_i     = [r_i + [h_i W_root] + b_root + sum_t [o_i^t W_O^t] + b_O]
                                                     r_i = h_i (``residual``) or 0; the root weight (a per-node
                                                     linear map) and b_O optional; each sum saturating
    h_i     = [y_i + [W2 relu([y_i W1] + b1)] + b2]  an MLP with a residual (none when the layer has no MLP),
                                                     then relu for ``activation="relu"``
    out_i   = [h_i . w] + b                          node i's score, decided by the model's rule (Directed 3-Cycle:
                                                     is i on a 3-cycle?)

and the graph's label is the OR of the nodes' decisions.  Row i's softmax reads only row i of X, the node's
own query and every node's key and value: so the parties of the node-partition protocol
(:mod:`protocols.simulators.graph`) exchange keys and values and finish their own rows locally -- with the same
functions as the direct forward (:meth:`GraphAttention.embed`, :meth:`GraphAttention.keys_values`,
:meth:`GraphAttention.attend_rows`, :meth:`GraphAttention.node_labels`), bit for bit.

Under ``mask`` a row without out-edges (an empty neighbourhood) has every logit at the lowest code: with
``empty="uniform"`` its softmax is uniform over every node (Z > 0 always: the maximum's weight is [1]), as a
``masked_fill`` with the lowest float computes; with ``empty="zero"`` its attention output is 0, as a
message-passing sum over no edges (``torch_geometric``'s ``TransformerConv``) computes.  Either way it reads row
i alone, which its owner holds: the protocol stays exact.  The node states may change width from layer to layer
(W_Q (d_in, m), W_O and W_root (., d_out); the residual needs d_in = d_out).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commsim.contract import FixedArithmetic, InputError
from commsim.core.precision import FixedPoint
from protocols.models.attention_kernel import attend
from protocols.models.decides import Decides
from protocols.theorems import graph_nodes as nodes_of_length

__all__ = ["KAPPAS", "EMPTY", "ACTIVATIONS", "GraphHead", "GraphLayer", "GraphAttention", "random_graph_attention",
           "adjacency_rows", "rows_to_tokens", "nodes_of_length"]

#: the edge functions kappa(X_ij, logit) a head may use
KAPPAS = ("mask", "bias")
#: what attention over an empty neighbourhood (a row without edges, under ``mask``) gives
EMPTY = ("uniform", "zero")
#: what a layer (or the embedding) applies at its end
ACTIVATIONS = ("none", "relu")


def adjacency_rows(tokens: np.ndarray, nodes: int) -> np.ndarray:
    """Flattened adjacency bits (B, N^2) -> the matrices X (B, N, N) as 0/1 int64."""
    tokens = np.atleast_2d(np.asarray(tokens))
    return tokens.reshape(tokens.shape[0], nodes, nodes).astype(np.int64)


def rows_to_tokens(X: np.ndarray) -> np.ndarray:
    """Adjacency matrices (B, N, N) -> the flattened token rows (B, N^2), uint8."""
    X = np.asarray(X)
    return X.reshape(X.shape[0], -1).astype(np.uint8)


@dataclass(frozen=True)
class GraphHead:
    """One head: ``W_Q``, ``W_K``, ``W_V`` (d_in, m), ``W_O`` (m, d_out), for kappa = ``bias`` the edge bonus beta,
    and optional biases ``b_Q``, ``b_K``, ``b_V`` (m,)."""

    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    beta: float = 0.0
    b_Q: np.ndarray | None = None
    b_K: np.ndarray | None = None
    b_V: np.ndarray | None = None


@dataclass(frozen=True)
class GraphLayer:
    """H heads and an optional MLP (``W1`` (d_out, h), ``b1`` (h), ``W2`` (h, d_out), ``b2`` (d_out)); the
    optional root weight ``W_root`` (d_in, d_out) with ``b_root`` and the heads' bias ``b_O`` (d_out);
    ``residual`` (add the layer's input) and ``activation`` at the layer's end (module docstring)."""

    heads: tuple
    W1: np.ndarray | None = None
    b1: np.ndarray | None = None
    W2: np.ndarray | None = None
    b2: np.ndarray | None = None
    W_root: np.ndarray | None = None
    b_root: np.ndarray | None = None
    b_O: np.ndarray | None = None
    residual: bool = True
    activation: str = "none"


class GraphAttention(Decides):
    """A graph transformer over N nodes (module docstring: the exact semantics).

    ``fmt``: a :class:`FixedPoint` format; ``E``: (N, d) the row embedding, ``b_embed`` (d,) its bias and
    ``embed_activation``; ``layers``: :class:`GraphLayer` values; ``w_out`` (d_L,), ``b_out``: the nodes'
    readout; ``kappa``: ``mask`` or ``bias``; ``empty``: ``uniform`` or ``zero``.  Every parameter must lie on the
    format's grid (weights are quantized by the builders, never silently here)."""

    def __init__(self, fmt: FixedPoint, E, layers, w_out, b_out: float = 0.0, *, kappa: str = "mask",
                 empty: str = "uniform", b_embed=None, embed_activation: str = "none", spec: str = "",
                 description: str = ""):
        if not isinstance(fmt, FixedPoint):
            raise InputError(f"graph-attention computes in binary fixed point (precision=P[,frac=F]); got {fmt.name}",
                             "model")
        for what, value, allowed in (("kappa", kappa, KAPPAS), ("empty", empty, EMPTY),
                                     ("embed_activation", embed_activation, ACTIVATIONS)):
            if value not in allowed:
                raise InputError(f"{what} must be one of {', '.join(allowed)}; got {value!r}", "model")
        if not layers:
            raise InputError("graph-attention needs at least one layer", "model")
        self.format, self.kappa, self.empty, self.embed_activation = fmt, kappa, empty, embed_activation
        self.arithmetic = FixedArithmetic(fmt)
        E = np.asarray(E, dtype=np.float64)
        if E.ndim != 2:
            raise InputError(f"the row embedding E must be (N, d); got shape {E.shape}", "model")
        self.nodes, self.dim = int(E.shape[0]), int(E.shape[1])
        self._E = self._codes("E", E)
        self._b_E = None if b_embed is None else self._vector("b_embed", b_embed, self.dim)
        self.layers = list(layers)
        self._layers = []
        d_in = self.dim
        for depth, layer in enumerate(self.layers):
            heads, d_in = self._read_layer(depth, layer, d_in)
            self._layers.append(heads)
        self._w_out = self._codes("w_out", np.asarray(w_out, dtype=np.float64).reshape(d_in, 1))
        self._b_out = int(self._codes("b_out", np.array([b_out]))[0])
        self.spec = spec or (f"graph-attention:layers={self.num_layers},heads={self.heads},width={self.width},"
                             f"{fmt.spec_keys}")
        self.description = description

    def _vector(self, what: str, arr, size: int) -> np.ndarray:
        codes = self._codes(what, np.asarray(arr, dtype=np.float64).reshape(-1))
        if codes.shape != (size,):
            raise InputError(f"graph-attention parameter {what} must have {size} entries; got {codes.size}", "model")
        return codes

    def _read_layer(self, depth: int, layer: GraphLayer, d_in: int) -> tuple[tuple[list, dict], int]:
        """(the layer's heads and parts as codes, its output width), or an InputError naming the bad shape."""
        where = f"layer {depth}"
        if not layer.heads:
            raise InputError(f"{where} has no head", "model")
        if layer.activation not in ACTIVATIONS:
            raise InputError(f"{where}: activation must be one of {', '.join(ACTIVATIONS)}; got {layer.activation!r}",
                             "model")
        d_out = int(np.shape(layer.heads[0].W_O)[-1])
        heads = []
        for t, head in enumerate(layer.heads):
            shapes = [np.shape(head.W_Q), np.shape(head.W_K), np.shape(head.W_V)]
            if any(len(s) != 2 or s[0] != d_in for s in shapes) or len({s[1] for s in shapes}) != 1:
                raise InputError(f"{where} head {t}: W_Q, W_K, W_V must be (d = {d_in}, m) alike; got {shapes}",
                                 "model")
            m = shapes[0][1]
            if np.shape(head.W_O) != (m, d_out):
                raise InputError(f"{where} head {t}: W_O must be (m, d_out) = ({m}, {d_out}); got "
                                 f"{np.shape(head.W_O)}", "model")
            heads.append({n: self._codes(n, getattr(head, n)) for n in ("W_Q", "W_K", "W_V", "W_O")}
                         | {n: None if getattr(head, n) is None else self._vector(n, getattr(head, n), m)
                            for n in ("b_Q", "b_K", "b_V")}
                         | {"beta": int(self._codes("beta", np.array([head.beta]))[0])})
        widths = {h["W_Q"].shape[1] for h in heads}
        if len(widths) != 1:
            raise InputError(f"{where}: every head must have the same width m; got {sorted(widths)}", "model")
        if layer.residual and d_in != d_out:
            raise InputError(f"{where}: a residual needs the same width in and out; got {d_in} -> {d_out}", "model")
        if layer.W_root is not None and np.shape(layer.W_root) != (d_in, d_out):
            raise InputError(f"{where}: W_root must be (d_in, d_out) = ({d_in}, {d_out}); got "
                             f"{np.shape(layer.W_root)}", "model")
        parts = {n: None if getattr(layer, n) is None else self._codes(n, getattr(layer, n))
                 for n in ("W1", "b1", "W2", "b2", "W_root")}
        parts |= {n: None if getattr(layer, n) is None else self._vector(n, getattr(layer, n), d_out)
                  for n in ("b_root", "b_O")}
        parts |= {"residual": bool(layer.residual), "activation": layer.activation, "d_out": d_out}
        return (heads, parts), d_out

    def _codes(self, what: str, arr) -> np.ndarray:
        arr = np.asarray(arr, dtype=np.float64)
        if not np.array_equal(self.format.quantize(arr), arr):
            raise InputError(f"graph-attention parameter {what} is not on the {self.format.name} grid", "model")
        return self.format.to_codes(arr, "raise").astype(np.int64)

    # ---- sizes ----------------------------------------------------------------------------------------
    @property
    def num_layers(self) -> int:
        """L."""
        return len(self._layers)

    @property
    def heads(self) -> int:
        """H (the most heads of any layer)."""
        return max(len(heads) for heads, _ in self._layers)

    @property
    def width(self) -> int:
        """m: the query/key/value width of a head (the largest over layers)."""
        return max(heads[0]["W_Q"].shape[1] for heads, _ in self._layers)

    @property
    def precision(self) -> int:
        """p: bits per number."""
        return self.format.bits

    @property
    def seq_len(self) -> int:
        """The input's length in tokens: N^2 adjacency bits."""
        return self.nodes * self.nodes

    def layer_shape(self, depth: int) -> tuple[int, int]:
        """(heads, width) of layer ``depth``."""
        heads = self._layers[depth][0]
        return len(heads), int(heads[0]["W_Q"].shape[1])

    def __repr__(self) -> str:
        return f"<GraphAttention {self.spec} N={self.nodes}>"

    # ---- the pieces every party computes ------------------------------------------------------------
    def embed(self, rows: np.ndarray) -> np.ndarray:
        """h^0 of the nodes whose rows are given: rows (B, k, N) 0/1 -> codes (B, k, d)."""
        ar = self.arithmetic
        acc = np.asarray(rows, dtype=np.int64) @ self._E
        if self._b_E is not None:
            acc = acc + self._b_E
        h = np.clip(acc, ar.lo, ar.hi)
        return ar.relu(h) if self.embed_activation == "relu" else h

    def _affine(self, h: np.ndarray, W: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        """[h W] + b (b on the grid: the sum is exact but for saturation), int64 codes."""
        ar = self.arithmetic
        out = ar.matmul(h, W)
        return out if b is None else ar.add(out, b).astype(np.int64)

    def keys_values(self, h: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """Keys and values of the nodes whose states are ``h`` (B, k, d): two (B, k, H, m) code arrays."""
        heads = self._layers[depth][0]
        K = np.stack([self._affine(h, head["W_K"], head["b_K"]) for head in heads], axis=2)
        V = np.stack([self._affine(h, head["W_V"], head["b_V"]) for head in heads], axis=2)
        return K, V

    def attend_rows(self, h: np.ndarray, X: np.ndarray, K: np.ndarray, V: np.ndarray, depth: int) -> np.ndarray:
        """Layer ``depth`` for the nodes whose states h (B, r, d_in) and rows X (B, r, N) are given, from every
        node's keys and values K, V (B, N, H, m): their new states (B, r, d_out)."""
        ar = self.arithmetic
        heads, parts = self._layers[depth]
        X = np.asarray(X, dtype=np.int64)
        h = np.asarray(h, dtype=np.int64)
        B, r, _ = h.shape
        y = h if parts["residual"] else np.zeros((B, r, parts["d_out"]), dtype=np.int64)
        if parts["W_root"] is not None:     # the root weight: a per-node linear map of the node's own state
            y = ar.add(y, self._affine(h, parts["W_root"], parts["b_root"])).astype(np.int64)
        empty = ~X.any(axis=-1, keepdims=True) if self.kappa == "mask" and self.empty == "zero" else None
        for t, head in enumerate(heads):
            q = self._affine(h, head["W_Q"], head["b_Q"])                        # (B, r, m)
            logits = ar.matmul(q, np.swapaxes(K[:, :, t, :], 1, 2))              # (B, r, N): rows are the groups
            if self.kappa == "mask":
                logits = np.where(X == 1, logits, ar.lo)
            else:
                logits = ar.add(logits, head["beta"] * X).astype(np.int64)
            values = np.broadcast_to(V[:, :, t, None, :], (B, V.shape[1], r, V.shape[-1]))
            o = attend(ar, logits, values)                                       # (B, r, m)
            if empty is not None:                   # an empty neighbourhood sums no message: 0
                o = np.where(empty, 0, o)
            y = ar.add(y, ar.matmul(o, head["W_O"])).astype(np.int64)
        if parts["b_O"] is not None:
            y = ar.add(y, parts["b_O"]).astype(np.int64)
        y = self._mlp(y, parts)
        return ar.relu(y) if parts["activation"] == "relu" else y

    def _mlp(self, y: np.ndarray, mlp: dict) -> np.ndarray:
        """y + [W2 relu([y W1] + b1)] + b2 (each sum saturating); y itself without an MLP."""
        if mlp["W1"] is None:
            return y
        ar = self.arithmetic
        u = ar.matmul(y, mlp["W1"])
        if mlp["b1"] is not None:
            u = ar.add(u, mlp["b1"])
        u = ar.matmul(ar.relu(u), mlp["W2"])
        if mlp["b2"] is not None:
            u = ar.add(u, mlp["b2"])
        return ar.add(y, u).astype(np.int64)

    #: one score per node: decided by its sign, or at 1/2 for a probability (:class:`Decides`)
    output_width = 1

    def decision_values(self, raw: np.ndarray) -> np.ndarray:
        """Score values of score codes (..., 1)."""
        return np.asarray(self.arithmetic.to_values(np.asarray(raw)), dtype=np.float64)

    def node_score_codes(self, h: np.ndarray) -> np.ndarray:
        """Each node's score [h . w] + b from its last state h (B, k, d_L): codes (B, k)."""
        ar = self.arithmetic
        return np.asarray(ar.add(ar.matmul(h, self._w_out)[..., 0], self._b_out))

    def node_labels(self, h: np.ndarray) -> np.ndarray:
        """Each node's decision from its last state h (B, k, d_L): its score [h . w] + b decided by the model's
        rule (sign: 1 iff > 0), (B, k) int64."""
        return self.decide_raw(self.node_score_codes(h)[..., None])

    # ---- the direct forward ---------------------------------------------------------------------------
    def check_input(self, X: np.ndarray) -> np.ndarray:
        """X as (B, N, N) 0/1 int64, or an InputError naming the model."""
        X = np.asarray(X)
        if X.ndim == 2:
            X = X[None]
        if X.ndim != 3 or X.shape[1:] != (self.nodes, self.nodes):
            raise InputError(f"the model reads digraphs on N = {self.nodes} nodes ((B, {self.nodes}, {self.nodes}) "
                             f"adjacency matrices); got shape {X.shape}", "model")
        if X.size and (X.min() < 0 or X.max() > 1):
            raise InputError("adjacency entries must be 0 or 1", "model")
        return X.astype(np.int64)

    def states(self, X: np.ndarray) -> list[np.ndarray]:
        """Every node's state after the embedding and after each layer: L + 1 code arrays (B, N, d)."""
        X = self.check_input(X)
        h = self.embed(X)
        out = [h]
        for depth in range(self.num_layers):
            K, V = self.keys_values(h, depth)
            h = self.attend_rows(h, X, K, V, depth)
            out.append(h)
        return out

    def node_outputs(self, X: np.ndarray) -> np.ndarray:
        """Every node's decision (B, N)."""
        return self.node_labels(self.states(X)[-1])

    def graph_labels(self, X: np.ndarray) -> np.ndarray:
        """The graph's label (B,): the OR of the nodes' decisions."""
        return self.node_outputs(X).max(axis=1)

    def forward_tokens(self, tokens: np.ndarray) -> np.ndarray:
        """The graph labels (B, 1) of flattened adjacency bits (B, N^2)."""
        tokens = np.atleast_2d(np.asarray(tokens))
        if tokens.shape[1] != self.seq_len:
            raise InputError(f"the model reads N^2 = {self.seq_len} adjacency bits (N = {self.nodes} nodes); the "
                             f"input has {tokens.shape[1]} tokens", "model")
        return self.graph_labels(adjacency_rows(tokens, self.nodes))[:, None]


def random_graph_attention(fmt: FixedPoint, nodes: int, *, layers: int = 1, heads: int = 1, width: int = 2,
                           dim: int = 4, mlp: int = 4, kappa: str = "mask", empty: str = "uniform", seed: int = 0,
                           spec: str = "") -> GraphAttention:
    """A graph transformer with random weights on the format's grid (normal, scaled by 1/sqrt(fan-in),
    rounded down); ``mlp`` = 0 leaves the MLPs out; ``empty``: what an empty neighbourhood gives."""
    rng = np.random.default_rng(seed)
    q = fmt.quantize

    def w(*shape, fan=None):
        return q(rng.normal(0.0, 1.0 / np.sqrt(fan or shape[0]), size=shape))

    built = []
    for _ in range(layers):
        hs = tuple(GraphHead(w(dim, width), w(dim, width), w(dim, width), w(width, dim),
                             float(q(np.array([abs(rng.normal(0, 2.0))]))[0]) if kappa == "bias" else 0.0)
                   for _ in range(heads))
        if mlp:
            built.append(GraphLayer(hs, w(dim, mlp), w(mlp, fan=dim), w(mlp, dim), w(dim, fan=mlp)))
        else:
            built.append(GraphLayer(hs))
    return GraphAttention(fmt, w(nodes, dim, fan=max(nodes // 2, 1)), built, w(dim),
                          float(q(np.array([rng.normal(0, 0.5)]))[0]), kappa=kappa, empty=empty, spec=spec)
