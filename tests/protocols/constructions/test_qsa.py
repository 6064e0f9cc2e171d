"""[SHT23] qSA in one attention layer: the error on every input at small N, seeded samples to N = 1024, and the
disj-qsa layout through the attention protocol."""
from __future__ import annotations

import numpy as np
import pytest

from commsim.runs.run import run_reduction
from protocols.constructions.qsa import all_qsa, build_qsa, qsa_average, rank_subset, sample_qsa, unrank_subset


def test_rank_and_unrank_are_inverse():
    from itertools import combinations
    for q in (1, 2, 3):
        sets = list(combinations(range(7), q))
        assert sorted(rank_subset(S) for S in sets) == list(range(len(sets)))
        assert all(unrank_subset(rank_subset(S), q) == S for S in sets)


@pytest.mark.parametrize("N,q", [(3, 1), (6, 1), (5, 2), (8, 2), (7, 3)])
def test_error_below_one_over_4q_on_every_input(N, q):
    model = build_qsa(N, q)
    T = all_qsa(N, q)
    error = np.abs(model.forward(T)[:, 0] - qsa_average(T, q, "generic"))
    assert error.max() < 1 / (4 * q)
    assert model.info["offset_bound"] <= 0.5 and model.heads == 1


@pytest.mark.parametrize("N", [64, pytest.param(1024, marks=pytest.mark.slow)])
def test_seeded_samples(N):
    model = build_qsa(N, 2)
    T = sample_qsa(np.random.default_rng(N), 16, N, 2)
    assert np.abs(model.forward(T)[:, 0] - qsa_average(T, 2, "generic")).max() < 1 / 8


@pytest.mark.parametrize("q", [1, 2, 3])
def test_disj_qsa_through_the_attention_protocol(q):
    report = run_reduction("disj-qsa", f"construct:qsa:q={q}", q).to_dict()
    assert report["model_correct"] is True and report["protocol_matches_model"] is True
    assert report["bits_used"] >= report["lower_bound_bits"] == q
