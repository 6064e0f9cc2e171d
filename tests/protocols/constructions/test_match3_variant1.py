"""Match3's Variant 1 (z_N = 0, the N-th output) in two layers of one head, m = 3: exact on every input at small
N and M, on disj-match3's instances and on hard random inputs; the one-layer protocol refuses it."""
from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest

from protocols.constructions.match3_variant1 import build_match3_variant1, variant1
from protocols.reductions.attention_tasks import DisjMatch3


@pytest.mark.parametrize("N,M", [(3, 3), (4, 4), (5, 5), (6, 7), (7, 5), (6, 6), (5, 11), (8, 4)])
def test_variant1_on_every_input(N, M):
    model = build_match3_variant1(N, M)
    Z = np.array(list(itertools.product(range(M), repeat=N - 1)), dtype=np.int64)
    Z = np.concatenate([Z, np.zeros((len(Z), 1), dtype=np.int64)], axis=1)      # z_N = 0
    assert np.array_equal(model.forward(Z), variant1(Z, M))
    assert min(model.info["margins"]) >= 0 and (model.info["layers"], model.info["heads"], model.width) == (2, 1, 3)


def test_variant1_decides_disj_on_every_instance_of_the_reduction():
    reduction = DisjMatch3()
    for n in (1, 3, 6):
        problem = reduction.problem(n)
        A, B = problem.all_pairs()
        model = build_match3_variant1(2 * n + 1, 2 * n + 3)
        assert np.array_equal(model.forward(reduction.encode(problem, A, B).tokens), problem.evaluate_batch(A, B))


@pytest.mark.parametrize("N,M", [(33, 35), (40, 8)])
def test_variant1_on_hard_random_inputs(N, M):
    """Residues in 1..floor((M-1)/2) never pair up; half the rows get one planted pair."""
    rng = np.random.default_rng(N)
    Z = rng.integers(1, (M - 1) // 2 + 1, size=(400, N))
    Z[:, -1] = 0
    planted = rng.random(400) < 0.5
    j = rng.integers(0, N - 2, 400)
    Z[planted, j[planted] + 1] = (-Z[planted, j[planted]]) % M
    want = variant1(Z, M)
    assert 0 < want.mean() < 1
    assert np.array_equal(build_match3_variant1(N, M).forward(Z), want)


def test_run_refuses_the_one_layer_protocol():
    out = subprocess.run([sys.executable, "-m", "commsim", "run", "disj-match3", "--model", "construct:match3-variant1"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and "two-layer transformer" in out.stderr
