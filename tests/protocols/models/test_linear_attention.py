"""Linear attention (linear transformer / RetNet) as a recurrence: its d×d state handed off (Theorem 2)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.core.errors import InputError, ModelError
from commsim.core.precision import FixedPoint, FloatFormat
from commsim.runs.run import run_reduction
from commsim.plugins import load_plugins, make_model
from protocols.models.linear_attention import LinearAttention, elu_plus_one

from handoff_checks import handoff_matches_direct, random_split

VOCAB = 4
formats = st.one_of(
    st.integers(2, 20).flatmap(lambda p: st.integers(0, p - 1).map(lambda f: FixedPoint(p, f))),
    st.sampled_from(["float16", "bfloat16", "float32", "float64"]).map(FloatFormat),
)




@st.composite
def cases(draw):
    fmt = draw(formats)
    normalize = draw(st.booleans())
    model = LinearAttention.random(draw(st.integers(1, 4)), fmt, VOCAB, draw(st.integers(1, 3)),
                                   draw(st.integers(0, 10 ** 6)), draw(st.sampled_from([1.0, 0.96875, 0.5])),
                                   normalize, draw(st.sampled_from(["identity", "elu"])))
    return model, random_split(draw, st, VOCAB, max_length=8, batch=5)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_handoff_equals_direct_forward_over_random_layers(case):
    model, encoded = case
    handoff_matches_direct(model, encoded)
    d = model.dim
    assert model.state_bits == (d * d + (d if model.normalize else 0)) * model.format.bits


def test_float64_layer_is_linear_attention():
    """At float64: S_t = γ S_{t-1} + v_t k_tᵀ, o_t = S_t q_t / (z_tᵀ q_t), y_t = W_o o_t + b."""
    rng = np.random.default_rng(3)
    wq, wk, wv = (rng.normal(size=(5, 3)) for _ in range(3))
    wo, bias, gamma = rng.normal(size=(3, 2)), rng.normal(size=2), 0.75
    tokens = rng.integers(0, 5, size=(4, 6))
    plain = LinearAttention(wq, wk, wv, wo, bias, gamma, "float64")
    normed = LinearAttention(wq, wk, wv, wo, bias, gamma, "float64", normalize=True, feature="elu")
    fq, fk = elu_plus_one(wq), elu_plus_one(wk)
    S, Sf, z = np.zeros((4, 3, 3)), np.zeros((4, 3, 3)), np.zeros((4, 3))
    want_plain, want_norm = [], []
    for j in range(6):
        x = tokens[:, j]
        S = gamma * S + wv[x][:, :, None] * wk[x][:, None, :]
        Sf = gamma * Sf + wv[x][:, :, None] * fk[x][:, None, :]
        z = gamma * z + fk[x]
        want_plain.append(np.einsum("bij,bj->bi", S, wq[x]) @ wo + bias)
        o = np.einsum("bij,bj->bi", Sf, fq[x]) / np.einsum("bj,bj->b", z, fq[x])[:, None]
        want_norm.append(o @ wo + bias)
    every = range(6)
    assert np.allclose(plain.forward_batch(tokens, every), np.stack(want_plain, 1), rtol=1e-10, atol=1e-10)
    assert np.allclose(normed.forward_batch(tokens, every), np.stack(want_norm, 1), rtol=1e-10, atol=1e-10)
    assert np.allclose(plain.final_states(tokens), S.reshape(4, 9), rtol=1e-12, atol=1e-12)


def test_fixed_point_state_is_rounded_down_every_step():
    one = np.ones((2, 1))
    model = LinearAttention(one, [[0.5], [0.75]], [[1.0], [0.5]], [[1.0]], None, 0.7, FixedPoint(6, 2))
    assert model.decay == 0.5                     # γ = 0.7 rounds down to 0.5 on the grid of 1/4
    h, _ = model.run(np.array([[1, 1]]))
    # S_1 = [0.5 * 0.75] = [0.375] = 0.25; S_2 = [0.5 * 0.25 + 0.375] = [0.5] = 0.5
    assert h.tolist() == [[0.5]]


def test_bits_used_is_d_d_p_and_a_narrow_layer_gets_a_verified_certificate():
    wide = run_reduction("index-idxl", "linear-attention:dim=3,precision=6", 8, instances=64, certify=False)
    assert wide.bits_used == 3 * 3 * 6 and wide.protocol_matches_model
    normed = run_reduction("index-idxl", "linear-attention:dim=2,precision=5,normalize=true", 6, instances=32,
                           certify=False)
    assert normed.bits_used == (2 * 2 + 2) * 5 and normed.protocol_matches_model
    narrow = run_reduction("index-idxl", "linear-attention:dim=1,precision=6", 8)
    assert narrow.bits_used == 6 and not narrow.budget_ok and narrow.protocol_matches_model
    assert narrow.certificate.kind == "collision" and narrow.certificate.verified


def test_spec_registration_and_errors():
    model = make_model("linear-attention:dim=3,precision=6,decay=1,seed=2,vocab=5")
    assert (model.dim, model.state_units, model.state_bits, model.decay) == (3, 9, 54, 1.0)
    assert make_model("linear-attention:dim=2,normalize=true").feature == "elu"
    assert "linear-attention" in load_plugins().names("model")
    for bad in ("linear-attention:decay=1.5", "linear-attention:dim=0", "linear-attention:feature=relu"):
        with pytest.raises(InputError):
            make_model(bad)
    with pytest.raises(ModelError, match="query"):
        model.readout(model.initial_state(1))


def test_audit_equals_in_process_run():
    spec = "linear-attention:dim=2,precision=5,normalize=true"
    plain = run_reduction("index-idxl", spec, 4, instances=8, seed=1, certify=False)
    audited = run_reduction("index-idxl", spec, 4, instances=8, seed=1, certify=False, audit=True)
    assert audited.audited and audited.protocol_matches_model and plain.protocol_matches_model
    assert audited.bits_used == plain.bits_used == (2 * 2 + 2) * 5
    assert audited.model_accuracy == plain.model_accuracy
