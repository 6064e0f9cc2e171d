"""Dyck-(2,2) with the odd/even split: the fooling-set lower bound for one-layer attention.

Lemma 1 of [BHBK24]: when Alice holds the symbols at the odd positions of a string of length N and
Bob those at the even positions, deciding membership in Dyck-(2,2) takes N - 1 bits (fooling set:
all 2^(N-1) members).  A one-layer attention of H heads, width m and p bits gives a protocol of
about 3m(p + log N)H bits for *any* split (Theorem 4), hence Theorem 5: mH >= (N - 1)/(3(p + log N)).

The bound does not touch recurrent models: the split is not contiguous, so the hidden-state
handoff (Theorem 2) is no protocol for it, and Dyck-(2,2) is recognized by a 7-state automaton
(Appendix E of [BHBK24]) — a constant-size recurrence suffices.

``--instances all`` runs the fooling set itself: every member of length N.  Membership is a function of
every string of length N, so the model is also judged on non-members (:meth:`DyckFooling.evaluation_sets`):
all 4^N strings when there are at most 2^16, else crossings of members and seeded random non-members.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commsim.contract import (
    CONTIGUOUS_PREFIX,
    Encoded,
    EvaluationSet,
    InputError,
    NotApplicable,
    ODD_EVEN,
    ProblemInputError,
    Reduction,
    Split,
)
from commsim.theory.bounds import Conditions, LowerBound, ceil_log2, randomness
from commsim.theory.problems import DyckProblem
from protocols.theorems import dyck_fooling_bits, dyck_min_width, exchange_bits

__all__ = ["DyckFoolingProblem", "DyckFooling", "REDUCTIONS"]

#: all (2 types)^N strings are judged when there are at most 2^this many (N <= 8 for Dyck-(2,2); at N = 10,
#: 2^20 strings would make every run of a wide layer take tens of seconds)
EXHAUSTIVE_STRINGS_LOG2 = 16

#: otherwise: this many seeded crossings of members, and as many seeded uniformly random non-members
CROSSINGS = RANDOM_NON_MEMBERS = 4096

RNN_REASON = ("Dyck-(2,2) needs N - 1 bits only for the odd/even split (Lemma 1 of [BHBK24]), which is not "
              "contiguous, so the hidden-state handoff (Theorem 2) gives no protocol for it; and Dyck-(2,2) is "
              "recognized by a 7-state automaton (stacks of depth <= 2, Appendix E of [BHBK24]), so a recurrent "
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
    all_set = ("members", "fooling-set members")

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
    split_kind = ODD_EVEN
    length_scale, length_offset = 2, 0
    n_meaning = "N = 2k tokens: the bracket string itself (Dyck strings have even length); Lemma 1's N"

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

    def evaluation_sets(self, problem, alice, bob, seed: int) -> list[EvaluationSet]:
        """The strings beyond the fooling set the model is judged on: membership is a function of every string
        of length N, and the fooling set holds only members (a layer answering 1 everywhere is right on all of
        them).  All (2 types)^N strings when there are at most 2^16; else :data:`CROSSINGS` crossings of the
        run's members (Alice's part of one, Bob's part of another: the inputs of the rectangle argument of
        Lemma 1 of [BHBK24]) and :data:`RANDOM_NON_MEMBERS` uniformly random non-members, seeded."""
        N, k = problem.n, 2 * problem.types
        if k ** N <= 1 << EXHAUSTIVE_STRINGS_LOG2:
            codes = np.arange(k ** N)
            strings = np.stack([(codes // k ** (N - 1 - i)) % k for i in range(N)], axis=1).astype(np.uint8)
            return [EvaluationSet("all_strings", *problem.split(strings), f"strings of length {N} (all {k}^{N})")]
        rng = np.random.default_rng(seed)
        members = np.flatnonzero(problem.evaluate_batch(alice, bob) == 1)
        if members.size >= 2:
            A, B = np.asarray(alice)[members], np.asarray(bob)[members]
        else:
            A, B = problem.split(problem.language.sample_members(rng, N, CROSSINGS))
        i = rng.integers(0, len(A), CROSSINGS)
        j = (i + rng.integers(1, len(A), CROSSINGS)) % len(A)
        found: list[np.ndarray] = []
        while sum(map(len, found)) < RANDOM_NON_MEMBERS:
            S = rng.integers(0, k, size=(2 * RANDOM_NON_MEMBERS, N)).astype(np.uint8)
            found.append(S[problem.language.is_member(S) == 0])
        non_members = np.concatenate(found)[:RANDOM_NON_MEMBERS]
        return [EvaluationSet("crossings", A[i], B[j], f"crossings of two members (seed {seed})"),
                EvaluationSet("random_non_members", *problem.split(non_members),
                              f"uniformly random non-members (seed {seed})")]

    def check(self, model, simulator, problem) -> None:
        """Refuse a simulator that has no protocol for the odd/even split (a recurrent model's handoff)."""
        if simulator.split_direction(self.split_kind) is None:
            raise NotApplicable(_no_protocol_reason(simulator), "model")

    def lower_bound(self, model, plan, problem, encoded) -> LowerBound:
        """Lemma 1 of [BHBK24]: N - 1 bits; for a one-layer attention, Theorem 5's width bound beside it."""
        N = problem.n
        statement = f"deciding Dyck-(2,2) with the odd/even split takes N - 1 = {dyck_fooling_bits(N)} bits"
        if all(hasattr(model, key) for key in ("precision", "width", "heads")):   # a one-layer attention
            p, m, H = model.precision, model.width, model.heads
            sent = plan.bits
            if sent is not None:
                verdict = "enough" if sent >= N - 1 else "too few: the model must err on some member or crossing"
                statement += (f"; this layer's exchange on the odd/even split really sends {sent} bits, "
                              f"against N - 1 = {N - 1} needed ({verdict})")
            statement += (f"; Theorem 5 states it with the paper's count 3m(p + ceil(log2 N))H = "
                          f"{exchange_bits(m, p, H, N)} bits: mH >= (N - 1)/(3(p + ceil(log2 N))) = "
                          f"{N - 1}/(3·({p} + {ceil_log2(N)})) = {float(dyck_min_width(N, p)):.3f}, and this model "
                          f"has mH = {m * H}")
        return LowerBound(dyck_fooling_bits(N), "Lemma 1 of [BHBK24]", Conditions("two-way", ODD_EVEN),
                          statement, **randomness("dyck22"))

    def split(self, seq_len: int) -> Split:
        """Alice: the odd positions (0-based even); the decision at the last position."""
        return Split(seq_len, range(0, int(seq_len), 2), (int(seq_len) - 1,))

    def length_bound(self, simulator, seq_len: int, senders: frozenset | None = None) -> LowerBound:
        """Lemma 1 and Theorem 5 of [BHBK24] at length N; not applicable without an odd/even protocol
        (N - 1 bits in any direction, so the parties that speak do not change it)."""
        bound = LowerBound(dyck_fooling_bits(seq_len), "Lemma 1 of [BHBK24]", Conditions("two-way", ODD_EVEN),
                           "Dyck-(2,2) with the odd/even split takes N - 1 bits; Theorem 5 of [BHBK24] turns it "
                           "into mH >= (N - 1)/(3(p + log N)) with Theorem 4's count",
                           **randomness("dyck22"))
        if simulator.split_direction(self.split_kind) is None:
            return bound.not_applicable(RNN_REASON if simulator.partition_kind == CONTIGUOUS_PREFIX
                                        else _no_protocol_reason(simulator))
        return bound


REDUCTIONS = [DyckFooling]
