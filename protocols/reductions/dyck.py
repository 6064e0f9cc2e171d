"""Dyck-(2,2) with the odd/even split: the fooling-set lower bound for one-layer attention.

Lemma 1 of [BHBK24]: when Alice holds the symbols at the odd positions of a string of length N and
Bob those at the even positions, deciding membership in Dyck-(2,2) takes N - 1 bits (fooling set:
all 2^(N-1) members).  A one-layer attention of H heads, width m and p bits gives a protocol of
about 3m(p + log N)H bits for *any* split (Theorem 4), hence Theorem 5: mH >= (N - 1)/(3(p + log N)).

The bound does not touch recurrent models: the split is not contiguous, so the hidden-state
handoff (Theorem 2) is no protocol for it, and Dyck-(2,2) is recognized by a 7-state automaton
(REFERENCE section 2) — a constant-size recurrence suffices.

``--instances all`` runs the fooling set itself: every member of length N.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commsim.core.errors import InputError, NotApplicable, ProblemInputError
from commsim.pipeline.interfaces import CONTIGUOUS_PREFIX, ODD_EVEN, Encoded, Reduction
from commsim.theory.bounds import Conditions, LowerBound, ceil_log2
from commsim.theory.problems import DyckProblem
from protocols.theorems import dyck_fooling_bits, dyck_min_width

__all__ = ["DyckFoolingProblem", "DyckFooling", "REDUCTIONS"]

RNN_REASON = ("Dyck-(2,2) needs N - 1 bits only for the odd/even split (Lemma 1 of [BHBK24]), which is not "
              "contiguous, so the hidden-state handoff (Theorem 2) gives no protocol for it; and Dyck-(2,2) is "
              "recognized by a 7-state automaton (stacks of depth <= 2, REFERENCE section 2), so a recurrent "
              "model with ceil(log2 8) = 3 state bits suffices: the bound applies to one-layer attention, not RNNs")


def _no_protocol_reason(simulator) -> str:
    """Why the odd/even bound says nothing about ``simulator``, which has no protocol for that split."""
    if simulator.partition_kind == CONTIGUOUS_PREFIX:   # Theorem 2's setting: the recurrent models
        return f"dyck22-fooling does not apply to a recurrent model: {RNN_REASON}"
    return (f"dyck22-fooling bounds protocols on the odd/even split (Lemma 1 of [BHBK24]); {simulator.name} "
            f"has none for it")


@dataclass(frozen=True)
class DyckFoolingProblem(DyckProblem):
    """Dyck-(2,2) membership, odd/even split, whose exhaustive instances are the fooling set:
    every member of length N (2^(N-1) of them), Alice's odd-position symbols with Bob's even ones."""

    all_description = "all members of length N: the fooling set"

    def all_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Every member of length N, split into Alice's odd and Bob's even symbols."""
        return self.split(self.language.members(self.n))

    @property
    def input_pairs(self) -> int:
        """2^(N-1): the number of members."""
        return self.language.count(self.n)


class DyckFooling(Reduction):
    """Dyck-(2,2) fooling set, odd/even split: one-layer attention needs N - 1 bits (Lemma 1, Theorem 5)."""

    id = "dyck22-fooling"
    problem_name = "dyck22"
    task = "Dyck-(2,2) membership"
    source = "Lemma 1 and Theorem 5 of [BHBK24]"
    description = ("Dyck-(2,2) fooling set, odd/even split: a one-layer attention needs N - 1 bits, "
                   "mH >= (N-1)/(3(p + log N))")
    default_model = "attention:probe:at=0,accept=0/2"
    default_n = 20
    split = ODD_EVEN

    def problem(self, n: int) -> DyckFoolingProblem:
        """Dyck-(2,2) membership at even length N >= 2, the fooling set as its exhaustive instances."""
        if n < 2:
            raise InputError(f"n is the Dyck string length N and must be at least 2, got {n}", "n")
        if n % 2:
            raise ProblemInputError(f"n must be even for Dyck-(2,2) (Dyck strings have even length), got {n}",
                                    "n")
        return DyckFoolingProblem(n)

    def vocabulary(self, n: int) -> list[str]:
        """The brackets ( ) [ ]."""
        return list("()[]")

    def encode(self, problem, A, B) -> Encoded:
        """The string itself, Alice at the odd positions (0-based even), the decision at the last position."""
        tokens = DyckProblem.interleave(A, B)
        return Encoded(tokens, np.arange(0, tokens.shape[1], 2), (tokens.shape[1] - 1,))

    def decode(self, labels, B) -> np.ndarray:
        """Class 1 means member."""
        return (np.asarray(labels)[:, 0] == 1).astype(np.uint8)

    def check(self, model, simulator, problem) -> None:
        """Refuse a simulator that has no protocol for the odd/even split (a recurrent model's handoff)."""
        if simulator.split_direction(self.split) is None:
            raise NotApplicable(_no_protocol_reason(simulator), "model")

    def lower_bound(self, model, simulator, problem, encoded) -> LowerBound:
        """Lemma 1 of [BHBK24]: N - 1 bits; for a one-layer attention, Theorem 5's width bound beside it."""
        N = problem.n
        statement = f"deciding Dyck-(2,2) with the odd/even split takes N - 1 = {dyck_fooling_bits(N)} bits"
        if all(hasattr(model, key) for key in ("precision", "width", "heads")):   # a one-layer attention
            p, m, H = model.precision, model.width, model.heads
            statement += (f"; for a one-layer attention (Theorem 5): mH >= (N - 1)/(3(p + ceil(log2 N))) = "
                          f"{N - 1}/(3·({p} + {ceil_log2(N)})) = {float(dyck_min_width(N, p)):.3f}, and this model "
                          f"has mH = {m * H}")
        return LowerBound(dyck_fooling_bits(N), "Lemma 1 of [BHBK24]", Conditions("two-way", ODD_EVEN), statement)

    def length_bound(self, simulator, seq_len: int) -> LowerBound:
        """Lemma 1 and Theorem 5 of [BHBK24] at length N; not applicable without an odd/even protocol."""
        bound = LowerBound(dyck_fooling_bits(seq_len), "Lemma 1 and Theorem 5 of [BHBK24]",
                           Conditions("two-way", ODD_EVEN),
                           "Dyck-(2,2) with the odd/even split takes N - 1 bits: mH >= (N - 1)/(3(p + log N))")
        if simulator.split_direction(self.split) is None:
            return bound.not_applicable(RNN_REASON if simulator.partition_kind == CONTIGUOUS_PREFIX
                                        else _no_protocol_reason(simulator))
        return bound


REDUCTIONS = [DyckFooling]
