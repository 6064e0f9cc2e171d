"""Graph transformers and third-order attention written the way research code writes them ([SHT23]), for
:func:`protocols.adapters.torch.from_torch` (:mod:`protocols.adapters.torch.graph` reads them) and for
``--model python:examples.research_graph:FUNCTION``::

    commsim run disj-3cycle --model python:examples.research_graph:graph_transformer:layers=2 --n 2

* :class:`GraphTransformer`: the rows of the adjacency matrix X embedded by a linear map, then L layers of
  :class:`GraphAttentionLayer` -- ``softmax(kappa(X, (h W_Q)(h W_K)^T)) h W_V`` per head (kappa: masking to the
  out-neighbours, or a bonus beta_t X_ij), the heads concatenated through W_O onto the residual, then an MLP on its
  own residual branch -- and a linear readout per node (the node's score; it decides "> 0");
* :class:`TransformerConvBlock`: the same layer with ``torch_geometric``'s ``TransformerConv`` as the attention
  (``root_weight=False``, no bias, heads concatenated; node i aggregates over its out-neighbours j, X_ij = 1, as
  the messages j -> i); :func:`pyg_graph_transformer` stacks them;
* :class:`ThirdOrderSelfAttention`: softmax((X W_Q)((X W_K1) ⋆ (X W_K2))^T)((X W_V1) ⋆ (X W_V2)) over the
  N^2 pairs (j, k), ⋆ the Khatri-Rao product, and a linear readout at every position.

The forwards take adjacency matrices (B, N, N) or their flattened rows (B, N^2) (``disj-3cycle``'s tokens) and
return every node's score (B, N); the third-order module takes token ids (B, N) and returns (B, N).
"""
from __future__ import annotations

import torch
import torch.nn as nn


def as_adjacency(X: torch.Tensor, nodes: int, dtype) -> torch.Tensor:
    """Adjacency matrices (B, N, N) from (B, N, N) or flattened rows (B, N^2)."""
    return torch.as_tensor(X).reshape(-1, nodes, nodes).to(dtype)


