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

from commsim.core.errors import InputError, NotApplicable
from commsim.pipeline.interfaces import Encoded, Reduction
from commsim.theory.bounds import Conditions, LowerBound, ceil_log2
from commsim.core.errors import ProblemInputError
from commsim.theory.problems import DyckProblem

__all__ = ["DyckFoolingProblem", "DyckFooling", "REDUCTIONS"]

RNN_REASON = ("Dyck-(2,2) needs N - 1 bits only for the odd/even split (Lemma 1 of [BHBK24]), which is not "
              "contiguous, so the hidden-state handoff (Theorem 2) gives no protocol for it; and Dyck-(2,2) is "
              "recognized by a 7-state automaton (stacks of depth <= 2, REFERENCE section 2), so a recurrent "
              "model with ceil(log2 8) = 3 state bits suffices: the bound applies to one-layer attention, not RNNs")


@dataclass(frozen=True)
class DyckFoolingProblem(DyckProblem):
    """Dyck-(2,2) membership, odd/even split, whose exhaustive instances are the fooling set:
    every member of length N (2^(N-1) of them), Alice's odd-position symbols with Bob's even ones."""

    all_description = "all members of length N: the fooling set"

    def all_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        return self.split(self.language.members(self.n))

    @property
    def input_pairs(self) -> int:
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

    def problem(self, n: int) -> DyckFoolingProblem:
        if n < 2:
            raise InputError(f"--n is the Dyck string length N and must be at least 2, got {n}", "--n")
        if n % 2:
            raise ProblemInputError(f"--n must be even for Dyck-(2,2) (Dyck strings have even length), got {n}",
                                    "--n")
        return DyckFoolingProblem(n)

    def vocabulary(self, n: int) -> list[str]:
        return list("()[]")

    def encode(self, problem, A, B) -> Encoded:
        tokens = DyckProblem.interleave(A, B)
        return Encoded(tokens, np.arange(0, tokens.shape[1], 2), (tokens.shape[1] - 1,))

    def decode(self, labels, B) -> np.ndarray:
        return (np.asarray(labels)[:, 0] == 1).astype(np.uint8)

    def check(self, model, wrapper, problem) -> None:
        if wrapper.name == "rnn-handoff":
            raise NotApplicable(f"dyck22-fooling does not apply to a recurrent model: {RNN_REASON}", "--model")
        if wrapper.name != "attention-exchange":
            raise NotApplicable(f"dyck22-fooling bounds one-layer attention (the protocol of Theorem 4 of "
                                f"[BHBK24]); {wrapper.name} is not one", "--model")

    def lower_bound(self, model, wrapper, problem, encoded) -> LowerBound:
        N = problem.n
        p, m, H = model.precision, model.width, model.heads
        L = ceil_log2(N)
        need = (N - 1) / (3 * (p + L))
        statement = (f"deciding Dyck-(2,2) with the odd/even split takes N - 1 = {N - 1} bits; for a one-layer "
                     f"attention (Theorem 5): mH >= (N - 1)/(3(p + ceil(log2 N))) = {N - 1}/(3·({p} + {L})) = "
                     f"{need:.3f}, and this model has mH = {m * H}")
        return LowerBound(N - 1, "Lemma 1 of [BHBK24]", Conditions("two-way", "odd-even"), statement)

    def length_bound(self, arch: str, seq_len: int) -> LowerBound:
        bound = LowerBound(max(seq_len - 1, 0), "Lemma 1 and Theorem 5 of [BHBK24]", Conditions("two-way", "odd-even"),
                           "Dyck-(2,2) with the odd/even split takes N - 1 bits: mH >= (N - 1)/(3(p + log N))")
        if arch == "rnn":
            return bound.not_applicable(RNN_REASON)
        return bound


REDUCTIONS = [DyckFooling]
