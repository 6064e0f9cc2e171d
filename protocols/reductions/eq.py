"""EQ_n -> INEQ on {0,1}^(2n) (Theorems 11 and 12 of [BHBK24]).

INEQ(x) = 1 iff the first half of x differs from the second.  Alice's a is the first half, Bob's b
the second (a contiguous split), the answer is read at the last position and EQ = 1 - INEQ.  EQ_n
needs n bits even two-way (fooling set {(x, x)}), so the bound holds for recurrent models (one-way
handoff: m*p >= N/2) and for the one-layer attention exchange (3m(p + log N)H >= n).
"""
from __future__ import annotations

import numpy as np

from commsim.contract import Encoded
from commsim.theory.bounds import Conditions, LowerBound, randomness
from commsim.theory.problems import Equality, Problem
from protocols.reductions.base import ONE_WAY_CONTIGUOUS, SourceReduction
from protocols.reductions.layouts import MemoryProgram, StoreAndCompare
from protocols.theorems import equality_bits

__all__ = ["Inequality", "REDUCTIONS"]


class Inequality(SourceReduction):
    """EQ_n -> INEQ: tokens a_1..a_n b_1..b_n; the output at the last position is 1 iff a != b."""

    id = "eq-ineq"
    problem_name = "eq"
    length_scale, length_offset = 2, 0
    n_meaning = "N = 2n tokens: the bits a_1..a_n b_1..b_n of EQ_n (INEQ on {0,1}^N)"
    task = "ineq"
    source = "Theorems 11 and 12 of [BHBK24]"
    description = "EQ -> INEQ on {0,1}^2n: Alice the first half, Bob the second; RNN m*p >= N/2, attention 3m(p+log N)H >= n"

    def problem(self, n: int) -> Equality:
        """EQ_n."""
        return Equality(int(n))

    def vocabulary(self, n: int) -> list[str]:
        """The bits 0 and 1."""
        return ["0", "1"]

    def encode(self, problem: Problem, A, B) -> Encoded:
        """a_1..a_n (Alice's prefix) then b_1..b_n; the decision at the last position."""
        n = problem.n
        tokens = np.empty((len(A), 2 * n), dtype=np.uint8)
        tokens[:, :n] = np.asarray(A)
        tokens[:, n:] = np.asarray(B)
        return Encoded(tokens, np.arange(n), (2 * n - 1,))

    def decode(self, labels: np.ndarray, B: np.ndarray) -> np.ndarray:
        """The model outputs INEQ; the EQ answer is its complement.  A label that is not a bit (a model with more
        than two classes) is kept as it is: an answer that is neither EQ value, never read as one (1 - 3 = -2 was
        shown as "EQ = -2")."""
        ineq = np.asarray(labels)[:, 0].astype(np.int16)
        return np.where((ineq == 0) | (ineq == 1), 1 - ineq, ineq)

    def memory_program(self, n: int) -> MemoryProgram:
        """Store the first half, compare the second bit by bit."""
        return StoreAndCompare(n)

    def size(self, seq_len: int) -> int:
        """n = N/2 (Theorem 11)."""
        return seq_len // 2  # N = 2n

    def alice_length(self, n: int) -> int:
        """a_1..a_n."""
        return n

    def one_way_bound(self, n: int) -> LowerBound:
        """Theorem 11 of [BHBK24]: m·p >= N/2."""
        return LowerBound(
            equality_bits(n), "Theorem 11 of [BHBK24] (EQ_n: n bits, Fact 2; also Lemma 4)", ONE_WAY_CONTIGUOUS,
            f"m*p >= N/2 = {n}: a recurrent model computing INEQ on {{0,1}}^{2 * n} gives a one-way EQ_{n} protocol "
            f"of m*p bits (Theorem 2); equivalently a DFA agreeing with INEQ needs 2^(N/2) states (Lemma 4)",
            **randomness("eq"))

    def two_way_bound(self, n: int, one_way: LowerBound) -> LowerBound:
        """Theorem 12 of [BHBK24]: EQ_n needs n bits two-way too, so 3m(p + log N)H >= n."""
        return LowerBound(
            equality_bits(n), "Theorem 12 of [BHBK24] (EQ_n: n bits two-way, fooling set {(x, x)})",
            Conditions(direction="two-way", partition="any", deterministic=True),
            f"3m(p + log N)H >= n = {n}: EQ_n needs n bits even with two-way communication, so the one-layer "
            f"attention exchange (Theorem 4) must carry them", **randomness("eq"))


REDUCTIONS = [Inequality]
