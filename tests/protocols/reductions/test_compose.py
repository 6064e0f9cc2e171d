"""Function composition ([PNP24]): the problem and its prompt, the one-way public-query message (exact, real
bits), the deterministic bound with its collision certificate, and Theorem 1's distributional bound against
the measured error of random layers."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.core.errors import InputError, NotApplicable, ProblemInputError
from commsim.core.precision import FixedPoint
from commsim.core.runner import run_protocol
from commsim.contract import Encoded
from commsim.runs.run import run_reduction
from commsim.plugins import load_plugins
from protocols.models.attention import random_layer
from protocols.reductions.compose import Composition, CompositionReduction
from protocols.simulators.attention import PUBLIC_QUERY, candidate_count
from protocols.theorems import composition_error_bound, composition_message_bits, composition_one_way_bits

RED = CompositionReduction()


def small_layer(n: int, seed: int, **kw):
    """A random attention spec below the bound for n >= 8: one head of width 1, 4-bit codes, no fraction bits."""
    keys = {"heads": 1, "width": 1, "dim": 2, "precision": 4, "frac": 0, "classes": n, "seed": seed, **kw}
    return "attention:" + ",".join(f"{k}={v}" for k, v in keys.items())


def test_problem_is_g_of_f_of_x_and_the_prompt_is_one_pair_per_token():
    p = Composition(3)
    g, bob = np.array([2, 0, 1]), np.array([1, 1, 0, 2])          # f = (1, 1, 0), x = 2: f(x) = 0, g(0) = 2
    assert p.evaluate(g, bob) == 2
    enc = RED.encode(p, g[None], bob[None])
    names = RED.vocabulary(3)
    assert [names[t] for t in enc.tokens[0]] == ["g(b0)=c2", "g(b1)=c0", "g(b2)=c1", "f(a0)=b1", "f(a1)=b1",
                                                 "f(a2)=b0", "a2?"]
    assert enc.alice_positions.tolist() == [0, 1, 2] and enc.output_positions == (6,) and enc.public_positions == (6,)
    alice, bob_share = enc.shares(0)
    assert alice.public == ((6, int(enc.tokens[0, 6])),) == bob_share.public   # the query is known to both
    assert 6 not in alice.positions.tolist()
    with pytest.raises(ProblemInputError):
        p.validate(np.array([3, 0, 0]), bob)                                      # a value outside 0..n-1
    with pytest.raises(InputError):
        RED.problem(1)


def test_sampling_is_uniform_and_the_exhaustive_set_is_every_g_f_x():
    p = Composition(3)
    A, B = p.all_pairs()
    assert len(A) == p.input_pairs == 3 ** 7
    assert len({(tuple(a), tuple(b)) for a, b in zip(A.tolist(), B.tolist())}) == 3 ** 7
    A, B = p.sample(np.random.default_rng(0), 30000)
    counts = np.bincount(p.evaluate_batch(A, B), minlength=3) / 30000
    assert np.allclose(counts, 1 / 3, atol=0.02)


def test_one_way_bound_is_log2_of_n_to_the_n_not_n_times_ceil_log2_n():
    for n in range(2, 12):
        b = composition_one_way_bits(n)
        assert 2 ** (b - 1) < n ** n <= 2 ** b
    assert composition_one_way_bits(3) == 5 < 3 * math.ceil(math.log2(3))   # base-3 encoding of g: 27 <= 32
    assert composition_one_way_bits(16) == 16 * 4


def test_theorem_1_formula():
    R, rate = composition_error_bound(16, 30)
    assert R == 64 - 30 and rate == pytest.approx(34 / 192)
    assert composition_error_bound(16, 64) == (0.0, 0.0) and composition_error_bound(16, 100)[1] == 0.0
    assert composition_message_bits(2, 8, 16) == 2 * 9 * 16


def test_candidate_count_is_where_the_rounded_exponential_vanishes():
    for frac, K in ((0, 1), (1, 2), (2, 6), (4, 45)):
        model = random_layer(FixedPoint(frac + 6, frac), vocab=4, positions=4)
        assert candidate_count(model) == K
        F = frac
        assert math.floor(math.exp(-K / 2 ** F) * 2 ** F) == 0 and math.floor(math.exp(-(K - 1) / 2 ** F) * 2 ** F) > 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_public_query_message_equals_the_direct_forward_on_any_partition(data):
    """Random layers, precisions, partitions and tokens: the batch and the runner give the direct forward's raw
    output bit for bit, Alice alone speaks, and the bits counted are the bits sent."""
    frac = data.draw(st.integers(0, 2))
    p = data.draw(st.integers(frac + 2, frac + 7))
    N = data.draw(st.integers(3, 9))
    V = data.draw(st.integers(2, 7))
    model = random_layer(FixedPoint(p, frac), vocab=V, positions=N, heads=data.draw(st.integers(1, 2)),
                         width=data.draw(st.integers(1, 3)), dim=data.draw(st.integers(1, 4)),
                         classes=data.draw(st.integers(1, 4)), seed=data.draw(st.integers(0, 10 ** 6)),
                         attend_self=data.draw(st.booleans()), residual=data.draw(st.booleans()))
    rng = np.random.default_rng(data.draw(st.integers(0, 10 ** 6)))
    query = N - 1
    alice = np.array(sorted(rng.choice(N - 1, size=int(rng.integers(1, N)), replace=False)))
    tokens = rng.integers(0, V, size=(6, N))
    enc = Encoded(tokens, alice, (query,), public_positions=(query,))
    plan = PUBLIC_QUERY.exchange_plan(model, enc)
    message = PUBLIC_QUERY.plan_model(model, enc)
    assert (message.alice_to_bob, message.bob_to_alice, message.direction) == (plan.total_bits, 0, "one-way")
    raw, keys = PUBLIC_QUERY.batch(model, plan, tokens)
    assert np.array_equal(raw, model.forward_rep(tokens, query))
    batch = PUBLIC_QUERY.run_batch(model, enc)
    labels, hook_keys = PUBLIC_QUERY.transcript_keys(model, enc)
    assert batch.exact_match.all() and np.array_equal(batch.protocol_labels, labels)
    assert np.array_equal(labels[:, 0], model.labels(raw)) and np.array_equal(hook_keys, keys)
    protocol = PUBLIC_QUERY.protocol(model, enc)
    for i in range(len(tokens)):
        result = run_protocol(protocol, *enc.shares(i))
        assert result.transcript.bits_by_direction == {"alice_to_bob": plan.total_bits, "bob_to_alice": 0}
        assert sum(len(m.bits) for m in result.transcript.messages) == plan.total_bits
        assert np.array_equal(result.output[1], model.arithmetic.to_values(raw)[i])
        for j in range(i):   # the keys are Alice's message: equal exactly when her bits are
            other = run_protocol(protocol, *enc.shares(j)).transcript
            assert (other.digest() == result.transcript.digest()) == bool(np.array_equal(keys[i], keys[j]))


def test_the_message_needs_the_public_query():
    model = random_layer(FixedPoint(6, 1), vocab=4, positions=5)
    tokens = np.zeros((1, 5), dtype=np.int64)
    with pytest.raises(NotApplicable, match="public"):
        PUBLIC_QUERY.plan_model(model, Encoded(tokens, np.arange(2), (4,)))


@pytest.mark.parametrize("n", [8, 16])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_layer_below_the_bound_errs_at_least_as_often_as_theorem_1_says(n, seed):
    report = run_reduction("compose-index", small_layer(n, seed), n, instances=2000, seed=seed, certify=False)
    d = report.to_dict()
    me = d["measured_error"]
    assert d["protocol"] == "attention-public-query" and d["protocol_matches_model"]
    assert d["bits_by_direction"]["bob_to_alice"] == 0 and d["bits_used"] < n * math.log2(n)
    R, bound = composition_error_bound(n, d["bits_used"])
    assert me["applies"] and bound > 0 and me["bound"] == pytest.approx(bound) and me["R"] == pytest.approx(R)
    assert me["trials"] == 2000 and me["events"] == round((1 - d["model_accuracy"]) * 2000)
    assert me["low"] <= me["rate"] <= me["high"] and me["method"] == "wilson"
    assert me["consistent"] is True and me["high"] >= me["bound"] and me["rate"] >= me["bound"]
    assert d["bound_kind"] == "deterministic" and me["kind"] == "distributional"


def test_a_layer_above_the_bound_is_not_ruled_out():
    report = run_reduction("compose-index", small_layer(8, 0, precision=8, frac=4, width=2), 8, instances=300,
                           certify=False)
    me = report.measured_error
    assert report.bits_used > 8 * 3 and report.budget_ok
    assert me["applies"] is False and me["consistent"] is None and me["verdict"].startswith("not ruled out")


def test_exhaustive_run_measures_the_exact_error_over_the_uniform_distribution():
    report = run_reduction("compose-index", small_layer(3, 0, classes=3), 3, certify=False)
    me = report.measured_error
    assert me["trials"] == 3 ** 7 and me["confidence"] == 1.0 and me["low"] == me["rate"] == me["high"]


@pytest.mark.parametrize("seed", [0, 3])
def test_below_the_deterministic_bound_the_collision_certificate_is_verified(seed):
    report = run_reduction("compose-index", small_layer(8, seed), 8, instances=64, seed=seed)
    cert = report.certificate
    assert report.bits_used < report.lower_bound.bits == 24
    assert cert is not None and cert.kind == "collision" and cert.verified
    p = Composition(8)
    g1, g2 = np.array(cert.alice_input), np.array(cert.details["colliding_alice_input"])
    bob = np.array(cert.bob_input)
    assert p.evaluate(g1, bob) != p.evaluate(g2, bob) and cert.model_output != cert.expected


def test_refusals_and_other_model_kinds():
    with pytest.raises(InputError, match="fixed-point"):
        run_reduction("compose-index", "attention:width=1,dim=2,dtype=float32,classes=4", 4, instances=8)
    with pytest.raises(InputError, match="per-weight"):
        run_reduction("compose-index", small_layer(4, 0, division="per-weight"), 4, instances=8)
    rnn = run_reduction("compose-index", "elman:width=4,precision=8", 4, instances=200, certify=False)
    assert rnn.protocol == "rnn-handoff" and rnn.lower_bound.applies and rnn.protocol_matches_model
    assert rnn.measured_error["message_bits"] == rnn.bits_used == 32


def test_two_way_protocols_are_not_bound():
    from commsim.contract import MessagePlan
    two_way = MessagePlan(5, 3, 2, "both speak")
    p = Composition(8)
    bound = RED.lower_bound(None, two_way, p, None)
    assert not bound.applies and bound.bits == 6
    assert not RED.error_bound(None, two_way, p, None, 10).applies


def test_the_variant_is_never_chosen_by_the_model_kind():
    from commsim.runs.stages import simulator_for
    assert load_plugins().get("simulator", "attention-public-query") is PUBLIC_QUERY
    assert simulator_for(random_layer(FixedPoint(6, 1), vocab=4, positions=4))[0].name == "attention-exchange"
