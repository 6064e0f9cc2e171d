"""Recurrent models: finite-precision semantics, batch independence, weights files, specs."""
from __future__ import annotations

import numpy as np
import pytest

from commsim.core.errors import InputError, InternalError, ModelError, NotApplicable
from commsim.core.precision import FixedPoint, FloatFormat
from commsim.plugins import load_plugins, make_model
from commsim.theory.dyck import DyckLanguage
from commsim.theory.problems import all_bit_strings
from protocols.models.dyck_automaton import DyckAutomaton
from protocols.models.memorize import Memorize
from protocols.models.trainable import GRU, LSTM, Elman, load_model, random_model
from protocols.reductions.layouts import StoreAndCompare, StoreAndLookup, StoreAndRecall


# ---- models -------------------------------------------------------------------------------------------
def _models():
    return [
        random_model("elman", 4, "8", vocab=5, seed=1),
        random_model("elman", 3, "12", vocab=5, seed=2, activation="relu"),
        random_model("lstm", 3, "10", vocab=5, seed=3),
        random_model("gru", 3, "bfloat16", vocab=5, seed=4),
        random_model("elman", 5, "float16", vocab=5, seed=5),
        random_model("lstm", 2, "float64", vocab=5, seed=6),
        random_model("gru", 4, "fixed30.12", vocab=5, seed=7),  # too wide for exact sums: the ordered path
    ]


@pytest.mark.parametrize("model", _models(), ids=lambda m: m.spec)
def test_batch_forward_equals_single_forwards_bit_for_bit(model):
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 5, size=(50, 12))
    outs = (3, 7, 11)
    batch = model.forward_batch(tokens, outs)
    for i in range(0, 50, 7):
        single = model.forward(tokens[i], outs)
        assert np.array_equal(single.view(np.uint64), batch[i].view(np.uint64))
    # the state is on the format's grid after every step
    states = model.final_states(tokens)
    assert np.array_equal(model.format.quantize(states), states)


def test_state_sizes_and_bits():
    assert random_model("elman", 6, "8").state_bits == 48
    lstm = random_model("lstm", 6, "8")
    assert (lstm.width, lstm.state_units, lstm.state_bits) == (6, 12, 96)
    assert random_model("gru", 3, "float32").state_bits == 96
    assert random_model("elman", 2, "bfloat16").precision == 16


def test_run_resumes_exactly_from_any_split():
    model = random_model("lstm", 3, "9", vocab=4, seed=11)
    tokens = np.random.default_rng(2).integers(0, 4, size=(20, 10))
    full = model.forward_batch(tokens, (9,))
    for t in (0, 1, 5, 9):
        h, _ = model.run(tokens[:, :t])
        _, raw = model.run(tokens[:, t:], state=h, start=t, outputs=(9,))
        assert np.array_equal(raw.view(np.uint64), full.view(np.uint64))


def test_seeds_are_deterministic_and_distinct():
    a = random_model("gru", 4, "8", vocab=3, seed=5)
    b = random_model("gru", 4, "8", vocab=3, seed=5)
    c = random_model("gru", 4, "8", vocab=3, seed=6)
    assert all(np.array_equal(a.params[k], b.params[k]) for k in a.params)
    assert not all(np.array_equal(a.params[k], c.params[k]) for k in a.params)
    assert all(np.array_equal(a.format.quantize(v), v) for v in a.params.values())  # p-bit parameters


def test_tokens_outside_the_vocabulary_are_refused():
    model = random_model("elman", 2, "8", vocab=3)
    with pytest.raises(ModelError, match="outside the model's vocabulary"):
        model.forward(np.array([0, 1, 3]))


def test_nan_state_is_refused():
    model = random_model("elman", 2, "float64", vocab=2)
    with pytest.raises(ModelError, match="NaN") as err:
        model.run(np.array([[0, 1]]), state=np.array([[np.nan, 0.0]]))
    assert err.value.param == "model"          # the weights/precision the user chose overflowed: bad input


