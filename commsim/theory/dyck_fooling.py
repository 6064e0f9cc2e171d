"""The Dyck-(2,2) fooling set of Lemma 1 of [BHBK24]: all members of length N, odd/even split, value 1.

Its size is counted exactly by dynamic programming over the automaton's stack states
(:func:`commsim.theory.dyck.count_dyck`); members are produced lazily, in lexicographic order, by
unranking from the completion counts (the same order as :meth:`commsim.theory.dyck.DyckLanguage.members`,
which is used directly for N <= :data:`DYCK_DIRECT_MAX_N`).  Beyond N = 62 the unranking runs on Python
integers (object arrays) and is slow but still lazy.  Verification checks Lemma 1's structural argument
member by member up to N = :data:`DYCK_STRUCTURAL_MAX_N`, and all crossings when the set is small.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from commsim.core.errors import InputError
from commsim.theory.dyck import DyckLanguage, _completion_counts, _dyck_completions_by_depth
from commsim.theory.fooling_set import PAIRWISE_LIMIT, FoolingSet, FoolingVerification
from commsim.theory.problems import DyckProblem

#: Dyck-(2,2): the member-by-member structural check (2^(N-1) members) runs up to this N
DYCK_STRUCTURAL_MAX_N = 20


#: DyckLanguage.members is used directly up to this length (2^(N-1) rows; above, lazy unranking)
DYCK_DIRECT_MAX_N = 20


@dataclass(frozen=True)
class DyckMembers(FoolingSet):
    """Dyck-(2,2), odd/even split: all members of length N, value 1 (Lemma 1 of [BHBK24])."""

    @cached_property
    def comp(self) -> list[list[int]]:
        """comp[r][d]: completions with r tokens left from a stack of depth d (built on first use)."""
        return _dyck_completions_by_depth(self.n, self.problem.types, self.problem.depth)

    @property
    def language(self) -> DyckLanguage:
        return self.problem.language

    @cached_property
    def _all_strings(self) -> np.ndarray:
        return self.language.members(self.n)

    def strings(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Members start..stop-1 as whole token strings, in lexicographic order.

        Up to N = :data:`DYCK_DIRECT_MAX_N` they are :meth:`DyckLanguage.members` (enumerated
        once, vectorized by prefix); beyond, lazy unranking of just the requested range.
        """
        start, stop = self._range(start, stop)
        if self.n <= DYCK_DIRECT_MAX_N:
            return self._all_strings[start:stop]
        return self._unrank(start, stop)

    def _unrank(self, start: int, stop: int) -> np.ndarray:
        """Lexicographic unranking from the completion counts, vectorized over the ranks.

        At each position the weight of a token is the number of completions from the state it
        leads to (0 for the reject sink); the member of rank r takes the first token whose
        cumulative weight exceeds r and keeps the remainder.  Ranks and weights are int64 while
        the set has fewer than 2^62 members, Python integers (object arrays) beyond.
        """
        lang, N = self.language, self.n
        table = lang.transitions
        depth_after = np.array([len(s) for s in lang.stacks] + [-1])[table]      # (Q, tokens); sink -> -1
        big = self.size >= (1 << 62)
        dtype = object if big else np.int64
        ranks = np.array(list(range(start, stop)), dtype=object) if big else np.arange(start, stop, dtype=np.int64)
        states = np.zeros(stop - start, dtype=np.int64)
        out = np.empty((stop - start, N), dtype=np.uint8)
        for pos in range(N):
            weights = np.array(list(self.comp[N - pos - 1]) + [0], dtype=dtype)[depth_after]   # (Q, tokens)
            cum = np.cumsum(weights, axis=1)
            before = np.concatenate([np.zeros((len(cum), 1), dtype=dtype), cum[:, :-1]], axis=1)
            tok = (ranks[:, None] >= cum[states]).sum(axis=1).astype(np.int64)
            ranks = ranks - before[states, tok]
            out[:, pos] = tok
            states = table[states, tok]
        if np.any(states != 0):
            raise AssertionError("unranking left the language: a rank beyond the member count?")
        return out

    def member_arrays(self, start=0, stop=None):
        return DyckProblem.split(self.strings(start, stop))

    @staticmethod
    def largest_verifiable_n(pairwise_limit: int = PAIRWISE_LIMIT) -> int:
        """The largest N :meth:`verify` runs at (the structural check's limit)."""
        return DYCK_STRUCTURAL_MAX_N

    def verify(self, *, pairwise_limit: int = PAIRWISE_LIMIT) -> FoolingVerification:
        """Lemma 1's argument member by member; plus all crossings when |S| <= ``pairwise_limit``.

        Structural check, for every member s = (x, y) of length N: s is a member; x (Alice's odd
        positions) has exactly one completion y' with (x, y') a member — the paper's argument —
        and y (Bob's even positions) has exactly one completion x'.  The second half closes a gap
        in the argument as stated: unique completions of the x's alone would not rule out two
        members sharing their y, whose crossings are the members themselves.  Together they give
        f(x1, y2) = 0 for any two distinct members.  The members are enumerated in strictly
        increasing order and their number equals the DP count, so the set is all of Dyck-(2,2) ∩ Σ^N.
        """
        if self.n > DYCK_STRUCTURAL_MAX_N:
            raise InputError(f"Dyck-(2,2) at N = {self.n} has 2^{self.n - 1} members, too many for a "
                             f"member-by-member check; the largest N that runs is {DYCK_STRUCTURAL_MAX_N}", "verify")
        structural = self._verify_structural()
        if not structural.ok or self.size > pairwise_limit:
            return structural
        pairwise = self._verify_pairwise()
        return FoolingVerification(pairwise.ok, f"{structural.method}; and {pairwise.method}",
                                   structural.checks + pairwise.checks, pairwise.counterexample)

    def _verify_structural(self) -> FoolingVerification:
        lang, N = self.language, self.n
        seen, previous = 0, None
        for A, B in self.members():
            S = DyckProblem.interleave(A, B)
            if previous is not None and not _lex_less(previous, S[0]):
                return FoolingVerification(False, "structural: members are not strictly increasing", seen,
                                           {"member": seen})
            if len(S) > 1:
                order_ok = _rows_strictly_increasing(S)
                if not order_ok.all():
                    k = int(np.flatnonzero(~order_ok)[0]) + 1
                    return FoolingVerification(False, "structural: members are not strictly increasing",
                                               seen + k, {"member": seen + k})
            previous = S[-1]
            member = lang.is_member(S)
            for label, fixed, fixed_first in (("odd half x", A, True), ("even half y", B, False)):
                counts = _completion_counts(fixed, fixed_first, N, lang)
                bad = np.flatnonzero((counts != 1) | (member != 1))
                if bad.size:
                    i = int(bad[0])
                    return FoolingVerification(
                        False, f"structural: member {seen + i}'s {label} has {int(counts[i])} completions "
                               f"(is member: {bool(member[i])})", seen + i,
                        {"member": seen + i, "string": lang.decode(S[i])})
            seen += len(S)
        if seen != self.size:
            return FoolingVerification(False, f"structural: enumerated {seen} members, the DP count is {self.size}",
                                       seen)
        return FoolingVerification(True, f"the structural argument of Lemma 1, member by member: each of the "
                                         f"{seen} members (enumerated in strictly increasing order, as many as "
                                         f"the DP count) is in Dyck-(2,2), its odd half has exactly one even "
                                         f"completion and its even half exactly one odd completion "
                                         f"(completion counts by DP over the automaton)", seen)


def _lex_less(a: np.ndarray, b: np.ndarray) -> bool:
    diff = np.flatnonzero(a != b)
    return bool(diff.size) and a[diff[0]] < b[diff[0]]


def _rows_strictly_increasing(S: np.ndarray) -> np.ndarray:
    """For each consecutive pair of rows, row[i] < row[i+1] lexicographically."""
    a, b = S[:-1].astype(np.int16), S[1:].astype(np.int16)
    diff = a != b
    first = np.argmax(diff, axis=1)
    any_diff = diff.any(axis=1)
    idx = np.arange(len(a))
    return any_diff & (a[idx, first] < b[idx, first])
