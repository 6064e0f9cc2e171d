"""The max-logit / partial-softmax exchange: exact for every partition, bits itemized exactly."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from commsim.core.errors import InputError
from commsim.core.precision import FixedPoint, FloatFormat
from commsim.core.runner import run_protocol
from commsim.contract import Encoded, Share
from commsim.theory.bounds import ceil_log2
from protocols.models.attention import AttentionConfig, AttentionLayer, random_layer
from protocols.simulators.attention import (
    ATTENTION_EXCHANGE,
    AttentionExchangeProtocol,
    PartitionError,
    make_plan,
    run_exchange,
    simulate,
    theorem_count,
)
from protocols.theorems import one_way_attention_bits, query_bits


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
                         attend_self=attend_self, division=draw(st.sampled_from(["once", "per-weight"])))
    alice = draw(st.lists(st.booleans(), min_size=N, max_size=N))
    query = draw(st.integers(0, N - 1))
    tokens = np.array(draw(st.lists(st.lists(st.integers(0, V - 1), min_size=N, max_size=N), min_size=1,
                                    max_size=4)))
    return model, np.flatnonzero(alice), query, tokens


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_protocol_equals_direct_forward_bit_for_bit(case):
    """Any layer, format, head count, partition, query position and division semantics: the runner's
    output (every message a real bit string) equals the direct forward exactly, and the bits add up exactly."""
    model, alice, query, tokens = case
    event(f"{model.division}, {'fixed point' if model.arithmetic.is_fixed else 'IEEE'}")
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
        not_per_head = sum(m.bits for m in plan.messages if m.head is None)   # x_N: not one head's message
        assert sum(h["total"] for h in items["bits_by_head"]) + not_per_head == t.total_bits
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
    """[SHT23]: Alice holds only the query and sends one message.  Without self-attention q_N (m·p·H) is
    enough; with it, Bob also needs her own logit and value ((m + 1)·p·H) -- unless x_N (d·p) is cheaper,
    from which Bob computes all of it: the message is min(d·p, (2m + 1)·p·H) bits."""
    N, m, H, p = 9, 3, 2, 6
    for attend_self, dim, kind, bits in ((False, 7, "query", m * p * H), (True, 20, "query", (2 * m + 1) * p * H),
                                         (True, 5, "embedding", 5 * p), (False, 4, "embedding", 4 * p),
                                         (False, 6, "query", m * p * H)):   # a tie goes to q_N
        model = random_layer(FixedPoint.with_bits(p), vocab=4, positions=N, heads=H, width=m, dim=dim, seed=2,
                             attend_self=attend_self)
        tokens = np.random.default_rng(3).integers(0, 4, size=(6, N))
        plan = make_plan(model, N, [N - 1])
        assert (plan.mode, plan.output_party, plan.direction, plan.rounds) == ("one-way", "bob", "one-way", 1)
        assert plan.one_way_message == kind and plan.total_bits == bits == theorem_count(plan)[0]
        assert bits == min(dim * p, m * p * H + ((m + 1) * p * H if attend_self else 0))
        assert plan.itemize()["one_way_message"] == kind and "x_N" in plan.one_way_reason
        for row in tokens:
            result = run_exchange(model, row, [N - 1])
            assert result.transcript.is_one_way and result.transcript.bits_by_direction["bob_to_alice"] == 0
            assert result.transcript.total_bits == bits
            assert np.array_equal(result.output[1], model.forward(row[None])[0])


def test_the_qsa_one_way_message_is_the_cheaper_valid_one():
    """Issue 12, defect 5: `run disj-qsa` with heads=1, width=4, precision=8 (dim 8, self-attending) sent
    q_N + self = 72 bits, and with residual=1 q_N + x_N + self = 136 bits; x_N alone (d·p = 64) suffices."""
    from commsim.runs.run import run_reduction
    for spec in ("attention:heads=1,width=4,precision=8,seed=0", "attention:heads=1,width=4,precision=8,seed=0,"
                                                                 "residual=1"):
        rep = run_reduction("disj-qsa", spec, 4)
        assert rep.bits_used == min(8 * 8, (2 * 4 + 1) * 8 * 1) == 64
        assert rep.protocol_matches_model and rep.lower_bound.conditions.direction == "one-way"
    rep = run_reduction("disj-qsa", "attention:heads=1,width=4,precision=8,seed=0,self=0", 4)
    assert rep.bits_used == 4 * 8 * 1                      # q_N alone: m·p·H < d·p


def test_a_config_without_weights_plans_as_the_layer_does():
    """make_plan reads the layer's config only: a config built from sizes (``commsim budget``) gives the
    layer's plan; without d, q_N is the one-way message."""
    model = random_layer(FixedPoint.with_bits(8), vocab=3, positions=6, heads=2, width=3, dim=4, seed=0)
    shape = AttentionConfig.fixed(2, 3, 8)
    assert shape.format == model.format and shape == model.config.replace(dim=None)
    plan = make_plan(shape, 6, [5])
    assert plan.division == "once" and plan.dim is None and plan.one_way_message == "query"
    assert plan.total_bits == (2 * 3 + 1) * 8 * 2
    for alice in ([0, 2, 4], [5], [1, 5]):
        assert make_plan(shape.replace(dim=4), 6, alice) == make_plan(model, 6, alice)
    with pytest.raises(InputError, match="layer's numbers"):
        AttentionConfig.fixed(2, 3, 1)


