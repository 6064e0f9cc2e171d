"""A user's own recurrence (StepModel: step, readout, initial state, state format) under the handoff."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import commsim
from commsim.core.errors import InputError, ModelError
from commsim.core.precision import BitFormat, FixedPoint, FloatFormat
from commsim.runs.run import run_reduction
from examples.recurrences import ShiftRegister, answer_scores, shift_register
from protocols.models.step import Portable, StepModel, portable

from handoff_checks import handoff_matches_direct, random_split

VOCAB = 3


class AffineTanh:
    """A module-level step: h' = tanh(W h + E[x]) (a user's Elman cell in numpy)."""

    def __init__(self, W, E):
        self.W, self.E = W, E

    def __call__(self, state, token):
        return np.tanh(self.W @ state + self.E[token])


class BatchedAffineTanh(AffineTanh):
    """The same step on a batch, elementwise sums in a fixed order (the same bits whatever the batch)."""

    def __call__(self, states, tokens):
        acc = self.E[tokens].copy()
        for j in range(states.shape[1]):
            acc += states[:, j:j + 1] * self.W[:, j]
        return np.tanh(acc)


class Linear:
    """A module-level readout: scores = R h."""

    def __init__(self, R):
        self.R = R

    def __call__(self, state):
        return self.R @ state


class BatchedLinear(Linear):
    def __call__(self, states):
        return np.stack([self.R @ s for s in states])


def _affine_model(width, fmt, seed, batched=False, classes=2):
    rng = np.random.default_rng(seed)
    W, E, R = rng.uniform(-1, 1, (width, width)), rng.uniform(-1, 1, (VOCAB, width)), rng.uniform(-1, 1, (classes, width))
    step, read = (BatchedAffineTanh(W, E), BatchedLinear(R)) if batched else (AffineTanh(W, E), Linear(R))
    return StepModel(step, read, np.zeros(width), state_format=fmt, vocab_size=VOCAB, batched=batched)


formats = st.one_of(
    st.integers(2, 24).flatmap(lambda p: st.integers(0, p - 1).map(lambda f: FixedPoint(p, f))),
    st.sampled_from(["float16", "bfloat16", "float32", "float64"]).map(FloatFormat),
)


@st.composite
def cases(draw):
    model = _affine_model(draw(st.integers(1, 4)), draw(formats), draw(st.integers(0, 10 ** 6)), draw(st.booleans()))
    return model, random_split(draw, st, VOCAB, max_length=7, batch=4, max_outputs=2)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_handoff_of_a_user_recurrence_equals_its_direct_forward(case):
    model, encoded = case
    handoff_matches_direct(model, encoded)
    assert model.state_bits == model.state_units * model.precision


def test_batched_and_row_by_row_steps_give_the_same_bits():
    rows, batched = _affine_model(3, "fixed10.6", 7), _affine_model(3, "fixed10.6", 7, batched=True)
    tokens = np.random.default_rng(0).integers(0, VOCAB, size=(20, 6))
    assert np.array_equal(rows.forward_batch(tokens, (2, 5)), batched.forward_batch(tokens, (2, 5)))
    assert np.array_equal(rows.final_states(tokens), batched.final_states(tokens))


def test_state_is_rounded_to_the_declared_format_every_step():
    model = StepModel(lambda h, x: h * 0.5 + 0.3 * x, lambda h: np.array([h.sum(), 0.0]), np.zeros((2, 1)),
                      state_format=FixedPoint(5, 2), vocab_size=2)
    assert (model.state_shape, model.state_units, model.state_bits) == ((2, 1), 2, 10)
    h, _ = model.run(np.array([[1, 1]]))
    # [0.3] = 0.25; [0.125 + 0.3] = [0.425] = 0.25 (grid 1/4, round down)
    assert h.tolist() == [[0.25, 0.25]]


def test_shift_register_solves_index_with_n_bits_and_fails_below():
    """The example recurrence: K one-bit register units and an answer bit, K + 1 bits handed off."""
    full = run_reduction("index-idxl", "python:examples.recurrences:shift_register", 6)
    assert full.model_correct and full.protocol_matches_model and full.bits_used == 7 and full.budget_ok
    short = run_reduction("index-idxl", "python:examples.recurrences:shift_register:capacity=4", 6)
    assert short.bits_used == 5 and not short.budget_ok and short.protocol_matches_model
    assert short.certificate.kind == "collision" and short.certificate.verified


def test_make_model_passes_a_step_model_through_and_audit_equals_in_process():
    model = commsim.make_model(shift_register(5, capacity=3))
    assert isinstance(model, StepModel) and isinstance(model.format, BitFormat)
    plain = run_reduction("index-idxl", model, 5, instances=10, seed=2, certify=False)
    audited = run_reduction("index-idxl", model, 5, instances=10, seed=2, certify=False, audit=True)
    assert audited.audited and audited.protocol_matches_model and plain.protocol_matches_model
    assert audited.bits_used == plain.bits_used == 4
    assert audited.model_accuracy == plain.model_accuracy
    assert [s["wrong"] for s in audited.evaluation_sets] == [s["wrong"] for s in plain.evaluation_sets]


FILE_FACTORY = """
import numpy as np
from protocols.models.step import StepModel


