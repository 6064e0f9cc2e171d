"""Instances chosen by the caller (``run_instances``, ``Prepared.run_instance``) are checked at the boundary: a bad
row, a ragged or empty array or misaligned arrays is an InputError naming alice or bob, before anything runs."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from commsim import InputError, prepare, run_instances
from commsim.runs.stages import given_instances
from commsim.plugins import load_plugins

N = 6
MODEL = "memorize:capacity=7"
GOOD = [0, 1, 0, 1, 1, 0]


@pytest.mark.parametrize("alice, bob, param, says", [
    ([GOOD], [-1], "bob", "bob[0]: Bob's index -1 is out of range 0..5"),
    ([GOOD], [6], "bob", "bob[0]: Bob's index 6 is out of range"),
    ([GOOD, GOOD], [0, 0.5], "bob", "bob[1]: Bob's input must hold whole numbers"),
    ([GOOD], [1.0], "bob", "Bob's input must be an index"),
    ([[0, 2, 0, 1, 1, 0]], [1], "alice", "alice[0]: Alice's input must contain only 0 and 1"),
    ([GOOD, [0, 0.5, 0, 1, 1, 0]], [1, 1], "alice", "alice[1]: Alice's input must hold whole numbers"),
    ([GOOD, [0, float("nan"), 0, 1, 1, 0]], [1, 1], "alice", "alice[1]: Alice's input must hold whole numbers"),
    ([[0, 1, 0]], [1], "alice", "length 6"),
    ([GOOD, [0, 1]], [1, 1], "alice", "ragged"),
    ([GOOD], [1, 2], "bob", "one input per row of alice (1), got 2"),
    ([], [], "alice", "at least one instance"),
    ([["a"] * N], [1], "alice", "numbers"),
])
def test_run_instances_refuses_bad_instances_naming_the_party(alice, bob, param, says):
    with pytest.raises(InputError) as caught:
        run_instances("index-idxl", MODEL, N, alice, bob)
    assert caught.value.param == param and says in str(caught.value)


def test_run_instance_refuses_a_bad_instance_naming_the_argument():
    setup = prepare("index-idxl", MODEL, N)
    with pytest.raises(InputError) as caught:
        setup.run_instance([0, 1, 0], 1)
    assert caught.value.param == "alice_input" and "length 6" in str(caught.value)
    with pytest.raises(InputError) as caught:
        setup.run_instance(GOOD, N)
    assert caught.value.param == "bob_input" and "out of range" in str(caught.value)
    assert setup.run_instance(GOOD, 1).answer == 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(-1, 2), min_size=N, max_size=N), st.integers(-2, N + 1)),
                min_size=1, max_size=8))
def test_given_instances_accepts_exactly_the_problems_inputs(rows):
    """Accepted iff every row is one the problem itself validates; then returned unchanged in value and order."""
    problem = load_plugins().get("reduction", "index-idxl").problem(N)
    A, B = [a for a, _ in rows], [b for _, b in rows]
    valid = all(set(a) <= {0, 1} and 0 <= b < N for a, b in rows)
    if not valid:
        with pytest.raises(InputError) as caught:
            given_instances(problem, A, B, "given")
        assert caught.value.param in ("alice", "bob")
        return
    chosen = given_instances(problem, A, B, "given")
    assert chosen.alice.tolist() == A and chosen.bob.tolist() == B
    assert problem.evaluate_batch(chosen.alice, chosen.bob).tolist() == [a[b] for a, b in rows]


def test_a_fraction_is_refused_where_the_problem_would_cast_it():
    """Dyck's own check casts symbols to uint8 (0.5 -> 0): the boundary refuses a fraction first."""
    with pytest.raises(InputError) as caught:
        run_instances("dyck22-fooling", None, 4, [[0, 0.5]], [[1, 1]])
    assert caught.value.param == "alice" and "whole numbers" in str(caught.value)
