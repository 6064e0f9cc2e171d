"""Example model factories for ``commsim run ... --model python:examples.factories:FUNCTION``.

Run commsim from the repository root (the current directory is put first on ``sys.path``, as for
``python -m``), e.g.::

    commsim run index-idxl --model python:examples.factories:lstm_index --n 8
    commsim run index-idxl --model python:examples.factories:lstm_index:weights=lstm_index.pt --n 8
    commsim run index-idxl --model python:examples.factories:attention_index --n 8

A factory receives, by name, whichever of ``vocab_size``, ``seq_len``, ``n``, ``task``, ``reduction``
it accepts (what the task needs), plus the spec's own key=value pairs (here ``hidden``, ``layers``,
``weights``...).  It returns a torch module, a dict of parts, or a commsim model.
"""
from __future__ import annotations

import torch
import torch.nn as nn


class LSTMIndex(nn.Module):
    """Token embedding -> nn.LSTM (batch_first) -> linear readout on every position's h."""

    def __init__(self, vocab: int, hidden: int = 32, layers: int = 1, embed: int = 16, classes: int = 2,
                 cell: str = "lstm"):
        super().__init__()
        self.config = dict(vocab=vocab, hidden=hidden, layers=layers, embed=embed, classes=classes, cell=cell)
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[cell](embed, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        states, _ = self.rnn(self.embed(tokens))
        return self.head(states)            # (batch, length, classes): the decision at every position


def lstm_index(vocab_size: int = 10, hidden: int = 32, layers: int = 1, cell: str = "lstm", weights: str = "",
               seed: int = 0, classes: int = 2) -> nn.Module:
    """An LSTM (or cell=gru / rnn) for index lookup; trained weights from ``weights=FILE`` (a checkpoint
    written by examples/train_lstm_index.py, loaded with weights_only=True), else seeded random ones.
    ``classes=1``: one logit, as a classifier trained with binary_cross_entropy_with_logits reads it."""
    if weights:
        checkpoint = torch.load(weights, map_location="cpu", weights_only=True)
        model = LSTMIndex(**checkpoint["config"])
        model.load_state_dict(checkpoint["state_dict"])
        return model
    torch.manual_seed(seed)
    return LSTMIndex(vocab_size, hidden, layers, classes=classes, cell=cell)


class AttentionIndex(nn.Module):
    """Token + position embeddings -> one nn.MultiheadAttention -> linear head at the last position."""

    def __init__(self, vocab: int, positions: int, dim: int = 16, heads: int = 2, classes: int = 2):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(positions, dim)
        self.attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.tokens(tokens) + self.positions(torch.arange(tokens.shape[1]))
        y, _ = self.attention(x, x, x, need_weights=False)
        return self.head(y[:, -1])           # (batch, classes): the decision at the last position


def attention_index(vocab_size: int = 10, seq_len: int = 9, dim: int = 16, heads: int = 2, seed: int = 0) -> nn.Module:
    """A one-layer attention model sized to the task (random weights)."""
    torch.manual_seed(seed)
    return AttentionIndex(vocab_size, seq_len, dim, heads)


def gpt2_index(vocab_size: int = 10, seq_len: int = 9, dim: int = 16, heads: int = 2, seed: int = 0):
    """A one-layer Hugging Face GPT-2 built from a local config (nothing downloaded)."""
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(seed)
    config = GPT2Config(n_layer=1, n_embd=dim, n_head=heads, vocab_size=vocab_size, n_positions=seq_len,
                        bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config).eval()
