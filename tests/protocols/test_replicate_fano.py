"""The Fano accuracy ceiling (protocols.theorems.fano_accuracy_ceiling, docs/EXPERIMENTS.md) against the best
one-way protocol found by exhaustive search: for tiny k, N, S every partition of Alice's k^N strings into at
most 2^S messages is tried, with Bob's best decoder (the majority symbol at his index among the strings that
send the message); the best protocol never beats the ceiling, and the ceiling is within the documented slack."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.theorems import fano_accuracy_ceiling, fano_phi

#: the documented slack (docs/EXPERIMENTS.md): at these sizes the ceiling is at most this far above the optimum (measured: 0.208 at k=4, N=2, S=1)
SLACK = 0.21


def _set_partitions(items: int, blocks: int):
    """Every partition of range(items) into at most ``blocks`` blocks, as a label per item (restricted growth)."""
    labels = [0] * items

    def grow(i: int, used: int):
        if i == items:
            yield tuple(labels)
            return
        for label in range(min(used + 1, blocks)):
            labels[i] = label
            yield from grow(i + 1, max(used, label + 1))

    yield from grow(0, 0)


def best_one_way_accuracy(k: int, n: int, s: int) -> float:
    """The exact optimum over every one-way protocol with an s-bit message, uniform x in [k]^n, uniform index."""
    strings = np.array(list(itertools.product(range(k), repeat=n)))             # (k^n, n)
    onehot = np.eye(k, dtype=np.int64)[strings]                                   # (k^n, n, k)
    best = 0
    for labels in _set_partitions(len(strings), 2 ** s):
        labels = np.asarray(labels)
        counts = np.zeros((labels.max() + 1, n, k), dtype=np.int64)
        np.add.at(counts, labels, onehot)
        best = max(best, int(counts.max(axis=2).sum()))                           # Bob's majority decoder
    return best / (len(strings) * n)


@pytest.mark.parametrize("k,n,s", [(2, 2, 0), (2, 2, 1), (2, 3, 1), (2, 3, 2), (3, 2, 1), (3, 2, 2), (4, 2, 1),
                                   (2, 2, 2), (3, 2, 4)])
def test_no_protocol_beats_the_ceiling(k, n, s):
    best = best_one_way_accuracy(k, n, s)
    ceiling = fano_accuracy_ceiling(k, n, s)
    assert best <= ceiling + 1e-12, (k, n, s, best, ceiling)
    assert ceiling - best <= SLACK, (k, n, s, best, ceiling)


def test_ceiling_endpoints():
    assert fano_accuracy_ceiling(64, 20, 0) == pytest.approx(1 / 64, abs=1e-7)     # no message: chance
    assert fano_accuracy_ceiling(64, 20, 20 * 6) == 1.0                              # S = N log2 k: exact
    assert fano_accuracy_ceiling(2, 2, 2) == 1.0
    with pytest.raises(ValueError):
        fano_accuracy_ceiling(1, 2, 0)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 300), st.integers(1, 500), st.floats(0, 4000), st.floats(0, 4000))
def test_ceiling_is_monotone_and_inverts_phi(k, n, s1, s2):
    lo, hi = sorted((s1, s2))
    a, b = fano_accuracy_ceiling(k, n, lo), fano_accuracy_ceiling(k, n, hi)
    assert 1 / k - 1e-7 <= a <= b + 1e-12 <= 1 + 1e-12
    if a < 1:
        import math
        # the error 1 - a solves phi(e) = log2 k - S/N (up to the bisection's rounding, which only raises a)
        assert fano_phi(1 - a, k) == pytest.approx(math.log2(k) - lo / n, abs=1e-9)