@pytest.mark.parametrize("call,param,match", [
    (lambda m: m.forward_batch(np.zeros((1, 2, 3), dtype=np.int64)), "tokens", r"\(batch, length\) array"),
    (lambda m: m.forward_batch(np.array([[0.0, 1.0]])), "tokens", "must be integers"),
    (lambda m: m.final_states(np.array([[0, 7]])), "tokens", "outside the model's vocabulary"),
    (lambda m: m.forward(np.array([[0, 1]])), "tokens", "one sequence"),
    (lambda m: m.forward_batch(np.zeros((2, 0), dtype=np.int64)), "tokens", "empty sequences"),
    (lambda m: m.forward_batch(np.array([[0, 1, 1]]), output_positions=[3]), "output_positions",
     "output position 3 is outside a sequence of length 3"),
    (lambda m: m.forward(np.array([0, 1]), output_positions=[-1]), "output_positions", "output position -1"),
])
def test_a_callers_bad_tokens_are_bad_input_naming_the_parameter(call, param, match):
    model = random_model("elman", 2, "8", vocab=2)
    with pytest.raises(ModelError, match=match) as err:
        call(model)
    assert isinstance(err.value, InputError) and not isinstance(err.value, InternalError)
    assert err.value.param == param


def test_run_with_outputs_outside_its_positions_is_an_internal_fault():
    """``run`` is the handoff's building block: its callers (forward_batch, the simulator's split) place the
    outputs inside the positions run, so one outside means the calling code is wrong, not the input."""
    model = random_model("elman", 2, "8", vocab=2)
    tokens = np.array([[0, 1, 1, 0]])
    h, _ = model.run(tokens[:, :2])
    with pytest.raises(InternalError, match="output position 1 is outside the positions 2..3") as err:
        model.run(tokens[:, 2:], state=h, start=2, outputs=(1,))
    assert not isinstance(err.value, InputError)
    _, raw = model.run(tokens[:, 2:], state=h, start=2, outputs=(3,))    # inside: the direct forward's readout
    assert np.array_equal(raw[:, 0], model.forward_batch(tokens)[:, 0])


@pytest.mark.parametrize("kind", ["elman", "lstm", "gru"])
def test_weights_save_and_load(tmp_path, kind):
    model = random_model(kind, 3, "10", vocab=4, classes=3, seed=9,
                         **({"activation": "relu"} if kind == "elman" else {}))
    path = str(tmp_path / f"{kind}.npz")
    model.save(path)
    loaded = load_model(path)
    tokens = np.random.default_rng(0).integers(0, 4, size=(30, 6))
    assert loaded.format == model.format and loaded.num_classes == 3
    assert np.array_equal(loaded.forward_batch(tokens), model.forward_batch(tokens))
    via_spec = make_model(f"{kind}:weights={path}", vocab_size=4)
    assert np.array_equal(via_spec.forward_batch(tokens), model.forward_batch(tokens))
    coarser = make_model(f"{kind}:weights={path},precision=6", vocab_size=4)
    assert coarser.format == FixedPoint(6, 3)
    with pytest.raises(InputError, match="width=5 but"):
        make_model(f"{kind}:weights={path},width=5", vocab_size=4)
    with pytest.raises(NotApplicable, match="reads 4 input tokens"):
        make_model(f"{kind}:weights={path}", vocab_size=9, reduction="index-idxl", n=7)


def test_missing_weights_file_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        make_model(f"elman:weights={tmp_path}/nope.npz")


# ---- specs --------------------------------------------------------------------------------------------
def test_spec_keys():
    m = make_model("elman:width=5,precision=10,frac=3,seed=2,activation=relu,classes=3", vocab_size=7)
    assert isinstance(m, Elman) and m.activation == "relu"
    assert (m.width, m.vocab_size, m.num_classes, m.format) == (5, 7, 3, FixedPoint(10, 3))
    assert make_model("lstm:width=2,dtype=bfloat16", vocab_size=3).format == FloatFormat("bfloat16")
    assert isinstance(make_model("gru", vocab_size=3), GRU)
    assert make_model("gru", vocab_size=3).format == FixedPoint(16, 8)  # the default precision
    assert make_model("elman:vocab=9", vocab_size=3).vocab_size == 9
    assert isinstance(make_model("lstm:width=1"), LSTM)