def test_the_layer_reads_its_shape_through_its_config():
    """query, self and division may be set after construction (the spec keys do): a new config, the same
    layer; the plan follows."""
    model = random_layer(FixedPoint.with_bits(8), vocab=3, positions=6, heads=2, width=3, dim=4, seed=0)
    assert (model.heads, model.width, model.dim, model.precision) == (2, 3, 4, 8)
    assert model.arithmetic is model.config.arithmetic and model.format is model.config.format
    model.division, model.attend_self, model.query = "per-weight", False, 3
    assert model.config == AttentionConfig(2, 3, model.format, dim=4, attend_self=False, query=3,
                                           division="per-weight")
    assert make_plan(model, 6, [0, 2, 4]).division == "per-weight" and model.query_position(6) == 3
    with pytest.raises(InputError, match="division"):
        model.division = "twice"


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


def test_plan_checks_the_task_against_the_model():
    model = random_layer(FixedPoint.with_bits(8), vocab=3, positions=6, seed=0, query=2)
    enc = Encoded(np.zeros((2, 6), dtype=int), np.arange(3), (5,))
    with pytest.raises(InputError, match="position 2"):
        ATTENTION_EXCHANGE.plan_model(model, enc)
    with pytest.raises(InputError, match="reads one query position"):
        ATTENTION_EXCHANGE.plan_model(random_layer(FixedPoint.with_bits(8), vocab=3, positions=6),
                                Encoded(np.zeros((1, 6), dtype=int), np.arange(3), (4, 5)))
    with pytest.raises(InputError, match="vocabulary"):
        ATTENTION_EXCHANGE.plan_model(random_layer(FixedPoint.with_bits(8), vocab=3, positions=6),
                                Encoded(np.full((1, 6), 7), np.arange(3), (5,)))
    with pytest.raises(InputError, match="the input has 7"):
        ATTENTION_EXCHANGE.plan_model(random_layer(FixedPoint.with_bits(8), vocab=3, positions=6),
                                Encoded(np.zeros((1, 7), dtype=int), np.arange(3), (6,)))


@pytest.mark.parametrize("alice, direction, senders", [
    ([0, 3, 4, 7, 11], "two-way", {"alice", "bob"}), ([11], "one-way", {"alice"}),
    (list(range(11)), "two-way", {"bob"}), ([], "one-way", set())])
def test_the_message_plan_is_the_exchange_plan(alice, direction, senders):
    """What the engine reads (bits per direction, rounds, direction, senders, the papers' count) is the
    exchange's own plan, and the runner sends exactly those bits."""
    model = random_layer(FixedPoint.with_bits(8), vocab=4, positions=12, heads=2, width=3, dim=5, seed=7)
    enc = Encoded(np.random.default_rng(1).integers(0, 4, size=(3, 12)), np.array(alice, dtype=np.int64), (11,))
    message = ATTENTION_EXCHANGE.plan_model(model, enc)
    plan = ATTENTION_EXCHANGE.exchange_plan(model, enc)
    assert (message.alice_to_bob, message.bob_to_alice, message.rounds) == \
        (plan.alice_to_bob, plan.bob_to_alice, plan.rounds)
    assert message.direction == direction and message.senders == senders
    assert (message.formula, message.formula_text) == theorem_count(plan) and message.message_name
    assert ATTENTION_EXCHANGE.exchange_plan(model, enc) is plan          # cached per split
    result = run_protocol(ATTENTION_EXCHANGE.protocol(model, enc), *enc.shares(0))
    assert result.transcript.bits_by_direction == {"alice_to_bob": message.alice_to_bob,
                                                   "bob_to_alice": message.bob_to_alice}
    assert result.transcript.rounds == message.rounds