class GraphAttentionLayer(nn.Module):
    """One graph-transformer layer: H heads of masked (or edge-biased) softmax attention and an MLP, each on a
    residual branch."""

    def __init__(self, dim: int, width: int, heads: int = 1, mlp: int = 4, kappa: str = "mask"):
        super().__init__()
        self.heads, self.width, self.kappa = heads, width, kappa
        self.query = nn.Linear(dim, heads * width, bias=False)
        self.key = nn.Linear(dim, heads * width, bias=False)
        self.value = nn.Linear(dim, heads * width, bias=False)
        self.out = nn.Linear(heads * width, dim, bias=False)
        self.beta = nn.Parameter(torch.rand(heads) + 0.5) if kappa == "bias" else None
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.ReLU(), nn.Linear(mlp, dim)) if mlp else None

    def forward(self, h: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        B, N, _ = h.shape
        H, m = self.heads, self.width
        q, k, v = (f(h).view(B, N, H, m).transpose(1, 2) for f in (self.query, self.key, self.value))
        scores = q @ k.transpose(-1, -2)                                        # (B, H, N, N)
        if self.kappa == "mask":
            scores = scores.masked_fill(X[:, None] == 0, torch.finfo(scores.dtype).min)
        else:
            scores = scores + self.beta[None, :, None, None] * X[:, None]
        o = torch.softmax(scores, dim=-1) @ v                                   # (B, H, N, m)
        h = h + self.out(o.transpose(1, 2).reshape(B, N, H * m))
        return h if self.mlp is None else h + self.mlp(h)


class GraphTransformer(nn.Module):
    """Row embedding, L :class:`GraphAttentionLayer` s, a node readout: node scores (B, N)."""

    def __init__(self, nodes: int, dim: int = 4, width: int = 2, heads: int = 1, layers: int = 1, mlp: int = 4,
                 kappa: str = "mask"):
        super().__init__()
        self.nodes = nodes
        self.embed = nn.Linear(nodes, dim, bias=False)
        self.layers = nn.ModuleList(GraphAttentionLayer(dim, width, heads, mlp, kappa) for _ in range(layers))
        self.readout = nn.Linear(dim, 1)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        X = as_adjacency(X, self.nodes, self.embed.weight.dtype)
        h = self.embed(X)
        for layer in self.layers:
            h = layer(h, X)
        return self.readout(h)[..., 0]


def edges_of(X: torch.Tensor) -> torch.Tensor:
    """One digraph's messages for torch_geometric: j -> i for every X_ij = 1 (node i reads its out-neighbours)."""
    i, j = torch.nonzero(X, as_tuple=True)
    return torch.stack([j, i])


class TransformerConvBlock(nn.Module):
    """h + TransformerConv(h) over the out-neighbours, then h + mlp(h) (torch_geometric)."""

    def __init__(self, dim: int, heads: int = 1, mlp: int = 4):
        super().__init__()
        from torch_geometric.nn import TransformerConv
        if dim % heads:
            raise ValueError(f"dim = {dim} must be a multiple of heads = {heads} (the heads are concatenated)")
        self.conv = TransformerConv(dim, dim // heads, heads=heads, concat=True, root_weight=False, bias=False)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.ReLU(), nn.Linear(mlp, dim)) if mlp else None

    def forward(self, h: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        out = torch.stack([self.conv(h[b], edges_of(X[b])) for b in range(h.shape[0])])
        h = h + out
        return h if self.mlp is None else h + self.mlp(h)


class PygGraphTransformer(GraphTransformer):
    """:class:`GraphTransformer` with :class:`TransformerConvBlock` layers."""

    def __init__(self, nodes: int, dim: int = 4, heads: int = 1, layers: int = 1, mlp: int = 4):
        nn.Module.__init__(self)
        self.nodes = nodes
        self.embed = nn.Linear(nodes, dim, bias=False)
        self.layers = nn.ModuleList(TransformerConvBlock(dim, heads, mlp) for _ in range(layers))
        self.readout = nn.Linear(dim, 1)


class ThirdOrderSelfAttention(nn.Module):
    """softmax((X W_Q)((X W_K1) ⋆ (X W_K2))^T)((X W_V1) ⋆ (X W_V2)) and a readout: every position's score."""

    def __init__(self, vocab: int, length: int, dim: int = 4, width: int = 2, value_width: int = 2):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(length, dim)
        self.W_Q, self.W_K1, self.W_K2 = (nn.Linear(dim, width, bias=False) for _ in range(3))
        self.W_V1, self.W_V2 = (nn.Linear(dim, value_width, bias=False) for _ in range(2))
        self.readout = nn.Linear(value_width, 1)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        tokens = torch.as_tensor(tokens, dtype=torch.long)
        B, N = tokens.shape
        x = self.tok(tokens) + self.pos(torch.arange(N))
        q, k1, k2 = self.W_Q(x), self.W_K1(x), self.W_K2(x)
        logits = torch.einsum("bic,bjc,bkc->bijk", q, k1, k2).reshape(B, N, N * N)
        v = (self.W_V1(x)[:, :, None, :] * self.W_V2(x)[:, None, :, :]).reshape(B, N * N, -1)   # Khatri-Rao
        return self.readout(torch.softmax(logits, dim=-1) @ v)[..., 0]


def graph_transformer(n=None, seq_len=None, nodes=None, dim=4, width=2, heads=1, layers=1, mlp=4, kappa="mask",
                      seed=0, **context):
    """A seeded :class:`GraphTransformer` (``nodes`` default: the task's, from its N^2 tokens)."""
    torch.manual_seed(int(seed))
    N = int(nodes) if nodes is not None else round(int(seq_len) ** 0.5)
    return GraphTransformer(N, int(dim), int(width), int(heads), int(layers), int(mlp), str(kappa))


def pyg_graph_transformer(n=None, seq_len=None, nodes=None, dim=4, heads=1, layers=1, mlp=4, seed=0, **context):
    """A seeded :class:`PygGraphTransformer` (needs torch_geometric)."""
    torch.manual_seed(int(seed))
    N = int(nodes) if nodes is not None else round(int(seq_len) ** 0.5)
    return PygGraphTransformer(N, int(dim), int(heads), int(layers), int(mlp))
