"""DISJ on n^2 bits -> Directed 3-Cycle on 3n nodes ([SHT23]'s graph-transformer lower bound).

Directed 3-Cycle: node i's output is 1 iff some j, k have the edges (i, j), (j, k), (k, i) (with no self-loops,
i, j, k are then distinct); the graph's answer is the OR over the nodes.  The reduction (the slides state it,
commsim builds it): nodes in three groups U = {u_0..u_{n-1}}, V, W of n each;

* Alice's a in {0,1}^{n^2}: the edge u_x -> v_y iff a_{x·n + y} = 1 (the rows of U: hers);
* Bob's b in {0,1}^{n^2}: the edge v_y -> w_x iff b_{x·n + y} = 1 (the rows of V: his);
* a public matching w_x -> u_x (the rows of W: known to both, ``Encoded.public_positions``).

Every edge goes U -> V -> W -> U, so a directed cycle of length 3 visits u_x, v_y, w_z in turn, and the matching
forces z = x: a 3-cycle exists iff a_{x·n+y} = b_{x·n+y} = 1 for some (x, y), i.e. iff the sets intersect
(:func:`check_reduction` verifies it on every pair at small n).  So a graph transformer deciding Directed
3-Cycle gives a DISJ protocol of L·H·2n·2m·p + 2 bits (:mod:`protocols.simulators.graph`: the 2n owned nodes'
keys and values), and DISJ_{n^2} needs n^2 bits (Fact 1 of [BHBK24]): L·H·m·p >= (n^2 - 2)/(4n) ~ N/12.

The model input is the adjacency matrix flattened row by row: token i·N + j is X_ij (N = 3n nodes, N^2
tokens), so a node's token -- its row -- is N consecutive positions.
"""
from __future__ import annotations

from math import isqrt

import numpy as np

from commsim.contract import MAX_SEQUENCE_LENGTH, Encoded, InputError, NotApplicable, Reduction, Split
from commsim.theory.bounds import Conditions, LowerBound, randomness
from commsim.theory.problems import Disjointness
from protocols.theorems import cycle3_disj_bits, cycle3_min_lhmp
from protocols.theorems import graph_nodes as nodes_of_length

__all__ = ["NODE_PARTITION", "directed_3cycle", "undirected_5cycle", "loopless_digraphs", "cycle3_graphs",
           "check_reduction", "Disj3Cycle", "REDUCTIONS"]

#: the split of a graph task: whole rows (nodes) to Alice, to Bob, or public
NODE_PARTITION = "node partition"


def directed_3cycle(X: np.ndarray) -> np.ndarray:
    """Directed 3-Cycle by brute force: (B, N) with 1 at i iff some j, k (i, j, k distinct) have the edges
    i -> j, j -> k, k -> i.  Self-loops are ignored."""
    X = np.asarray(X, dtype=np.int64)
    if X.ndim == 2:
        X = X[None]
    N = X.shape[1]
    X = X * (1 - np.eye(N, dtype=np.int64))[None]
    paths = X @ X                                   # paths[i, k] = #j with i -> j -> k (j != i, k: no loops)
    return ((paths * np.swapaxes(X, 1, 2)).sum(axis=2) > 0).astype(np.int64)   # some k with k -> i


#: the largest N :func:`undirected_5cycle` enumerates (N (N-1) ... (N-4) ordered 5-tuples)
MAX_5CYCLE_NODES = 24


