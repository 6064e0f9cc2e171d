"""Theorem 7: nearest neighbour in two layers; every instance meeting the assumptions at tiny N, seeded samples beyond."""
from __future__ import annotations

import numpy as np
import pytest

from commsim.core.errors import InputError
from commsim.plugins import load_plugins, make_model
from protocols.constructions.nstnb import all_nstnb, build_nstnb, nearest_labels, sample_nstnb


@pytest.mark.parametrize("N,D", [(2, 1), (3, 2), (4, 2), (3, 3)])
def test_every_sequence_meeting_the_margin_assumption(N, D):
    S = all_nstnb(N, D)
    queries = list(range(2 * (N // 2), 2 * N - 1, 2))
    want, ok = nearest_labels(S, queries, D)
    assert ok.any() and (N < 3 or not ok.all())   # from 3 vectors on ties exist; the assumption excludes them
    got = build_nstnb(2 * N - 1, D).answers(S, queries)
    assert np.array_equal(got[ok], want[ok])


@pytest.mark.parametrize("N", [16, 64])
def test_seeded_samples(N):
    D = int(np.ceil(np.log2(N))) + 2
    S = sample_nstnb(np.random.default_rng(N), 6, N, D)
    queries = list(range(N, 2 * N - 1, 2))[-4:]
    want, ok = nearest_labels(S, queries, D)
    assert ok.all()
    model = build_nstnb(2 * N - 1, D)
    assert np.array_equal(model.answers(S, queries), want)
    assert model.info["exact_by_analysis"] and model.info["layers"] == 2


@pytest.mark.slow
def test_seeded_samples_at_1024():
    N, D = 1024, 12
    S = sample_nstnb(np.random.default_rng(1), 2, N, D)
    queries = [2 * N - 2, 2 * N - 4]
    want, ok = nearest_labels(S, queries, D)
    assert np.array_equal(build_nstnb(2 * N - 1, D).answers(S, queries)[ok], want[ok])


def test_reads_the_disj_mqar_tokens_and_is_refused():
    red = load_plugins().get("reduction", "disj-mqar")
    n = 4
    problem = red.problem(n)
    A, B = problem.all_pairs()
    enc = red.encode(problem, A, B)
    model = make_model("construct:nstnb", **red.model_context(n))
    got = model.answers(enc.tokens, list(enc.output_positions))
    assert np.array_equal(got, A.astype(np.int64))
    assert np.array_equal(red.decode(got, B), problem.evaluate_batch(A, B))
    assert "Lemma 5" in model.no_protocol_reason
    with pytest.raises(InputError, match="dim="):
        make_model("construct:nstnb:length=5,dim=40")
