"""The built-in selective SSM ``mamba`` (input-dependent Δ, B, C) under the hidden-state handoff (Theorem 2 of
[BHBK24]): its handed-off state is every layer's SSM state and convolution window, exactly."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.core.errors import InputError, ModelError
from commsim.core.precision import FixedPoint, FloatFormat
from commsim.runs.run import run_reduction
from commsim.plugins import load_plugins, make_model
from protocols.models.mamba import SelectiveSSM, softplus

from handoff_checks import handoff_matches_direct, random_split

VOCAB = 5
formats = st.one_of(
    st.integers(3, 20).flatmap(lambda p: st.integers(0, p - 1).map(lambda f: FixedPoint(p, f))),
    st.sampled_from(["float16", "bfloat16", "float32", "float64"]).map(FloatFormat),
)


@st.composite
def mamba_cases(draw):
    model = SelectiveSSM.random(draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(1, 4)),
                                draw(st.integers(1, 2)), draw(st.integers(1, 2)), None, draw(formats), VOCAB,
                                draw(st.integers(1, 3)), draw(st.integers(0, 10 ** 6)))
    return model, random_split(draw, st, VOCAB, max_length=7, batch=3)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mamba_cases())
def test_handoff_equals_direct_forward_over_random_mambas(case):
    model, encoded = case
    handoff_matches_direct(model, encoded)
    e, n, k = model.d_inner, model.d_state, model.d_conv
    assert model.state_bits == model.num_layers * e * (n + k - 1) * model.format.bits
    states = model.final_states(encoded.tokens)
    assert np.array_equal(model.format.quantize(states), states)


def reference_mamba(model: SelectiveSSM, tokens: np.ndarray) -> np.ndarray:
    """Mamba written out plainly at float64 (no rounding): the whole sequence, convolution over the padded x's."""
    out = []
    for row in tokens:
        u = model._embed[row].copy()                       # (L, D)
        for lay in model._layers:
            v = u / np.sqrt((u * u).mean(1, keepdims=True) + model.eps) * lay["norm"]
            xz = v @ lay["in"].weight
            x, z = xz[:, :model.d_inner], xz[:, model.d_inner:]
            pad = np.vstack([np.zeros((model.d_conv - 1, model.d_inner)), x])
            conv = np.stack([(pad[t:t + model.d_conv].T * lay["conv_w"]).sum(1) for t in range(len(x))])
            conv = conv + lay["conv_b"]
            xc = conv / (1 + np.exp(-conv))
            dbc = xc @ lay["x"].weight
            r, n = model.dt_rank, model.d_state
            delta = softplus(dbc[:, :r] @ lay["dt"].weight + lay["dt"].bias)
            h = np.zeros((model.d_inner, n))
            ys = []
            for t in range(len(x)):
                h = np.exp(delta[t][:, None] * lay["A"]) * h + (delta[t][:, None] * dbc[t, r:r + n]) * xc[t][:, None]
                ys.append(h @ dbc[t, r + n:] + lay["D"] * xc[t])
            y = np.array(ys) * (z / (1 + np.exp(-z)))
            u = u + y @ lay["out"].weight
        u = u / np.sqrt((u * u).mean(1, keepdims=True) + model.eps_f) * model._norm_f
        out.append(u @ model._head.weight)
    return np.array(out)


def test_float64_mamba_is_the_selective_scan():
    model = SelectiveSSM.random(3, 2, 3, 2, 2, None, "float64", VOCAB, 2, seed=7)
    tokens = np.random.default_rng(0).integers(0, VOCAB, size=(4, 6))
    ours = model.forward_batch(tokens, range(6))
    assert np.allclose(ours, reference_mamba(model, tokens), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fmt", ["8", "fixed12.4", "bfloat16", "float32"])
def test_batched_run_equals_single_runs(fmt):
    model = SelectiveSSM.random(4, 2, 3, 2, 2, None, fmt, VOCAB, 2, seed=4)
    tokens = np.random.default_rng(1).integers(0, VOCAB, size=(30, 8))
    batch = model.forward_batch(tokens, (3, 7))
    for i in range(0, 30, 7):
        assert np.array_equal(model.forward(tokens[i], (3, 7)).view(np.uint64), batch[i].view(np.uint64))


def test_bits_used_is_the_hand_count_and_a_narrow_mamba_gets_a_verified_certificate():
    # 2 layers × (d_inner 8 × d_state 2 + window 8 × (3 - 1)) = 64 numbers of float32
    report = run_reduction("index-idxl", "mamba:d_model=4,d_state=2,d_conv=3,layers=2,dtype=float32", 6,
                           instances=16, certify=False)
    assert report.bits_used == 2 * (8 * 2 + 8 * 2) * 32 and report.protocol_matches_model and report.budget_ok
    # d_model 1, expand 1: 1 × 1 + 1 × 1 = 2 numbers of 3 bits < 8
    narrow = run_reduction("index-idxl", "mamba:d_model=1,d_state=1,d_conv=2,expand=1,precision=3", 8)
    assert narrow.bits_used == 6 and narrow.protocol_matches_model and not narrow.budget_ok
    assert narrow.certificate.kind == "collision" and narrow.certificate.verified


def test_audit_equals_in_process_run():
    spec = "mamba:d_model=2,d_state=2,d_conv=2,precision=6"
    plain = run_reduction("index-idxl", spec, 4, instances=8, seed=1, certify=False)
    audited = run_reduction("index-idxl", spec, 4, instances=8, seed=1, certify=False, audit=True)
    assert audited.audited and audited.protocol_matches_model and plain.protocol_matches_model
    assert audited.bits_used == plain.bits_used == 4 * (2 + 1) * 6
    assert audited.model_accuracy == plain.model_accuracy


def test_spec_keys_registration_and_errors():
    model = make_model("mamba:d_model=3,d_state=2,d_conv=4,expand=2,dt_rank=2,layers=3,precision=7,frac=2,seed=5,"
                       "vocab=6,classes=3")
    assert (model.d_inner, model.dt_rank, model.num_layers, model.vocab_size, model.num_classes) == (6, 2, 3, 6, 3)
    assert model.state_units == 3 * 6 * (2 + 3) and model.format == FixedPoint(7, 2)
    assert make_model("mamba").dt_rank == math.ceil(4 / 16)
    assert "mamba" in load_plugins().names("model")
    for bad in ("mamba:d_model=0", "mamba:d_conv=99", "mamba:d_modle=3", "mamba:layers=0"):
        with pytest.raises(InputError):
            make_model(bad)
    with pytest.raises(ModelError, match="run\\(tokens, outputs"):
        model.readout(model.initial_state(1))
