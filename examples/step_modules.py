"""A torch module that exposes its recurrence step by step (``initial_state`` / ``step`` / ``readout``: the
step contract of :mod:`protocols.adapters.torch.step`), so any recurrence written in torch gets the
hidden-state handoff of Theorem 2 of [BHBK24].  Run from the repository root::

    commsim run index-idxl --model python:examples.step_modules:gated_ssm --n 8
    commsim run index-idxl --model python:examples.step_modules:gated_ssm:width=2,precision=3 --n 8
    commsim run index-idxl --model python:examples.step_modules:two_part_cell --n 8

or in Python: ``commsim.make_model(gated_ssm(10), vocab_size=10)``.
"""
from __future__ import annotations

import torch
import torch.nn as nn


class GatedSSM(nn.Module):
    """A selective diagonal recurrence: h_t = a(x_t) * h_{t-1} + (1 - a(x_t)) * e(x_t), a = sigmoid(g(x_t));
    the scores are a linear map of h_t."""

    def __init__(self, vocab: int, width: int = 4, classes: int = 2):
        super().__init__()
        self.vocab_size, self.width = vocab, width
        self.embed, self.gate = nn.Embedding(vocab, width), nn.Embedding(vocab, width)
        self.head = nn.Linear(width, classes)

    def initial_state(self, batch: int) -> torch.Tensor:
        return torch.zeros(batch, self.width)

    def step(self, state: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        a = torch.sigmoid(self.gate(tokens))
        return a * state + (1 - a) * self.embed(tokens)

    def readout(self, state: torch.Tensor) -> torch.Tensor:
        return self.head(state)


class TwoPartCell(nn.Module):
    """A state of two parts (h, c), as an LSTM's: c_t = c_{t-1} / 2 + e(x_t), h_t = tanh(c_t) * w(x_t)."""

    def __init__(self, vocab: int, width: int = 3, classes: int = 2):
        super().__init__()
        self.width = width
        self.embed, self.out_gate = nn.Embedding(vocab, width), nn.Embedding(vocab, width)
        self.head = nn.Linear(2 * width, classes)

    def initial_state(self, batch: int):
        return torch.zeros(batch, self.width), torch.zeros(batch, self.width)

    def step(self, state, tokens):
        h, c = state
        c = 0.5 * c + self.embed(tokens)
        return torch.tanh(c) * self.out_gate(tokens), c

    def readout(self, state):
        return self.head(torch.cat(state, dim=1))


def gated_ssm(vocab_size: int = 10, width: int = 4, seed: int = 0) -> GatedSSM:
    """A seeded ``GatedSSM`` module (its vocabulary sized to the task)."""
    torch.manual_seed(seed)
    return GatedSSM(vocab_size, width)


def two_part_cell(vocab_size: int = 10, width: int = 3, seed: int = 0) -> TwoPartCell:
    """A seeded ``TwoPartCell`` module (no vocab_size attribute: the task's vocabulary is used)."""
    torch.manual_seed(seed)
    return TwoPartCell(vocab_size, width)
