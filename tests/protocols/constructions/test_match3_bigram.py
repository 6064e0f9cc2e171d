"""Match3Bigram in two layers of width 2 and 3: exact on every input at small N and M, on random inputs beyond."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from commsim.plugins import make_model
from protocols.constructions.match3_bigram import build_match3_bigram, match3_bigram


def test_the_truth_is_the_definition():
    z = np.array([[1, 2, 4, 0], [1, 1, 1, 1]])
    want = [[int(any((z[b, i] + z[b, j] + z[b, j + 1]) % 5 == 0 for j in range(3))) for i in range(4)]
            for b in range(2)]
    assert match3_bigram(z, 5).tolist() == want


@pytest.mark.parametrize("N,M", [(2, 3), (3, 3), (4, 5), (5, 5), (6, 4), (4, 7), (5, 7)])
def test_bigram_on_every_input(N, M):
    model = build_match3_bigram(N, M)
    Z = np.array(list(itertools.product(range(M), repeat=N)), dtype=np.int64)
    assert np.array_equal(model.decide(Z), match3_bigram(Z, M))
    assert min(model.info["margins"]) >= 0 and model.width == 3 and model.num_layers == 2


@pytest.mark.parametrize("N,M", [(12, 11), (20, 23)])
def test_bigram_on_random_inputs(N, M):
    Z = np.random.default_rng(N).integers(0, M, size=(300, N))
    want = match3_bigram(Z, M)
    assert 0 < want.mean() < 1
    assert np.array_equal(build_match3_bigram(N, M).decide(Z), want)


def test_the_model_kind():
    model = make_model("construct:match3-bigram:modulus=5,length=4")
    assert model.info["modulus"] == 5 and model.info["length"] == 4
