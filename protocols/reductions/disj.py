"""DISJ_n -> multi-query associative recall (Theorem 8 of [BHBK24]).

Alice feeds the labelled pairs (v_i, a_i) for public distinct unit vectors v_i; Bob feeds every v_i
as a query, reads all of a from the outputs, and computes DISJ(a, b) himself (b never enters the
model).  A recurrent model doing MQAR therefore gives a one-way DISJ protocol of m*p bits:
m*p >= N/2 = n.  DISJ_n needs n bits two-way too (fooling set {(x, complement of x)}).
"""
from __future__ import annotations

import numpy as np

from commsim.contract import Encoded
from commsim.theory.bounds import Conditions, LowerBound, ceil_log2, randomness
from commsim.theory.problems import Disjointness, Problem
from protocols.reductions.base import ONE_WAY_CONTIGUOUS, SourceReduction, token_dtype
from protocols.reductions.layouts import MemoryProgram, StoreAndRecall
from protocols.theorems import disjointness_bits

__all__ = ["MultiQueryRecall", "REDUCTIONS", "key_vectors"]


def key_vectors(n: int) -> np.ndarray:
    """The public keys v_1..v_n: distinct corners of the hypercube {-1/sqrt(d), 1/sqrt(d)}^d, d = ceil(log2 n)
    (at least 1) -- unit vectors, as Theorem 8's proof picks them.  Token ``v{i}`` stands for row i-1."""
    d = max(1, ceil_log2(n))
    signs = ((np.arange(n)[:, None] >> np.arange(d - 1, -1, -1)) & 1) * 2.0 - 1.0
    return signs / np.sqrt(d)


class MultiQueryRecall(SourceReduction):
    """DISJ_n -> MQAR: v_1 a_1 .. v_n a_n, then the queries v_1 .. v_n; output at query i is a_i."""

    id = "disj-mqar"
    problem_name = "disj"
    length_scale, length_offset = 3, 0
    n_meaning = ("N = 3n tokens: n keys with their labels (2n tokens) of DISJ_n, then the n queries; Theorem 8's N "
                 "counts the 2n vectors (labels aside), so its m·p >= N/2 is m·p >= n")
    task = "mqar"
    source = "Theorem 8 of [BHBK24]"
    description = ("DISJ -> multi-query associative recall: Alice labels public unit vectors with her bits, Bob "
                   "queries them all; m*p >= N/2 = n")

    def problem(self, n: int) -> Disjointness:
        """DISJ_n."""
        return Disjointness(int(n))

    def vocabulary(self, n: int) -> list[str]:
        """0, 1 and the public keys v_1..v_n."""
        return ["0", "1"] + [f"v{i}" for i in range(1, n + 1)]

    def encode(self, problem: Problem, A, B) -> Encoded:
        """v_1 a_1 .. v_n a_n (Alice's prefix), then the queries v_1 .. v_n (Bob's); outputs at the queries."""
        n = problem.n
        keys = np.arange(2, n + 2)
        tokens = np.empty((len(A), 3 * n), dtype=token_dtype(n + 2))
        tokens[:, 0:2 * n:2] = keys           # v_1 .. v_n (public)
        tokens[:, 1:2 * n:2] = np.asarray(A)  # their labels a_1 .. a_n (Alice)
        tokens[:, 2 * n:] = keys              # Bob's queries, in order; b itself stays with Bob
        return Encoded(tokens, np.arange(2 * n), tuple(range(2 * n, 3 * n)))

    def decode(self, labels: np.ndarray, B: np.ndarray) -> np.ndarray:
        """Bob reads a_i at query i and answers DISJ: 1 iff some i has a_i = b_i = 1."""
        recovered = np.asarray(labels) == 1
        return np.any(recovered & (np.asarray(B) == 1), axis=1).astype(np.uint8)

    def labels(self, problem, alice, bob) -> np.ndarray:
        """At query i the model outputs a_i (Theorem 8 of [BHBK24]: Bob recovers all of a, then DISJ)."""
        return np.asarray(alice).astype(np.int64)

    def memory_program(self, n: int) -> MemoryProgram:
        """Store a_i in slot i; swap each queried bit into the answer slot."""
        vocab = n + 2
        token_bit = np.full(vocab, -1)
        token_bit[:2] = (0, 1)
        store = np.full(3 * n, -1)
        store[1:2 * n:2] = np.arange(n)
        query = np.full(vocab, -1)
        query[2:] = np.arange(n)
        return StoreAndRecall(n, store, token_bit, query, query_start=2 * n)

    def size(self, seq_len: int) -> int:
        """n = N/3 (N = 3n tokens; Theorem 8's N = 2n counts the vectors, labels aside)."""
        return seq_len // 3

    def alice_length(self, n: int) -> int:
        """The n labelled keys."""
        return 2 * n

    def output_positions(self, n: int) -> tuple[int, ...]:
        """Every query."""
        return range(2 * n, 3 * n)

    def one_way_bound(self, n: int) -> LowerBound:
        """Theorem 8 of [BHBK24]: m·p >= N/2."""
        return LowerBound(
            disjointness_bits(n), "Theorem 8 of [BHBK24] (DISJ_n: n bits, Fact 1)", ONE_WAY_CONTIGUOUS,
            f"m*p >= n = {n}: a recurrent model doing MQAR over n labelled keys gives a one-way DISJ_n "
            f"protocol of m*p bits (Theorem 2)", **randomness("disj"))

    def two_way_bound(self, n: int, one_way: LowerBound) -> LowerBound:
        """Fact 1 of [BHBK24]: DISJ_n needs n bits two-way too."""
        return LowerBound(
            disjointness_bits(n), "DISJ_n deterministic bound (fooling set {(x, complement of x)}; Fact 1 of [BHBK24])",
            Conditions(direction="two-way", partition="any", deterministic=True),
            f"bits exchanged >= n = {n}: DISJ_n needs n bits even with two-way communication",
            **randomness("disj"))


REDUCTIONS = [MultiQueryRecall]
