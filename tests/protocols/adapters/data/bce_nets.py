"""The research-style one-logit classifiers of the decision-rule tests (trained by train_bce.py)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

import commsim

HERE = Path(__file__).parent


class BCEClassifier(nn.Module):
    """nn.Embedding -> nn.LSTM / nn.GRU -> nn.Linear(hidden, 1): one logit at the last position."""

    def __init__(self, vocab: int, cell: str = "lstm", hidden: int = 16, embed: int = 8, probability: bool = False):
        super().__init__()
        self.emb = nn.Embedding(vocab, embed)
        self.rnn = (nn.LSTM if cell == "lstm" else nn.GRU)(embed, hidden, batch_first=True)
        self.head = nn.Sequential(nn.Linear(hidden, 1), nn.Sigmoid()) if probability else nn.Linear(hidden, 1)

    def forward(self, tokens):
        h, _ = self.rnn(self.emb(tokens))
        return self.head(h[:, -1])


def instances(task: str, n: int):
    """Every instance of ``task`` at size ``n``: (tokens (B, L) int64, labels (B,), vocabulary size)."""
    from commsim.runs.stages import prepare, select_instances
    setup = prepare(task, None, n)
    chosen = select_instances(setup.problem, None, 0)
    encoded = setup.reduction.encode(setup.problem, chosen.alice, chosen.bob)
    labels = np.asarray(setup.reduction.labels(setup.problem, chosen.alice, chosen.bob)).reshape(-1)
    return encoded.tokens.astype(np.int64), labels, len(commsim.vocabulary(task, n=n))


def load(cell: str, task: str, n: int, *, probability: bool = False) -> tuple[BCEClassifier, dict]:
    """A trained classifier from its JSON (with a sigmoid after the logit when ``probability``)."""
    data = json.loads((HERE / f"bce_{cell}_{task}_{n}.json").read_text())
    net = BCEClassifier(data["vocab"], cell, data["hidden"], probability=probability)
    state = {k: torch.tensor(v, dtype=torch.float32) for k, v in data["state_dict"].items()}
    if probability:
        state = {k.replace("head.", "head.0.", 1) if k.startswith("head.") else k: v for k, v in state.items()}
    net.load_state_dict(state)
    return net.eval(), data