@pytest.mark.parametrize("spec,match", [
    ("elman:width=4,depth=2", "unknown key"),
    ("lstm:activation=relu", "unknown key"),
    ("elman:activation=sigmoid", "one of tanh, relu"),
    ("gru:width=0", ">= 1"),
    ("elman:precision=8,dtype=float16", "not both"),
    ("dfa:dyck22:width=3", "unknown key"),
    ("memorize:capacity=0", ">= 1"),
])
def test_bad_specs_are_refused(spec, match):
    with pytest.raises(InputError, match=match):
        make_model(spec, vocab_size=4, n=4, reduction="index-idxl", seq_len=5, task="idxl")


def test_a_model_with_a_smaller_vocabulary_is_not_applicable():
    with pytest.raises(NotApplicable, match="reads 4 input tokens"):
        make_model("dfa:dyck22", vocab_size=10, n=8, reduction="index-idxl")
    with pytest.raises(NotApplicable, match="reads 3 input tokens"):
        make_model("elman:vocab=3", vocab_size=10, n=8, reduction="index-idxl")


# ---- the Dyck automaton -------------------------------------------------------------------------------
def test_dyck_automaton_recognizes_dyck22():
    model = make_model("dfa:dyck22", vocab_size=4)
    assert isinstance(model, DyckAutomaton) and model.state_bits == 3
    language = DyckLanguage(2, 2)
    for length in (2, 4, 6):
        codes = np.arange(4 ** length)
        strings = np.stack([(codes // 4 ** (length - 1 - i)) % 4 for i in range(length)], axis=1)
        labels = model.labels(model.forward_batch(strings))[:, 0]
        assert np.array_equal(labels, language.is_member(strings))
        assert int(labels.sum()) == 2 ** (length - 1)


# ---- memorizing recurrences ---------------------------------------------------------------------------
def test_store_and_lookup_drops_bits_beyond_capacity():
    n = 5
    program = StoreAndLookup(n, np.arange(n), [0, 1] + [-1] * n, [-1, -1] + list(range(n)), query_position=n)
    A = all_bit_strings(n)
    for capacity, last_known in ((5, 4), (4, 3), (2, 1)):
        model = Memorize(program, capacity, vocab_size=n + 2)
        assert model.state_bits == capacity
        for b in range(n):
            tokens = np.concatenate([A, np.full((len(A), 1), b + 2)], axis=1)
            got = model.labels(model.forward_batch(tokens))[:, 0]
            want = A[:, b] if b <= last_known else np.zeros(len(A))
            assert np.array_equal(got, want)


def test_store_and_compare_is_ineq():
    n = 4
    A = all_bit_strings(2 * n)
    for capacity in (4, 3):
        model = Memorize(StoreAndCompare(n), capacity)
        got = model.labels(model.forward_batch(A))[:, 0]
        want = np.any(A[:, :capacity] != A[:, n:n + capacity], axis=1)
        assert np.array_equal(got, want)


def test_store_and_recall_answers_every_query_in_order():
    n = 4
    store = np.full(3 * n, -1)
    store[1:2 * n:2] = np.arange(n)
    program = StoreAndRecall(n, store, [0, 1] + [-1] * n, [-1, -1] + list(range(n)), query_start=2 * n)
    A = all_bit_strings(n)
    tokens = np.empty((len(A), 3 * n), dtype=np.int64)
    tokens[:, 0:2 * n:2] = np.arange(2, n + 2)
    tokens[:, 1:2 * n:2] = A
    tokens[:, 2 * n:] = np.arange(2, n + 2)
    outs = tuple(range(2 * n, 3 * n))
    full = Memorize(program, n, vocab_size=n + 2)
    assert np.array_equal(full.labels(full.forward_batch(tokens, outs)), A)
    short = Memorize(program, n - 1, vocab_size=n + 2)
    got = short.labels(short.forward_batch(tokens, outs))
    assert np.array_equal(got[:, :n - 1], A[:, :n - 1]) and not got[:, n - 1].any()


def test_memorize_needs_a_task():
    with pytest.raises(InputError, match="built for a task"):
        make_model("memorize")
    context = load_plugins().get("reduction", "index-idxl").model_context(4)  # as `commsim run` builds it
    m = make_model("memorize:capacity=3", **context)
    assert m.state_bits == 3 and m.program.slots == 4
    assert make_model("memorize", **context).state_bits == 4
