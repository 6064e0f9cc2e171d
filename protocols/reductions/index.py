"""Reductions from INDEX_n (docs/RESULTS.md; Theorem 3 and Proposition 9 of [BHBK24], [SHT23]): index lookup, associative recall, q-sparse averaging.

In each, Alice's bits a become the prefix of the model's input and Bob's index b its last token, so a
recurrent model solving the task gives, by the hidden-state handoff (Theorem 2 of [BHBK24]), a
one-way INDEX protocol of m*p bits: hence m*p >= n.  A two-way protocol (the one-layer attention
exchange) is not bound by that -- INDEX takes only ceil(log2 n) + 1 bits two-way.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from commsim.contract import Encoded
from commsim.theory.bounds import Conditions, LowerBound, randomness
from commsim.theory.problems import Index, Problem
from protocols.reductions.base import ONE_WAY_CONTIGUOUS, SourceReduction, token_dtype
from protocols.reductions.layouts import MemoryProgram, StoreAndLookup
from protocols.theorems import index_bob_one_way_bits, index_one_way_bits, index_two_way_protocol_bits

__all__ = ["IndexLookup", "AssociativeRecall", "SparseAveraging", "REDUCTIONS"]

class _IndexFamily(SourceReduction):
    """The INDEX_n reductions: decoding and the two-way bound they share."""

    problem_name = "index"

    def problem(self, n: int) -> Index:
        """INDEX_n."""
        return Index(int(n))

    def decode(self, labels: np.ndarray, B: np.ndarray) -> np.ndarray:
        """The label at the answer position is the bit a_b (class 0 = symbol 0, class 1 = symbol 1)."""
        return np.asarray(labels)[:, 0]

    def two_way_bound(self, n: int, one_way: LowerBound) -> LowerBound:
        """Not applicable: INDEX_n takes only ceil(log2 n) + 1 bits two-way."""
        two_way = index_two_way_protocol_bits(n)
        return replace(one_way, **randomness("index-two-way")).not_applicable(
            f"the protocol is two-way, and INDEX_n is easy two-way (Bob sends b, Alice answers: "
            f"ceil(log2 n) + 1 = {two_way} bits), so only that bound applies and there is no "
            f"contradiction: Theorem 1 of [BHBK24] solves index lookup with one attention layer of width O(log N)",
            bits=two_way, source="INDEX two-way protocol; Theorem 1 of [BHBK24]")

    def bob_one_way_bound(self, n: int, one_way: LowerBound) -> LowerBound:
        """Only Bob (the index holder) speaks: INDEX_n one-way from Bob to Alice costs ceil(log2 n) bits."""
        bits = index_bob_one_way_bits(n)
        return LowerBound(
            bits, "INDEX_n one-way from the index holder (Bob -> Alice): ceil(log2 n) bits",
            Conditions("one-way", "contiguous; only Bob (the index holder) speaks, Bob -> Alice"),
            f"the protocol is one-way from Bob to Alice (Alice -> Bob 0 bits): Alice must tell all n = {n} indices "
            f"apart, so Bob sends >= ceil(log2 n) = {bits} bits; the n-bit one-way bound is for Alice -> Bob "
            f"only, and INDEX is easy this way round (Theorem 1 of [BHBK24]: one attention layer does index lookup)",
            **randomness("index-bob"))


class IndexLookup(_IndexFamily):
    """INDEX_n -> index lookup (IdxL): s_1..s_n then an index token p; the output is s_p."""

    id = "index-idxl"
    task = "idxl"
    length_scale, length_offset = 1, 1
    n_meaning = "N = n + 1 tokens: the n bits s_1..s_n of INDEX_n, then the index token (Theorem 3's N is n)"
    source = "Theorem 3 of [BHBK24]"
    description = "INDEX -> index lookup: Alice's bits are s_1..s_n, Bob's index is the last token; m*p >= n"

    def vocabulary(self, n: int) -> list[str]:
        """0, 1 and the index tokens #1..#n."""
        return ["0", "1"] + [f"#{i}" for i in range(1, n + 1)]

    def encode(self, problem: Problem, A, B) -> Encoded:
        """s_1..s_n = a (Alice's prefix), then the index token #b (Bob's); the decision at the last position."""
        n = problem.n
        A, B = np.asarray(A), np.asarray(B, dtype=np.int64)
        tokens = np.empty((len(A), n + 1), dtype=token_dtype(n + 2))
        tokens[:, :n] = A
        tokens[:, n] = B + 2
        return Encoded(tokens, np.arange(n), (n,))

    def memory_program(self, n: int) -> MemoryProgram:
        """Store s_i in slot i; at the index token, look the queried bit up."""
        vocab = n + 2
        token_bit = np.full(vocab, -1)
        token_bit[:2] = (0, 1)
        query = np.full(vocab, -1)
        query[2:] = np.arange(n)
        return StoreAndLookup(n, np.arange(n), token_bit, query, query_position=n)

    def size(self, seq_len: int) -> int:
        """n = N - 1 (N counts the index token too)."""
        return seq_len - 1  # Theorem 3 states m*p >= n, n the string length (the index token aside)

    def alice_length(self, n: int) -> int:
        """s_1..s_n."""
        return n

    def one_way_bound(self, n: int) -> LowerBound:
        """Theorem 3 of [BHBK24]: m·p >= N."""
        return LowerBound(
            index_one_way_bits(n), "Theorem 3 of [BHBK24] (INDEX one-way: n bits, Fact 3)", ONE_WAY_CONTIGUOUS,
            f"m*p >= n = {n} (the index size; Theorem 3 calls it N): a recurrent model doing index lookup on "
            f"length-n strings gives a one-way INDEX_n protocol of m*p bits (Theorem 2), and INDEX_n needs n bits "
            f"one-way", **randomness("index"))


