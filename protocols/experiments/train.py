"""Training (seeded, deterministic on CPU, a fresh batch every step) and evaluation of the replication's models."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np


def torch_deterministic(seed: int, threads: int = 1) -> None:
    """Seed torch, make its algorithms deterministic and keep it to ``threads`` threads (a shared machine)."""
    import torch
    torch.manual_seed(int(seed))
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(int(threads))


def train(net, batches: Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray]], *, steps: int, lr: float,
          seed: int, check_every: int = 100, validation: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """Adam on the cross-entropy of ``net.logits`` for at most ``steps`` steps, each on a fresh batch drawn from
    ``batches(rng)`` (rng seeded by ``seed``); stops early once ``validation`` (tokens, labels) is classified
    perfectly (checked every ``check_every`` steps), as the paper trains "unless they achieve (almost) perfect
    validation accuracy earlier".  Returns the steps run, the last loss and the seconds taken."""
    import torch
    rng = np.random.default_rng([int(seed), 1])
    optimiser = torch.optim.Adam(net.parameters(), lr=lr)
    start, loss_value, step = time.perf_counter(), float("nan"), 0
    net.train()
    for step in range(1, int(steps) + 1):
        tokens, labels = batches(rng)
        loss = torch.nn.functional.cross_entropy(net.logits(torch.as_tensor(tokens)), torch.as_tensor(labels))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        loss_value = float(loss.detach())
        if validation is not None and step % check_every == 0 and accuracy(net, *validation) == 1.0:
            break
    net.eval()
    return {"steps_run": step, "final_loss": round(loss_value, 6), "train_seconds": round(time.perf_counter() - start, 3)}


def predictions(net, tokens: np.ndarray, chunk: int = 512) -> np.ndarray:
    """The float model's decisions (argmax of ``net.logits``) on ``tokens``."""
    import torch
    was_training = net.training
    net.eval()
    out = []
    with torch.no_grad():
        for s in range(0, len(tokens), chunk):
            out.append(net.logits(torch.as_tensor(tokens[s:s + chunk])).argmax(dim=-1).numpy())
    net.train(was_training)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def accuracy(net, tokens: np.ndarray, labels: np.ndarray) -> float:
    """The float model's accuracy on (tokens, labels)."""
    return float(np.mean(predictions(net, tokens) == np.asarray(labels)))
