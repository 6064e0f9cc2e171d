"""Trains the one-logit BCE classifiers the decision-rule tests load (run from the repository root):

    python tests/protocols/adapters/data/train_bce.py

Each is a research-style binary classifier: nn.Embedding -> nn.LSTM / nn.GRU (batch_first) -> nn.Linear(hidden, 1),
trained with binary_cross_entropy_with_logits on every instance of the task and decided by ``logit > 0``; training
stops once torch's own decisions are right on every instance.  The weights are written as JSON (exact float32
values) beside this file, with the task, the size and torch's accuracy.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from bce_nets import BCEClassifier, instances  # noqa: E402

JOBS = [("index-idxl", 8, "lstm", 16), ("index-idxl", 8, "gru", 16)]


def train(task: str, n: int, cell: str, hidden: int, seed: int = 0, epochs: int = 1500) -> dict:
    torch.manual_seed(seed)
    tokens, labels, vocab = instances(task, n)
    X, Y = torch.as_tensor(tokens), torch.as_tensor(labels, dtype=torch.float32)
    net = BCEClassifier(vocab, cell, hidden)
    opt = torch.optim.Adam(net.parameters(), 1e-2)
    for epoch in range(epochs):
        opt.zero_grad()
        loss = nn.functional.binary_cross_entropy_with_logits(net(X)[:, 0], Y)
        loss.backward()
        opt.step()
        with torch.no_grad():
            right = ((net(X)[:, 0] > 0).float() == Y).float().mean().item()
        if right == 1.0:
            break
    state = {k: v.tolist() for k, v in net.state_dict().items()}
    return {"task": task, "n": n, "cell": cell, "hidden": hidden, "vocab": vocab, "epochs": epoch + 1,
            "torch_accuracy": right, "state_dict": state}


if __name__ == "__main__":
    only = sys.argv[1:]   # e.g. gru: train only the jobs whose cell or task is named
    for task, n, cell, hidden in JOBS:
        if only and cell not in only and task not in only:
            continue
        for seed in range(5):   # a seed whose run reaches every instance
            out = train(task, n, cell, hidden, seed)
            print(task, n, cell, seed, out["epochs"], out["torch_accuracy"], flush=True)
            if out["torch_accuracy"] == 1.0:
                break
        (HERE / f"bce_{cell}_{task}_{n}.json").write_text(json.dumps(out))
