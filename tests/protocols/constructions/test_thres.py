"""Theorem 13: thresholds of k-sparse features in two layers, exact on every input at small N."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commsim.core.errors import InputError
from commsim.plugins import make_model
from commsim.theory.problems import all_bit_strings
from protocols.constructions.thres import FEATURES, ThresholdFunction, build_thres, named_threshold, parse_sets


@pytest.mark.parametrize("name", ["eq", "ineq", "disj"])
@pytest.mark.parametrize("half", [1, 2, 3, 4, 5])
def test_named_thresholds_are_exact_on_every_input(name, half):
    h = named_threshold(name, half)
    X = all_bit_strings(2 * half).astype(np.int64)
    truth = {"eq": np.all(X[:, :half] == X[:, half:], axis=1),
             "ineq": np.any(X[:, :half] != X[:, half:], axis=1),
             "disj": np.any(X[:, :half] & X[:, half:], axis=1)}[name].astype(np.int64)
    assert np.array_equal(h(X), truth)
    model = build_thres(h)
    assert np.array_equal(model.forward(X), truth)
    assert model.info["heads"] == 2 and model.info["layers"] == 2 and model.info["exact_by_analysis"]


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_random_sparse_thresholds_are_exact_on_every_input(data):
    N = data.draw(st.integers(2, 7))
    count = data.draw(st.integers(1, N))
    sets = [tuple(data.draw(st.lists(st.integers(0, N - 1), min_size=1, max_size=3, unique=True)))
            for _ in range(count)]
    fns = [data.draw(st.sampled_from(sorted(FEATURES))) for _ in sets]
    bias = data.draw(st.integers(-1, count))
    h = ThresholdFunction(N, sets, fns, bias)
    X = all_bit_strings(N).astype(np.int64)
    model = build_thres(h, seed=data.draw(st.integers(0, 3)))
    assert np.array_equal(model.forward(X), h(X))


def test_width_grows_like_log_n_and_sampled_inputs_at_large_n():
    rng = np.random.default_rng(0)
    widths = []
    for half in (16, 64, 256):
        h = named_threshold("disj", half)
        model = build_thres(h)
        A = rng.integers(0, 2, (24, half))
        B = np.where(np.arange(24)[:, None] % 2 == 0, 1 - A, rng.integers(0, 2, (24, half)))
        X = np.concatenate([A, B], axis=1)
        assert np.array_equal(model.forward(X), h(X))
        widths.append(model.width)
    assert widths[-1] < 2 * widths[0] and widths[-1] < 512 // 2


def test_spec_keys_and_refusal():
    m = make_model("construct:thres:h=custom,length=5,sets=1+5/2+4/3,fn=xor/and/or,b=1")
    X = all_bit_strings(5).astype(np.int64)
    h = ThresholdFunction(5, parse_sets("1+5/2+4/3", 5), ["xor", "and", "or"], 1)
    assert np.array_equal(m.forward(X), h(X))
    assert "Lemma 5" in m.no_protocol_reason and "separate two-layers" in m.no_protocol_reason
    with pytest.raises(InputError, match="sets must"):
        make_model("construct:thres:h=custom,length=5,sets=1+x")
    with pytest.raises(InputError, match="distinct positions"):
        make_model("construct:thres:h=custom,length=3,sets=1+9")
    with pytest.raises(InputError, match="unknown feature"):
        make_model("construct:thres:h=custom,length=3,sets=1,fn=maj")
