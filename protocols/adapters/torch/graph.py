"""Graph transformers and third-order attention from torch ([SHT23]) as commsim's fixed-point models.

A graph transformer written as research code (:mod:`examples.research_graph`: ``embed`` an ``nn.Linear(N, d)``
on the adjacency rows, ``layers`` an ``nn.ModuleList``, ``readout`` an ``nn.Linear(d, 1)`` giving each node's
score) becomes a :class:`~protocols.models.graph_attention.GraphAttention`; each layer is read from its parts:

* ``query``, ``key``, ``value`` (``nn.Linear(d, H m)``, no bias), ``out`` (``nn.Linear(H m, d)``, no bias),
  ``heads``, ``kappa`` (``mask``, or ``bias`` with ``beta`` (H,)) -- ``h + out(concat_t softmax(kappa(X,
  q_t k_t^T)) v_t)``, so head t's W_O is ``out``'s columns t m .. (t + 1) m;
* or ``conv``, a ``torch_geometric`` ``TransformerConv`` (``root_weight=False``, ``bias=False``, ``concat=True``,
  no ``edge_dim``, no ``beta``; H heads of C channels, H C = d) on the messages j -> i of the edges X_ij = 1: head
  t's W_Q is ``lin_query``'s rows t C .. (t + 1) C scaled by 1/sqrt(C), W_O places its C channels at t C;
* ``mlp``: ``nn.Sequential(Linear(d, h), ReLU, Linear(h, d))`` on a residual branch, or None.

The weights are rounded down to the fixed-point format (``precision=P[,frac=F]``, default 32 bits with 16 fraction
bits): commsim's model is that format's graph transformer, which the node-partition protocol simulates bit for
bit.  Before it is returned, the reading is *verified*: the parts composed in float64 (numpy, the semantics read
above) must give the module's own node scores on probe graphs within float32's tolerance, else an
:class:`AdapterError` says the forward is not what the parts say.  One difference is stated, not hidden: a node
with no out-edge attends uniformly to every node under commsim's mask (and under the research layer's
``masked_fill`` with the lowest float), while ``TransformerConv`` sums an empty neighbourhood to 0 -- a
``TransformerConv`` model is verified on graphs where every node has an out-edge, and disagrees elsewhere.

The agreement (:class:`TorchGraphAttention`, the engine's ``torch_agreement``) compares the graph's score --
the largest node score, > 0 iff some node decides 1 -- of commsim's fixed-point model with the module's own
forward; under fixed point that is reported with its max |commsim - torch|, not judged
(:mod:`.trust`).  A third-order module (``W_Q``, ``W_K1``, ``W_K2``, ``W_V1``, ``W_V2``, ``tok``, ``pos``,
``readout``: :class:`examples.research_graph.ThirdOrderSelfAttention`) becomes a
:class:`~protocols.models.pair_attention.ThirdOrderAttention` the same way; it has no protocol (its pair logits
mix Alice's and Bob's tokens), so its agreement is :func:`third_order_agreement`: the pair logits and the
decisions against the module's.
"""
from __future__ import annotations

import math

import numpy as np

from commsim.core.precision import FixedPoint
from protocols.adapters.torch.layers import TOLERANCE, AdapterError, tensor
from protocols.adapters.torch.trust import ModuleForward, TorchTrust
from protocols.models.graph_attention import GraphAttention, GraphHead, GraphLayer, adjacency_rows
from protocols.models.pair_attention import ThirdOrderAttention

__all__ = ["is_graph_module", "is_third_order_module", "wrap_graph", "wrap_third_order", "TorchGraphAttention",
           "TorchThirdOrder", "third_order_agreement", "DEFAULT_FORMAT"]

#: the format a torch model is rounded to when no precision is given
DEFAULT_FORMAT = FixedPoint(32, 16)

#: probe graphs the reading is verified on
PROBES = 8


def _linear(module, name: str):
    import torch.nn as nn
    part = getattr(module, name, None)
    return part if isinstance(part, nn.Linear) else None


def is_graph_module(obj) -> bool:
    """Is ``obj`` a graph transformer written as :mod:`examples.research_graph` writes one (module docstring)?"""
    import torch.nn as nn
    embed, readout = _linear(obj, "embed"), _linear(obj, "readout")
    return (embed is not None and readout is not None and readout.out_features == 1
            and isinstance(getattr(obj, "layers", None), nn.ModuleList))


