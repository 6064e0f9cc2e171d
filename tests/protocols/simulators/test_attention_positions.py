"""RoPE, ALiBi and NoPE in the attention exchange (issue 25, item 3): each party computes its own keys and logits
from the positions it holds, the query owner rotates q at the query position, so the exchange stays exact --
protocol == model bit for bit, under every format, partition, query position and division."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from protocols.models.attention import FLOAT_TOLERANCE, random_layer
from protocols.models.attention_positions import alibi_slopes
from protocols.simulators.attention import ATTENTION_EXCHANGE, make_plan, run_exchange, simulate
from commsim.core.precision import FixedPoint, FloatFormat
from commsim.contract import Encoded

formats = st.one_of(
    st.builds(lambda b, share: FixedPoint(b, min(int(share * b), b - 1)), st.integers(2, 24), st.floats(0, 0.99)),
    st.sampled_from([FloatFormat(d) for d in ("float16", "bfloat16", "float32", "float64")]))


def bit_pattern(values) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.float64)).view(np.uint64)


def with_scheme(model, scheme: str, base: float, slopes):
    """The layer with RoPE, ALiBi, both, or neither (NoPE when it also has no position table)."""
    rope, alibi = scheme in ("rope", "both"), scheme in ("alibi", "both")
    model.config = model.config.replace(rope=rope, rope_base=base, alibi=slopes if alibi else None)
    return model


@st.composite
def cases(draw):
    fmt = draw(formats)
    N = draw(st.integers(2, 9))
    V = draw(st.integers(1, 4))
    heads = draw(st.integers(1, 3))
    attend_self = draw(st.booleans()) or N == 1
    nope = draw(st.booleans())
    model = random_layer(fmt, vocab=V, positions=None if nope else N, heads=heads, width=2 * draw(st.integers(1, 2)),
                         dim=draw(st.integers(1, 5)), classes=draw(st.integers(1, 3)), seed=draw(st.integers(0, 9999)),
                         attend_self=attend_self, residual=draw(st.booleans()),
                         division=draw(st.sampled_from(["once", "per-weight"])))
    scheme = draw(st.sampled_from(["rope", "alibi", "both", "none"]))
    slopes = draw(st.one_of(st.just(alibi_slopes(heads)),
                            st.lists(st.floats(-2, 2, allow_nan=False), min_size=heads, max_size=heads)))
    model = with_scheme(model, scheme, draw(st.sampled_from([10000.0, 100.0, 2.5])), tuple(slopes))
    query = draw(st.integers(0, N - 1))
    split = draw(st.sampled_from(["any", "alice-only-query", "bob-only-query"]))
    if split == "alice-only-query":
        alice = np.array([query])
    elif split == "bob-only-query":
        alice = np.array([i for i in range(N) if i != query])
    else:
        alice = np.flatnonzero(draw(st.lists(st.booleans(), min_size=N, max_size=N)))
    tokens = np.array(draw(st.lists(st.lists(st.integers(0, V - 1), min_size=N, max_size=N), min_size=1,
                                    max_size=4)))
    return model, alice, query, tokens, f"{scheme}{', NoPE table' if nope else ''}"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_rope_alibi_nope_protocol_equals_model_bit_for_bit(case):
    model, alice, query, tokens, what = case
    direct = model.forward_rep(tokens, query)
    plan = make_plan(model, tokens.shape[1], alice, query)
    event(f"{what}, {plan.mode}{', ' + plan.one_way_message if plan.mode == 'one-way' else ''}")
    raw, _ = simulate(model, plan, tokens)
    assert np.array_equal(model.arithmetic.key(raw), model.arithmetic.key(direct))
    for row, want in zip(tokens[:2], direct[:2]):
        result = run_exchange(model, row, alice, query)
        labels, out = result.output
        assert np.array_equal(bit_pattern(out), bit_pattern(model.arithmetic.to_values(want)))
        assert labels.tolist() == model.labels(want[None]).tolist()
        assert result.transcript.total_bits == plan.total_bits
    enc = Encoded(tokens, alice, (query,))
    assert ATTENTION_EXCHANGE.run_batch(model, enc).exact_match.all()


def test_the_message_plan_does_not_change_with_the_position_scheme():
    """RoPE and ALiBi are computed locally: the same messages, the same bits as the plain layer."""
    base = random_layer(FixedPoint.with_bits(10), vocab=3, positions=None, heads=2, width=4, dim=6, seed=2)
    plain = make_plan(base, 8, [0, 1, 2], None)
    for scheme in ("rope", "alibi", "both"):
        model = with_scheme(random_layer(FixedPoint.with_bits(10), vocab=3, positions=None, heads=2, width=4, dim=6,
                                         seed=2), scheme, 10000.0, alibi_slopes(2))
        plan = make_plan(model, 8, [0, 1, 2], None)
        assert [(m.label, m.sender, m.bits) for m in plan.messages] == \
            [(m.label, m.sender, m.bits) for m in plain.messages]


def test_float64_layers_follow_the_plain_float_forward():
    tokens = np.random.default_rng(0).integers(0, 5, size=(32, 9))
    for scheme in ("rope", "alibi", "both"):
        model = with_scheme(random_layer(FloatFormat("float64"), vocab=5, positions=None, heads=2, width=4, dim=8,
                                         seed=3), scheme, 10000.0, alibi_slopes(2))
        exact, plain = model.forward(tokens), model.float_forward(tokens)
        assert np.allclose(exact, plain, rtol=FLOAT_TOLERANCE["float64"], atol=FLOAT_TOLERANCE["float64"])


def test_the_schemes_see_relative_positions_only_and_change_the_output():
    """Without a position table, a NoPE layer cannot tell token orders apart at the query; RoPE and ALiBi can
    (they read i - N), and shifting nothing changes nothing: the output depends on the order of the tokens."""
    fmt = FloatFormat("float64")
    tokens = np.array([[0, 1, 2, 3], [2, 1, 0, 3]])            # the same multiset, the same query token
    nope = random_layer(fmt, vocab=4, positions=None, heads=2, width=4, dim=6, seed=5)
    out = nope.forward(tokens)
    assert np.allclose(out[0], out[1])                         # order-blind at the query
    for scheme in ("rope", "alibi"):
        model = with_scheme(random_layer(fmt, vocab=4, positions=None, heads=2, width=4, dim=6, seed=5), scheme,
                            10000.0, (0.5, 0.25))
        out = model.forward(tokens)
        assert not np.allclose(out[0], out[1])


def test_the_public_query_message_stays_exact_with_rope_and_alibi():
    """[PNP24]'s one-way partial softmax: Alice rotates the public query at its position and adds her own
    positions' biases; Bob picks her sums for the global maximum: protocol == model on every instance."""
    from commsim.runs.run import run_reduction
    for keys in ("rope=true", "alibi=true", "rope=true,rope_base=50,alibi=true,positions=0"):
        report = run_reduction("compose-index", f"attention:precision=8,frac=2,heads=2,width=4,{keys}", 3,
                               instances=64, certify=False)
        assert report.protocol == "attention-public-query" and report.protocol_matches_model, keys
