"""Hand-written attention (issue 25, item 2): nanoGPT's packed ``c_attn`` + ``F.scaled_dot_product_attention`` and
minGPT's explicit ``softmax(q k^T / sqrt(d_h))`` under a causal mask, read from the forward (a TorchFunctionMode
records the attention calls, hooks the projections), then verified against the module's own forward; the
declared-parts fallback (query, key, value, out, heads, scale, mask); refusals naming what could not be read.
"""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional
torch.set_num_threads(1)

from agreement_checks import assert_trusted  # noqa: E402
from commsim.runs.run import run_reduction  # noqa: E402
from commsim.runs.stages import prepare  # noqa: E402
from examples.research_blocks import CausalSelfAttention, nanogpt  # noqa: E402
from protocols.adapters.torch import agreement, from_torch  # noqa: E402
from protocols.adapters.torch.layers import AdapterError  # noqa: E402

N = 4
VOCAB, LENGTH = N + 2, N + 1        # index-idxl at n = 4



@pytest.mark.parametrize("attn", ["sdpa", "softmax"])
@pytest.mark.parametrize("pos", ["learned", "none"])
@pytest.mark.parametrize("slice_first", [False, True])
def test_nanogpt_and_mingpt_blocks_are_read_and_exact(attn, pos, slice_first):
    module = nanogpt(VOCAB, LENGTH, dim=8, heads=2, attn=attn, pos=pos, slice_first=slice_first, seed=1)
    model = from_torch(module, seq_len=LENGTH)
    kind = "scaled_dot_product_attention" if attn == "sdpa" else "explicit softmax"
    assert f"hand-written: {kind}, q/k/v from c_attn, out c_proj" in model.source
    assert agreement(model)["ok"] is True
    report = run_reduction("index-idxl", model, N, instances=16, certify=False)
    assert report.protocol == "attention-exchange"
    assert_trusted(report)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(heads=st.sampled_from([1, 2, 4]), width=st.sampled_from([2, 4]), attn=st.sampled_from(["sdpa", "softmax"]),
       seed=st.integers(0, 2 ** 16))
def test_random_handwritten_blocks(heads, width, attn, seed):
    module = nanogpt(VOCAB, LENGTH, dim=heads * width, heads=heads, attn=attn, seed=seed)
    assert_trusted(run_reduction("index-idxl", from_torch(module), N, instances=12, seed=seed, certify=False))


class SeparateProjections(nn.Module):
    """minGPT's older attention: separate key / query / value Linears (registered in that order), no out proj."""

    def __init__(self, dim=8, heads=2):
        super().__init__()
        self.key, self.query, self.value = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.heads = heads

    def forward(self, x):
        B, L, C = x.shape
        k, q, v = (lin(x).view(B, L, self.heads, -1).transpose(1, 2) for lin in (self.key, self.query, self.value))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        att = att.masked_fill(torch.ones(L, L).triu(1).bool(), float("-inf")).softmax(dim=-1)
        return (att @ v).transpose(1, 2).reshape(B, L, C)


class Wrapper(nn.Module):
    def __init__(self, attn, dim=8):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, dim), nn.Embedding(LENGTH, dim)
        self.attn, self.head = attn, nn.Linear(dim, 2)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        return self.head(x + self.attn(x))[:, -1]


def test_separate_projections_without_an_out_projection():
    torch.manual_seed(4)
    model = from_torch(Wrapper(SeparateProjections()))
    assert "q/k/v from query, key, value" in model.source and "out" not in model.source.split("value")[1][:6]
    assert_trusted(run_reduction("index-idxl", model, N, instances=12, certify=False))


