"""Graph transformers and third-order attention from torch ([SHT23]) as commsim's fixed-point models.

A graph transformer written as research code -- an embedding ``nn.Linear(N, d)`` of the adjacency rows, layers in
an ``nn.ModuleList`` (``torch_geometric``'s ``TransformerConv`` with its defaults, blocks holding one, or
hand-written attention blocks with any usual score scale), a readout ``nn.Linear(d, 1)`` giving each node's score
(:mod:`examples.research_graph`) -- is read by :mod:`.graph_read`: its parts, and from its own forward on probe
graphs what the parts do not say (the score scale, residuals and ReLUs between the parts, and what a node with an
empty neighbourhood gets: ``TransformerConv`` sums no message to 0, a ``masked_fill`` with the lowest float
attends uniformly).  The result becomes a :class:`~protocols.models.graph_attention.GraphAttention` with those
semantics, which the node-partition protocol (:mod:`protocols.simulators.graph`) simulates bit for bit: a root
weight and an empty neighbourhood are per-node computations each party does for its own nodes.

The weights are rounded down to the fixed-point format (``precision=P[,frac=F]``, default 32 bits with 16 fraction
bits).  Before the model is returned the reading is *verified*: the parts composed in float64 must give the
module's own node scores on the probe graphs (nodes with empty neighbourhoods among them) within the module
dtype's tolerance, else an :class:`AdapterError` says the forward is not what the parts say.

The agreement (:class:`TorchGraphAttention`, the engine's ``torch_agreement``) compares the graph's score -- the
largest node score -- of commsim's fixed-point model with the module's own forward; the run's fixed-point format
is reported, not judged (:mod:`.trust`), and commsim's *reading* of the module is judged apart: the same graph
model built at :data:`READING_FORMAT` (:class:`FineReading`, the model's ``reading``), whose rounding is far
below the module's own float32 error, against the module under that format's tolerance
(:data:`~protocols.adapters.torch.layers.TOLERANCE`), so a misreading shows as ``ok`` False.

A third-order module (``W_Q``, ``W_K1``, ``W_K2``, ``W_V1``, ``W_V2``, ``tok``, ``pos``, ``readout``:
:class:`examples.research_graph.ThirdOrderSelfAttention`) becomes a
:class:`~protocols.models.pair_attention.ThirdOrderAttention` the same way; it has no protocol (its pair logits
mix Alice's and Bob's tokens), so its agreement is :func:`third_order_agreement`: the pair logits and the
decisions against the module's.
"""
from __future__ import annotations

import numpy as np

from commsim.core.precision import FixedPoint
from protocols.adapters.torch.graph_read import float_node_scores, is_graph_module, read_graph
from protocols.adapters.torch.layers import TOLERANCE, AdapterError, dtype_name, tensor
from protocols.adapters.torch.trust import ModuleForward, TorchTrust
from protocols.models.graph_attention import GraphAttention, GraphHead, GraphLayer, adjacency_rows
from protocols.models.pair_attention import ThirdOrderAttention

__all__ = ["is_graph_module", "is_third_order_module", "wrap_graph", "wrap_third_order", "TorchGraphAttention",
           "TorchThirdOrder", "third_order_agreement", "DEFAULT_FORMAT", "READING_FORMAT", "FineReading"]

#: the format a torch model is rounded to when no precision is given
DEFAULT_FORMAT = FixedPoint(32, 16)

#: the format commsim's reading of a graph module is judged at (a TOLERANCE entry says why its tolerance holds)
READING_FORMAT = FixedPoint(53, 32)


def _linear(module, name: str):
    import torch.nn as nn
    part = getattr(module, name, None)
    return part if isinstance(part, nn.Linear) else None


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
        raise AdapterError(f"{what} has a bias; commsim's third-order attention reads q = x W_Q, ... (bias=False)")
    return tensor(lin.weight).T                                            # (in, out): h @ W


class GraphScores(ModuleForward):
    """tokens (B, N^2) -> the module's graph score (B, 1): its largest node score."""

    def __init__(self, module, nodes: int):
        super().__init__(module)
        self.nodes = nodes

    def __call__(self, tokens):
        import torch
        with torch.no_grad():
            X = adjacency_rows(np.asarray(tokens), self.nodes)
            scores = tensor(self.module(torch.as_tensor(X)))
        return scores.reshape(scores.shape[0], -1).max(axis=1, keepdims=True)


