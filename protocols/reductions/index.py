"""Reductions from INDEX_n (REFERENCE section 6): index lookup, associative recall, q-sparse averaging.

In each, Alice's bits a become the prefix of the model's input and Bob's index b its last token, so a
recurrent model solving the task gives, by the hidden-state handoff (Theorem 2 of [BHBK24]), a
one-way INDEX protocol of m*p bits: hence m*p >= n.  A two-way protocol (the one-layer attention
exchange) is not bound by that -- INDEX takes only ceil(log2 n) + 1 bits two-way.

This module also holds :class:`SourceReduction`, the base the EQ and DISJ reductions share.
"""
from __future__ import annotations

import numpy as np

from commsim.core.errors import NotApplicable
from commsim.pipeline.interfaces import Encoded, Reduction
from commsim.theory.bounds import Conditions, LowerBound, ceil_log2
from commsim.theory.problems import Index, Problem
from protocols.reductions.layouts import MemoryProgram, StoreAndLookup

__all__ = ["SourceReduction", "IndexLookup", "AssociativeRecall", "SparseAveraging", "REDUCTIONS", "token_dtype"]

ONE_WAY_CONTIGUOUS = Conditions(direction="one-way", partition="contiguous", deterministic=True)


def token_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint8 if vocab_size <= 256 else np.uint16 if vocab_size <= 65536 else np.int32)


class SourceReduction(Reduction):
    """What the INDEX / EQ / DISJ reductions share: the defaults of ``commsim run``, the vocabulary
    check, and the choice between the one-way and two-way bound by the protocol's direction.

    Default model: ``memorize:capacity=7`` at n = 8 -- a state one bit short of the bound, so
    ``commsim run REDUCTION`` finishes in a second and shows the pigeonhole certificate.
    """

    default_model = "memorize:capacity=7"
    default_n = 8

    def check(self, model, wrapper, problem: Problem) -> None:
        vocab = getattr(model, "vocab_size", None)
        need = len(self.vocabulary(problem.n))
        if vocab is not None and vocab < need:
            raise NotApplicable(f"{self.id} with n = {problem.n} uses {need} input tokens but the model reads only "
                                f"{vocab}", "--model")

    def memory_program(self, n: int) -> MemoryProgram:  # pragma: no cover - abstract
        """The memorizing recurrence's layout for this task (see ``protocols.models.memorize.Memorize``)."""
        raise NotImplementedError

    # ---- bounds ------------------------------------------------------------------------------
    def one_way_bound(self, n: int) -> LowerBound:  # pragma: no cover - abstract
        raise NotImplementedError

    def two_way_bound(self, n: int, one_way: LowerBound) -> LowerBound:  # pragma: no cover - abstract
        raise NotImplementedError

    def lower_bound(self, model, wrapper, problem: Problem, encoded: Encoded) -> LowerBound:
        one_way = self.one_way_bound(problem.n)
        if wrapper.direction(model, encoded) == "one-way":
            return one_way
        return self.two_way_bound(problem.n, one_way)

    def size_for_length(self, seq_len: int) -> int:  # pragma: no cover - abstract
        """The source problem's n for a model sequence length N, as the theorem states it."""
        raise NotImplementedError

    def length_bound(self, arch: str, seq_len: int) -> LowerBound:
        """The theorem's bound at sequence length N: the recurrent handoff is one-way, the attention
        exchange two-way (``commsim budget``)."""
        n = max(self.size_for_length(seq_len), 0)
        one_way = self.one_way_bound(n)
        return one_way if arch == "rnn" else self.two_way_bound(n, one_way)


class _IndexFamily(SourceReduction):
    problem_name = "index"

    def problem(self, n: int) -> Index:
        return Index(int(n))

    def decode(self, labels: np.ndarray, B: np.ndarray) -> np.ndarray:
        """The label at the answer position is the bit a_b (class 0 = symbol 0, class 1 = symbol 1)."""
        return np.asarray(labels)[:, 0]

    def two_way_bound(self, n: int, one_way: LowerBound) -> LowerBound:
        return one_way.not_applicable(
            f"the protocol is two-way, and INDEX_n is easy two-way (Bob sends b, Alice answers: "
            f"ceil(log2 n) + 1 = {ceil_log2(n) + 1} bits), so only that bound applies and there is no "
            f"contradiction: Theorem 1 of [BHBK24] solves index lookup with one attention layer of width O(log N)",
            bits=ceil_log2(n) + 1, source="INDEX two-way protocol; Theorem 1 of [BHBK24]")


