"""Match3Local in one attention layer (qSA over the window, then an MLP): exact on every input at small N, M, K,
with both key codes, and on random inputs beyond."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from commsim.core.errors import InputError
from commsim.plugins import make_model
from protocols.constructions.match3_local import build_match3_local, match3_local


def _truth_by_loops(z, M, K):
    N = len(z)
    near = lambda i: [j for j in range(N) if abs(i - j) <= K]  # noqa: E731
    return [int(any((z[i] + z[a] + z[b]) % M == 0 for a in near(i) for b in near(i))) for i in range(N)]


def test_the_truth_is_the_definition():
    rng = np.random.default_rng(0)
    for M, K in [(5, 1), (7, 2), (4, 0)]:
        Z = rng.integers(0, M, size=(30, 8))
        assert match3_local(Z, M, K).tolist() == [_truth_by_loops(z, M, K) for z in Z]
    # window K = 1 at position 0 of (1, 3, 1, 0): 1 + 3 + 1 = 5 (j1 = 1, j2 = 0 = i)
    assert match3_local(np.array([[1, 3, 1, 0]]), 5, 1).tolist() == [[1, 1, 1, 1]]
    assert match3_local(np.array([[1, 1, 2, 2]]), 7, 1).tolist() == [[0, 0, 0, 0]]


@pytest.mark.parametrize("N,M,K", [(1, 5, 1), (4, 5, 0), (5, 4, 1), (6, 5, 1), (5, 7, 2), (7, 4, 2), (6, 5, 5)])
def test_onehot_keys_on_every_input(N, M, K):
    layer = build_match3_local(N, M, K, codes="onehot")
    Z = np.array(list(itertools.product(range(M), repeat=N)), dtype=np.int64)
    want = match3_local(Z, M, K)
    assert np.array_equal(layer.decide_all(Z), want)
    assert layer.heads == 1 and layer.width == max(N, M) and layer.info["q"] == 2 * K + 1


def test_lemma2_keys_on_every_input():
    # Lemma 2's sign vectors (|<u_i, u_j>| <= 1/(3q), k = 377 > N here): the qSA approximation, not exact weights
    layer = build_match3_local(5, 4, 1, codes="lemma2")
    assert layer.info["codes"] == "lemma2" and layer.info["gamma"] == pytest.approx(1 / 9)
    Z = np.array(list(itertools.product(range(4), repeat=5)), dtype=np.int64)
    assert np.array_equal(layer.decide_all(Z), match3_local(Z, 4, 1))


@pytest.mark.parametrize("N,M,K,codes", [(16, 11, 2, "onehot"), (24, 13, 3, "auto"), (12, 8, 1, "lemma2")])
def test_random_inputs(N, M, K, codes):
    Z = np.random.default_rng(N).integers(0, M, size=(200, N))
    want = match3_local(Z, M, K)
    assert 0 < want.mean() < 1
    assert np.array_equal(build_match3_local(N, M, K, codes=codes).decide_all(Z), want)


def test_the_model_kind_and_bad_arguments():
    layer = make_model("construct:match3-local:modulus=5,length=6,window=1")
    assert (layer.info["modulus"], layer.info["length"], layer.info["window"]) == (5, 6, 1)
    with pytest.raises(InputError):
        build_match3_local(4, 1, 1)
    with pytest.raises(InputError):
        build_match3_local(4, 5, 1, codes="gray")
    with pytest.raises(InputError):
        layer.decide_all(np.zeros((1, 5), dtype=np.int64))
    with pytest.raises(InputError, match="lemma2"):
        build_match3_local(24, 5, 3, codes="lemma2")          # gamma = 1/21: Lemma 2's k passes the widest set