def test_run_batch_agrees_with_the_runner_and_itemizes():
    model = random_layer(FloatFormat("float16"), vocab=4, positions=12, heads=2, width=3, dim=5, seed=7)
    tokens = np.random.default_rng(5).integers(0, 4, size=(40, 12))
    enc = Encoded(tokens, np.array([0, 3, 4, 7, 11]), (11,))
    batch = ATTENTION_EXCHANGE.run_batch(model, enc)
    assert batch.exact_match.all() and batch.details["exact_matches"] == 40
    assert np.array_equal(batch.protocol_labels, batch.direct_labels)
    protocol = ATTENTION_EXCHANGE.protocol(model, enc)
    for i in range(0, 40, 7):
        result = run_protocol(protocol, *enc.shares(i))
        assert result.output[0].tolist() == batch.protocol_labels[i].tolist()
        assert result.transcript.total_bits == batch.total_bits[i] == batch.details["total_bits"]
    assert batch.details["bits_by_direction"]["alice_to_bob"] == int(batch.alice_to_bob[0])
    assert set(batch.details["bits_by_step"]) == {"query", "max", "Z", "U"}
    assert len(batch.details["bits_by_head"]) == 2


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
              classes=draw(st.integers(1, 3)), seed=draw(st.integers(0, 9999)), attend_self=attend_self,
              division=draw(st.sampled_from(["once", "per-weight"])))
    model = random_layer(fmt, residual=True, **kw)
    coords = draw(st.one_of(st.none(), st.lists(st.integers(0, dim - 1), min_size=1, max_size=dim, unique=True)))
    if coords is not None:   # psi reads some coordinates of x_N only: the same layer, a narrower first psi layer
        W, b = model.psi_layers[0]
        val = model.arithmetic.to_values
        model = AttentionLayer(fmt, val(model.token_table), val(model.position_table), val(model.W_Q),
                               val(model.W_K), val(model.W_V), val(model.W_O),
                               [(val(W)[:, :model.out_dim + len(coords)], val(b))], attend_self=attend_self,
                               residual=coords, division=kw["division"])
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
        d, m, H = model.dim, model.width, model.heads
        query_message = one_way_attention_bits(m, p, H, residual=r, attend_self=model.attend_self)
        assert plan.total_bits == min(d * p, query_message) == theorem_count(plan)[0]   # the cheaper message
        assert "x_N" in theorem_count(plan)[1]
        if plan.one_way_message == "embedding":      # x_N whole: d numbers, nothing else
            assert [(m.label, m.sender, m.bits) for m in plan.messages] == [("embedding", plan.query_owner, d * p)]
            assert keys.shape[1] == d and d * p < query_message
        else:                                        # q_N and the rest, plus the r coordinates psi reads
            assert [(m.label, m.sender, m.bits) for m in embedding] == [("embedding", plan.query_owner, r * p)]
            assert items["bits_by_step"]["embedding"] == r * p and query_message <= d * p
            assert plan.total_bits == query_bits(m, p, H) * (2 if model.attend_self else 1) + \
                (H * p if model.attend_self else 0) + r * p
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
        assert t.total_bits - sum(h["total"] for h in items["bits_by_head"]) == sum(m.bits for m in embedding)
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


def test_residual_spec_and_run_batch_itemize_the_embedding():
    from commsim.plugins import load_plugins, make_model
    load_plugins()
    model = make_model("attention:residual=1,heads=2,width=3,dim=4,precision=10", vocab_size=3, seq_len=8)
    assert model.residual_width == 4
    tokens = np.random.default_rng(2).integers(0, 3, size=(20, 8))
    enc = Encoded(tokens, np.array([7]), (7,))
    batch = ATTENTION_EXCHANGE.run_batch(model, enc)
    assert batch.exact_match.all()
    assert batch.details["bits_by_step"]["embedding"] == 4 * 10 and batch.details["residual"] == 4
    assert int(batch.alice_to_bob[0]) == batch.details["total_bits"] == batch.details["theorem_bits"]


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


# ---- per-weight division (Appendix D of [BHBK24]): Z must reach both parties before U --------------------
@pytest.mark.parametrize("fmt", [FixedPoint.with_bits(10), FixedPoint(6, 3), FloatFormat("float16"),
                                 FloatFormat("float64")])