def test_declared_parts_fallback_matches_the_module():
    module = nanogpt(VOCAB, LENGTH, dim=8, heads=2, attn="softmax", seed=2)
    t, block = module.transformer, module.transformer.h[0]
    a = block.attn
    core = {"query": a.c_attn, "key": a.c_attn, "value": a.c_attn, "out": a.c_proj, "heads": 2, "mask": "causal",
            "scale": 1 / math.sqrt(4)}
    parts = {"embedding": t.wte, "positions": t.wpe, "norm": block.ln_1, "core": core, "residual": True,
             "mlp": [block.ln_2, block.mlp], "head": nn.Sequential(t.ln_f, module.lm_head), "module": module}
    model = from_torch(parts)
    assert model.source.startswith("declared attention (heads=2)")
    assert agreement(model)["ok"] is True
    assert run_reduction("index-idxl", model, N, instances=8, certify=False).protocol_matches_model
    with pytest.raises(AdapterError, match="missing 'heads'"):
        from_torch({**parts, "core": {k: v for k, v in core.items() if k != "heads"}})
    with pytest.raises(AdapterError, match="mask='window'"):
        from_torch({**parts, "core": {**core, "mask": "window"}})


class Doubled(CausalSelfAttention):
    """q is scaled by 2 after the split: the query is no third of c_attn's output (nor its rotation)."""

    def forward(self, x):
        B, L, C = x.shape
        q, k, v = self.c_attn(x).split(self.dim, dim=2)
        q, k, v = (t.view(B, L, self.heads, -1).transpose(1, 2) for t in (2 * q, k, v))
        return self.c_proj(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, L, C))


class Windowed(CausalSelfAttention):
    """A sliding window of 2: the last query does not see the first positions."""

    def forward(self, x):
        B, L, C = x.shape
        q, k, v = (t.view(B, L, self.heads, -1).transpose(1, 2) for t in self.c_attn(x).split(self.dim, dim=2))
        i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=(j <= i) & (j > i - 2))
        return self.c_proj(y.transpose(1, 2).reshape(B, L, C))


class Inline(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.qkv = nn.Embedding(VOCAB, 4), nn.Linear(4, 12)

    def forward(self, idx):
        q, k, v = self.qkv(self.tok(idx)).unsqueeze(1).split(4, dim=-1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)[:, 0]


def test_what_cannot_be_read_is_named():
    with pytest.raises(AdapterError, match="could not read the query projection of Doubled"):
        from_torch(Wrapper(Doubled(8, 2)))
    with pytest.raises(AdapterError, match="mask hides positions from the last query"):
        from_torch(Wrapper(Windowed(8, 2)))
    inline = from_torch(Inline())   # attention in the module's own forward is read too (test_inline_attention.py)
    assert "Inline's own forward (inline: scaled_dot_product_attention, q/k/v from qkv)" in inline.source
    assert agreement(inline)["ok"] is True


def test_two_handwritten_layers_are_refused_with_lemma_5():
    class Two(Wrapper):
        def __init__(self):
            super().__init__(CausalSelfAttention(8, 2))
            self.second = CausalSelfAttention(8, 2)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
            return self.head(self.second(self.attn(x)))[:, -1]

    with pytest.raises(AdapterError, match="Lemma 5"):
        from_torch(Two())


def test_audit_equals_in_process_run(shared_audit_workers):
    model = prepare("index-idxl", "python:examples.research_blocks:nanogpt:dim=8", N).model
    plain = run_reduction("index-idxl", model, N, instances=3, seed=1, certify=False)
    audited = run_reduction("index-idxl", model, N, instances=3, seed=1, certify=False, audit=True)
    assert audited.audited and audited.protocol_matches_model and plain.protocol_matches_model
    assert (audited.bits_used, audited.bits_by_direction, audited.model_accuracy) == \
        (plain.bits_used, plain.bits_by_direction, plain.model_accuracy)
    assert audited.torch_agreement == plain.torch_agreement and plain.torch_agreement["ok"] is True


def test_a_narrow_fixed_point_nanogpt_gets_a_verified_certificate_below_the_bound():
    report = run_reduction("eq-ineq", "python:examples.research_blocks:nanogpt:dim=2,heads=1,precision=2", 32,
                           instances=16)
    assert report.protocol_matches_model and report.bits_used < report.lower_bound.bits and not report.budget_ok
    assert report.certificate is not None and report.certificate.verified
