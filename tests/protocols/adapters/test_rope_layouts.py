"""RoPE in both layouts research code writes (issue 25, items 3-4): rotate-halves (Llama, GPT-NeoX, transformers'
``rotate_half``) and interleaved pairs (GPT-J, RoFormer: coordinates 2j and 2j + 1 rotated together).  An interleaved
rotation is read from a hand-written attention and folded exactly into W_Q and W_K as rotate-halves (each head's
coordinates permuted: evens, then odds): protocol = model bit for bit, torch agreement within the tolerance."""
from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional
torch.set_num_threads(1)

from agreement_checks import assert_trusted  # noqa: E402
from commsim.runs.run import run_reduction  # noqa: E402
from examples.research_blocks import CausalSelfAttention, nanogpt  # noqa: E402
from protocols.adapters.torch import agreement, from_torch  # noqa: E402
from protocols.adapters.torch.positions import read_rope, rotate, to_halves  # noqa: E402

N = 4
VOCAB, LENGTH = N + 2, N + 1        # index-idxl at n = 4


def rope_interleaved(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """GPT-J's rotary embedding of (B, H, L, d_h): pairs (2j, 2j + 1) rotated by i * base^(-2j/d_h)."""
    L, dh = x.shape[-2], x.shape[-1]
    inv = 1.0 / (base ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh))
    angles = torch.outer(torch.arange(L, dtype=torch.float64), inv)
    cos, sin = (f(angles).repeat_interleave(2, dim=-1).to(x.dtype) for f in (torch.cos, torch.sin))
    pairs = torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)
    return x * cos + pairs * sin


class GptjAttention(CausalSelfAttention):
    """nanoGPT's attention with GPT-J's interleaved rotary embedding (SDPA or an explicit softmax)."""

    def forward(self, x):
        B, L, C = x.shape
        q, k, v = (t.view(B, L, self.heads, -1).transpose(1, 2) for t in self.c_attn(x).split(self.dim, dim=2))
        q, k = rope_interleaved(q, self.base), rope_interleaved(k, self.base)
        if self.kind == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
            att = att.masked_fill(self.bias[:, :, :L, :L] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).reshape(B, L, C))


def gptj_block(attn: str, heads: int, base: float = 10000.0, seed: int = 0):
    """A nanoGPT-style model whose attention rotates q and k in GPT-J's layout."""
    module = nanogpt(VOCAB, LENGTH, dim=8, heads=heads, attn=attn, pos="rope", seed=seed)
    old = module.transformer.h[0].attn
    new = GptjAttention(8, heads, attn, pos="rope", positions=LENGTH)
    new.load_state_dict(old.state_dict())
    new.base = base
    module.transformer.h[0].attn = new
    return module.eval()


def test_the_interleaved_rotation_is_the_halves_rotation_of_permuted_coordinates():
    x = torch.randn(2, 3, 5, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    order = to_halves(6)
    assert order.tolist() == [0, 2, 4, 1, 3, 5]
    assert torch.allclose(rotate(x, 10000.0, interleaved=True), rope_interleaved(x), rtol=1e-12, atol=1e-12)
    assert torch.allclose(rotate(x, 500000.0, interleaved=True)[..., order], rotate(x[..., order], 500000.0))
    assert read_rope(x, rope_interleaved(x, 500000.0)) == (500000.0, True)
    assert read_rope(x, rotate(x, 10000.0)) == (10000.0, False)


@pytest.mark.parametrize("attn", ["sdpa", "softmax"])
@pytest.mark.parametrize("heads", [1, 2])
def test_a_gptj_rotation_is_read_and_folded_exactly(attn, heads):
    module = gptj_block(attn, heads, base=10000.0 if heads == 1 else 500000.0, seed=heads)
    model = from_torch(module, seq_len=LENGTH)
    assert model.config.rope and model.config.rope_base == (10000.0 if heads == 1 else 500000.0)
    assert "interleaved (GPT-J)" in model.source
    assert agreement(model)["ok"] is True
    for reduction in ("index-idxl", "eq-ineq"):    # one-way and two-way exchanges
        assert_trusted(run_reduction(reduction, model, N if reduction == "index-idxl" else 2, instances=12,
                                     certify=False))
