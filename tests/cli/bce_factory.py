"""The trained one-logit LSTM of the decision-rule tests as a ``python:`` factory (for ``run --precision
effective`` on the command line)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

_PATH = Path(__file__).parents[1] / "protocols" / "adapters" / "data" / "bce_nets.py"


def lstm(probability: bool = False):
    """``bce_nets.load("lstm", "index-idxl", 8)``'s module: nn.Embedding -> nn.LSTM(8, 16) -> nn.Linear(16, 1)."""
    spec = importlib.util.spec_from_file_location("bce_nets", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load("lstm", "index-idxl", 8, probability=bool(probability))[0]
