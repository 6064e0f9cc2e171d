"""The graph transformers' node-partition protocol: protocol == model bit for bit at every layer, the bits of
the messages, the reduction disj-3cycle and its bound ([SHT23])."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.core.precision import FixedPoint
from commsim.core.runner import run_protocol
from commsim.contract import Encoded, Shape, Split
from protocols.models.graph_attention import random_graph_attention, rows_to_tokens
from protocols.reductions.graph import (
    Disj3Cycle,
    check_reduction,
    cycle3_graphs,
    directed_3cycle,
)
from protocols.simulators.graph import GRAPH_EXCHANGE, node_partition
from protocols.theorems import cycle3_min_lhmp, graph_exchange_bits


def _encoded(X: np.ndarray, owner: list[str]) -> Encoded:
    """Flattened graphs with node i's row owned by ``owner[i]`` (alice, bob or public)."""
    N = X.shape[1]
    rows = lambda who: [i * N + j for i in range(N) if owner[i] == who for j in range(N)]  # noqa: E731
    return Encoded(rows_to_tokens(X), np.array(rows("alice"), dtype=np.int64), (N * N - 1,), tuple(rows("public")))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(N=st.integers(2, 7), layers=st.integers(1, 3), heads=st.integers(1, 3), width=st.integers(1, 3),
       bits=st.integers(2, 14), kappa=st.sampled_from(["mask", "bias"]), mlp=st.sampled_from([0, 3]),
       seed=st.integers(0, 2 ** 16), data=st.data())
def test_protocol_matches_model_bit_for_bit_at_every_layer(N, layers, heads, width, bits, kappa, mlp, seed, data):
    frac = data.draw(st.integers(0, bits - 1))
    model = random_graph_attention(FixedPoint(bits, frac), N, layers=layers, heads=heads, width=width, dim=3,
                                   mlp=mlp, kappa=kappa, seed=seed)
    owner = data.draw(st.lists(st.sampled_from(["alice", "bob", "public"]), min_size=N, max_size=N))
    X = np.random.default_rng(seed).integers(0, 2, size=(12, N, N))
    encoded = _encoded(X, owner)
    result = GRAPH_EXCHANGE.run_batch(model, encoded)
    assert result.exact_match.all() and result.details["layers_exact"] == 12
    assert np.array_equal(result.protocol_labels[:, 0], model.graph_labels(X))
    owned = sum(o != "public" for o in owner)
    plan = GRAPH_EXCHANGE.plan_model(model, encoded)
    assert plan.bits == graph_exchange_bits(layers, heads, width, bits, owned)
    # the runner: the real messages, their bits and the output
    protocol = GRAPH_EXCHANGE.protocol(model, encoded)
    for i in range(2):
        run = run_protocol(protocol, *encoded.shares(i))
        label, _ = run.output
        assert int(label[0]) == int(result.protocol_labels[i, 0])
        counts = run.transcript.bits_by_direction
        assert (counts["alice_to_bob"], counts["bob_to_alice"]) == (plan.alice_to_bob, plan.bob_to_alice)
        assert run.transcript.rounds == plan.rounds


def test_transcript_keys_are_the_messages():
    """Equal keys iff equal transcripts: the keys are every message value in order."""
    model = random_graph_attention(FixedPoint(4, 1), 6, layers=2, heads=1, width=1, seed=3)
    owner = ["alice"] * 2 + ["bob"] * 2 + ["public"] * 2
    X = np.random.default_rng(1).integers(0, 2, size=(40, 6, 6))
    X[1] = X[0]
    X[1, 2:, :] = 1 - X[0, 2:, :]          # Bob's and the public rows changed
    encoded = _encoded(X, owner)
    _, keys = GRAPH_EXCHANGE.transcript_keys(model, encoded)
    protocol = GRAPH_EXCHANGE.protocol(model, encoded)
    digests = [run_protocol(protocol, *encoded.shares(i)).transcript.digest() for i in range(len(X))]
    for i in range(len(X)):
        for j in range(i):
            assert (digests[i] == digests[j]) == bool((keys[i] == keys[j]).all())


def test_a_split_row_is_refused():
    import pytest

    from commsim.core.errors import NotApplicable
    with pytest.raises(NotApplicable, match="row 1 is split"):
        node_partition(9, [0, 1, 2, 3])


