"""The prefix-shared batch run of the hidden-state handoff (issue 30) against the per-instance path, and the
faults its exactness check must still catch."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.core.bits import Bits
from commsim.core.errors import ModelError
from commsim.core.precision import FixedPoint, FloatFormat
from commsim.contract import Encoded
from protocols.models.dyck_automaton import DyckAutomaton
from protocols.models.linear_attention import LinearAttention
from protocols.models.memorize import Memorize
from protocols.models import prefix_trie
from protocols.models.trainable import random_model
from protocols.models.ssm import DiagonalSSM
from protocols.reductions.layouts import StoreAndCompare
from protocols.simulators.rnn_handoff import RNN_HANDOFF, RnnHandoff

VOCAB = 3
formats = st.one_of(
    st.integers(2, 24).flatmap(lambda p: st.integers(0, p - 1).map(lambda f: FixedPoint(p, f))),
    st.sampled_from(["float16", "bfloat16", "float32", "float64"]).map(FloatFormat),
)
KINDS = ["elman", "elman-relu", "lstm", "gru", "linear-attention", "ssm", "dfa", "memorize"]


def make(kind: str, draw, length: int):
    """A cheap recurrent model of ``kind`` with drawn sizes, format and seed."""
    seed = draw(st.integers(0, 10 ** 6))
    if kind == "dfa":
        return DyckAutomaton()
    if kind == "memorize":
        n = max(1, length // 2)
        return Memorize(StoreAndCompare(n), draw(st.integers(1, n + 1)), vocab_size=VOCAB)
    fmt = draw(formats)
    if kind == "linear-attention":
        return LinearAttention.random(draw(st.integers(1, 3)), fmt, vocab=VOCAB, classes=2, seed=seed)
    if kind == "ssm":
        return DiagonalSSM.random(draw(st.integers(1, 3)), fmt, vocab=VOCAB, classes=2, seed=seed)
    return random_model(kind.split("-")[0], draw(st.integers(1, 4)), fmt, vocab=VOCAB,
                        classes=draw(st.integers(1, 3)), seed=seed,
                        activation="relu" if kind.endswith("relu") else "tanh")


@st.composite
def cases(draw):
    """A model, and rows that share prefixes (a few distinct prefixes, repeated, in a drawn order)."""
    kind = draw(st.sampled_from(KINDS))
    length = draw(st.integers(1, 8))
    model = make(kind, draw, length)
    rng = np.random.default_rng(draw(st.integers(0, 10 ** 6)))
    split = draw(st.integers(0, length - 1))
    prefixes = rng.integers(0, VOCAB, size=(draw(st.integers(1, 6)), split))
    rows = draw(st.integers(1, 40))
    tokens = np.concatenate([prefixes[rng.integers(0, len(prefixes), rows)],
                             rng.integers(0, VOCAB, size=(rows, length - split))], axis=1)
    order = draw(st.sampled_from(["sorted", "random", "as drawn"]))
    if order == "sorted":
        tokens = tokens[np.lexsort(tokens.T[::-1])]
    elif order == "random":
        tokens = tokens[rng.permutation(rows)]
    outs = draw(st.lists(st.integers(split, length - 1), min_size=1, max_size=3))
    return model, Encoded(tokens, np.arange(split), tuple(outs))


def per_instance(model, encoded: Encoded):
    """The handoff instance by instance, without any sharing: Alice's h_t from h_0, its message encoded and
    decoded, Bob's resume; the direct forward row by row.  Returns (protocol raw, direct raw, bits per message)."""
    t, outs = len(encoded.alice_positions), tuple(encoded.output_positions)
    protocol, direct, bits = [], [], set()
    for row in encoded.tokens:
        state = model.run(row[None, :t])[0] if t else model.initial_state(1)
        message = model.format.encode(state)
        bits.add(len(message))
        received = model.format.decode(message, count=model.state_units).reshape(1, -1)
        protocol.append(model.run(row[None, t:], state=received, start=t, outputs=outs)[1][0])
        direct.append(model.run(row[None, :], outputs=outs)[1][0])
    return np.array(protocol), np.array(direct), bits


def same_bits(a, b) -> np.ndarray:
    """Per instance: are the readouts bitwise equal?"""
    return np.all(np.asarray(a).view(np.uint64) == np.asarray(b).view(np.uint64), axis=(1, 2))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases(), st.sampled_from([0, 2, 10 ** 9]))
