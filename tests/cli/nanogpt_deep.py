"""A nanoGPT-style GPT (``tests/nanogpt_style.py``) at any depth, as a ``python:`` factory: the two-layer model of the
model-matrix tests (``python:tests/cli/nanogpt_deep.py:gpt``)."""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests/, when loaded by path

from nanogpt_style import GPT, GPTConfig  # noqa: E402


def gpt(vocab_size: int, seq_len: int, layers: int = 2, heads: int = 2, dim: int = 8, seed: int = 0,
        init: float = 1.0) -> GPT:
    """A seeded GPT sized to the task, its matrices drawn with standard deviation ``init`` (nanoGPT's 0.02 makes an
    untrained model nearly constant; 1.0 gives a function with structure)."""
    torch.manual_seed(seed)
    model = GPT(GPTConfig(block_size=seq_len, vocab_size=vocab_size, n_layer=layers, n_head=heads, n_embd=dim))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                p.normal_(0.0, init)
    return model.eval()
