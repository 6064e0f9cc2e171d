"""Lemma 5: on random balanced partitions the two-layer model's communication matrix, computed from its
outputs on every input, has full rank 2^(N/2) and a fooling set of that size."""
from __future__ import annotations

import numpy as np
import pytest

from commsim.theory.comm_matrix import rank_mod_p, rank_real, search_fooling_set
from protocols.constructions.lemma5 import balanced_partition, communication_matrix, lemma5_function, lemma5_model


@pytest.mark.parametrize("N", [4, 6, 8, 10])
def test_full_rank_and_fooling_set_on_random_balanced_partitions(N):
    rng = np.random.default_rng(N)
    for _ in range(2):
        S_A, S_B = balanced_partition(N, rng=rng)
        model = lemma5_model(N, S_A, S_B)
        M, X = communication_matrix(model, S_A, S_B)
        assert np.array_equal(M.reshape(-1), lemma5_function(X, S_A, S_B))
        assert rank_real(M) == rank_mod_p(M) == 2 ** (N // 2)
        fs = search_fooling_set(M, restarts=1)
        assert fs.verified and fs.size == 2 ** (N // 2)


def test_a_partition_of_the_users_choice_and_the_contiguous_one_differ():
    S_A, S_B = balanced_partition(8, alice=[0, 2, 5, 7])
    M, _ = communication_matrix(lemma5_model(8, S_A, S_B), S_A, S_B)
    assert rank_real(M) == 16
    # the unrenumbered model (Theorem 6) on this partition is not this function
    from protocols.constructions.eq2 import build_eq2
    M0, X0 = communication_matrix(build_eq2(4), S_A, S_B)
    assert not np.array_equal(M0.reshape(-1), lemma5_function(X0, S_A, S_B))