def undirected_5cycle(X: np.ndarray) -> np.ndarray:
    """Undirected 5-Cycle by brute force ([SHT23]'s second graph task): (B, N) with 1 at i iff node i lies on a
    simple cycle of length 5 of the undirected graph of X.

    Precisely: the undirected graph has the edge {a, b} (a != b) iff X_ab = 1 or X_ba = 1 (directions and
    self-loops are ignored), and output_i = 1 iff there are nodes a, b, c, d such that i, a, b, c, d are five
    distinct nodes and {i, a}, {a, b}, {b, c}, {c, d}, {d, i} are all edges.  Every ordered 5-tuple of
    distinct nodes is tried (N (N-1)(N-2)(N-3)(N-4) of them, batched), so N is at most 24."""
    from itertools import permutations

    X = np.asarray(X, dtype=np.int64)
    if X.ndim == 2:
        X = X[None]
    if X.ndim != 3 or X.shape[1] != X.shape[2]:
        raise InputError(f"adjacency matrices must be (B, N, N); got shape {X.shape}", "graph")
    B, N = X.shape[0], X.shape[1]
    if N > MAX_5CYCLE_NODES:
        raise InputError(f"undirected 5-cycle is enumerated up to N = {MAX_5CYCLE_NODES} nodes; got {N}", "graph")
    out = np.zeros((B, N), dtype=np.int64)
    if N < 5 or B == 0:
        return out
    A = ((X + np.swapaxes(X, 1, 2)) > 0).astype(np.uint8) * (1 - np.eye(N, dtype=np.uint8))[None]
    tuples = np.array(list(permutations(range(N), 5)), dtype=np.int64)        # (T, 5): i, a, b, c, d
    step = max(1, (1 << 22) // max(B, 1))
    for s in range(0, len(tuples), step):
        t = tuples[s:s + step]
        closed = np.ones((B, len(t)), dtype=np.uint8)
        for e in range(5):
            closed &= A[:, t[:, e], t[:, (e + 1) % 5]]
        hit = closed.astype(bool)
        for i in np.unique(t[:, 0]):                         # OR over the tuples that start at node i
            out[:, i] |= hit[:, t[:, 0] == i].any(axis=1)
    return out


def loopless_digraphs(N: int, start: int = 0, stop: int | None = None) -> np.ndarray:
    """The loopless digraphs on N nodes with ranks start..stop-1 (of 2^(N(N-1)): bit c of the rank is the c-th
    off-diagonal entry in row order), as (k, N, N) adjacency matrices."""
    cells = [(i, j) for i in range(N) for j in range(N) if i != j]
    stop = (1 << len(cells)) if stop is None else stop
    ranks = np.arange(start, stop, dtype=np.int64)
    X = np.zeros((len(ranks), N, N), dtype=np.int64)
    for c, (i, j) in enumerate(cells):
        X[:, i, j] = (ranks >> c) & 1
    return X


def cycle3_graphs(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The reduction's digraphs (batch, 3n, 3n) for DISJ_{n^2} instances (module docstring)."""
    A, B = np.atleast_2d(np.asarray(A)), np.atleast_2d(np.asarray(B))
    n = isqrt(A.shape[1])
    if n * n != A.shape[1] or B.shape != A.shape:
        raise InputError(f"disj-3cycle needs Alice's and Bob's strings of n^2 bits alike; got {A.shape}, {B.shape}",
                         "n")
    N = 3 * n
    X = np.zeros((A.shape[0], N, N), dtype=np.uint8)
    u, v, w = np.arange(n), np.arange(n, 2 * n), np.arange(2 * n, 3 * n)
    X[:, u[:, None], v[None, :]] = A.reshape(-1, n, n)            # u_x -> v_y iff a_{x n + y}
    X[:, v[None, :], w[:, None]] = B.reshape(-1, n, n)            # v_y -> w_x iff b_{x n + y}
    X[:, w, u] = 1                                                # the public matching w_x -> u_x
    return X


def check_reduction(n: int) -> int:
    """Every pair (a, b) of DISJ_{n^2} at this n: a 3-cycle exists iff the sets intersect, and the nodes on a
    3-cycle are exactly u_x, v_y, w_x for the common elements (x, y).  Returns the pairs checked (n <= 2:
    2^{2 n^2} pairs); raises AssertionError on a counterexample."""
    problem = Disjointness(n * n)
    A, B = problem.all_pairs()
    X = cycle3_graphs(A, B)
    nodes = directed_3cycle(X)
    common = (A & B).reshape(-1, n, n)
    expect = np.concatenate([common.max(axis=2), common.max(axis=1), common.max(axis=2)], axis=1)
    assert np.array_equal(nodes, expect), "a 3-cycle node that is not a common element"
    assert np.array_equal(nodes.max(axis=1), problem.evaluate_batch(A, B)), "3-cycle != DISJ"
    return len(A)


class Disj3Cycle(Reduction):
    """DISJ_{n^2} -> Directed 3-Cycle on 3n nodes (module docstring)."""

    id = "disj-3cycle"
    problem_name = "disj"
    task = "directed 3-cycle"
    source = "[SHT23] graph transformers (Directed 3-Cycle); the reduction's construction is commsim's"
    description = ("DISJ on n^2 bits -> Directed 3-Cycle on N = 3n nodes (U -> V Alice's, V -> W Bob's, W -> U a "
                   "public matching); graph transformers need L*H*m*p >= (n^2 - 2)/(4n)")
    default_model = "graph-attention:layers=1,heads=1,width=1,precision=2,seed=0"
    default_n = 9
    default_instances = 2000
    split_kind = NODE_PARTITION
    length_scale, length_offset = 9, 0
    min_size = 1
    n_meaning = ("N = (3n)^2 tokens: the adjacency matrix of a digraph on 3n nodes, row by row (node i's token is "
                 "its row of 3n bits); DISJ on n^2 bits")

    def problem(self, n: int) -> Disjointness:
        """DISJ on n^2 bits (the possible edges U -> V)."""
        return Disjointness(int(n) * int(n))

    def vocabulary(self, n: int) -> list[str]:
        """An adjacency bit: 0 or 1."""
        return ["0", "1"]

    @staticmethod
    def size_of(problem) -> int:
        """n (nodes per group) of the DISJ_{n^2} problem."""
        return isqrt(problem.n)

    def encode(self, problem, A, B) -> Encoded:
        """The adjacency matrices, flattened; Alice: the rows of U, public: the rows of W, Bob: the rest."""
        n = self.size_of(problem)
        N = 3 * n
        tokens = cycle3_graphs(A, B).reshape(len(A), N * N)
        return Encoded(tokens, np.arange(n * N), (N * N - 1,), tuple(range(2 * n * N, N * N)))

    def decode(self, labels, B) -> np.ndarray:
        """A 3-cycle exists iff the sets intersect: the label is DISJ's answer."""
        return np.asarray(labels)[:, 0].astype(np.uint8)

    def seq_len(self, n: int) -> int:
        """N^2 = (3n)^2 tokens, without encoding an instance (the engine asks at any n)."""
        return self.length_for_size(n)

    def check(self, model, simulator, problem) -> None:
        """Refuse a run whose N^2 adjacency bits pass the run limit, and a graph model built for another number
        of nodes."""
        n = self.size_of(problem)
        if self.seq_len(n) > MAX_SEQUENCE_LENGTH:
            top = isqrt(MAX_SEQUENCE_LENGTH) // 3
            raise NotApplicable(f"n: disj-3cycle at n = {n} is a digraph on {3 * n} nodes, {self.seq_len(n)} "
                                f"adjacency bits; runs take at most {MAX_SEQUENCE_LENGTH} tokens (n <= {top})", "n")
        nodes = getattr(model, "nodes", None)
        need = 3 * n
        if nodes is not None and nodes != need:
            raise NotApplicable(f"disj-3cycle at n = {n} is a digraph on N = {need} nodes; the "
                                f"model reads {nodes}", "model")

    def _bound(self, n: int) -> LowerBound:
        lhmp = cycle3_min_lhmp(n)
        return LowerBound(
            cycle3_disj_bits(n), "DISJ on n^2 bits (Fact 1 of [BHBK24]) through Directed 3-Cycle ([SHT23])",
            Conditions(direction="two-way", partition="any", deterministic=True),
            f"bits exchanged >= n^2 = {n * n}: with 2n = {2 * n} owned nodes, L*H*m*p >= (n^2 - 2)/(4n) = "
            f"{float(lhmp):.3g} (3n = {3 * n} nodes)", **randomness("disj"))

    def lower_bound(self, model, plan, problem, encoded) -> LowerBound:
        """DISJ_{n^2}'s n^2 bits bind every protocol on this split, one-way or two-way."""
        return self._bound(self.size_of(problem))

    # ---- lengths for ``commsim budget``: N^2 = (3n)^2 tokens --------------------------------------------
    def length_for_size(self, n: int) -> int:
        return (3 * int(n)) ** 2

    def is_valid_length(self, seq_len: int) -> bool:
        nodes = nodes_of_length(seq_len)
        return nodes is not None and nodes % 3 == 0 and nodes // 3 >= self.min_size

    def split(self, seq_len: int) -> Split:
        """Alice: the rows of U; the output: the last position (the graph's label); the rows of W (the public
        matching) known to both parties."""
        nodes = nodes_of_length(seq_len) or 0
        n = nodes // 3
        return Split(seq_len, range(n * nodes), (nodes * nodes - 1,), range(2 * n * nodes, nodes * nodes))

    def length_bound(self, simulator, seq_len: int, senders=None) -> LowerBound:
        """n^2 bits at N^2 = (3n)^2 tokens (any protocol, any direction)."""
        nodes = nodes_of_length(seq_len) or 0
        return self._bound(max(nodes // 3, 0))


REDUCTIONS = [Disj3Cycle]
