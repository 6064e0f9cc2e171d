"""The hidden-state handoff (Theorem 2) and the generic one-way certificate search."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.certify.pigeonhole import collision_certificate, separating_bob_input
from commsim.core.bits import Bits
from commsim.core.digests import message_rows
from commsim.core.errors import NotApplicable
from commsim.core.precision import FixedPoint, FloatFormat
from commsim.core.runner import run_protocol
from commsim.contract import Encoded
from commsim.theory.problems import Disjointness, DyckProblem, Equality, Index
from protocols.models.dyck_automaton import DyckAutomaton
from protocols.models.memorize import Memorize
from protocols.models.trainable import random_model
from protocols.reductions.layouts import StoreAndCompare
from protocols.simulators.rnn_handoff import RNN_HANDOFF, HandoffProtocol, split_point

from handoff_checks import handoff_matches_direct

VOCAB = 4
formats = st.one_of(
    st.integers(2, 30).flatmap(lambda p: st.integers(0, p - 1).map(lambda f: FixedPoint(p, f))),
    st.sampled_from(["float16", "bfloat16", "float32", "float64"]).map(FloatFormat),
)


@st.composite
def handoff_cases(draw):
    kind = draw(st.sampled_from(["elman", "elman-relu", "lstm", "gru", "dfa", "memorize"]))
    length = draw(st.integers(1, 9))
    if kind == "dfa":
        model = DyckAutomaton()
    elif kind == "memorize":
        n = max(1, length // 2)
        model = Memorize(StoreAndCompare(n), draw(st.integers(1, n + 1)), vocab_size=VOCAB)
    else:
        fmt = draw(formats)
        model = random_model(kind.split("-")[0], draw(st.integers(1, 5)), fmt, vocab=VOCAB,
                             classes=draw(st.integers(1, 4)), seed=draw(st.integers(0, 10 ** 6)),
                             activation="relu" if kind == "elman-relu" else "tanh")
    split = draw(st.integers(0, length - 1))
    outs = draw(st.lists(st.integers(split, length - 1), min_size=1, max_size=3))
    seed = draw(st.integers(0, 10 ** 6))
    tokens = np.random.default_rng(seed).integers(0, VOCAB, size=(6, length))
    return model, Encoded(tokens, np.arange(split), tuple(outs))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(handoff_cases())
def test_protocol_equals_direct_forward_and_sends_exactly_mp_bits(case):
    model, encoded = case
    handoff_matches_direct(model, encoded)          # every instance: bit for bit, exactly state_bits sent
    assert model.state_bits == model.state_units * model.format.bits
    for i in range(encoded.batch):
        t = run_protocol(RNN_HANDOFF.protocol(model, encoded), *encoded.shares(i)).transcript
        assert t.bits_by_direction == {"alice_to_bob": model.state_bits, "bob_to_alice": 0}
        assert len(t) == 1 and t.rounds == 1 and t.is_one_way
    sweep = RNN_HANDOFF.run_batch(model, encoded)
    assert np.array_equal(sweep.direct_labels, sweep.protocol_labels)
    assert set(sweep.alice_to_bob.tolist()) == {model.state_bits} and not sweep.bob_to_alice.any()


def test_lstm_sends_2mp_bits():
    model = random_model("lstm", 5, "7", vocab=3, seed=1)
    enc = Encoded(np.random.default_rng(0).integers(0, 3, size=(4, 8)), np.arange(5), (7,))
    alice, bob = enc.shares(0)
    result = run_protocol(RNN_HANDOFF.protocol(model, enc), alice, bob)
    assert result.transcript.total_bits == 2 * 5 * 7
    plan = RNN_HANDOFF.plan_model(model, enc)
    assert (plan.formula, plan.formula_text) == (70, "2m*p = 2*5*7 = 70 bits: the state (h, c), 2 x 5 units of fixed7.3")
    assert (plan.alice_to_bob, plan.bob_to_alice, plan.rounds, plan.direction) == (70, 0, 1, "one-way")


def test_transcript_keys_are_the_handoff_message_and_its_labels():
    """The keys the certificate searches compare are the bytes of h_t, equal exactly when the runner's
    transcripts are; the labels are the protocol's."""
    model = random_model("gru", 3, "4", vocab=3, seed=5)
    enc = Encoded(np.random.default_rng(2).integers(0, 3, size=(64, 7)), np.arange(4), (6,))
    labels, keys = RNN_HANDOFF.transcript_keys(model, enc)
    assert np.array_equal(labels, RNN_HANDOFF.run_batch(model, enc).protocol_labels)
    digests = [run_protocol(RNN_HANDOFF.protocol(model, enc), *enc.shares(i)).transcript.digest()
               for i in range(64)]
    for i in range(64):
        for j in range(i + 1, 64):
            assert np.array_equal(keys[i], keys[j]) == (digests[i] == digests[j])


def test_sweep_reuses_equal_prefixes_without_changing_results():
    model = random_model("gru", 3, "10", vocab=3, seed=4)
    rng = np.random.default_rng(1)
    prefixes = rng.integers(0, 3, size=(40, 6))
    tokens = np.concatenate([np.repeat(prefixes, 5, axis=0), rng.integers(0, 3, size=(200, 2))], axis=1)
    enc = Encoded(tokens, np.arange(6), (6, 7))
    sweep = RNN_HANDOFF.run_batch(model, enc)
    assert sweep.details["alice_prefix_runs"] == 40 and sweep.exact_match.all()
    shuffled = rng.permutation(200)
    again = RNN_HANDOFF.run_batch(model, enc.subset(shuffled))
    assert again.details["alice_prefix_runs"] > 40
    assert np.array_equal(again.protocol_labels, sweep.protocol_labels[shuffled])