class FineReading:
    """commsim's reading of a graph module built at :data:`READING_FORMAT` (the model's ``reading``): called by
    the agreement check, it gives the graph model of the same parts at that format."""

    def __init__(self, parts: dict, label: str):
        self.parts, self.label = parts, label

    def __call__(self) -> "TorchGraphAttention":
        return build_graph(self.parts, READING_FORMAT, spec=f"torch:{self.label}", label=self.label)


class TorchGraphAttention(TorchTrust, GraphAttention):
    """A graph transformer rounded from a torch module: the engine's torch hooks on graph scores."""

    _fine_reading: FineReading | None = None

    @property
    def reading(self) -> FineReading | None:
        """commsim's reading of the module at :data:`READING_FORMAT` (module docstring)."""
        return self._fine_reading

    @reading.setter
    def reading(self, value) -> None:
        # a graph model cannot be built in the module's float dtype (fixed point only): the generic float
        # reading from_torch offers for a fixed-point run is replaced by the fine fixed-point one set here
        if value is None or isinstance(value, FineReading):
            self._fine_reading = value

    def node_scores(self, X: np.ndarray) -> np.ndarray:
        """Every node's score [h . w] + b as values (B, N) (decided by the model's rule)."""
        return self.arithmetic.to_values(self.node_score_codes(self.states(X)[-1]))

    def forward_batch(self, tokens, positions) -> np.ndarray:
        """The graph score (the largest node score) at the output position: (B, len(positions), 1)."""
        X = adjacency_rows(np.asarray(tokens), self.nodes)
        return np.repeat(self.node_scores(X).max(axis=1)[:, None, None], len(tuple(positions)), axis=1)

    def labels(self, raw: np.ndarray) -> np.ndarray:
        """The graph's label from its score values (B, 1), by the model's decision rule."""
        return self.decide_values(raw)


def build_graph(parts: dict, fmt: FixedPoint, *, spec: str, label: str) -> TorchGraphAttention:
    """The graph model of float64 ``parts`` (:func:`.graph_read.read_graph`) rounded down to ``fmt``."""
    q = lambda a: None if a is None else fmt.quantize(np.asarray(a, dtype=np.float64))  # noqa: E731
    scalar = lambda x: float(q(np.array([x]))[0])  # noqa: E731
    layers = [GraphLayer(tuple(GraphHead(*(q(head[n]) for n in ("W_Q", "W_K", "W_V", "W_O")), scalar(head["beta"]),
                                         *(q(head[n]) for n in ("b_Q", "b_K", "b_V")))
                               for head in layer["heads"]),
                         *(q(layer[n]) for n in ("W1", "b1", "W2", "b2", "W_root", "b_root", "b_O")),
                         residual=layer["residual"], activation=layer["activation"])
              for layer in parts["layers"]]
    kind = "TransformerConv" if parts["conv"] else "graph attention"
    return TorchGraphAttention(fmt, q(parts["E"]), layers, q(parts["w_out"]), scalar(parts["b_out"]),
                               kappa=parts["kappa"], empty=parts["empty"], b_embed=q(parts["b_E"]),
                               embed_activation=parts["embed_activation"], spec=spec,
                               description=f"{label} ({kind} layers) rounded down to {fmt.name}")


def wrap_graph(module, fmt=None, *, seq_len: int | None = None, spec: str = "",
               check: bool = True) -> TorchGraphAttention:
    """A :class:`TorchGraphAttention` for a graph transformer module (module docstring)."""
    fmt = _format(fmt)
    label = type(module).__name__
    module.eval()
    parts, X, theirs = read_graph(module)
    nodes = parts["E"].shape[0]
    if seq_len is not None and seq_len != nodes * nodes:
        raise AdapterError(f"{label} reads digraphs on N = {nodes} nodes ({nodes * nodes} adjacency bits); the task "
                           f"has {seq_len} tokens")
    if check:
        ours = float_node_scores(parts, X)
        atol, rtol = TOLERANCE.get(dtype_name(next(module.parameters()).dtype), TOLERANCE["float32"])
        if theirs.shape != ours.shape or not np.all(np.abs(ours - theirs) <= atol + rtol * np.abs(theirs)):
            raise AdapterError(f"{label}'s forward is not the graph transformer read from its parts (embed, layers: "
                               f"query/key/value/out or conv, mlp; readout): its node scores differ on probe graphs")
    model = build_graph(parts, fmt, spec=spec or f"torch:{label}", label=label)
    model.torch_forward = GraphScores(module, nodes)
    model.reading = FineReading(parts, label)
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