def test_directed_3cycle_is_the_brute_force_triple_loop():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(200, 5, 5))
    got = directed_3cycle(X)
    for b in range(len(X)):
        for i in range(5):
            want = any(X[b, i, j] and X[b, j, k] and X[b, k, i] for j in range(5) for k in range(5)
                       if len({i, j, k}) == 3)
            assert got[b, i] == want


def test_the_reduction_is_exact_on_every_pair_at_small_n():
    """a 3-cycle exists iff the sets intersect, on all 2^(2n^2) pairs (n = 1, 2)."""
    assert check_reduction(1) == 4 and check_reduction(2) == 256


def test_the_encoding_gives_alice_the_rows_of_u_and_publishes_w():
    reduction = Disj3Cycle()
    problem = reduction.problem(3)
    A, B = problem.sample(np.random.default_rng(0), 4)
    encoded = reduction.encode(problem, A, B)
    assert encoded.seq_len == 81
    part = node_partition(81, encoded.alice_positions, encoded.public_positions)
    assert part.alice.tolist() == [0, 1, 2] and part.bob.tolist() == [3, 4, 5] and part.public.tolist() == [6, 7, 8]
    assert np.array_equal(rows_to_tokens(cycle3_graphs(A, B)), encoded.tokens)
    plan = GRAPH_EXCHANGE.plan(Shape(1, 2, 1), Split(81, range(27), (80,), range(54, 81)))
    assert plan.bits == 1 * 1 * 6 * 2 * 1 * 2 + 2


def test_the_bound_formula():
    assert cycle3_min_lhmp(8) == (64 - 2) / 32
    # one layer, one head, m = 1, p = 2 at n = 9: 1·1·18·2·1·2 + 2 = 74 < 81 bits
    assert graph_exchange_bits(1, 1, 1, 2, 18) == 74


def _run_json(*args):
    out = subprocess.run([sys.executable, "-m", "commsim", *args, "--json"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_run_below_the_bound_must_fail_with_a_verified_certificate():
    report = _run_json("run", "disj-3cycle", "--n", "9",
                       "--model", "graph-attention:layers=1,heads=1,width=1,precision=2,seed=0")
    assert report["bits_used"] == 74 and report["lower_bound"]["bits"] == 81
    assert report["verdict"]["outcome"] == "must_fail"
    assert report["certificate"]["verified"]
    assert report["protocol_matches_model"]


def test_budget_plans_the_graph_exchange_by_node_counts():
    """`budget --arch graph-attention` plans the same exchange from sizes (ranges of whole rows: any N)."""
    from commsim.budget.compute import budget
    from protocols.theorems import graph_nodes
    report = budget("graph-attention", 1, 2, "disj-3cycle").to_dict()
    assert report["bound_applies"] and report["max_n"] is not None
    nodes = graph_nodes(report["max_n"])
    n = nodes // 3
    assert nodes % 3 == 0 and report["lower_bound_bits"] == n * n
    # Alice's n rows and Bob's; W's public rows are not sent when the planner is told of them
    assert graph_exchange_bits(1, 1, 1, 2, 2 * n) <= report["protocol_bits"] <= graph_exchange_bits(1, 1, 1, 2, 3 * n)
    plan = GRAPH_EXCHANGE.plan(Shape(1, 2, 1), Split(nodes * nodes, range(n * nodes), (nodes * nodes - 1,),
                                                     range(2 * n * nodes, nodes * nodes)))
    assert plan.bits == graph_exchange_bits(1, 1, 1, 2, 2 * n)
    huge = 3 * 10 ** 6
    assert GRAPH_EXCHANGE.plan(Shape(1, 2, 1), Split(huge * huge, range(huge * (huge // 3)), (0,))).bits == \
        graph_exchange_bits(1, 1, 1, 2, huge)


def test_runs_beyond_the_token_limit_are_refused_naming_n():
    out = subprocess.run([sys.executable, "-m", "commsim", "run", "disj-3cycle", "--n", "22"], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 2 and "4356 adjacency bits" in out.stderr and "n <= 21" in out.stderr
    assert Disj3Cycle().seq_len(10 ** 6) == 9 * 10 ** 12        # computed, never encoded