def step(state, token):
    return np.array([0.5 * state[0] + (token == 1), state[0]])


def readout(state):
    return np.array([0.5 - state[1], state[1] - 0.5])


def factory(vocab_size, n):
    return StepModel(step, readout, np.zeros(2), state_format="fixed4.2", vocab_size=vocab_size)
"""


def test_a_step_model_of_a_factory_file_runs_audited_like_in_process(tmp_path):
    """The file is loaded by path, so a spawned process cannot import its functions: they travel by value."""
    pytest.importorskip("cloudpickle")
    path = tmp_path / "my_recurrence.py"
    path.write_text(FILE_FACTORY)
    spec = f"python:{path}:factory"
    plain = run_reduction("index-idxl", spec, 4, instances=8, seed=3, certify=False)
    audited = run_reduction("index-idxl", spec, 4, instances=8, seed=3, certify=False, audit=True)
    assert audited.audited and audited.protocol_matches_model and plain.protocol_matches_model
    assert audited.bits_used == plain.bits_used == 2 * 4
    assert audited.model_accuracy == plain.model_accuracy


def test_lambdas_travel_by_value_and_module_functions_by_reference():
    pytest.importorskip("cloudpickle")
    model = StepModel(lambda h, x: np.tanh(h + x), lambda h: np.array([h[0], -h[0]]), np.zeros(1),
                      state_format="8", vocab_size=2)
    state = model.__getstate__()
    assert isinstance(state["_step_fn"], Portable)
    copy = pickle.loads(pickle.dumps(model))
    tokens = np.array([[1, 0, 1, 1]])
    assert np.array_equal(copy.forward_batch(tokens), model.forward_batch(tokens))
    assert portable(answer_scores) is answer_scores
    step = ShiftRegister(4, 4)
    assert portable(step) is step


def test_bad_models_are_refused_with_a_reason():
    ok = dict(state_format="8", vocab_size=2)
    with pytest.raises(ModelError, match="callable"):
        StepModel("step", answer_scores, np.zeros(2), **ok)
    with pytest.raises(ModelError, match="shape"):
        StepModel(lambda h, x: np.zeros(3), answer_scores, np.zeros(2), **ok)
    with pytest.raises(ModelError, match="initial state"):
        StepModel(lambda h, x: h, answer_scores, np.zeros(0), **ok)
    with pytest.raises(ModelError, match="scores"):
        StepModel(lambda h, x: h, answer_scores, np.zeros(2), num_classes=3, **ok)
    with pytest.raises(InputError, match="state_format"):
        StepModel(lambda h, x: h, answer_scores, np.zeros(2), state_format="fixed", vocab_size=2)