class IndexLookup(_IndexFamily):
    """INDEX_n -> index lookup (IdxL): s_1..s_n then an index token p; the output is s_p."""

    id = "index-idxl"
    task = "idxl"
    source = "Theorem 3 of [BHBK24]"
    description = "INDEX -> index lookup: Alice's bits are s_1..s_n, Bob's index is the last token; m*p >= n"

    def vocabulary(self, n: int) -> list[str]:
        return ["0", "1"] + [f"#{i}" for i in range(1, n + 1)]

    def encode(self, problem: Problem, A, B) -> Encoded:
        n = problem.n
        A, B = np.asarray(A), np.asarray(B, dtype=np.int64)
        tokens = np.empty((len(A), n + 1), dtype=token_dtype(n + 2))
        tokens[:, :n] = A
        tokens[:, n] = B + 2
        return Encoded(tokens, np.arange(n), (n,))

    def memory_program(self, n: int) -> MemoryProgram:
        vocab = n + 2
        token_bit = np.full(vocab, -1)
        token_bit[:2] = (0, 1)
        query = np.full(vocab, -1)
        query[2:] = np.arange(n)
        return StoreAndLookup(n, np.arange(n), token_bit, query, query_position=n)

    def size_for_length(self, seq_len: int) -> int:
        return seq_len  # Theorem 3 states m*p >= N, N the string length (the index token aside)

    def one_way_bound(self, n: int) -> LowerBound:
        return LowerBound(
            n, "Theorem 3 of [BHBK24] (INDEX one-way: n bits, Fact 3)", ONE_WAY_CONTIGUOUS,
            f"m*p >= N = {n}: a recurrent model doing index lookup on length-N strings gives a one-way INDEX_N "
            f"protocol of m*p bits (Theorem 2), and INDEX_N needs N bits one-way")


class AssociativeRecall(_IndexFamily):
    """INDEX_n -> associative recall: pairs (k_1, y_1)..(k_n, y_n), then a query key; output its label."""

    id = "index-assoc"
    task = "assoc"
    source = "Proposition 9 of [BHBK24]"
    description = ("INDEX -> associative recall: fixed public keys labelled with Alice's bits, Bob's query key last; "
                   "m*p >= n")

    def vocabulary(self, n: int) -> list[str]:
        return ["0", "1"] + [f"k{i}" for i in range(1, n + 1)]

    def encode(self, problem: Problem, A, B) -> Encoded:
        n = problem.n
        A, B = np.asarray(A), np.asarray(B, dtype=np.int64)
        tokens = np.empty((len(A), 2 * n + 1), dtype=token_dtype(n + 2))
        tokens[:, 0:2 * n:2] = np.arange(2, n + 2)  # the public keys k_1..k_n
        tokens[:, 1:2 * n:2] = A                    # their labels: Alice's bits
        tokens[:, 2 * n] = B + 2                    # Bob's query key k_b
        return Encoded(tokens, np.arange(2 * n), (2 * n,))

    def memory_program(self, n: int) -> MemoryProgram:
        vocab = n + 2
        token_bit = np.full(vocab, -1)
        token_bit[:2] = (0, 1)
        store = np.full(2 * n + 1, -1)
        store[1:2 * n:2] = np.arange(n)
        query = np.full(vocab, -1)
        query[2:] = np.arange(n)
        return StoreAndLookup(n, store, token_bit, query, query_position=2 * n)

    def size_for_length(self, seq_len: int) -> int:
        return (seq_len - 1) // 2  # n pairs and the query key

    def one_way_bound(self, n: int) -> LowerBound:
        return LowerBound(
            n, "Proposition 9 of [BHBK24] (INDEX one-way: n bits)", ONE_WAY_CONTIGUOUS,
            f"m*p >= N = {n} pairs: Alice feeds the pairs (k_i, a_i), sends h_2N, Bob queries k_b (Theorem 2)")


class SparseAveraging(_IndexFamily):
    """INDEX_n -> q-sparse averaging with q = 1: x_i = (i, S_i, v_i); output_{n+1} = mean of v_j, j in S_{n+1}."""

    id = "index-qsa"
    task = "qsa"
    source = "[SHT23]"
    description = ("INDEX -> q-sparse averaging (q = 1): Alice's x_i = (i, {}, a_i), Bob's x_{n+1} = (n+1, {b}, 0); "
                   "state bits >= n")

    def vocabulary(self, n: int) -> list[str]:
        alice = [f"({i},{{}},{v})" for i in range(1, n + 1) for v in (0, 1)]
        return alice + [f"({n + 1},{{{b}}},0)" for b in range(1, n + 1)]

    def encode(self, problem: Problem, A, B) -> Encoded:
        n = problem.n
        A, B = np.asarray(A), np.asarray(B, dtype=np.int64)
        tokens = np.empty((len(A), n + 1), dtype=token_dtype(3 * n))
        tokens[:, :n] = 2 * np.arange(n) + A  # (i, {}, a_i)
        tokens[:, n] = 2 * n + B              # (n+1, {b}, 0)
        return Encoded(tokens, np.arange(n), (n,))

    def memory_program(self, n: int) -> MemoryProgram:
        token_bit = np.full(3 * n, -1)
        token_bit[:2 * n] = np.arange(2 * n) % 2
        query = np.full(3 * n, -1)
        query[2 * n:] = np.arange(n)
        return StoreAndLookup(n, np.arange(n), token_bit, query, query_position=n)

    def size_for_length(self, seq_len: int) -> int:
        return seq_len - 1  # n data positions and the query

    def one_way_bound(self, n: int) -> LowerBound:
        return LowerBound(
            n, "[SHT23] (qSA with q = 1; INDEX one-way: n bits)", ONE_WAY_CONTIGUOUS,
            f"state bits >= n = N - 1 = {n}: exact q-sparse averaging with q = 1 solves INDEX_n one-way; "
            f"the [SHT23] statement for an epsilon-approximation reads m >= (N - 1)/2")


REDUCTIONS = [IndexLookup, AssociativeRecall, SparseAveraging]