def is_third_order_module(obj) -> bool:
    """Is ``obj`` a third-order self-attention written with W_Q, W_K1, W_K2, W_V1, W_V2 (module docstring)?"""
    return all(_linear(obj, n) is not None for n in ("W_Q", "W_K1", "W_K2", "W_V1", "W_V2", "readout"))


def _format(fmt) -> FixedPoint:
    fmt = DEFAULT_FORMAT if fmt is None else fmt
    if not isinstance(fmt, FixedPoint):
        raise AdapterError(f"graph and third-order attention compute in binary fixed point (precision=P[,frac=F]); "
                           f"got {fmt.name}")
    return fmt


def _no_bias(lin, what: str) -> np.ndarray:
    if lin.bias is not None:
        raise AdapterError(f"{what} has a bias; commsim's graph attention reads q = h W_Q, k = h W_K, v = h W_V "
                           f"(bias=False)")
    return tensor(lin.weight).T                                            # (in, out): h @ W


def _mlp(layer, label: str):
    """(W1, b1, W2, b2) of the layer's MLP branch, or Nones."""
    import torch.nn as nn
    mlp = getattr(layer, "mlp", None)
    if mlp is None:
        return None, None, None, None
    parts = list(mlp) if isinstance(mlp, nn.Sequential) else []
    if len(parts) != 3 or not isinstance(parts[0], nn.Linear) or not isinstance(parts[1], nn.ReLU) \
            or not isinstance(parts[2], nn.Linear):
        raise AdapterError(f"{label}.mlp must be nn.Sequential(nn.Linear, nn.ReLU, nn.Linear); got {mlp}")
    bias = lambda lin: np.zeros(lin.out_features) if lin.bias is None else tensor(lin.bias)  # noqa: E731
    return tensor(parts[0].weight).T, bias(parts[0]), tensor(parts[2].weight).T, bias(parts[2])


def _read_conv(conv, dim: int, label: str) -> tuple[list, str]:
    """The heads (W_Q, W_K, W_V, W_O, beta) of a torch_geometric TransformerConv, and kappa = mask."""
    H, C = int(conv.heads), int(conv.out_channels)
    refused = [what for what, bad in (("root_weight=True", conv.root_weight), ("concat=False", not conv.concat),
                                      ("edge_dim", conv.lin_edge is not None), ("beta=True", conv.lin_beta is not None),
                                      ("bias=True", conv.lin_query.bias is not None)) if bad]
    if refused or H * C != dim:
        raise AdapterError(f"{label}.conv: commsim reads a TransformerConv with root_weight=False, concat=True, "
                           f"bias=False, no edge_dim, no beta and heads * out_channels = d = {dim} (the block adds "
                           f"the residual); this one has {', '.join(refused) or f'{H} * {C} channels'}")
    Wq, Wk, Wv = (_no_bias(getattr(conv, n), f"{label}.conv.{n}") for n in ("lin_query", "lin_key", "lin_value"))
    heads = []
    for t in range(H):
        cols = slice(t * C, (t + 1) * C)
        W_O = np.zeros((C, dim))
        W_O[:, cols] = np.eye(C)
        heads.append((Wq[:, cols] / math.sqrt(C), Wk[:, cols], Wv[:, cols], W_O, 0.0))
    return heads, "mask"


def _read_layer(layer, dim: int, label: str) -> tuple[list, str]:
    """The heads (W_Q, W_K, W_V, W_O, beta) of a research layer and its kappa."""
    conv = getattr(layer, "conv", None)
    if conv is not None and type(conv).__name__ == "TransformerConv":
        return _read_conv(conv, dim, label)
    parts = {n: _linear(layer, n) for n in ("query", "key", "value", "out")}
    if any(p is None for p in parts.values()):
        raise AdapterError(f"{label} has neither query/key/value/out nn.Linear parts nor a TransformerConv 'conv'")
    H = int(getattr(layer, "heads", 1))
    Wq, Wk, Wv = (_no_bias(parts[n], f"{label}.{n}") for n in ("query", "key", "value"))
    Wo = _no_bias(parts["out"], f"{label}.out")                           # (H m, d)
    if Wq.shape[1] % H:
        raise AdapterError(f"{label}: {Wq.shape[1]} query columns do not split into heads = {H}")
    m = Wq.shape[1] // H
    kappa = str(getattr(layer, "kappa", "mask"))
    if kappa not in ("mask", "bias"):
        raise AdapterError(f"{label}.kappa must be 'mask' or 'bias'; got {kappa!r}")
    beta = np.zeros(H) if kappa == "mask" else tensor(layer.beta).reshape(H)
    return [(Wq[:, t * m:(t + 1) * m], Wk[:, t * m:(t + 1) * m], Wv[:, t * m:(t + 1) * m], Wo[t * m:(t + 1) * m],
             float(beta[t])) for t in range(H)], kappa