def test_prefix_shared_run_equals_the_per_instance_path(case, shared_terms):
    model, encoded = case
    protocol, direct, bits = per_instance(model, encoded)
    before = prefix_trie.SHARED_TERMS_CHILDREN
    prefix_trie.SHARED_TERMS_CHILDREN = shared_terms     # a parent's product once (0: always, 10^9: never)
    own = model.__dict__.get("shared_terms_children")
    model.shared_terms_children = shared_terms           # a model's own threshold (Elman, LSTM, GRU: 1) too
    try:
        check_prefix_shared(model, encoded, protocol, direct, bits)
    finally:
        prefix_trie.SHARED_TERMS_CHILDREN = before
        if own is None:
            del model.shared_terms_children
        else:
            model.shared_terms_children = own


def check_prefix_shared(model, encoded, protocol, direct, bits):
    t = len(encoded.alice_positions)
    raw, (node, states) = model.forward_shared(encoded.tokens, encoded.output_positions, keep=t)
    assert np.array_equal(raw.view(np.uint64), direct.view(np.uint64))
    assert np.array_equal(raw.view(np.uint64), model.forward_batch(encoded.tokens, encoded.output_positions)
                          .view(np.uint64))
    alone = model.final_states(encoded.tokens[:, :t]) if t else model.initial_state(encoded.batch)
    assert np.array_equal(states[node].view(np.uint64), alone.view(np.uint64))
    sweep = RNN_HANDOFF.run_batch(model, encoded)
    assert np.array_equal(sweep.protocol_labels, model.labels(protocol))
    assert np.array_equal(sweep.direct_labels, model.labels(direct))
    assert np.array_equal(sweep.exact_match, same_bits(protocol, direct))
    assert bits == {model.state_bits} and set(sweep.alice_to_bob.tolist()) == bits
    # a decoded state is the state sent (states are numbers of the format): only models that read positions resume
    assert sweep.details["bob_resumed_instances"] == (encoded.batch if model.reads_position else 0)


def test_the_order_of_the_rows_changes_the_work_not_the_result():
    model = random_model("lstm", 3, "12", vocab=VOCAB, seed=7)
    rng = np.random.default_rng(0)
    tokens = np.concatenate([np.repeat(rng.integers(0, VOCAB, (30, 6)), 8, axis=0),
                             rng.integers(0, VOCAB, (240, 2))], axis=1)
    enc = Encoded(tokens, np.arange(6), (6, 7))
    sweep = RNN_HANDOFF.run_batch(model, enc)
    assert sweep.exact_match.all() and sweep.details["bob_resumed_instances"] == 0
    order = rng.permutation(len(tokens))
    again = RNN_HANDOFF.run_batch(model, enc.subset(order))
    assert again.details["alice_prefix_runs"] > sweep.details["alice_prefix_runs"]
    for name in ("protocol_labels", "direct_labels", "exact_match", "alice_to_bob"):
        assert np.array_equal(getattr(again, name), getattr(sweep, name)[order])


# ---- faults the check must catch -------------------------------------------------------------------------
def _index_task(model, n: int = 5) -> Encoded:
    """Every (x, i) of a small INDEX-like task in rank order: Alice's x (n tokens), Bob's index token."""
    xs = np.array([[(a >> (n - 1 - j)) & 1 for j in range(n)] for a in range(1 << n)])
    tokens = np.concatenate([np.repeat(xs, VOCAB, axis=0), np.tile(np.arange(VOCAB), 1 << n)[:, None]], axis=1)
    return Encoded(tokens, np.arange(n), (n,))


def _flip_sign_bit_of_the_first_value(encode):
    def faulty(self, x, *args, **kwargs):
        bits = encode(self, x, *args, **kwargs).to_array().copy()
        bits[0] ^= 1           # the first value's top bit (its sign in fixed point and IEEE formats)
        return Bits.from_array(bits)
    return faulty


@pytest.mark.parametrize("fmt", ["16", "bfloat16"])
def test_an_encode_fault_is_caught(monkeypatch, fmt):
    model = random_model("elman", 4, fmt, vocab=VOCAB, seed=3)
    enc = _index_task(model)
    assert RNN_HANDOFF.run_batch(model, enc).exact_match.all()
    cls = type(model.format)
    monkeypatch.setattr(cls, "encode", _flip_sign_bit_of_the_first_value(cls.encode))
    sweep = RNN_HANDOFF.run_batch(model, enc)
    assert sweep.details["bob_resumed_instances"] > 0
    assert not sweep.exact_match.all()
    # the flags are the truth about the faulty protocol: Bob's readouts from the state he received
    t = len(enc.alice_positions)
    received = model.format.decode(model.format.encode(model.final_states(enc.tokens[:1, :t])),
                                   count=model.state_units).reshape(1, -1)
    first = model.run(enc.tokens[:VOCAB, t:], state=np.repeat(received, VOCAB, axis=0), start=t,
                      outputs=enc.output_positions)[1]
    direct = model.forward_batch(enc.tokens[:VOCAB], enc.output_positions)
    assert np.array_equal(sweep.exact_match[:VOCAB], same_bits(first, direct))


