"""The node-partition protocol on the graph layers research code writes: q/k/v biases, a root weight (a per-node
linear map instead of or beside the residual), a ReLU at a layer's end, widths changing between layers, and an empty
neighbourhood giving 0 (a message-passing sum over no edges) -- protocol == model bit for bit at every layer, with
the real messages and their bits."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.core.errors import InputError
from commsim.core.precision import FixedPoint
from commsim.runs.run import run_reduction
from commsim.core.runner import run_protocol
from commsim.contract import Encoded
from protocols.models.graph_attention import (
    EMPTY,
    GraphAttention,
    GraphHead,
    GraphLayer,
    random_graph_attention,
    rows_to_tokens,
)
from protocols.simulators.graph import GRAPH_EXCHANGE
from protocols.theorems import graph_exchange_bits


def _model(fmt, N, dims, heads, width, *, empty, kappa, root, biases, relu, seed):
    rng = np.random.default_rng(seed)
    w = lambda *shape: fmt.quantize(rng.normal(0.0, 1.0 / np.sqrt(shape[0]), size=shape))  # noqa: E731
    b = lambda n: fmt.quantize(rng.normal(0.0, 0.5, size=n)) if biases else None  # noqa: E731
    layers = []
    for d_in, d_out in zip(dims, dims[1:]):
        hs = tuple(GraphHead(w(d_in, width), w(d_in, width), w(d_in, width), w(width, d_out),
                             float(fmt.quantize(np.array([1.5]))[0]) if kappa == "bias" else 0.0,
                             b(width), b(width), b(width)) for _ in range(heads))
        layers.append(GraphLayer(hs, W_root=w(d_in, d_out) if root or d_in != d_out else None, b_root=b(d_out),
                                 b_O=b(d_out), residual=d_in == d_out and not root,
                                 activation="relu" if relu else "none"))
    return GraphAttention(fmt, w(N, dims[0]), layers, w(dims[-1]), 0.25, kappa=kappa, empty=empty,
                          b_embed=b(dims[0]), embed_activation="relu" if relu else "none")


def _encoded(X, owner):
    N = X.shape[1]
    rows = lambda who: [i * N + j for i in range(N) if owner[i] == who for j in range(N)]  # noqa: E731
    return Encoded(rows_to_tokens(X), np.array(rows("alice"), dtype=np.int64), (N * N - 1,), tuple(rows("public")))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(N=st.integers(2, 6), dims=st.lists(st.integers(2, 5), min_size=2, max_size=4), heads=st.integers(1, 2),
       width=st.integers(1, 3), bits=st.integers(6, 20), empty=st.sampled_from(["uniform", "zero"]),
       kappa=st.sampled_from(["mask", "bias"]), root=st.booleans(), biases=st.booleans(), relu=st.booleans(),
       seed=st.integers(0, 2 ** 16), data=st.data())
def test_protocol_matches_model_on_research_layer_forms(N, dims, heads, width, bits, empty, kappa, root, biases,
                                                         relu, seed, data):
    fmt = FixedPoint(bits, data.draw(st.integers(2, bits - 2)))
    model = _model(fmt, N, dims, heads, width, empty=empty, kappa=kappa, root=root, biases=biases, relu=relu,
                   seed=seed)
    X = np.random.default_rng(seed).integers(0, 2, size=(12, N, N))
    X[::3, 0] = 0                                            # node 0 with an empty neighbourhood
    owner = data.draw(st.lists(st.sampled_from(["alice", "bob", "public"]), min_size=N, max_size=N))
    encoded = _encoded(X, owner)
    result = GRAPH_EXCHANGE.run_batch(model, encoded)
    assert result.exact_match.all() and result.details["layers_exact"] == 12
    assert np.array_equal(result.protocol_labels[:, 0], model.graph_labels(X))
    plan = GRAPH_EXCHANGE.plan_model(model, encoded)
    owned = sum(o != "public" for o in owner)
    assert plan.bits == graph_exchange_bits(len(dims) - 1, heads, width, bits, owned)
    protocol = GRAPH_EXCHANGE.protocol(model, encoded)
    for i in range(3):
        run = run_protocol(protocol, *encoded.shares(i))
        assert int(run.output[0][0]) == int(result.protocol_labels[i, 0])
        counts = run.transcript.bits_by_direction
        assert (counts["alice_to_bob"], counts["bob_to_alice"]) == (plan.alice_to_bob, plan.bob_to_alice)


def test_an_empty_neighbourhood_gives_zero_attention_or_uniform():
    """Under empty="zero" a node without edges gets no attention output (its state is its root map and b_O);
    under "uniform" it averages every node's value: the two differ exactly at such nodes."""
    fmt = FixedPoint(24, 12)
    args = dict(kappa="mask", root=True, biases=True, relu=False, seed=7)
    zero, uniform = (_model(fmt, 4, [3, 3], 1, 2, empty=e, **args) for e in ("zero", "uniform"))
    X = np.random.default_rng(1).integers(0, 2, size=(16, 4, 4))
    X[:, 2] = 0
    X[:, [0, 1, 3], 2] = 1                                   # node 2's value reaches the others
    hz, hu = zero.states(X)[1], uniform.states(X)[1]
    assert np.array_equal(hz[:, [0, 1, 3]], hu[:, [0, 1, 3]]) and not np.array_equal(hz[:, 2], hu[:, 2])
    h0 = zero.states(X)[0][:, 2]
    heads, parts = zero._layers[0]
    ar = zero.arithmetic
    assert not parts["residual"]
    alone = ar.add(ar.add(ar.matmul(h0, parts["W_root"]), parts["b_root"]), parts["b_O"])
    assert np.array_equal(hz[:, 2], alone)                   # root map + b_O, no message


def test_the_spec_key_empty_builds_either_semantics_and_the_protocol_follows():
    zero = run_reduction("disj-3cycle", "graph-attention:layers=2,heads=1,width=2,precision=12,empty=zero,seed=1", 2)
    uniform = run_reduction("disj-3cycle", "graph-attention:layers=2,heads=1,width=2,precision=12,seed=1", 2)
    assert zero.protocol_matches_model and uniform.protocol_matches_model
    assert zero.bits_used == uniform.bits_used                 # an empty neighbourhood is its owner's: no extra bit
    X = np.zeros((1, 6, 6), dtype=np.int64)
    X[0, 1:, 0] = 1                                            # node 0 has no out-edge, every other node points to it
    fmt = FixedPoint(12, 6)
    states = [random_graph_attention(fmt, 6, layers=2, width=2, empty=e, seed=1).states(X)[1] for e in EMPTY]
    assert np.array_equal(states[0][:, 1:], states[1][:, 1:]) and not np.array_equal(states[0][:, 0], states[1][:, 0])
    with pytest.raises(InputError, match="empty"):
        run_reduction("disj-3cycle", "graph-attention:layers=1,empty=none", 2)