def read_graph_parts(module) -> dict:
    """The parts of a graph transformer module as float64 arrays (module docstring)."""
    label = type(module).__name__
    E = _no_bias(module.embed, f"{label}.embed")                           # (N, d)
    dim = E.shape[1]
    layers, kappas = [], set()
    for depth, layer in enumerate(module.layers):
        heads, kappa = _read_layer(layer, dim, f"{label}.layers[{depth}]")
        layers.append((heads, _mlp(layer, f"{label}.layers[{depth}]")))
        kappas.add(kappa)
    if len(kappas) > 1:
        raise AdapterError(f"{label}: every layer must use the same kappa; got {sorted(kappas)}")
    readout = module.readout
    return {"E": E, "layers": layers, "kappa": kappas.pop() if kappas else "mask",
            "w_out": tensor(readout.weight).reshape(-1),
            "b_out": 0.0 if readout.bias is None else float(tensor(readout.bias)[0]),
            "conv": any(getattr(layer, "conv", None) is not None for layer in module.layers)}


def float_node_scores(parts: dict, X: np.ndarray) -> np.ndarray:
    """The parts composed in float64 (the semantics read): every node's score (B, N)."""
    X = np.asarray(X, dtype=np.float64)
    h = X @ parts["E"]
    for heads, (W1, b1, W2, b2) in parts["layers"]:
        y = h.copy()
        for W_Q, W_K, W_V, W_O, beta in heads:
            A = (h @ W_Q) @ np.swapaxes(h @ W_K, 1, 2)
            A = np.where(X == 1, A, -np.inf) if parts["kappa"] == "mask" else A + beta * X
            A = np.where(np.isneginf(A).all(axis=2, keepdims=True), 0.0, A)   # no out-edge: uniform
            w = np.exp(A - A.max(axis=2, keepdims=True))
            y = y + ((w / w.sum(axis=2, keepdims=True)) @ (h @ W_V)) @ W_O
        h = y if W1 is None else y + np.maximum(y @ W1 + b1, 0.0) @ W2 + b2
    return h @ parts["w_out"] + parts["b_out"]


class GraphScores(ModuleForward):
    """tokens (B, N^2) -> the module's graph score (B, 1): its largest node score."""

    def __init__(self, module, nodes: int):
        super().__init__(module)
        self.nodes = nodes

    def __call__(self, tokens):
        import torch
        with torch.no_grad():
            X = adjacency_rows(np.asarray(tokens), self.nodes)
            scores = self.module(torch.as_tensor(X))
        return tensor(scores).max(axis=1, keepdims=True)


class TorchGraphAttention(TorchTrust, GraphAttention):
    """A graph transformer rounded from a torch module: the engine's torch hooks on graph scores."""

    def node_scores(self, X: np.ndarray) -> np.ndarray:
        """Every node's score [h . w] + b as values (B, N) (the decision is > 0)."""
        ar = self.arithmetic
        h = self.states(X)[-1]
        return ar.to_values(ar.add(ar.matmul(h, self._w_out)[..., 0], self._b_out))

    def forward_batch(self, tokens, positions) -> np.ndarray:
        """The graph score (the largest node score) at the output position: (B, len(positions), 1)."""
        X = adjacency_rows(np.asarray(tokens), self.nodes)
        return np.repeat(self.node_scores(X).max(axis=1)[:, None, None], len(tuple(positions)), axis=1)

    def labels(self, raw: np.ndarray) -> np.ndarray:
        """The graph's label from its score values (B, 1), by the model's decision rule."""
        return self.decide_values(raw)


def _probe_graphs(nodes: int, conv: bool) -> np.ndarray:
    X = np.random.default_rng(0).integers(0, 2, size=(PROBES, nodes, nodes))
    if conv:                     # TransformerConv sums an empty neighbourhood to 0: probe where none is empty
        X[:, np.arange(nodes), np.arange(nodes)] = 1
    return X


