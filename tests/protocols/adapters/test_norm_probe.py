"""Normalisations recognised by what they compute (``protocols/adapters/torch/norms.py``): a module of the user's
own class holding a weight (and optional bias) is probed on random rows against LayerNorm (``F.layer_norm``) and
RMSNorm with its own weight and bias -- epsilon read from the module or found by the probe -- never by its class
name; what computes neither is refused with the reason.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional
torch.set_num_threads(1)

from nanogpt_style import LayerNorm as NanoLayerNorm  # noqa: E402
from protocols.adapters.torch import from_torch  # noqa: E402
from protocols.adapters.torch.layers import AdapterError, numpy_steps, tensor  # noqa: E402
from protocols.adapters.torch.norms import probe_norm  # noqa: E402


class LlamaRMSNorm(nn.Module):
    """Llama's RMSNorm as research code copies it: eps kept as ``variance_epsilon``, half precision computed in
    float32."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.variance_epsilon = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32) if x.element_size() < 4 else x
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * x.to(dtype)


class Zebra(nn.Module):
    """A LayerNorm by another name, written out by hand, epsilon hard-coded (found by the probe)."""

    def __init__(self, d, eps):
        super().__init__()
        self.weight, self.bias, self._e = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d)), eps

    def forward(self, x):
        m = x.mean(-1, keepdim=True)
        v = ((x - m) ** 2).mean(-1, keepdim=True)
        return (x - m) / torch.sqrt(v + self._e) * self.weight + self.bias


class RMSNorm(nn.Module):
    """Named like a norm, holding a weight and a bias, but an affine map: no normalisation."""

    def __init__(self, d):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))

    def forward(self, x):
        return x * self.weight + self.bias


def randomised(module, seed=0):
    with torch.no_grad():
        g = torch.Generator().manual_seed(seed)
        for p in module.parameters():
            p.copy_(torch.rand(p.shape, generator=g, dtype=torch.float64).to(p.dtype) + 0.5)
    return module


def steps_output(module, x):
    y = x
    for step in numpy_steps(module):
        y = step(y)
    return y


@pytest.mark.parametrize("bias", [True, False])
def test_nanogpt_layernorm_is_read_as_layernorm(bias):
    module = randomised(NanoLayerNorm(6, bias=bias))
    found, why = probe_norm(module)
    assert why == "" and found.center and found.eps == pytest.approx(1e-5) and (found.bias is None) == (not bias)
    x = np.random.default_rng(0).normal(size=(5, 6))
    np.testing.assert_allclose(steps_output(module, x), tensor(module(torch.tensor(x, dtype=torch.float32))),
                               rtol=1e-5, atol=1e-6)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(eps=st.sampled_from([1e-5, 1e-6, 3e-6, 1e-8, 1e-3]), d=st.integers(2, 24), seed=st.integers(0, 999),
       kind=st.sampled_from(["llama", "zebra"]), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_epsilon_is_read_or_found_by_the_probe(eps, d, seed, kind, dtype):
    module = randomised(LlamaRMSNorm(d, eps) if kind == "llama" else Zebra(d, eps), seed).to(dtype)
    found, why = probe_norm(module)
    assert why == "", why
    assert found.center == (kind == "zebra")
    assert found.eps == pytest.approx(eps, rel=1e-3)
    x = np.random.default_rng(seed).normal(size=(7, d)) * 0.01     # small rows: where epsilon matters
    theirs = tensor(module(torch.tensor(x, dtype=dtype)))
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    np.testing.assert_allclose(steps_output(module, tensor(torch.tensor(x, dtype=dtype))), theirs, rtol=tol,
                               atol=tol)


def test_a_module_named_like_a_norm_that_does_not_normalise_is_refused():
    found, why = probe_norm(randomised(RMSNorm(4)))
    assert found is None and "computes neither LayerNorm (F.layer_norm) nor RMSNorm" in why
    assert numpy_steps(RMSNorm(4)) is None
    assert probe_norm(nn.Linear(4, 4))[0] is None


class Block(nn.Module):
    def __init__(self, norm, d=8, vocab=6, length=5):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(length, d)
        self.ln_1, self.attn = norm, nn.MultiheadAttention(d, 2, batch_first=True)
        self.head = nn.Linear(d, 2)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        h = self.ln_1(x)
        return self.head(x + self.attn(h, h, h, need_weights=False)[0])[:, -1]


def test_a_block_with_its_own_norm_classes_folds_and_a_non_norm_is_refused_with_the_reason():
    torch.manual_seed(0)
    model = from_torch(Block(randomised(Zebra(8, 1e-5))).eval(), seq_len=5)
    assert "Zebra before the attention folded into the embedding" in model.source
    torch.manual_seed(0)
    with pytest.raises(AdapterError, match=r"RMSNorm sits between .* and no normalisation \(on random rows it "
                                           r"computes neither"):
        from_torch(Block(randomised(RMSNorm(8))).eval(), seq_len=5)
