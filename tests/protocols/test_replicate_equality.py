"""bhbk24-equality (Fig. 4 of [BHBK24], the binary variant Eq-random): the paper's data (Appendix H.2), the exact
accuracy ceiling of a one-way protocol on Eq-random checked against every protocol at tiny sizes, the separator
layout commsim runs the trained models in, and the quick scale end to end with its invariants."""
from __future__ import annotations

from fractions import Fraction
from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import commsim  # noqa: E402
from protocols.experiments import data  # noqa: E402
from protocols.experiments.bounds import SeparatedEquality, eq_random_ceiling, sampling_margin  # noqa: E402
from protocols.experiments.nets import build  # noqa: E402
from protocols.experiments.train import predictions, torch_deterministic  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2**32 - 1), st.booleans())
def test_equality_batches(half, seed, exact):
    N = 2 * half
    rng = np.random.default_rng(seed)
    tokens, labels = data.equality_batch(rng, N, 32, length=N if exact else None)
    L = tokens.shape[1] - 1
    assert L % 2 == 0 and (L == N if exact else L in data.equality_lengths(N))
    assert min(data.equality_lengths(N)) >= N / 10 and max(data.equality_lengths(N)) == N
    x, sep, y = tokens[:, :L // 2], tokens[:, L // 2], tokens[:, L // 2 + 1:]
    assert (sep == data.SEPARATOR).all() and set(np.unique(np.concatenate([x, y]))) <= {0, 1}
    assert np.array_equal(labels, (x == y).all(axis=1))


def test_about_half_the_examples_are_copies():
    _, labels = data.equality_batch(np.random.default_rng(0), 40, 4000, length=40)
    assert abs(labels.mean() - 0.5) < 0.03           # copies (1/2) and a random half equal by chance (2^-20)


def test_odd_equality_lengths_are_refused():
    with pytest.raises(ValueError):
        data.equality_lengths(7)


def _partitions(items: list[int], blocks: int):
    """Every partition of ``items`` into at most ``blocks`` blocks (lists of lists)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for partition in _partitions(rest, blocks):
        for i in range(len(partition)):
            yield partition[:i] + [[first] + partition[i]] + partition[i + 1:]
        if len(partition) < blocks:
            yield [[first]] + partition


def _best_one_way_accuracy(n: int, S: int) -> Fraction:
    """The best accuracy on Eq-random (x uniform on {0,1}^n, y = x w.p. 1/2 else uniform, answer [x = y]) of any
    deterministic one-way protocol with at most 2^S messages: every partition of Alice's strings into message
    classes, Bob answering each (class, y) by the likelier label."""
    strings = list(range(2 ** n))
    # P(x, y) · 2^(2n + 1) = 2^n [x = y] + 1
    weight = {(x, y): (2 ** n if x == y else 0) + 1 for x, y in product(strings, strings)}
    best = Fraction(0)
    for partition in _partitions(strings, 2 ** S):
        right = 0
        for block in partition:
            for y in strings:
                equal = sum(weight[x, y] for x in block if x == y)
                unequal = sum(weight[x, y] for x in block if x != y)
                right += max(equal, unequal)
        best = max(best, Fraction(right, 2 ** (2 * n + 1)))
    return best


@pytest.mark.parametrize("n,S", [(1, 0), (1, 1), (2, 0), (2, 1), (2, 2), (3, 0), (3, 1), (3, 2), (3, 3)])
def test_the_eq_random_ceiling_is_the_exact_optimum(n, S):
    """Exhaustive over every one-way protocol: the ceiling is never beaten, and it is reached (no slack)."""
    assert Fraction(eq_random_ceiling(n, S)) == _best_one_way_accuracy(n, S)


def test_the_ceiling_is_one_from_the_one_way_line_on():
    assert eq_random_ceiling(10, 10) == eq_random_ceiling(10, 50) == 1.0
    assert eq_random_ceiling(10, 0) == 0.5 + 2.0 ** -11          # always "equal": right on copies and y = x
    assert eq_random_ceiling(50, 9) < eq_random_ceiling(50, 10) < 1


def test_the_separator_layout_is_the_trained_models_input():
    """eq-sep encodes EQ_n as x [sep] y (Alice holds x), and the quantised model run on it decides as the torch
    module does on the experiment's own strings."""
    torch_deterministic(0)
    n = 5
    reduction = SeparatedEquality()
    problem = reduction.problem(n)
    A, B = problem.sample(np.random.default_rng(1), 16)
    encoded = reduction.encode(problem, A, B)
    tokens = np.asarray(encoded.tokens, dtype=np.int64)
    assert tokens.shape == (16, 2 * n + 1) and (tokens[:, n] == data.SEPARATOR).all()
    assert list(encoded.alice_positions) == list(range(n)) and reduction.size(2 * n + 1) == n
    net = build("lstm", 3, 2, 4)
    report = commsim.run(reduction, net, n=n, precision=16, instances=16, seed=0, certify=False)
    assert report.protocol_matches_model and report.bits_used == 2 * 4 * 16
    model = commsim.make_model(net.commsim_parts(), vocab_size=3)
    decided = model.forward_batch(tokens, (2 * n,))[:, 0].argmax(axis=1)
    assert (decided == predictions(net, tokens)).mean() >= 0.9     # float64 vs float32 ties aside


def test_quick_scale_checks_its_own_invariants():
    """The quick scale in the suite: every cell runs, no quantised recurrent model above the exact ceiling, every
    run's protocol equal to the quantised model, every certificate verified, the 1-layer transformer run through
    the attention exchange."""
    frame = commsim.replicate("bhbk24-equality", "quick")
    rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
    assert frame.attrs["failed"] == 0 and frame.attrs["violations"] == [] and len(rows) == frame.attrs["cells"]
    assert frame.attrs["ceiling_column"] == "eq_random_ceiling"
    for r in rows:
        if r["recurrent"]:
            assert r["state_bits"] == r["state_numbers"] * r["p_eff"] == r["run_bits_used"]
            assert r["eq_random_ceiling"] == eq_random_ceiling(r["N"] // 2, r["state_bits"])
            assert r["quantised_accuracy"] <= r["eq_random_ceiling"] + sampling_margin(r["bound_eval"])
            assert r["one_way_bits"] == r["run_lower_bound_bits"] == r["N"] // 2
        else:
            assert r["run_protocol"] == "attention-exchange" and r["run_lower_bound_bits"] == r["N"] // 2
        assert r["run_protocol_matches_model"] is True
        assert r["run_certificate"] is None or r["run_certificate_verified"] is True
    assert frame.attrs["claims"] and {c["status"] for c in frame.attrs["claims"]} == {"smoke test"}