class AssociativeRecall(_IndexFamily):
    """INDEX_n -> associative recall: pairs (k_1, y_1)..(k_n, y_n), then a query key; output its label."""

    id = "index-assoc"
    task = "assoc"
    length_scale, length_offset = 2, 1
    n_meaning = "N = 2n + 1 tokens: n (key, label) pairs of INDEX_n, then the query key"
    source = "Proposition 9 of [BHBK24]"
    description = ("INDEX -> associative recall: fixed public keys labelled with Alice's bits, Bob's query key last; "
                   "m*p >= n")

    def vocabulary(self, n: int) -> list[str]:
        """0, 1 and the keys k_1..k_n."""
        return ["0", "1"] + [f"k{i}" for i in range(1, n + 1)]

    def encode(self, problem: Problem, A, B) -> Encoded:
        """The public keys with Alice's labels, then Bob's query key; the decision at the last position."""
        n = problem.n
        A, B = np.asarray(A), np.asarray(B, dtype=np.int64)
        tokens = np.empty((len(A), 2 * n + 1), dtype=token_dtype(n + 2))
        tokens[:, 0:2 * n:2] = np.arange(2, n + 2)  # the public keys k_1..k_n
        tokens[:, 1:2 * n:2] = A                    # their labels: Alice's bits
        tokens[:, 2 * n] = B + 2                    # Bob's query key k_b
        return Encoded(tokens, np.arange(2 * n), (2 * n,))

    def memory_program(self, n: int) -> MemoryProgram:
        """Store each label a_i in slot i; at the query key, look it up."""
        vocab = n + 2
        token_bit = np.full(vocab, -1)
        token_bit[:2] = (0, 1)
        store = np.full(2 * n + 1, -1)
        store[1:2 * n:2] = np.arange(n)
        query = np.full(vocab, -1)
        query[2:] = np.arange(n)
        return StoreAndLookup(n, store, token_bit, query, query_position=2 * n)

    def size(self, seq_len: int) -> int:
        """n = (N - 1)/2 pairs."""
        return (seq_len - 1) // 2  # n pairs and the query key

    def alice_length(self, n: int) -> int:
        """The n pairs."""
        return 2 * n

    def one_way_bound(self, n: int) -> LowerBound:
        """Proposition 9 of [BHBK24]: m·p >= n pairs."""
        return LowerBound(
            index_one_way_bits(n), "Proposition 9 of [BHBK24] (INDEX one-way: n bits)", ONE_WAY_CONTIGUOUS,
            f"m*p >= n = {n} pairs: Alice feeds the pairs (k_i, a_i), sends h_2n, Bob queries k_b (Theorem 2)",
            **randomness("index"))


class SparseAveraging(_IndexFamily):
    """INDEX_n -> q-sparse averaging with q = 1: x_i = (i, S_i, v_i); output_{n+1} = mean of v_j, j in S_{n+1}."""

    id = "index-qsa"
    task = "qsa"
    length_scale, length_offset = 1, 1
    n_meaning = "N = n + 1 tokens: n data positions x_1..x_n of INDEX_n, then the query x_(n+1)"
    source = "[SHT23]"
    description = ("INDEX -> q-sparse averaging (q = 1): Alice's x_i = (i, {}, a_i), Bob's x_{n+1} = (n+1, {b}, 0); "
                   "state bits >= n")

    def vocabulary(self, n: int) -> list[str]:
        """Alice's tokens (i, {}, v) and Bob's (n+1, {b}, 0)."""
        alice = [f"({i},{{}},{v})" for i in range(1, n + 1) for v in (0, 1)]
        return alice + [f"({n + 1},{{{b}}},0)" for b in range(1, n + 1)]

    def encode(self, problem: Problem, A, B) -> Encoded:
        """x_i = (i, {}, a_i) for i <= n (Alice), then (n+1, {b}, 0) (Bob); the decision at n+1."""
        n = problem.n
        A, B = np.asarray(A), np.asarray(B, dtype=np.int64)
        tokens = np.empty((len(A), n + 1), dtype=token_dtype(3 * n))
        tokens[:, :n] = 2 * np.arange(n) + A  # (i, {}, a_i)
        tokens[:, n] = 2 * n + B              # (n+1, {b}, 0)
        return Encoded(tokens, np.arange(n), (n,))

    def memory_program(self, n: int) -> MemoryProgram:
        """Store a_i in slot i; at the query, look the queried bit up."""
        token_bit = np.full(3 * n, -1)
        token_bit[:2 * n] = np.arange(2 * n) % 2
        query = np.full(3 * n, -1)
        query[2 * n:] = np.arange(n)
        return StoreAndLookup(n, np.arange(n), token_bit, query, query_position=n)

    def size(self, seq_len: int) -> int:
        """n = N - 1."""
        return seq_len - 1  # n data positions and the query

    def alice_length(self, n: int) -> int:
        """x_1..x_n."""
        return n

    def one_way_bound(self, n: int) -> LowerBound:
        """[SHT23], q = 1: state bits >= n = N - 1."""
        return LowerBound(
            index_one_way_bits(n), "[SHT23] (qSA with q = 1; INDEX one-way: n bits)", ONE_WAY_CONTIGUOUS,
            f"state bits >= n = N - 1 = {n}: exact q-sparse averaging with q = 1 solves INDEX_n one-way; "
            f"the [SHT23] statement for an epsilon-approximation reads m >= (N - 1)/2", **randomness("index"))


REDUCTIONS = [IndexLookup, AssociativeRecall, SparseAveraging]
