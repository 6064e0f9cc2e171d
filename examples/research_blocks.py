"""Transformer blocks written the way research code writes them, for
``--model python:examples.research_blocks:FUNCTION``: a nanoGPT-style model (pre-LN, an MLP on a second
residual branch, a final LayerNorm, the unembedding tied to the token embedding), with the attention as
``nn.MultiheadAttention`` (``attn=mha``), as nanoGPT's ``CausalSelfAttention`` (a packed ``c_attn`` and
``F.scaled_dot_product_attention``, ``attn=sdpa``) or as minGPT's (an explicit ``softmax(q k^T / sqrt(d_h))``
under a causal mask, ``attn=softmax``); positions learned (``pos=learned``), rotary (``pos=rope``, Llama /
GPT-NeoX rotate-halves), ALiBi (``pos=alibi``) or none (``pos=none``, the causal mask only)::

    commsim run index-idxl --model python:examples.research_blocks:nanogpt --n 8
    commsim run index-idxl --model python:examples.research_blocks:nanogpt:attn=softmax,pos=rope --n 8
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) over the last axis's halves (Llama, GPT-NeoX)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding of (B, H, L, dh) by position 0..L-1 (rotate halves)."""
    L, dh = x.shape[-2], x.shape[-1]
    inv = 1.0 / (base ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh))
    angles = torch.outer(torch.arange(L, dtype=torch.float64), inv)
    emb = torch.cat((angles, angles), dim=-1)
    return x * emb.cos().to(x.dtype) + rotate_half(x) * emb.sin().to(x.dtype)


def alibi_slopes(heads: int) -> torch.Tensor:
    """The ALiBi paper's head slopes 2^(-8 h / H), h = 1..H (H a power of two)."""
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)])


def alibi_bias(heads: int, L: int, dtype) -> torch.Tensor:
    """(H, L, L) bias m_h * (j - i) on the logits, -inf above the diagonal (causal)."""
    i = torch.arange(L)[:, None]
    j = torch.arange(L)[None, :]
    bias = alibi_slopes(heads)[:, None, None] * (j - i).to(torch.float64)
    return bias.masked_fill(j > i, float("-inf")).to(dtype)


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention: a packed c_attn, heads split by view/transpose, SDPA (``kind="sdpa"``) or an
    explicit masked softmax (``"softmax"``, minGPT), then c_proj."""

    def __init__(self, dim: int, heads: int, kind: str = "sdpa", pos: str = "learned", positions: int = 64):
        super().__init__()
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.heads, self.dim, self.kind, self.pos = heads, dim, kind, pos
        self.register_buffer("bias", torch.tril(torch.ones(positions, positions)).view(1, 1, positions, positions))

    def forward(self, x):
        B, L, C = x.shape
        q, k, v = self.c_attn(x).split(self.dim, dim=2)
        q, k, v = (t.view(B, L, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        if self.pos == "rope":
            q, k = rope(q), rope(k)
        if self.kind == "sdpa":
            if self.pos == "alibi":
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=alibi_bias(self.heads, L, q.dtype))
            else:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            if self.pos == "alibi":
                att = att + alibi_bias(self.heads, L, att.dtype)
            att = att.masked_fill(self.bias[:, :, :L, :L] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, L, C))


class MLP(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.c_fc, self.gelu, self.c_proj = nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim)
        self.dropout = nn.Dropout(0.0)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class MhaAttention(nn.Module):
    """nn.MultiheadAttention called as self-attention under a causal mask."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.mha = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x):
        L = x.shape[1]
        mask = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
        return self.mha(x, x, x, attn_mask=mask, need_weights=False)[0]


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, attn: str, pos: str, positions: int):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = MhaAttention(dim, heads) if attn == "mha" else CausalSelfAttention(dim, heads, attn, pos, positions)
        self.mlp = MLP(dim)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    """tok (+ pos) -> one pre-LN block -> ln_f -> lm_head tied to tok, at the last position
    (``slice_first``: the last position taken before the MLP, as inference code does)."""

    def __init__(self, vocab: int, positions: int, dim: int = 16, heads: int = 2, attn: str = "sdpa",
                 pos: str = "learned", slice_first: bool = False):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(vocab, dim), h=nn.ModuleList(
            [Block(dim, heads, attn, pos, positions)]), ln_f=nn.LayerNorm(dim)))
        if pos == "learned":
            self.transformer["wpe"] = nn.Embedding(positions, dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.transformer.wte.weight          # weight tying, as nanoGPT does
        self.pos, self.slice_first = pos, slice_first

    def forward(self, idx):
        x = self.transformer.wte(idx)
        if self.pos == "learned":
            x = x + self.transformer.wpe(torch.arange(idx.shape[1]))
        block = self.transformer.h[0]
        if self.slice_first:
            x = (x + block.attn(block.ln_1(x)))[:, -1]
            x = x + block.mlp(block.ln_2(x))
        else:
            x = block(x)[:, -1]
        return self.lm_head(self.transformer.ln_f(x))


def nanogpt(vocab_size: int = 10, seq_len: int = 9, dim: int = 16, heads: int = 2, attn: str = "sdpa",
            pos: str = "learned", slice_first: bool = False, dtype: str = "float32", seed: int = 0) -> nn.Module:
    """A one-block nanoGPT-style model sized to the task (random weights; module docstring for the options)."""
    torch.manual_seed(seed)
    model = NanoGPT(vocab_size, seq_len, dim, heads, attn, pos, bool(slice_first))
    return model.to(getattr(torch, dtype)).eval()
