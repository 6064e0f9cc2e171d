"""Attention written in a model's own forward (``protocols/adapters/torch/inline.py``): a flat one-layer model
with a fused ``c_attn`` and ``F.scaled_dot_product_attention(is_causal=True)``, one with an explicit masked softmax
and RoPE, separate projections without an out projection, read by tracing the forward, folded and judged against
the module's own forward; what cannot be read is refused naming the op.
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

import commsim  # noqa: E402
from agreement_checks import assert_trusted  # noqa: E402
from protocols.adapters.torch import agreement, from_torch  # noqa: E402
from protocols.adapters.torch.layers import AdapterError  # noqa: E402

N = 8
VOCAB, LENGTH = N + 2, N + 1        # index-idxl at n = 8


def rope(x, base=10000.0):
    """Rotary embedding of (B, H, T, dh), rotate-halves, as research code writes it inline."""
    T, dh = x.shape[-2], x.shape[-1]
    inv = 1.0 / (base ** (torch.arange(0, dh, 2).float() / dh))
    ang = torch.outer(torch.arange(T).float(), inv)
    cos, sin = torch.cat((ang, ang), -1).cos(), torch.cat((ang, ang), -1).sin()
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), -1) * sin


class Flat(nn.Module):
    """One layer written flat: tok (+ pos) -> ln_1 -> c_attn -> heads -> (RoPE) -> SDPA or masked softmax -> c_proj
    on a residual stream -> ln_f -> head, at the last position."""

    def __init__(self, d=8, heads=2, kind="sdpa", pos="learned", soft_cap=None, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.d, self.h, self.kind, self.pos_kind, self.soft_cap = d, heads, kind, pos, soft_cap
        self.tok = nn.Embedding(VOCAB, d)
        if pos == "learned":
            self.pos = nn.Embedding(16, d)
        self.ln_1, self.ln_f = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.head = nn.Linear(d, VOCAB)

    def forward(self, idx):
        B, T = idx.shape
        assert T <= 16
        x = self.tok(idx)
        if self.pos_kind == "learned":
            x = x + self.pos(torch.arange(T, device=idx.device))
        q, k, v = self.c_attn(self.ln_1(x)).split(self.d, dim=2)
        q = q.view(B, T, self.h, -1).transpose(1, 2)
        k = k.view(B, T, self.h, -1).transpose(1, 2)
        v = v.view(B, T, self.h, -1).transpose(1, 2)
        if self.pos_kind == "rope":
            q, k = rope(q), rope(k)
        if self.kind == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
            if self.soft_cap:
                att = self.soft_cap * torch.tanh(att / self.soft_cap)
            att = att.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(B, T, self.d)
        x = x + self.c_proj(y)
        return self.head(self.ln_f(x))[:, -1, :]


@pytest.mark.parametrize("kind,pos", [("sdpa", "learned"), ("softmax", "rope"), ("sdpa", "rope"),
                                      ("softmax", "none")])
def test_a_flat_one_layer_model_is_read_from_its_forward_and_exact(kind, pos):
    module = Flat(kind=kind, pos=pos).eval()
    report = commsim.run("index-idxl", module, n=N, instances=64)
    assert report.protocol == "attention-exchange"
    assert_trusted(report)
    model = from_torch(module, vocab_size=VOCAB, seq_len=LENGTH)
    what = "scaled_dot_product_attention" if kind == "sdpa" else "explicit softmax"
    assert f"Flat's own forward (inline: {what}, q/k/v from c_attn, out c_proj" in model.source
    assert ("RoPE base 10000" in model.source) == (pos == "rope")
    assert "a pre-norm residual connection" in model.source
    assert agreement(model)["max_abs_diff"] < 1e-5


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(heads=st.sampled_from([1, 2, 4]), width=st.sampled_from([2, 4]), kind=st.sampled_from(["sdpa", "softmax"]),
       pos=st.sampled_from(["learned", "rope", "none"]), seed=st.integers(0, 2 ** 16))
def test_random_flat_models(heads, width, kind, pos, seed):
    module = Flat(d=heads * width, heads=heads, kind=kind, pos=pos, seed=seed).eval()
    assert_trusted(commsim.run("index-idxl", module, n=N, instances=16, seed=seed, certify=False))


class Separate(nn.Module):
    """Separate key / query / value Linears (called k, q, v), one head without a heads axis, no out projection,
    a residual connection around the attention."""

    def __init__(self, d=6):
        super().__init__()
        torch.manual_seed(1)
        self.emb = nn.Embedding(VOCAB, d)
        self.key, self.query, self.value = (nn.Linear(d, d, bias=False) for _ in range(3))
        self.out = nn.Linear(d, 2)

    def forward(self, idx):
        x = self.emb(idx)
        k, q, v = self.key(x), self.query(x), self.value(x)
        T = idx.shape[1]
        w = (q @ k.transpose(1, 2)) * k.shape[-1] ** -0.5
        w = w.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf")).softmax(dim=-1)
        return self.out((w @ v + x)[:, -1])


def test_separate_projections_one_head_and_no_out_projection():
    module = Separate().eval()
    model = from_torch(module, vocab_size=VOCAB, seq_len=LENGTH)
    assert "Separate's own forward (inline: explicit softmax, q/k/v from query, key, value)" in model.source
    assert_trusted(commsim.run("index-idxl", module, n=N, instances=32, certify=False))


def test_a_fixed_point_run_of_a_flat_model_judges_its_reading_apart():
    report = commsim.run("index-idxl", Flat(kind="softmax", pos="rope").eval(), n=N, instances=32, precision=16,
                         certify=False)
    assert report.protocol_matches_model
    assert report.torch_agreement["reading"]["ok"] is True


def test_what_cannot_be_read_is_refused_naming_the_op():
    with pytest.raises(AdapterError, match=r"Flat computes its attention in its own forward and commsim could not "
                                           r"read it: torch\.tanh on the way from the projections to the softmax"):
        from_torch(Flat(kind="softmax", soft_cap=5.0).eval(), vocab_size=VOCAB, seq_len=LENGTH)


class Pooled(Flat):
    def forward(self, idx):
        B, T = idx.shape
        x = self.tok(idx) + self.pos(torch.arange(T))
        q, k, v = (t.view(B, T, self.h, -1).transpose(1, 2) for t in self.c_attn(x).split(self.d, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, self.d)
        return self.head(self.c_proj(y).mean(dim=1))


class Twice(Flat):
    def forward(self, idx):
        B, T = idx.shape
        x = self.tok(idx) + self.pos(torch.arange(T))
        for _ in range(2):
            q, k, v = (t.view(B, T, self.h, -1).transpose(1, 2) for t in self.c_attn(x).split(self.d, dim=2))
            x = x + F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, self.d)
        return self.head(x)[:, -1]


def test_a_pooled_readout_and_two_inline_layers_are_refused():
    with pytest.raises(AdapterError, match="pools the attention output over positions"):
        from_torch(Pooled().eval(), vocab_size=VOCAB, seq_len=LENGTH)
    with pytest.raises(AdapterError, match="Lemma 5"):
        from_torch(Twice().eval(), vocab_size=VOCAB, seq_len=LENGTH)


def test_audit_equals_in_process_run(shared_audit_workers):
    module = Flat(kind="sdpa", pos="rope").eval()
    plain = commsim.run("index-idxl", module, n=N, instances=4, seed=1, certify=False)
    audited = commsim.run("index-idxl", module, n=N, instances=4, seed=1, certify=False, audit=True)
    assert audited.audited and audited.protocol_matches_model and plain.protocol_matches_model
    assert (audited.bits_used, audited.bits_by_direction, audited.model_accuracy) == \
        (plain.bits_used, plain.bits_by_direction, plain.model_accuracy)
    assert audited.torch_agreement == plain.torch_agreement and plain.torch_agreement["ok"] is True
