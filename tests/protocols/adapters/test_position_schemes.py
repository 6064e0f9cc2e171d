"""RoPE, ALiBi and NoPE read from torch modules written as research code writes them (issue 25, item 3):
nanoGPT / minGPT blocks whose attention rotates q and k by position (Llama / GPT-NeoX rotate-halves), adds the
ALiBi paper's m_h (j - i) to the logits, or has no position information but the causal mask.  Each: protocol =
model bit for bit, ``--audit`` = the in-process run, torch agreement within the documented tolerance; a narrow
fixed-point variant gets a verified certificate."""
from __future__ import annotations

import pytest

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
from protocols.models.attention_positions import alibi_slopes  # noqa: E402

N = 4
VOCAB, LENGTH = N + 2, N + 1        # index-idxl at n = 4



@pytest.mark.parametrize("attn", ["sdpa", "softmax"])
@pytest.mark.parametrize("pos", ["rope", "alibi", "none"])
@pytest.mark.parametrize("heads", [1, 2])
def test_rope_alibi_nope_blocks_are_read_and_exact(attn, pos, heads):
    module = nanogpt(VOCAB, LENGTH, dim=8, heads=heads, attn=attn, pos=pos, seed=heads)
    model = from_torch(module, seq_len=LENGTH)
    assert model.config.rope == (pos == "rope") and model.position_table is None
    assert model.config.alibi == (alibi_slopes(heads) if pos == "alibi" else None)   # the paper's slopes, exactly
    assert agreement(model)["ok"] is True
    for reduction in ("index-idxl", "eq-ineq"):    # one-way and two-way exchanges
        assert_trusted(run_reduction(reduction, model, N if reduction == "index-idxl" else 2, instances=12,
                                     certify=False))


@pytest.mark.parametrize("pos", ["rope", "alibi"])
def test_audit_equals_in_process_run(pos, shared_audit_workers):
    model = prepare("index-idxl", f"python:examples.research_blocks:nanogpt:dim=8,pos={pos}", N).model
    plain = run_reduction("index-idxl", model, N, instances=3, seed=1, certify=False)
    audited = run_reduction("index-idxl", model, N, instances=3, seed=1, certify=False, audit=True)
    assert audited.audited and audited.protocol_matches_model and plain.protocol_matches_model
    assert (audited.bits_used, audited.bits_by_direction, audited.model_accuracy) == \
        (plain.bits_used, plain.bits_by_direction, plain.model_accuracy)
    assert audited.torch_agreement == plain.torch_agreement and plain.torch_agreement["ok"] is True


@pytest.mark.parametrize("pos", ["rope", "alibi", "none"])
def test_a_narrow_fixed_point_variant_gets_a_verified_certificate(pos):
    report = run_reduction("eq-ineq", f"python:examples.research_blocks:nanogpt:dim=2,heads=1,precision=2,pos={pos}",
                           32, instances=16)
    assert report.protocol_matches_model and report.bits_used < report.lower_bound.bits and not report.budget_ok
    assert report.certificate is not None and report.certificate.verified


def test_declared_rope_and_alibi_match_the_module():
    for pos, declared in (("rope", {"rope": True}), ("alibi", {"alibi": True})):
        module = nanogpt(VOCAB, LENGTH, dim=8, heads=2, attn="sdpa", pos=pos, seed=4)
        t, block = module.transformer, module.transformer.h[0]
        a = block.attn
        core = {"query": a.c_attn, "key": a.c_attn, "value": a.c_attn, "out": a.c_proj, "heads": 2, **declared}
        parts = {"embedding": t.wte, "norm": block.ln_1, "core": core, "residual": True,
                 "mlp": [block.ln_2, block.mlp], "head": nn.Sequential(t.ln_f, module.lm_head), "module": module}
        model = from_torch(parts, seq_len=LENGTH)
        assert agreement(model)["ok"] is True, pos
        assert run_reduction("index-idxl", model, N, instances=8, certify=False).protocol_matches_model


class QuadraticBias(CausalSelfAttention):
    """A bias -(j - i)^2 on the logits: not ALiBi."""

    def forward(self, x):
        B, L, C = x.shape
        q, k, v = (t.view(B, L, self.heads, -1).transpose(1, 2) for t in self.c_attn(x).split(self.dim, dim=2))
        i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
        bias = (-(j - i).double() ** 2).masked_fill(j > i, float("-inf")).to(x.dtype)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        return self.c_proj(y.transpose(1, 2).reshape(B, L, C))


class Wrapper(nn.Module):
    def __init__(self, attn, dim=8):
        super().__init__()
        self.tok, self.attn, self.head = nn.Embedding(VOCAB, dim), attn, nn.Linear(dim, 2)

    def forward(self, idx):
        x = self.tok(idx)
        return self.head(x + self.attn(x))[:, -1]


def test_a_bias_that_is_not_alibi_is_refused_by_name():
    with pytest.raises(AdapterError, match="not linear in the key position"):
        from_torch(Wrapper(QuadraticBias(8, 2)), seq_len=LENGTH)
