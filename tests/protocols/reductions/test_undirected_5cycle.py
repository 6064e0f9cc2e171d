"""Undirected 5-Cycle ([SHT23]'s second graph task): the brute-force truth against networkx's simple_cycles on
the undirected graph -- every graph on 5 nodes (and 6 under -m slow), random digraphs (hypothesis) to 8 nodes."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commsim.core.errors import InputError
from protocols.reductions.graph import undirected_5cycle


def _networkx_truth(X: np.ndarray) -> np.ndarray:
    """Node i is 1 iff it lies on a simple cycle with 5 nodes of the undirected graph (X_ij or X_ji, no loops)."""
    N = X.shape[0]
    G = nx.Graph()
    G.add_nodes_from(range(N))
    G.add_edges_from((i, j) for i in range(N) for j in range(N) if i != j and (X[i, j] or X[j, i]))
    out = np.zeros(N, dtype=np.int64)
    for cycle in nx.simple_cycles(G, length_bound=5):
        if len(cycle) == 5:
            out[cycle] = 1
    return out


def _undirected_graphs(N: int) -> np.ndarray:
    """Every simple undirected graph on N nodes as symmetric (2^(N(N-1)/2), N, N) adjacency matrices."""
    cells = [(i, j) for i in range(N) for j in range(i + 1, N)]
    ranks = np.arange(1 << len(cells))
    X = np.zeros((len(ranks), N, N), dtype=np.int64)
    for c, (i, j) in enumerate(cells):
        X[:, i, j] = X[:, j, i] = (ranks >> c) & 1
    return X


@pytest.mark.parametrize("N", [5, pytest.param(6, marks=pytest.mark.slow)])   # N = 6: 32768 graphs, 14 s
def test_every_undirected_graph_matches_networkx(N):
    X = _undirected_graphs(N)
    got = undirected_5cycle(X)
    want = np.stack([_networkx_truth(x) for x in X])
    assert np.array_equal(got, want)
    assert got.any() and not got.all()          # both answers occur


def test_the_five_cycle_and_its_chords():
    C5 = np.zeros((5, 5), dtype=np.int64)
    for i in range(5):
        C5[i, (i + 1) % 5] = 1                   # one direction only: directions are ignored
    assert undirected_5cycle(C5).tolist() == [[1] * 5]
    C4 = np.zeros((5, 5), dtype=np.int64)
    for i in range(4):
        C4[i, (i + 1) % 4] = 1                   # a 4-cycle and an isolated node: no 5-cycle
    assert undirected_5cycle(C4).tolist() == [[0] * 5]
    # a 5-cycle 0-1-2-3-4 with a pendant node 5 attached to 0: 5 is on no 5-cycle
    X = np.zeros((6, 6), dtype=np.int64)
    for i in range(5):
        X[i, (i + 1) % 5] = 1
    X[0, 5] = X[5, 5] = 1                        # the self-loop at 5 is ignored
    assert undirected_5cycle(X).tolist() == [[1, 1, 1, 1, 1, 0]]


@settings(max_examples=40, deadline=None)
@given(N=st.integers(5, 8), seed=st.integers(0, 2**32 - 1), density=st.floats(0.1, 0.6))
def test_random_digraphs_match_networkx(N, seed, density):
    X = (np.random.default_rng(seed).random((3, N, N)) < density).astype(np.int64)
    assert np.array_equal(undirected_5cycle(X), np.stack([_networkx_truth(x) for x in X]))


def test_small_graphs_and_bad_shapes():
    assert undirected_5cycle(np.ones((4, 4), dtype=np.int64)).tolist() == [[0] * 4]   # K4: too few nodes
    with pytest.raises(InputError):
        undirected_5cycle(np.zeros((2, 3, 4)))
    with pytest.raises(InputError):
        undirected_5cycle(np.zeros((1, 25, 25)))
