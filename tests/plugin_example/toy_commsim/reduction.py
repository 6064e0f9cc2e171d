"""The toy plugin's reduction: EQ_n as the sequence x_1..x_n y_1..y_n, Alice holding the first half."""
from __future__ import annotations

import numpy as np

from commsim.contract import CONTIGUOUS_PREFIX, Encoded, Reduction, Split
from commsim.theory.bounds import Conditions, LowerBound
from commsim.theory.problems import Equality


class EqByCount(Reduction):
    """EQ_n: Alice's bits as tokens 0/1, Bob's as 2/3, the answer at the last position."""

    id = "eq-count"
    problem_name = "eq"
    task = "equal halves"
    source = "toy plugin (docs/EXTENDING.md); EQ one-way needs n bits"
    description = "toy plugin: EQ_n as x_1..x_n y_1..y_n, answered at the last position"
    default_model = "counter"
    default_n = 6
    split_kind = CONTIGUOUS_PREFIX
    length_scale, length_offset = 2, 0

    def problem(self, n: int) -> Equality:
        return Equality(n)

    def vocabulary(self, n: int) -> list[str]:
        return ["a0", "a1", "b0", "b1"]

    def encode(self, problem, A, B) -> Encoded:
        tokens = np.concatenate([np.asarray(A), np.asarray(B) + 2], axis=1).astype(np.uint8)
        return Encoded(tokens, np.arange(problem.n), (2 * problem.n - 1,))

    def decode(self, labels, B) -> np.ndarray:
        return np.asarray(labels)[:, 0].astype(np.uint8)

    def split(self, seq_len: int) -> Split:
        """Alice: the first half; the answer at the last position (without encoding: any N)."""
        return Split(seq_len, range(int(seq_len) // 2), (int(seq_len) - 1,))

    def bound(self, n: int, senders: frozenset) -> LowerBound:
        bound = LowerBound(n, "EQ one-way (2^n distinct rows)", Conditions("one-way", "contiguous"),
                           f"a one-way protocol for EQ_{n} sends >= n = {n} bits")
        return bound if senders <= {"alice"} else bound.not_applicable("the protocol is two-way")
