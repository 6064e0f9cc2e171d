"""Keys and values per distinct (position, token) pair, kept across calls where a row is costly
(:mod:`protocols.models.attention_pairs`): the same bits as projecting every row of every call."""
from __future__ import annotations

import pickle

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.core.precision import parse_format
from protocols.models import attention_pairs
from protocols.models.attention import random_layer


def layer(fmt, seed):
    return random_layer(parse_format(fmt), vocab=5, positions=9, heads=2, width=3, dim=6, seed=seed, residual=True)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(fmt=st.sampled_from(["float32", "fixed12", "bfloat16"]), seed=st.integers(0, 1000), data=st.data())
def test_kept_rows_are_the_rows_computed_afresh(fmt, seed, data, monkeypatch):
    n = data.draw(st.integers(2, 9))
    batches = [np.array(data.draw(st.lists(st.lists(st.integers(0, 4), min_size=n, max_size=n), min_size=1,
                                           max_size=6))) for _ in range(3)]
    plain = layer(fmt, seed)                          # a small row: nothing is kept
    kept = layer(fmt, seed)
    with monkeypatch.context() as m:                  # the cache is made at the first call: every row kept
        m.setattr(attention_pairs, "CACHED_ROW_PRODUCTS", 0)
        kept.keys_values(batches[0][:1], np.arange(n))
    for tokens in batches:                            # later calls read rows kept by earlier ones
        want = plain.forward_rep(tokens)
        assert np.array_equal(kept.forward_rep(tokens), want)
        assert np.array_equal(np.concatenate([kept.forward_rep(row[None]) for row in tokens]), want)   # one by one
        k, v = kept.keys_values(tokens, np.arange(n))
        k0, v0 = plain.keys_values(tokens, np.arange(n))
        assert np.array_equal(k, k0) and np.array_equal(v, v0)
    assert kept._pairs.active and kept._pairs.kept and not plain._pairs.active
    assert pickle.loads(pickle.dumps(kept._pairs)).kept == {}     # a copy sent to another process starts empty


def test_past_the_budget_new_pairs_are_computed_not_kept(monkeypatch):
    monkeypatch.setattr(attention_pairs, "CACHED_ROW_PRODUCTS", 0)
    monkeypatch.setattr(attention_pairs, "CACHE_BYTES", 1)
    model = layer("float32", 3)
    tokens = np.array([[0, 1, 2, 3], [4, 3, 2, 1]])
    first = model.forward_rep(tokens)
    assert model._pairs.kept == {} and np.array_equal(model.forward_rep(tokens), first)