def test_a_resume_from_another_runs_state_is_caught(monkeypatch):
    model = random_model("gru", 4, "14", vocab=VOCAB, seed=11)
    enc = _index_task(model)
    alice_block = RnnHandoff._alice_block

    def next_run(model, tokens, t, node, states):
        runs, received, bits = alice_block(model, tokens, t, node, states)
        return (runs + 1) % len(received), received, bits     # Bob picks the next run's state
    monkeypatch.setattr(RnnHandoff, "_alice_block", staticmethod(next_run))
    sweep = RNN_HANDOFF.run_batch(model, enc)
    assert sweep.details["bob_resumed_instances"] == enc.batch
    assert not sweep.exact_match.all()


def test_a_resume_at_the_wrong_position_is_caught_for_a_model_that_reads_positions(monkeypatch):
    n = 4
    model = Memorize(StoreAndCompare(n), n, vocab_size=2)
    assert model.reads_position
    xs = np.array([[(a >> (2 * n - 1 - j)) & 1 for j in range(2 * n)] for a in range(1 << (2 * n))])
    enc = Encoded(xs, np.arange(n), (2 * n - 1,))
    assert RNN_HANDOFF.run_batch(model, enc).exact_match.all()
    run = type(model).run

    def shifted(self, tokens, state=None, start=0, outputs=()):
        if state is None:   # the direct forward's runs from h_0 are not the fault
            return run(self, tokens, state, start, outputs)
        return run(self, tokens, state, start + 1, outputs)   # Bob's suffix one position late
    monkeypatch.setattr(type(model), "run", shifted)
    sweep = RNN_HANDOFF.run_batch(model, enc)
    assert sweep.details["bob_resumed_instances"] == enc.batch
    assert not sweep.exact_match.all()


def test_a_subclass_with_its_own_run_is_always_resumed():
    """An Elman subclass (no position read) whose own ``run`` mishandles a resumed state: the shortcut would
    equate Bob's resume with the direct forward, so a model with its own ``run`` is always resumed."""
    base = random_model("elman", 4, "16", vocab=VOCAB, seed=5)

    class OwnRun(type(base)):
        def run(self, tokens, state=None, start=0, outputs=()):
            if state is not None:   # the fault: a resume starts from h_0, whatever it received
                state = self.initial_state(len(np.atleast_2d(tokens)))
            return super().run(tokens, state, start, outputs)

    model = OwnRun(base.params, base.format)
    assert not model.reads_position
    enc = _index_task(model)
    sweep = RNN_HANDOFF.run_batch(model, enc)
    assert sweep.details["bob_resumed_instances"] == enc.batch
    assert not sweep.exact_match.all()


def test_the_shared_forward_refuses_what_the_row_by_row_forward_refuses():
    model = random_model("elman", 2, "8", vocab=VOCAB)
    for tokens, outs, param in ((np.zeros((3, 0), dtype=np.int64), (0,), "tokens"),
                                (np.zeros((3, 4), dtype=np.int64), (4,), "output_positions"),
                                (np.full((3, 4), VOCAB), (3,), "tokens")):
        with pytest.raises(ModelError) as shared:
            model.forward_shared(tokens, outs)
        with pytest.raises(ModelError) as plain:
            model.forward_batch(tokens, outs)
        assert shared.value.param == plain.value.param == param


@pytest.mark.parametrize("kind", ["gru", "linear-attention"])
def test_rows_in_many_blocks_give_what_one_block_gives(monkeypatch, kind):
    model = random_model("gru", 2, "10", vocab=VOCAB, seed=5) if kind == "gru" else \
        LinearAttention.random(2, "10", vocab=VOCAB, seed=5)
    monkeypatch.setattr(model, "chunk_rows", lambda: 64)
    monkeypatch.setattr(prefix_trie, "SHARED_BLOCK_CHUNKS", 3)      # blocks of 192 rows
    rng = np.random.default_rng(4)
    tokens = np.concatenate([np.repeat(rng.integers(0, VOCAB, (100, 5)), 10, axis=0),
                             rng.integers(0, VOCAB, (1000, 2))], axis=1)
    raw, (node, states) = model.forward_shared(tokens, (5, 6), keep=5)
    assert np.array_equal(raw.view(np.uint64), model.forward_batch(tokens, (5, 6)).view(np.uint64))
    assert np.array_equal(states[node].view(np.uint64), model.final_states(tokens[:, :5]).view(np.uint64))
    assert np.array_equal(model.forward_shared(tokens, (6,)).view(np.uint64), raw[:, 1:].view(np.uint64))
    sweep = RNN_HANDOFF.run_batch(model, Encoded(tokens, np.arange(5), (5, 6)))
    assert sweep.exact_match.all() and sweep.details["alice_prefix_runs"] >= 100
