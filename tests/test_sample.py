"""``commsim.sample``: the exact tokens commsim feeds a model and the labels a correct model outputs on them."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import commsim
from commsim.core.errors import InputError
from commsim.runs.sample import prefix_stable_sample
from commsim.runs.stages import prepare
from commsim.plugins import load_plugins

#: the reductions with tokens to sample (one judged directly has real-vector inputs: qsa-approx)
REDUCTIONS = [e.name for e in load_plugins().entries("reduction") if not e.obj.judged_directly]

#: a model that solves each task exactly (memorize at full capacity n for the recurrent reductions, the
#: constructions of [BHBK24] for the attention ones); Match3/QSA have no exact construction registered
CORRECT = {"disj-mqar": "memorize", "eq-ineq": "memorize", "index-assoc": "memorize", "index-idxl": "memorize",
           "index-qsa": "memorize", "dyck22-fooling": "construct:lookup"}


def test_every_registered_reduction_is_covered():
    # disj-3cycle (a graph reduction, (3n)^2 tokens) is covered by the sample tests but not by a correct model here
    assert set(CORRECT) | {"disj-match3", "disj-qsa", "compose-index", "disj-3cycle"} >= set(REDUCTIONS)


@pytest.mark.parametrize("rid", REDUCTIONS)
def test_tokens_are_the_encoded_instances_and_labels_decode_to_the_answers(rid):
    reduction = load_plugins().get("reduction", rid)
    n = 6 if rid != "dyck22-fooling" else 8
    tokens, labels = commsim.sample(rid, n=n, size=40, seed=3)
    problem = reduction.problem(n)
    A, B = prefix_stable_sample(problem, 3, 40)
    encoded = reduction.encode(problem, A, B)
    assert np.array_equal(tokens, encoded.tokens)
    assert labels.shape == (40, len(encoded.output_positions))
    assert np.array_equal(reduction.decode(labels, B), problem.evaluate_batch(A, B))
    again = commsim.sample(rid, n=n, size=40, seed=3)
    assert np.array_equal(again[0], tokens) and np.array_equal(again[1], labels)
    other = commsim.sample(rid, n=n, size=40, seed=4)
    assert not np.array_equal(other[0], tokens)


@pytest.mark.parametrize("rid", sorted(CORRECT))
def test_a_correct_model_outputs_exactly_the_labels(rid):
    n = 6 if rid != "dyck22-fooling" else 8
    setup = prepare(rid, CORRECT[rid], n)
    tokens, labels = commsim.sample(rid, n=n, size=64, seed=1)
    reduction = setup.reduction
    problem = reduction.problem(n)
    encoded = reduction.encode(problem, *prefix_stable_sample(problem, 1, 64))
    assert np.array_equal(encoded.tokens, tokens)
    assert np.array_equal(np.asarray(setup.simulator.direct_labels(setup.model, encoded)).reshape(labels.shape), labels)


def test_labels_are_the_task_outputs_not_just_the_answer():
    """EQ -> INEQ: the model outputs INEQ = 1 - EQ (Theorem 11 of [BHBK24]); MQAR: the output at query i is a_i
    (Theorem 8), whatever b is."""
    problem = load_plugins().get("reduction", "eq-ineq").problem(5)
    tokens, labels = commsim.sample("eq-ineq", n=5, size=50, seed=0)
    A, B = prefix_stable_sample(problem, 0, 50)
    assert np.array_equal(labels[:, 0], 1 - problem.evaluate_batch(A, B))
    tokens, labels = commsim.sample("disj-mqar", n=5, size=50, seed=0)
    A, _ = prefix_stable_sample(load_plugins().get("reduction", "disj-mqar").problem(5), 0, 50)
    assert np.array_equal(labels, A)


@settings(max_examples=40, deadline=None)
@given(rid=st.sampled_from(REDUCTIONS), small=st.integers(1, 40), extra=st.integers(0, 60),
       seed=st.integers(0, 2 ** 32))
def test_a_smaller_sample_is_a_prefix_of_a_larger_one(rid, small, extra, seed):
    """Issue 26.6: sample(size=k) is the first k rows of sample(size=K >= k) with the same seed (the blocks
    1, 1, 2, 4, ... are drawn whole whatever the size, so the cut may fall inside any block)."""
    n = 6 if rid != "dyck22-fooling" else 8
    tokens, labels = commsim.sample(rid, n=n, size=small, seed=seed)
    more_tokens, more_labels = commsim.sample(rid, n=n, size=small + extra, seed=seed)
    assert tokens.shape[0] == small and more_tokens.shape[0] == small + extra
    assert np.array_equal(more_tokens[:small], tokens) and np.array_equal(more_labels[:small], labels)


def test_samples_are_not_repeated_across_blocks():
    """The blocks' streams differ: 200 instances of EQ_16 (2^32 pairs) have no repeated row."""
    A, B = prefix_stable_sample(load_plugins().get("reduction", "eq-ineq").problem(16), 5, 200)
    assert len({(a.tobytes(), b.tobytes()) for a, b in zip(A, B)}) == 200


def test_sizes_are_checked_before_allocation():
    with pytest.raises(InputError, match="size"):
        commsim.sample("index-idxl", n=8, size=10 ** 12)
    with pytest.raises(InputError, match="n"):
        commsim.sample("index-idxl", n=10 ** 9, size=1)
    with pytest.raises(InputError, match="seed"):
        commsim.sample("index-idxl", n=8, size=1, seed=-1)
    assert "sample" in commsim.__all__