def wrap_graph(module, fmt=None, *, seq_len: int | None = None, spec: str = "",
               check: bool = True) -> TorchGraphAttention:
    """A :class:`TorchGraphAttention` for a graph transformer module (module docstring)."""
    import torch
    fmt = _format(fmt)
    label = type(module).__name__
    parts = read_graph_parts(module)
    nodes = parts["E"].shape[0]
    if seq_len is not None and seq_len != nodes * nodes:
        raise AdapterError(f"{label} reads digraphs on N = {nodes} nodes ({nodes * nodes} adjacency bits); the task "
                           f"has {seq_len} tokens")
    if check:
        X = _probe_graphs(nodes, parts["conv"])
        with torch.no_grad():
            theirs = tensor(module(torch.as_tensor(X)))
        ours = float_node_scores(parts, X)
        atol, rtol = TOLERANCE["float32"]
        if theirs.shape != ours.shape or not np.all(np.abs(ours - theirs) <= atol + rtol * np.abs(theirs)):
            raise AdapterError(f"{label}'s forward is not the graph transformer read from its parts (embed, layers: "
                               f"query/key/value/out or conv, mlp; readout): its node scores differ on probe graphs")
    q = fmt.quantize
    layers = [GraphLayer(tuple(GraphHead(q(W_Q), q(W_K), q(W_V), q(W_O), float(q(np.array([beta]))[0]))
                               for W_Q, W_K, W_V, W_O, beta in heads),
                         *(None if w is None else q(w) for w in mlp))
              for heads, mlp in parts["layers"]]
    model = TorchGraphAttention(fmt, q(parts["E"]), layers, q(parts["w_out"]), float(q(np.array([parts["b_out"]]))[0]),
                                kappa=parts["kappa"], spec=spec or f"torch:{label}",
                                description=f"{label} ({'TransformerConv' if parts['conv'] else 'graph attention'} "
                                            f"layers) rounded down to {fmt.name}")
    model.torch_forward = GraphScores(module, nodes)
    return model


# ---- third-order attention ---------------------------------------------------------------------------------
class TorchThirdOrder(ThirdOrderAttention):
    """A third-order unit rounded from a torch module; ``torch_module`` is the module itself."""

    torch_module = None


def wrap_third_order(module, fmt=None, *, spec: str = "") -> TorchThirdOrder:
    """A :class:`TorchThirdOrder` for a third-order module (module docstring); ``tok`` an ``nn.Embedding``, ``pos``
    an ``nn.Embedding`` or None."""
    import torch.nn as nn
    fmt = _format(fmt)
    label = type(module).__name__
    tok, pos = getattr(module, "tok", None), getattr(module, "pos", None)
    if not isinstance(tok, nn.Embedding) or not (pos is None or isinstance(pos, nn.Embedding)):
        raise AdapterError(f"{label}: a third-order module needs 'tok' (nn.Embedding) and 'pos' (nn.Embedding or "
                           f"None)")
    q = fmt.quantize
    W = {n: q(_no_bias(getattr(module, n), f"{label}.{n}")) for n in ("W_Q", "W_K1", "W_K2", "W_V1", "W_V2")}
    readout = module.readout
    b = 0.0 if readout.bias is None else float(tensor(readout.bias)[0])
    model = TorchThirdOrder(fmt, q(tensor(tok.weight)), None if pos is None else q(tensor(pos.weight)), W["W_Q"],
                            W["W_K1"], W["W_K2"], W["W_V1"], W["W_V2"], q(tensor(readout.weight).reshape(-1)),
                            float(q(np.array([b]))[0]), spec=spec or f"torch:{label}")
    model.torch_module = module.eval()
    return model


def third_order_agreement(model: TorchThirdOrder, tokens) -> dict:
    """commsim's fixed-point unit against its torch module on token rows (B, N): ``max_abs_logit_diff`` (the pair
    logits a_ijk, values), ``torch_scores`` (B, N) (the module's own forward) and ``decisions`` (B, N) (commsim's),
    with ``decisions_agree`` the fraction of positions decided alike (the torch decision: score > 0)."""
    import torch
    tokens = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
    module = model.torch_module
    with torch.no_grad():
        t = torch.as_tensor(tokens)
        x = module.tok(t) + (0 if module.pos is None else module.pos(torch.arange(tokens.shape[1])))
        logits = torch.einsum("bic,bjc,bkc->bijk", module.W_Q(x), module.W_K1(x), module.W_K2(x))
        scores = tensor(module(t))
    ours_logits = model.arithmetic.to_values(model.logits(tokens))
    decisions = model.outputs(tokens)
    return {"max_abs_logit_diff": float(np.abs(ours_logits - tensor(logits).reshape(ours_logits.shape)).max(initial=0)),
            "torch_scores": scores, "decisions": decisions,
            "decisions_agree": float((decisions == (scores > 0)).mean()), "format": model.format.name}