def test_audit_mode_gives_the_same_result():
    model = random_model("elman", 3, "bfloat16", vocab=3, seed=2)
    enc = Encoded(np.random.default_rng(3).integers(0, 3, size=(2, 7)), np.arange(4), (6,))
    alice, bob = enc.shares(1)
    protocol = RNN_HANDOFF.protocol(model, enc)
    local = run_protocol(protocol, alice, bob)
    audited = run_protocol(protocol, alice, bob, audit=True)
    assert local.transcript.digest() == audited.transcript.digest()
    assert np.array_equal(local.output[1], audited.output[1])


def test_non_contiguous_split_is_refused_with_the_reason():
    enc = Encoded(np.zeros((1, 8), dtype=np.uint8), np.arange(0, 8, 2), (7,))
    with pytest.raises(NotApplicable, match="contiguous split.*not a prefix"):
        RNN_HANDOFF.plan_model(DyckAutomaton(), enc)
    with pytest.raises(NotApplicable, match="in Alice's prefix"):
        split_point(Encoded(np.zeros((1, 8), dtype=np.uint8), np.arange(5), (3, 7)))
    with pytest.raises(NotApplicable, match="Alice holds every position"):
        split_point(Encoded(np.zeros((1, 8), dtype=np.uint8), np.arange(8), (7,)))
    with pytest.raises(NotApplicable, match="reads only 4 tokens"):
        RNN_HANDOFF.plan_model(DyckAutomaton(), Encoded(np.full((1, 3), 5), np.arange(1), (2,)))


def test_protocol_is_picklable_and_one_way():
    import pickle
    model = random_model("lstm", 2, "6", vocab=2)
    enc = Encoded(np.zeros((1, 4), dtype=np.uint8), np.arange(2), (3,))
    protocol = pickle.loads(pickle.dumps(RNN_HANDOFF.protocol(model, enc)))
    assert isinstance(protocol, HandoffProtocol) and RNN_HANDOFF.plan_model(model, enc).direction == "one-way"
    assert RNN_HANDOFF.accepts(model) and not RNN_HANDOFF.accepts(object())


# ---- the generic certificate search ---------------------------------------------------------------------
@pytest.mark.parametrize("problem,x1,x2", [
    (Index(6), [0, 1, 1, 0, 0, 1], [0, 1, 0, 0, 0, 1]),
    (Equality(5), [1, 0, 1, 1, 0], [1, 0, 1, 1, 1]),
    (Disjointness(5), [0, 0, 1, 0, 0], [0, 0, 0, 0, 0]),
    (DyckProblem(6), [0, 2, 1], [0, 0, 1]),
])
def test_a_separating_bob_input_is_found(problem, x1, x2):
    x1, x2 = np.array(x1, dtype=np.uint8), np.array(x2, dtype=np.uint8)
    y = separating_bob_input(problem, x1, x2)
    assert y is not None
    B = np.stack([y, y]) if np.ndim(y) else np.array([y, y])
    f = problem.evaluate_batch(np.stack([x1, x2]), B)
    assert f[0] != f[1]


def _prefix_protocol(k):
    """A plain one-way INDEX protocol in which Alice sends only her first k bits."""
    def messages(A, B=None):  # a one-way message: Bob's input plays no part
        return message_rows(Bits.from_array(np.asarray(A)[:, :k].reshape(-1)), len(A))

    def answers(A, B):
        A, B = np.asarray(A), np.asarray(B)
        return np.where(B < k, A[np.arange(len(A)), np.minimum(B, k - 1)], 0)
    return messages, answers


def test_collision_certificate_for_any_one_way_protocol():
    messages, answers = _prefix_protocol(5)
    cert, searched = collision_certificate(Index(6), messages, answers, message_bits=5)
    assert cert is not None and cert.kind == "collision" and cert.verified
    assert cert.alice_input == [0, 0, 0, 0, 0, 1] and cert.bob_input == 5
    assert cert.expected == 1 and cert.model_output == 0
    assert cert.details["colliding_alice_input"] == [0, 0, 0, 0, 0, 0] and cert.details["message"] == "00000"
    assert "searched all 64 Alice inputs" in searched and "exhaustive" in searched


def test_collision_certificate_sampled_beyond_the_exhaustive_limit():
    messages, answers = _prefix_protocol(39)
    cert, searched = collision_certificate(Index(40), messages, answers, message_bits=39, samples=2000)
    assert cert is not None and cert.verified and cert.details["search"] == "sampled"
    assert "one-bit neighbours" in searched


def test_no_collision_says_what_was_searched():
    messages, answers = _prefix_protocol(6)
    cert, searched = collision_certificate(Index(6), messages, answers, message_bits=6)
    assert cert is None and "exhaustive" in searched and "no two different Alice inputs" in searched
    messages, answers = _prefix_protocol(40)
    cert, searched = collision_certificate(Index(40), messages, answers, message_bits=40, samples=500)
    assert cert is None and "not exhaustive" in searched


def test_a_wrong_claim_is_not_verified():
    messages, _ = _prefix_protocol(5)

    def lying(A, B):  # answers that do not follow from the messages
        return np.asarray(A)[np.arange(len(A)), np.asarray(B)]
    cert, searched = collision_certificate(Index(6), messages, lying, message_bits=5)
    assert cert is not None and not cert.verified and "NOT confirmed" in cert.explanation
