"""The max-logit / partial-softmax exchange: exact for every partition, bits itemized exactly."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from commsim.core.errors import InputError
from commsim.core.precision import FixedPoint, FloatFormat
from commsim.core.runner import run_protocol
from commsim.pipeline.interfaces import Encoded, Share
from commsim.theory.bounds import ceil_log2
from protocols.models.attention import AttentionLayer, random_layer
from protocols.simulators.attention_exchange import ATTENTION_EXCHANGE
from protocols.simulators.exchange_batch import simulate
from protocols.simulators.exchange_parties import (
    AttentionExchangeProtocol,
    run_exchange,
)
from protocols.simulators.exchange_plan import PartitionError, make_plan, theorem_count


def bit_pattern(values) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.float64)).view(np.uint64)


formats = st.one_of(
    st.builds(lambda b, share: FixedPoint(b, min(int(share * b), b - 1)), st.integers(2, 24), st.floats(0, 0.99)),
    st.sampled_from([FloatFormat(d) for d in ("float16", "bfloat16", "float32", "float64")]))


@st.composite
def cases(draw):
    fmt = draw(formats)
    N = draw(st.integers(1, 10))
    V = draw(st.integers(1, 4))
    attend_self = draw(st.booleans()) or N == 1
    model = random_layer(fmt, vocab=V, positions=N, heads=draw(st.integers(1, 3)), width=draw(st.integers(1, 4)),
                         dim=draw(st.integers(1, 5)), classes=draw(st.integers(1, 3)), seed=draw(st.integers(0, 9999)),
                         attend_self=attend_self)
    alice = draw(st.lists(st.booleans(), min_size=N, max_size=N))
    query = draw(st.integers(0, N - 1))
    tokens = np.array(draw(st.lists(st.lists(st.integers(0, V - 1), min_size=N, max_size=N), min_size=1,
                                    max_size=4)))
    return model, np.flatnonzero(alice), query, tokens


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_protocol_equals_direct_forward_bit_for_bit(case):
    """Any layer, format, head count, partition and query position: the runner's output (every message
    a real bit string) equals the direct forward exactly, and the bits add up exactly."""
    model, alice, query, tokens = case
    direct = model.forward_rep(tokens, query)
    plan = make_plan(model, tokens.shape[1], alice, query)
    raw, keys = simulate(model, plan, tokens)
    assert np.array_equal(model.arithmetic.key(raw), model.arithmetic.key(direct))
    for row, want in zip(tokens[:2], direct[:2]):
        result = run_exchange(model, row, alice, query)
        labels, out = result.output
        assert np.array_equal(bit_pattern(out), bit_pattern(model.arithmetic.to_values(want)))
        assert labels.tolist() == model.labels(want[None]).tolist()
        t = result.transcript
        items = plan.itemize()
        assert t.total_bits == plan.total_bits == items["total_bits"]
        assert sum(items["bits_by_step"].values()) == t.total_bits
        assert sum(h["total"] for h in items["bits_by_head"]) == t.total_bits
        assert t.bits_by_direction == items["bits_by_direction"]
        by_label: dict = {}
        for m in items["messages"]:
            by_label[m["label"]] = by_label.get(m["label"], 0) + m["bits"]
        assert t.bits_by_label() == by_label
        assert [(m.sender, m.label, len(m.bits)) for m in t] == \
            [(m["sender"], m["label"], m["bits"]) for m in items["messages"]]
        assert t.rounds == plan.rounds
        assert result.output_party == plan.output_party


def test_wide_fixed_point_through_the_runner():
    for bits in (31, 40, 53):
        model = random_layer(FixedPoint.with_bits(bits), vocab=3, positions=7, heads=2, width=3, dim=4, seed=bits)
        tokens = np.random.default_rng(bits).integers(0, 3, size=7)
        direct = model.forward(tokens[None])[0]
        for alice in ([0, 2, 4], [6], [1, 2, 3, 4, 5, 6]):
            assert np.array_equal(run_exchange(model, tokens, alice).output[1], direct)


def test_two_way_layout_and_the_theorem_count():
    N, m, H, p = 64, 4, 3, 12
    model = random_layer(FixedPoint.with_bits(p), vocab=5, positions=N, heads=H, width=m, dim=6, seed=1)
    plan = make_plan(model, N, np.arange(0, N, 2))       # Bob owns the last position: he is the query owner
    assert (plan.mode, plan.query_owner, plan.output_party, plan.rounds) == ("two-way", "bob", "bob", 2)
    steps = plan.itemize()["bits_by_step"]
    assert steps["query"] == m * p * H and steps["max"] == 2 * p * H
    assert plan.u_width == p + ceil_log2(N // 2)         # an exact sum of N/2 rounded products
    assert steps["U"] == H * m * plan.u_width
    assert steps["Z"] == H * plan.z_width
    formula, text = theorem_count(plan)
    assert formula == 3 * m * (p + ceil_log2(N)) * H and "Theorem 4" in text   # the paper's own count
    assert plan.total_bits <= formula
    assert plan.direction == "two-way"


def test_one_way_variant_when_alice_holds_only_the_query():
    N, m, H, p = 9, 3, 2, 6
    for attend_self, per_head in ((False, m * p), (True, m * p + (m + 1) * p)):
        model = random_layer(FixedPoint.with_bits(p), vocab=4, positions=N, heads=H, width=m, dim=5, seed=2,
                             attend_self=attend_self)
        tokens = np.random.default_rng(3).integers(0, 4, size=(6, N))
        plan = make_plan(model, N, [N - 1])
        assert (plan.mode, plan.output_party, plan.direction, plan.rounds) == ("one-way", "bob", "one-way", 1)
        assert plan.total_bits == H * per_head == theorem_count(plan)[0]
        for row in tokens:
            result = run_exchange(model, row, [N - 1])
            assert result.transcript.is_one_way and result.transcript.bits_by_direction["bob_to_alice"] == 0
            assert np.array_equal(result.output[1], model.forward(row[None])[0])


def test_bob_holding_only_the_query_speaks_alone_and_counts_as_two_way():
    model = random_layer(FixedPoint.with_bits(8), vocab=4, positions=6, seed=0)
    plan = make_plan(model, 6, [0, 1, 2, 3, 4])
    assert plan.mode == "one-way" and plan.output_party == "alice" and plan.direction == "two-way"
    row = np.array([0, 1, 2, 3, 0, 1])
    result = run_exchange(model, row, [0, 1, 2, 3, 4])
    assert result.transcript.bits_by_direction["alice_to_bob"] == 0
    assert np.array_equal(result.output[1], model.forward(row[None])[0])


def test_local_partitions_need_no_bits():
    model = random_layer(FixedPoint.with_bits(8), vocab=3, positions=5, heads=2, seed=4)
    row = np.array([2, 0, 1, 1, 0])
    for alice in ([], [0, 1, 2, 3, 4]):
        result = run_exchange(model, row, alice)
        assert result.transcript.total_bits == 0
        assert np.array_equal(result.output[1], model.forward(row[None])[0])


@pytest.mark.parametrize("alice, message", [
    ([0, 0, 1], "twice"), ([0, 9], "outside"), ([-1], "outside"), ([[0, 1]], "flat"), ([0.5], "integers")])
def test_partition_errors(alice, message):
    model = random_layer(FixedPoint.with_bits(8), vocab=3, positions=5, seed=0)
    with pytest.raises(PartitionError, match=message):
        make_plan(model, 5, alice)
    assert issubclass(PartitionError, InputError)


def test_wrapper_checks_the_task_against_the_model():
    model = random_layer(FixedPoint.with_bits(8), vocab=3, positions=6, seed=0, query=2)
    enc = Encoded(np.zeros((2, 6), dtype=int), np.arange(3), (5,))
    with pytest.raises(InputError, match="position 2"):
        ATTENTION_EXCHANGE.check_partition(model, enc)
    with pytest.raises(InputError, match="reads one query position"):
        ATTENTION_EXCHANGE.check_partition(random_layer(FixedPoint.with_bits(8), vocab=3, positions=6),
                                           Encoded(np.zeros((1, 6), dtype=int), np.arange(3), (4, 5)))
    with pytest.raises(InputError, match="vocabulary"):
        ATTENTION_EXCHANGE.check_partition(random_layer(FixedPoint.with_bits(8), vocab=3, positions=6),
                                           Encoded(np.full((1, 6), 7), np.arange(3), (5,)))


def test_sweep_agrees_with_the_runner_and_itemizes():
    model = random_layer(FloatFormat("float16"), vocab=4, positions=12, heads=2, width=3, dim=5, seed=7)
    tokens = np.random.default_rng(5).integers(0, 4, size=(40, 12))
    enc = Encoded(tokens, np.array([0, 3, 4, 7, 11]), (11,))
    sweep = ATTENTION_EXCHANGE.sweep(model, enc)
    assert sweep.exact_match.all() and sweep.details["exact_matches"] == 40
    assert np.array_equal(sweep.protocol_labels, sweep.direct_labels)
    protocol = ATTENTION_EXCHANGE.make_protocol(model, enc)
    for i in range(0, 40, 7):
        result = run_protocol(protocol, *enc.shares(i))
        assert result.output[0].tolist() == sweep.protocol_labels[i].tolist()
        assert result.transcript.total_bits == sweep.total_bits[i] == sweep.details["total_bits"]
    assert sweep.details["bits_by_direction"]["alice_to_bob"] == int(sweep.alice_to_bob[0])
    assert set(sweep.details["bits_by_step"]) == {"query", "max", "Z", "U"}
    assert len(sweep.details["bits_by_head"]) == 2


def test_equal_transcript_keys_mean_equal_transcripts():
    model = random_layer(FixedPoint(3, 1), vocab=2, positions=6, width=1, dim=2, seed=11)
    tokens = np.array([[int(c) for c in f"{i:06b}"] for i in range(64)])
    plan = make_plan(model, 6, [0, 2, 4])
    _, keys = simulate(model, plan, tokens)
    protocol = AttentionExchangeProtocol(model, plan)
    digests = []
    for row in tokens:
        a, b = plan.positions("alice"), plan.positions("bob")
        digests.append(run_protocol(protocol, Share(a, row[a], 6), Share(b, row[b], 6)).transcript.digest())
    for i in range(64):
        for j in range(64):
            assert (digests[i] == digests[j]) == bool(np.array_equal(keys[i], keys[j]))


def test_audit_mode_gives_the_same_result():
    model = random_layer(FixedPoint.with_bits(10), vocab=3, positions=8, heads=2, width=2, seed=3)
    row = np.array([0, 1, 2, 2, 1, 0, 1, 2])
    local = run_exchange(model, row, [1, 3, 5])
    audited = run_exchange(model, row, [1, 3, 5], audit=True)
    assert np.array_equal(local.output[1], audited.output[1])
    assert local.transcript.digest() == audited.transcript.digest()


# ---- a residual path: psi reads the query position's own embedding x_N ------------------------------
@st.composite
def residual_cases(draw):
    fmt = draw(formats)
    N = draw(st.integers(2, 9))
    V = draw(st.integers(1, 4))
    dim = draw(st.integers(1, 5))
    attend_self = draw(st.booleans())
    kw = dict(vocab=V, positions=N, heads=draw(st.integers(1, 3)), width=draw(st.integers(1, 4)), dim=dim,
              classes=draw(st.integers(1, 3)), seed=draw(st.integers(0, 9999)), attend_self=attend_self)
    model = random_layer(fmt, residual=True, **kw)
    coords = draw(st.one_of(st.none(), st.lists(st.integers(0, dim - 1), min_size=1, max_size=dim, unique=True)))
    if coords is not None:   # psi reads some coordinates of x_N only: the same layer, a narrower first psi layer
        W, b = model.psi_layers[0]
        val = model.arithmetic.to_values
        model = AttentionLayer(fmt, val(model.token_table), val(model.position_table), val(model.W_Q),
                               val(model.W_K), val(model.W_V), val(model.W_O),
                               [(val(W)[:, :model.out_dim + len(coords)], val(b))], attend_self=attend_self,
                               residual=coords)
    plain = random_layer(fmt, **kw)
    query = draw(st.integers(0, N - 1))
    split = draw(st.sampled_from(["any", "alice-only-query", "bob-only-query", "local"]))
    if split == "alice-only-query":
        alice = np.array([query])
    elif split == "bob-only-query":
        alice = np.array([i for i in range(N) if i != query])
    elif split == "local":
        alice = np.arange(N) if draw(st.booleans()) else np.array([], dtype=np.int64)
    else:
        alice = np.flatnonzero(draw(st.lists(st.booleans(), min_size=N, max_size=N)))
    tokens = np.array(draw(st.lists(st.lists(st.integers(0, V - 1), min_size=N, max_size=N), min_size=1,
                                    max_size=4)))
    return model, plain, alice, query, tokens


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(residual_cases())
def test_residual_path_is_exact_and_costs_the_embedding_only_one_way(case):
    """psi reads x_N: the protocol (runner and vectorized) equals the direct forward bit for bit on every
    partition; the embedding travels (r·p bits, one message) exactly when the query owner does not output."""
    model, plain, alice, query, tokens = case
    N, r, p = tokens.shape[1], model.residual_width, model.precision
    assert r >= 1 and model.psi_input_width == model.out_dim + r
    direct = model.forward_rep(tokens, query)
    plan = make_plan(model, N, alice, query)
    base = make_plan(plain, N, alice, query)
    event(f"{plan.mode}, {'fixed point' if model.arithmetic.is_fixed else 'IEEE'}")
    raw, keys = simulate(model, plan, tokens)
    assert np.array_equal(model.arithmetic.key(raw), model.arithmetic.key(direct))
    items = plan.itemize()
    embedding = [m for m in plan.messages if m.step == "embedding"]
    if plan.mode == "one-way":
        assert [(m.label, m.sender, m.bits) for m in embedding] == [("embedding", plan.query_owner, r * p)]
        assert plan.total_bits == base.total_bits + r * p == theorem_count(plan)[0]
        assert items["bits_by_step"]["embedding"] == r * p
        assert "embedding" in theorem_count(plan)[1]
        assert keys.shape[1] == simulate(plain, base, tokens)[1].shape[1] + r
    else:
        assert embedding == [] and "embedding" not in items["bits_by_step"]
        assert plan.total_bits == base.total_bits and theorem_count(plan) == theorem_count(base)
    assert plan.output_party == base.output_party and plan.mode == base.mode
    for row, want in zip(tokens[:2], direct[:2]):
        result = run_exchange(model, row, alice, query)
        labels, out = result.output
        assert np.array_equal(bit_pattern(out), bit_pattern(model.arithmetic.to_values(want)))
        assert labels.tolist() == model.labels(want[None]).tolist()
        t = result.transcript
        assert t.total_bits == plan.total_bits == sum(items["bits_by_step"].values())
        assert t.total_bits - sum(h["total"] for h in items["bits_by_head"]) == r * p * len(embedding)
        assert [(m.sender, m.label, len(m.bits)) for m in t] == \
            [(m["sender"], m["label"], m["bits"]) for m in items["messages"]]
        assert t.bits_by_direction == items["bits_by_direction"]


def test_residual_path_changes_the_output_and_defaults_off():
    fmt = FixedPoint.with_bits(12)
    model = random_layer(fmt, vocab=4, positions=6, heads=2, width=2, dim=3, seed=5, residual=True)
    plain = random_layer(fmt, vocab=4, positions=6, heads=2, width=2, dim=3, seed=5)
    assert plain.residual_coords is None and plain.residual_width == 0
    assert model.psi_layers[0][0].shape == (2, 6) and np.array_equal(model.residual_coords, np.arange(3))
    tokens = np.random.default_rng(0).integers(0, 4, size=(50, 6))
    assert not np.array_equal(model.forward_rep(tokens), plain.forward_rep(tokens))   # psi does read x_N
    with pytest.raises(ValueError, match="x_query"):
        model.finish(np.zeros((1, 2, 2), dtype=np.int64), np.ones((1, 2), dtype=np.int64))
    with pytest.raises(InputError, match="residual coordinates"):
        AttentionLayer(fmt, np.zeros((2, 3)), None, np.zeros((1, 1, 3)), np.zeros((1, 1, 3)), np.zeros((1, 1, 3)),
                       np.zeros((3, 1)), residual=[3])


def test_residual_path_float_semantics_save_and_load(tmp_path):
    model = random_layer(FloatFormat("float32"), vocab=5, positions=7, heads=2, width=3, dim=4, seed=9,
                         residual=True)
    tokens = np.random.default_rng(1).integers(0, 5, size=(30, 7))
    ref, flt = model.forward(tokens), model.float_forward(tokens)
    assert np.all(np.abs(ref - flt) <= 1e-4 * (1 + np.abs(flt)))
    model.save(tmp_path / "layer.npz")
    again = AttentionLayer.load(tmp_path / "layer.npz")
    assert np.array_equal(again.residual_coords, model.residual_coords)
    assert np.array_equal(again.forward(tokens), ref)


def test_residual_transcript_keys_mean_equal_transcripts_one_way():
    model = random_layer(FixedPoint(3, 1), vocab=2, positions=5, width=1, dim=2, seed=11, residual=True)
    tokens = np.array([[int(c) for c in f"{i:05b}"] for i in range(32)])
    plan = make_plan(model, 5, [4])
    assert plan.mode == "one-way"
    _, keys = simulate(model, plan, tokens)
    protocol = AttentionExchangeProtocol(model, plan)
    a, b = plan.positions("alice"), plan.positions("bob")
    digests = [run_protocol(protocol, Share(a, row[a], 5), Share(b, row[b], 5)).transcript.digest()
               for row in tokens]
    for i in range(32):
        for j in range(32):
            assert (digests[i] == digests[j]) == bool(np.array_equal(keys[i], keys[j]))


def test_residual_spec_and_sweep_itemize_the_embedding():
    from commsim.plugins import load_plugins, make_model
    load_plugins()
    model = make_model("attention:residual=1,heads=2,width=3,dim=4,precision=10", vocab_size=3, seq_len=8)
    assert model.residual_width == 4
    tokens = np.random.default_rng(2).integers(0, 3, size=(20, 8))
    enc = Encoded(tokens, np.array([7]), (7,))
    sweep = ATTENTION_EXCHANGE.sweep(model, enc)
    assert sweep.exact_match.all()
    assert sweep.details["bits_by_step"]["embedding"] == 4 * 10 and sweep.details["residual"] == 4
    assert int(sweep.alice_to_bob[0]) == sweep.details["total_bits"] == sweep.details["theorem_bits"]


@pytest.mark.parametrize("fmt", [FloatFormat("float64"), FloatFormat("float16"), FixedPoint.with_bits(6)])
def test_two_way_transcript_keys_mean_equal_transcripts(fmt):
    """Equal keys exactly when the runner's transcripts are equal, also when the exact sums are wider than
    int64 (float64: Z and U in units of the smallest subnormal, digested through the message encoding)."""
    model = random_layer(fmt, vocab=2, positions=6, width=1, dim=2, seed=3)
    tokens = np.array([[int(c) for c in f"{i:06b}"] for i in range(64)])
    plan = make_plan(model, 6, [0, 1, 5])
    assert plan.mode == "two-way"
    raw, keys = simulate(model, plan, tokens)
    assert keys.dtype == np.int64 and np.array_equal(model.arithmetic.key(raw), model.arithmetic.key(model.forward_rep(tokens)))
    protocol = AttentionExchangeProtocol(model, plan)
    a, b = plan.positions("alice"), plan.positions("bob")
    digests = [run_protocol(protocol, Share(a, row[a], 6), Share(b, row[b], 6)).transcript.digest() for row in tokens]
    same_keys = (keys[:, None, :] == keys[None, :, :]).all(axis=2)
    same_transcripts = np.array([[x == y for y in digests] for x in digests])
    assert np.array_equal(same_keys, same_transcripts)
    assert not same_transcripts.all()          # the inputs do give different transcripts