def test_per_weight_exchange_sends_z_both_ways_and_stays_exact(fmt):
    """Appendix D: a_i = [e_i / Z] needs the whole Z at the party forming the terms, so the other party
    learns the query owner's partial Z (the paper exchanges Z_A and Z_B) before it sends U: one more
    message per head and four rounds; every bit counted, the output bit-identical to the direct forward."""
    N, H, m = 8, 2, 3
    once = random_layer(fmt, vocab=3, positions=N, heads=H, width=m, dim=4, seed=5)
    per = random_layer(fmt, vocab=3, positions=N, heads=H, width=m, dim=4, seed=5, division="per-weight")
    alice = [0, 3, 4, 7]                                   # Alice owns the query (7) and three more positions
    p_once, p_per = make_plan(once, N, alice), make_plan(per, N, alice)
    assert (p_once.rounds, p_per.rounds) == (2, 4) and p_per.division == "per-weight"
    back = [msg for msg in p_per.messages if msg.label.startswith("Z owner")]
    assert [(msg.sender, msg.bits) for msg in back] == [("alice", p_per.z_owner_width)] * H
    assert p_per.z_owner_width == (4 * per.arithmetic.one_units).bit_length()   # 4 attended terms of at most [1]
    assert p_per.total_bits == p_once.total_bits + H * p_per.z_owner_width
    assert p_per.itemize()["bits_by_step"]["Z"] == H * (p_per.z_width + p_per.z_owner_width)
    assert "per-weight" in theorem_count(p_per)[1]
    tokens = np.array([[int(c) for c in np.base_repr(i, 3).zfill(N)] for i in range(0, 3 ** N, 37)])
    direct_per, direct_once = per.forward_rep(tokens), once.forward_rep(tokens)
    assert not np.array_equal(per.arithmetic.key(direct_per), once.arithmetic.key(direct_once))  # a real option
    raw, keys = simulate(per, p_per, tokens)
    assert np.array_equal(per.arithmetic.key(raw), per.arithmetic.key(direct_per))
    protocol = AttentionExchangeProtocol(per, p_per)
    a, b = p_per.positions("alice"), p_per.positions("bob")
    digests = []
    for row, want in zip(tokens[:12], direct_per[:12]):
        result = run_protocol(protocol, Share(a, row[a], N), Share(b, row[b], N))
        assert np.array_equal(bit_pattern(result.output[1]), bit_pattern(per.arithmetic.to_values(want)))
        assert result.transcript.total_bits == p_per.total_bits and result.transcript.rounds == 4
        assert [(msg.sender, msg.label, len(msg.bits)) for msg in result.transcript] == \
            [(msg.sender, msg.label, msg.bits) for msg in p_per.messages]
        digests.append(result.transcript.digest())
    for i in range(12):
        for j in range(12):
            assert (digests[i] == digests[j]) == bool(np.array_equal(keys[i], keys[j]))


def test_per_weight_one_way_and_local_need_no_extra_message():
    """One party computes every term (one-way: the receiver, after the query's message; local: the owner):
    the per-weight division needs no more bits there."""
    for attend_self in (True, False):
        kw = dict(vocab=3, positions=6, heads=2, width=2, dim=5, seed=1, attend_self=attend_self)
        once = random_layer(FixedPoint.with_bits(8), **kw)
        per = random_layer(FixedPoint.with_bits(8), division="per-weight", **kw)
        for alice in ([5], [0, 1, 2, 3, 4], []):
            assert make_plan(per, 6, alice).total_bits == make_plan(once, 6, alice).total_bits
            for row in np.random.default_rng(0).integers(0, 3, size=(5, 6)):
                assert np.array_equal(run_exchange(per, row, alice).output[1], per.forward(row[None])[0])


# ---- the hooks the engine calls, over random layers, partitions and formats ------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_hooks_agree_with_the_runner_and_the_direct_forward(case):
    """plan, run_batch, transcript_keys and protocol on one encoding: the batch equals the direct
    forward bit for bit and the runner instance by instance; the plan's bits are the runner's; equal keys
    exactly when the runner's transcripts are equal."""
    model, alice, query, tokens = case
    enc = Encoded(tokens, alice, (query,))
    message = ATTENTION_EXCHANGE.plan_model(model, enc)
    batch = ATTENTION_EXCHANGE.run_batch(model, enc)
    labels, keys = ATTENTION_EXCHANGE.transcript_keys(model, enc)
    direct = ATTENTION_EXCHANGE.direct_labels(model, enc)
    assert batch.exact_match.all() and np.array_equal(batch.direct_labels, direct)
    assert np.array_equal(batch.protocol_labels, labels) and labels.shape == (len(tokens), 1)
    assert np.array_equal(direct[:, 0], model.decide(tokens, query))
    protocol = ATTENTION_EXCHANGE.protocol(model, enc)
    digests = []
    for i in range(len(tokens)):
        result = run_protocol(protocol, *enc.shares(i))
        assert result.output[0].tolist() == labels[i].tolist()
        t = result.transcript
        assert (t.bits_by_direction["alice_to_bob"], t.bits_by_direction["bob_to_alice"], t.rounds) == \
            (message.alice_to_bob, message.bob_to_alice, message.rounds) == \
            (batch.alice_to_bob[i], batch.bob_to_alice[i], batch.rounds[i])
        digests.append(t.digest())
    for i in range(len(tokens)):
        for j in range(len(tokens)):
            assert (digests[i] == digests[j]) == bool(np.array_equal(keys[i], keys[j]))
