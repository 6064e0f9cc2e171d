"""The diagonal linear SSM (S4D/DSS style) under the hidden-state handoff (Theorem 2 of [BHBK24])."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.core.errors import InputError
from commsim.core.precision import FixedPoint, FloatFormat
from commsim.runs.run import run_reduction
from commsim.plugins import load_plugins, make_model
from protocols.models.ssm import DiagonalSSM

from handoff_checks import handoff_matches_direct, random_split

VOCAB = 4
formats = st.one_of(
    st.integers(2, 24).flatmap(lambda p: st.integers(0, p - 1).map(lambda f: FixedPoint(p, f))),
    st.sampled_from(["float16", "bfloat16", "float32", "float64"]).map(FloatFormat),
)




@st.composite
def ssm_cases(draw):
    fmt = draw(formats)
    model = DiagonalSSM.random(draw(st.integers(1, 5)), fmt, VOCAB, draw(st.integers(1, 3)),
                               draw(st.integers(0, 10 ** 6)), draw(st.booleans()))
    return model, random_split(draw, st, VOCAB, max_length=9, batch=5)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ssm_cases())
def test_handoff_equals_direct_forward_over_random_ssms(case):
    model, encoded = case
    handoff_matches_direct(model, encoded)
    assert model.state_bits == (2 if model.complex else 1) * model.width * model.format.bits


@pytest.mark.parametrize("fmt", ["8", "fixed12.4", "bfloat16", "float32"])
def test_batched_run_equals_single_runs_and_state_on_grid(fmt):
    model = DiagonalSSM.random(3, fmt, 5, 2, seed=4)
    tokens = np.random.default_rng(1).integers(0, 5, size=(40, 10))
    batch = model.forward_batch(tokens, (4, 9))
    for i in range(0, 40, 9):
        assert np.array_equal(model.forward(tokens[i], (4, 9)).view(np.uint64), batch[i].view(np.uint64))
    states = model.final_states(tokens)
    assert np.array_equal(model.format.quantize(states), states)


def test_float64_complex_ssm_is_the_complex_recurrence():
    """At float64 the model is h_t = A h_{t-1} + B[x_t] in complex arithmetic, y = Re(C h) + b."""
    rng = np.random.default_rng(0)
    a = 0.9 * np.exp(1j * rng.uniform(0, np.pi, 3))
    b = rng.normal(size=(4, 3)) + 1j * rng.normal(size=(4, 3))
    c = rng.normal(size=(3, 2)) + 1j * rng.normal(size=(3, 2))
    bias = rng.normal(size=2)
    model = DiagonalSSM(a, b, c, bias, "float64")
    tokens = rng.integers(0, 4, size=(6, 7))
    h = np.zeros((6, 3), dtype=complex)
    for j in range(7):
        h = a * h + b[tokens[:, j]]
    expected = (h @ c).real + bias
    assert np.allclose(model.forward_batch(tokens)[:, 0], expected, rtol=1e-12, atol=1e-12)
    final = model.final_states(tokens)
    assert np.allclose(final[:, :3] + 1j * final[:, 3:], h, rtol=1e-12, atol=1e-12)


def test_fixed_point_rounds_parameters_and_every_step_down():
    model = DiagonalSSM([0.7], [[0.3], [0.55]], [[1.0, -1.0]], None, FixedPoint(6, 3), complex_state=False)
    assert model.a_re.tolist() == [0.625] and model.b_re.ravel().tolist() == [0.25, 0.5]
    h, _ = model.run(np.array([[1, 1]]))
    # h_1 = [0.5] = 0.5; h_2 = [0.625 * 0.5 + 0.5] = [0.8125] = 0.75 (round down to 1/8)
    assert h.tolist() == [[0.75]]


def test_bits_used_is_the_exact_state_and_a_narrow_ssm_gets_a_verified_certificate():
    report = run_reduction("index-idxl", "ssm:width=1,precision=3", 8)
    assert report.bits_used == 2 * 1 * 3 and report.protocol_matches_model
    assert not report.budget_ok and report.lower_bound.bits == 8
    assert report.certificate.kind == "collision" and report.certificate.verified
    real = run_reduction("index-idxl", "ssm:width=2,complex=false,precision=3", 8, instances=64)
    assert real.bits_used == 2 * 3 and real.protocol_matches_model and real.certificate.verified


def test_wide_ssm_sends_2dp_bits_within_budget():
    report = run_reduction("index-idxl", "ssm:width=4,dtype=float16", 6, instances=32, certify=False)
    assert report.bits_used == 2 * 4 * 16 and report.budget_ok and report.protocol_matches_model


def test_spec_keys_registration_and_errors():
    model = make_model("ssm:width=3,complex=false,precision=7,frac=2,seed=5,vocab=6,classes=3")
    assert (model.width, model.state_units, model.vocab_size, model.num_classes) == (3, 3, 6, 3)
    assert model.format == FixedPoint(7, 2) and model.state_bits == 21
    assert make_model("ssm:width=3").state_bits == 2 * 3 * 16
    assert "ssm" in load_plugins().names("model")
    for bad in ("ssm:complex=maybe", "ssm:width=0", "ssm:widht=3"):
        with pytest.raises(InputError):
            make_model(bad)
    with pytest.raises(InputError, match="B"):
        DiagonalSSM([0.5, 0.5], [[0.1]], [[1.0], [1.0]])


def test_audit_equals_in_process_run():
    plain = run_reduction("index-idxl", "ssm:width=2,precision=5", 4, instances=8, seed=1, certify=False)
    audited = run_reduction("index-idxl", "ssm:width=2,precision=5", 4, instances=8, seed=1, certify=False, audit=True)
    assert audited.audited and audited.protocol_matches_model and plain.protocol_matches_model
    assert audited.bits_used == plain.bits_used == 2 * 2 * 5
    assert audited.model_accuracy == plain.model_accuracy
