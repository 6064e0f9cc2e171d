"""The ``graph-attention`` model kind: a random graph transformer (:mod:`protocols.models.graph_attention`).

Spec: ``graph-attention:layers=L,heads=H,width=m,precision=P[,frac=F],seed=S`` with optional ``dim=d`` (the
node states' width, default 4), ``mlp=h`` (the MLP's hidden width, default 4; 0: no MLP), ``kappa=mask|bias``
(how a logit reads the edge bit X_ij: attend to out-neighbours only, or a bonus beta per head),
``empty=uniform|zero`` (under ``mask``, what a node without out-edges gets: uniform attention over every node, or 0
as a message-passing sum over no edges) and ``nodes=N``
(default: the task's, from its N^2 adjacency bits: 3n for ``disj-3cycle``).  The weights are drawn on the format's grid.
"""
from __future__ import annotations

from commsim.contract import InputError, check_memory
from commsim.core.precision import FixedPoint
from protocols.models.graph_attention import (
    EMPTY,
    KAPPAS,
    GraphAttention,
    nodes_of_length,
    random_graph_attention,
)

#: the largest N a graph-attention model is built for (its row embedding is N x d)
MAX_NODES = 4096


def make_graph_attention(spec, seq_len=None, **context) -> GraphAttention:
    """Model factory for ``graph-attention:...`` (module docstring)."""
    if spec.target:
        raise InputError(f"model spec {spec.text!r}: graph-attention takes key=value pairs only", "model")
    N = spec.int("nodes", nodes_of_length(seq_len) if seq_len is not None else None, minimum=1, maximum=MAX_NODES)
    if N is None:
        raise InputError(f"model spec {spec.text!r}: give nodes=N (or use it with a graph task: `commsim run "
                         f"disj-3cycle`)", "model")
    layers = spec.int("layers", 1, minimum=1, maximum=64)
    heads = spec.int("heads", 1, minimum=1, maximum=64)
    width = spec.int("width", 2, minimum=1, maximum=1024)
    dim = spec.int("dim", 4, minimum=1, maximum=1024)
    mlp = spec.int("mlp", 4, minimum=0, maximum=4096)
    kappa = spec.str("kappa", "mask", KAPPAS)
    empty = spec.str("empty", "uniform", EMPTY)
    seed = spec.int("seed", 0, minimum=0)
    fmt = spec.format(default=FixedPoint.with_bits(8))
    if not isinstance(fmt, FixedPoint):
        raise InputError(f"model spec {spec.text!r}: graph-attention computes in binary fixed point "
                         f"(precision=P[,frac=F]); {fmt.name} is not supported", "model")
    check_memory(8 * (N * dim + layers * (heads * 4 * dim * width + 2 * dim * mlp)), "model",
                 f"the graph transformer {spec.text!r}")
    return random_graph_attention(fmt, N, layers=layers, heads=heads, width=width, dim=dim, mlp=mlp, kappa=kappa,
                                  empty=empty, seed=seed, spec=spec.text)


def register(registry) -> None:
    """The ``graph-attention`` model kind (its simulator, ``graph-exchange``, registers with the simulators)."""
    registry.register("model", "graph-attention", make_graph_attention,
                      "[SHT23] graph transformer on an adjacency matrix (layers=L,heads=H,width=m,dim=d,mlp=h,"
                      "kappa=mask|bias,empty=uniform|zero,precision=P[,frac=F],seed=S,nodes=N)")
