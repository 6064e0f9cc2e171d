"""Transformer blocks as researchers write them, for ``--model python:examples.transformer_blocks:FUNCTION``:
a pre-LN attention block and ``nn.TransformerEncoderLayer``.  Run commsim from the repository root, e.g.::

    commsim run index-idxl --model python:examples.transformer_blocks:prenorm_index --n 8
    commsim run index-idxl --model python:examples.transformer_blocks:prenorm_index:norm=rms --n 8
    commsim run index-idxl --model python:examples.transformer_blocks:encoder_index:norm_first=false --n 8

commsim reads the roles from the forward (which embedding reads the tokens and which the positions, the norm
called before the attention, the layers called after it), folds a norm before the attention into the
(position, token) embedding table and everything after the attention at the last position into psi.
``readout=mean`` or ``readout=cls`` (pooling over positions) is refused: the single-query protocol does
not apply to it.
"""
from __future__ import annotations

import torch
import torch.nn as nn


class PreNormAttention(nn.Module):
    """x = tok + pos;  x = x + MHA(norm(x));  logits = head(ln_f(x)) at the last position."""

    def __init__(self, vocab: int, positions: int, dim: int = 16, heads: int = 2, norm: str = "layer",
                 classes: int = 2):
        super().__init__()
        make = {"layer": nn.LayerNorm, "rms": nn.RMSNorm}[norm]
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(positions, dim)
        self.norm = make(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln_f = make(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1]))
        z = self.norm(x)
        x = x + self.attn(z, z, z, need_weights=False)[0]
        return self.head(self.ln_f(x[:, -1]))


def prenorm_index(vocab_size: int = 10, seq_len: int = 9, dim: int = 16, heads: int = 2, norm: str = "layer",
                  seed: int = 0) -> nn.Module:
    """A pre-LN attention block (``norm=layer`` or ``rms``) sized to the task (random weights)."""
    torch.manual_seed(seed)
    return PreNormAttention(vocab_size, seq_len, dim, heads, norm)


class EncoderClassifier(nn.Module):
    """x = tok + pos -> one nn.TransformerEncoderLayer (or a TransformerEncoder of ``layers`` layers) ->
    head, read at the last position (``readout="last"``), averaged over positions ("mean") or at
    position 0 ("cls")."""

    def __init__(self, vocab: int, positions: int, dim: int = 16, heads: int = 2, ff: int = 32,
                 norm_first: bool = True, batch_first: bool = True, readout: str = "last", layers: int = 0,
                 classes: int = 2):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(positions, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, ff, dropout=0.1, batch_first=batch_first,
                                           norm_first=norm_first)
        self.encoder = layer if not layers else nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)
        self.batch_first, self.readout = batch_first, readout

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1]))
        if not self.batch_first:
            x = x.transpose(0, 1)
        y = self.encoder(x)
        if not self.batch_first:
            y = y.transpose(0, 1)
        pooled = {"last": lambda: y[:, -1], "mean": lambda: y.mean(dim=1), "cls": lambda: y[:, 0]}[self.readout]()
        return self.head(pooled)


def encoder_index(vocab_size: int = 10, seq_len: int = 9, dim: int = 16, heads: int = 2, ff: int = 32,
                  norm_first: bool = True, batch_first: bool = True, readout: str = "last", layers: int = 0,
                  seed: int = 0) -> nn.Module:
    """An nn.TransformerEncoderLayer classifier sized to the task (random weights); ``layers=K`` wraps it in
    an nn.TransformerEncoder of K layers (K > 1 is refused: Lemma 5 of [BHBK24])."""
    torch.manual_seed(seed)
    return EncoderClassifier(vocab_size, seq_len, dim, heads, ff, bool(norm_first), bool(batch_first), readout,
                             int(layers))
