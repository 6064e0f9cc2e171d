"""Recurrent models as research code writes them, for commsim's hidden-state handoff: an S4D-Lin step module
with a complex state, mambapy's pure-PyTorch Mamba, and tiny Hugging Face ``MambaForCausalLM`` /
``RwkvForCausalLM`` saved to a local directory (no download); and a tiny one-layer ``LlamaForCausalLM`` for the
attention exchange.  Run from the repository root::

    commsim run index-idxl --model python:examples.real_models:s4d_lin --n 8
    commsim run index-idxl --model python:examples.real_models:mambapy_lm --n 8
    python -m examples.real_models mamba /tmp/tiny-mamba      # writes a tiny MambaForCausalLM
    commsim run index-idxl --model hf-mamba:/tmp/tiny-mamba --n 8
    python -m examples.real_models llama /tmp/tiny-llama      # writes a tiny one-layer LlamaForCausalLM
    commsim run index-idxl --model hf-llama:/tmp/tiny-llama --n 8

Needs torch; ``mambapy`` and ``transformers`` for the last three (``pip install 'commsim[torch,hf]'``).
"""
from __future__ import annotations

import math
import sys

import torch
import torch.nn as nn


class S4DLin(nn.Module):
    """S4D-Lin as a step module: a complex diagonal state h_t = exp(Δ A) ⊙ h_{t-1} + Δ B[x_t] with
    A_n = -1/2 + iπn, Δ per unit; scores Re(h C).  Its state is complex64: d complex numbers, 2·d·32 bits."""

    def __init__(self, vocab_size: int = 4, width: int = 3, classes: int = 2, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.vocab_size = vocab_size
        self.log_dt = nn.Parameter(torch.rand(width, generator=g) * (math.log(0.1) - math.log(1e-3))
                                   + math.log(1e-3))
        self.a_im = nn.Parameter(math.pi * torch.arange(width, dtype=torch.float32))
        self.b = nn.Parameter(torch.randn(vocab_size, width, 2, generator=g))
        self.c = nn.Parameter(torch.randn(width, classes, 2, generator=g) / width ** 0.5)

    def initial_state(self, batch: int) -> torch.Tensor:
        return torch.zeros(batch, self.log_dt.shape[0], dtype=torch.complex64)

    def step(self, state: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        dt = self.log_dt.exp()
        a = torch.exp(dt * torch.complex(torch.full_like(dt, -0.5), self.a_im))
        return a * state + dt * torch.view_as_complex(self.b[tokens])

    def readout(self, state: torch.Tensor) -> torch.Tensor:
        return (state @ torch.view_as_complex(self.c)).real


def s4d_lin(vocab_size: int = 4, width: int = 3, seed: int = 0) -> S4DLin:
    """A seeded S4D-Lin step module sized to the task's vocabulary."""
    return S4DLin(vocab_size, width, seed=seed)


class MambaLM(nn.Module):
    """A language model around mambapy's pure-PyTorch ``Mamba``: embedding, Mamba, RMSNorm, unembedding (what
    ``mambapy.lm.LM`` computes; that module imports mamba_ssm's CUDA kernels for Mamba-2)."""

    def __init__(self, vocab_size: int, d_model: int, d_state: int, d_conv: int, layers: int):
        super().__init__()
        from mambapy.mamba import Mamba, MambaConfig, RMSNorm
        config = MambaConfig(d_model=d_model, n_layers=layers, d_state=d_state, d_conv=d_conv)
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.mamba = Mamba(config)
        self.head = nn.Sequential(RMSNorm(d_model, config.rms_norm_eps), nn.Linear(d_model, vocab_size, bias=False))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.mamba(self.embedding(tokens)))


def mambapy_lm(vocab_size: int = 4, d_model: int = 8, d_state: int = 4, d_conv: int = 3, layers: int = 1,
               seed: int = 0) -> dict:
    """A seeded :class:`MambaLM` as its parts, the module itself the reference of the agreement check."""
    torch.manual_seed(seed)
    net = MambaLM(vocab_size, d_model, d_state, d_conv, layers)
    return {"module": net, "embedding": net.embedding, "core": net.mamba, "head": net.head}


def save_tiny_mamba(directory: str, vocab_size: int = 16, hidden: int = 8, state: int = 4, conv: int = 3,
                    layers: int = 2, expand: int = 2, seed: int = 0) -> str:
    """A tiny random ``MambaForCausalLM`` written by ``save_pretrained`` to ``directory``."""
    from transformers import MambaConfig, MambaForCausalLM
    torch.manual_seed(seed)
    config = MambaConfig(vocab_size=vocab_size, hidden_size=hidden, state_size=state, conv_kernel=conv,
                         num_hidden_layers=layers, expand=expand, pad_token_id=0, bos_token_id=0, eos_token_id=0)
    MambaForCausalLM(config).save_pretrained(directory)
    return directory


def tiny_llama(vocab_size: int = 32, hidden: int = 16, heads: int = 4, kv_heads: int = 2, head_dim: int | None = None,
               layers: int = 1, seq_len: int = 32, seed: int = 0, init: float = 0.5, classes: int | None = None):
    """A tiny random ``LlamaForCausalLM`` (RMSNorm, RoPE, gated MLP, grouped-query attention: ``kv_heads`` key/value
    heads for ``heads`` query heads); ``init``: the weights' standard deviation (large enough that the attention
    and the MLP matter); ``classes``: an ``lm_head`` to that many classes instead of the vocabulary."""
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                         head_dim=head_dim or hidden // heads, max_position_embeddings=seq_len,
                         initializer_range=init, pad_token_id=0, bos_token_id=0, eos_token_id=0)
    model = LlamaForCausalLM(config).eval()
    if classes is not None:
        model.lm_head = nn.Linear(hidden, classes, bias=False)
    return model


def save_tiny_llama(directory: str, **sizes) -> str:
    """A tiny random ``LlamaForCausalLM`` (:func:`tiny_llama`) written by ``save_pretrained`` to ``directory``."""
    tiny_llama(**sizes).save_pretrained(directory)
    return directory


def save_tiny_rwkv(directory: str, vocab_size: int = 16, hidden: int = 8, layers: int = 2, seed: int = 0) -> str:
    """A tiny random ``RwkvForCausalLM`` written by ``save_pretrained`` to ``directory``."""
    from transformers import RwkvConfig, RwkvForCausalLM
    torch.manual_seed(seed)
    config = RwkvConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers, context_length=64,
                        intermediate_size=2 * hidden, pad_token_id=0, bos_token_id=0, eos_token_id=0)
    RwkvForCausalLM(config).save_pretrained(directory)
    return directory


if __name__ == "__main__":
    savers = {"mamba": save_tiny_mamba, "rwkv": save_tiny_rwkv, "llama": save_tiny_llama}
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in savers:
        sys.exit("usage: python -m examples.real_models mamba|rwkv|llama DIRECTORY [key=value,...]  "
                 "(mamba: vocab_size, hidden, state, conv, layers, expand, seed; rwkv: vocab_size, hidden, layers, "
                 "seed; llama: vocab_size, hidden, heads, kv_heads, head_dim, layers, seq_len, seed)")
    sizes = dict(item.split("=", 1) for item in sys.argv[3].split(",")) if len(sys.argv) == 4 else {}
    print(savers[sys.argv[1]](sys.argv[2], **{k: int(v) for k, v in sizes.items()}))
