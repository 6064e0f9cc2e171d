"""Fooling sets: build, count, verify; rectangle crossings for certificates.

A *fooling set* for f (Definition 1 / Fact 4 of [BHBK24], REFERENCE section 1) is a set S of
input pairs and a value b with f(x, y) = b on S such that for every two distinct members
(x1, y1), (x2, y2): f(x1, y2) != b or f(x2, y1) != b.  Distinct members then need distinct
transcripts (rectangle property), so every deterministic protocol sends >= log2 |S| bits.

The sets built here (REFERENCE section 2):

* INDEX_n, **one-way**: the 2^n Alice inputs, pairwise separated by some Bob index, so a
  one-way protocol needs 2^n distinct messages (n bits).  (Two-way, INDEX is easy; the
  fooling argument does not apply and :meth:`FoolingSet.bound_for` says so.)
* EQ_n: {(x, x)}, value 1, size 2^n.
* DISJ_n: {(x, complement of x)}, value 0 (the papers' convention: DISJ = 1 when the sets intersect).
* Dyck-(2,2) with the odd/even split: all 2^(N-1) members of length N, value 1 (Lemma 1 of [BHBK24]).

Sizes are exact Python integers (``count_dyck`` counts Dyck strings by dynamic programming over
stack states).  Members are produced lazily in vectorized chunks, for any size: bit strings by
binary counting, Dyck members by unranking in lexicographic order from the completion counts (the
same order as :meth:`commsim.theory.dyck.DyckLanguage.members`, which is used directly for N <= 20).
Beyond N = 62 the unranking runs on Python integers (object arrays) and is slow but still lazy.

Verification is exhaustive and therefore capped: pairwise (all |S|^2 crossings evaluated with the
problem's own truth function) for |S| <= :data:`PAIRWISE_LIMIT`; for INDEX the full 2^n x n table;
for Dyck-(2,2) additionally the structural argument of Lemma 1 checked member by member up to
N = :data:`DYCK_STRUCTURAL_MAX_N`.  Larger requests raise :class:`~commsim.core.errors.InputError`
naming the largest size that runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterator, NamedTuple

import numpy as np

from commsim.core.digests import find_transcript_collision
from commsim.core.errors import InputError
from commsim.theory.bounds import Conditions, LowerBound, ceil_log2, log2_exact
from commsim.theory.dyck import (
    DyckLanguage,
    _completion_counts,
    _dyck_completions_by_depth,
    count_dyck,
)
from commsim.theory.problems import DyckProblem, Problem, make_problem

FOOLING_PROBLEMS = ("index", "eq", "disj", "dyck22")


#: largest fooling set whose |S|^2 crossings are all evaluated (pairwise verification)
PAIRWISE_LIMIT = 1 << 12


#: INDEX: the 2^n x n table is evaluated in full up to this n
INDEX_TABLE_MAX_N = 20


#: Dyck-(2,2): the member-by-member structural check (2^(N-1) members) runs up to this N
DYCK_STRUCTURAL_MAX_N = 20


#: largest n for which a fooling set (exact size) is built at all
MAX_FOOLING_N = 100_000


#: members per vectorized chunk
CHUNK = 1 << 16


#: DyckLanguage.members is used directly up to this length (2^(N-1) rows; above, lazy unranking)
DYCK_DIRECT_MAX_N = 20


# ---- results -------------------------------------------------------------------
@dataclass(frozen=True)
class FoolingVerification:
    """The outcome of :meth:`FoolingSet.verify`: ``ok``, how it was checked, what failed."""

    ok: bool
    method: str
    checks: int                                  # crossings / table entries / members checked
    counterexample: dict | None = None

    def to_dict(self) -> dict:
        return {"ok": self.ok, "method": self.method, "checks": self.checks, "counterexample": self.counterexample}


class Crossing(NamedTuple):
    """A crossed input ``(alice, bob)`` and its true value under the problem."""

    alice: np.ndarray | int
    bob: np.ndarray | int
    value: int


def _bits_of_range(start: int, stop: int, n: int) -> np.ndarray:
    """Rows i = start..stop-1 written in n bits (most significant first), as uint8."""
    if n <= 62:
        codes = np.arange(start, stop, dtype=np.int64)
        shifts = np.arange(n - 1, -1, -1, dtype=np.int64)
        return ((codes[:, None] >> shifts) & 1).astype(np.uint8)
    nbytes = (n + 7) // 8
    out = np.empty((stop - start, n), dtype=np.uint8)
    for row, i in enumerate(range(start, stop)):
        out[row] = np.unpackbits(np.frombuffer(int(i).to_bytes(nbytes, "big"), dtype=np.uint8))[8 * nbytes - n:]
    return out


# ---- fooling sets ----------------------------------------------------------------
@dataclass(frozen=True)
class FoolingSet:
    """A fooling set of ``problem``: exact ``size``, lazily enumerated members, a lower bound.

    ``kind == "two-way"``: members are pairs (x_i, y_i) with f = ``value`` (Definition 1 of
    [BHBK24]); any deterministic protocol needs >= log2 |S| bits.
    ``kind == "one-way"``: members are Alice inputs x_i whose rows f(x_i, .) are pairwise
    distinct; a one-way protocol needs |S| distinct messages.  ``value`` is None then and the
    Bob half of every member chunk is None.
    """

    problem: Problem
    size: int
    kind: str
    value: int | None
    construction: str
    source: str
    statement: str
    partition: str

    # -- subclasses provide the member chunks
    def member_arrays(self, start: int = 0, stop: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Members start..stop-1 as arrays (Alice rows, Bob rows or None)."""
        raise NotImplementedError

    def _range(self, start: int, stop: int | None) -> tuple[int, int]:
        stop = self.size if stop is None else stop
        if not 0 <= start <= stop <= self.size:
            raise InputError(f"member range {start}..{stop} is outside 0..{self.size}")
        return start, stop

    @property
    def name(self) -> str:
        return self.problem.name

    @property
    def n(self) -> int:
        return self.problem.n

    @property
    def log2_size(self) -> float:
        return log2_exact(self.size)

    def members(self, start: int = 0, stop: int | None = None,
                chunk: int = CHUNK) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        """Members start..stop-1 lazily, ``chunk`` at a time (vectorized within a chunk)."""
        start, stop = self._range(start, stop)
        for lo in range(start, stop, chunk):
            yield self.member_arrays(lo, min(lo + chunk, stop))

    def member(self, i: int) -> tuple[np.ndarray, np.ndarray | int | None]:
        """Member ``i`` (0-based; any index below :attr:`size`, however large)."""
        A, B = self.member_arrays(i, i + 1)
        return A[0], None if B is None else B[0]

    def pairs(self, limit: int = 1 << 22) -> tuple[np.ndarray, np.ndarray | None]:
        """All members as two aligned arrays; an :class:`InputError` beyond ``limit`` members."""
        if self.size > limit:
            raise InputError(f"the {self.name} fooling set at n = {self.n} has {self.size} members; "
                             f"at most {limit} are materialized at once (use members() for chunks)", "--n")
        return self.member_arrays(0, self.size)

    # -- bounds
    @property
    def lower_bound(self) -> LowerBound:
        """ceil(log2 |S|) bits, for the protocols the fooling argument covers (Fact 4 of [BHBK24])."""
        return LowerBound(ceil_log2(self.size), self.source,
                          Conditions(direction="one-way" if self.kind == "one-way" else "two-way",
                                     partition=self.partition, deterministic=True),
                          self.statement)

    def bound_for(self, direction: str) -> LowerBound:
        """The bound for ``direction`` protocols, or the bound marked not applicable with the reason."""
        if direction not in ("one-way", "two-way"):
            raise InputError(f"direction must be 'one-way' or 'two-way', got {direction!r}")
        return self.lower_bound

    # -- verification
    def verify(self, *, pairwise_limit: int = PAIRWISE_LIMIT) -> FoolingVerification:
        """Check the fooling property exhaustively (pairwise for |S| <= ``pairwise_limit``).

        Raises :class:`InputError` naming the largest verifiable n when the set is too large.
        """
        if self.size > pairwise_limit:
            raise self._too_large(pairwise_limit)
        return self._verify_pairwise()

    def _too_large(self, pairwise_limit: int = PAIRWISE_LIMIT) -> InputError:
        largest = largest_verifiable_n(self.name, pairwise_limit)
        return InputError(f"--verify: the {self.name} fooling set at n = {self.n} has {self.size} members, too many "
                          f"for an exhaustive check; the largest n that runs is {largest}", "--verify")

    def _verify_pairwise(self) -> FoolingVerification:
        """Evaluate f on every crossing (x_i, y_j) with the problem's own truth function."""
        A, B = self.pairs()
        s, b = self.size, self.value
        own = self.problem.evaluate_batch(A, B)
        wrong = np.flatnonzero(own != b)
        if wrong.size:
            i = int(wrong[0])
            return FoolingVerification(False, f"pairwise: member {i} has f = {int(own[i])}, not {b}", s,
                                       {"member": i, "alice": A[i].tolist(), "bob": _jsonable(B[i]),
                                        "value": int(own[i])})
        S = _cross_table(self.problem, A, B)
        bad = (S == b) & (S.T == b)
        np.fill_diagonal(bad, False)
        if bad.any():
            i, j = (int(v) for v in np.argwhere(bad)[0])
            return FoolingVerification(False, f"pairwise: members {i} and {j} cross to f = {b} both ways", s * s,
                                       {"members": [i, j], "alice": [A[i].tolist(), A[j].tolist()],
                                        "bob": [_jsonable(B[i]), _jsonable(B[j])]})
        return FoolingVerification(True, f"pairwise, exhaustive: f = {b} on all {s} members and on all "
                                         f"{s * (s - 1)} crossings (x_i, y_j), i != j, at least one of each "
                                         f"pair differs from {b} (problem's truth function)", s * s)

    # -- reports
    def to_dict(self, verification: FoolingVerification | None = None) -> dict:
        """The ``commsim fooling --json`` object (contract keys first)."""
        method = self.construction
        if verification is not None:
            method = f"{self.construction}; verified by {verification.method}"
        bound = self.lower_bound
        return {"problem": self.name, "n": self.n, "size": self.size, "log2_size": self.log2_size,
                "lower_bound_bits": bound.bits, "verified": None if verification is None else verification.ok,
                "method": method, "kind": self.kind, "value": self.value, "lower_bound": bound.to_dict(),
                "verification": None if verification is None else verification.to_dict()}


def _jsonable(x):
    return x.tolist() if isinstance(x, np.ndarray) else int(x)


def _cross_table(problem: Problem, A: np.ndarray, B: np.ndarray, budget: int = 1 << 20) -> np.ndarray:
    """S[i, j] = f(A[i], B[j]) for all i, j, evaluated in row chunks with the problem's truth function."""
    s = len(A)
    S = np.empty((s, len(B)), dtype=np.uint8)
    rows = max(1, budget // max(len(B), 1))
    for lo in range(0, s, rows):
        hi = min(lo + rows, s)
        Ar = np.repeat(A[lo:hi], len(B), axis=0)
        Bt = np.tile(B, (hi - lo,) + (1,) * (B.ndim - 1))
        S[lo:hi] = problem.evaluate_batch(Ar, Bt).reshape(hi - lo, len(B))
    return S


@dataclass(frozen=True)
class IndexRows(FoolingSet):
    """INDEX_n one-way: all 2^n Alice inputs; rows a -> (a_b)_b are pairwise distinct."""

    def member_arrays(self, start=0, stop=None):
        start, stop = self._range(start, stop)
        return _bits_of_range(start, stop, self.n), None

    def bound_for(self, direction: str) -> LowerBound:
        bound = super().bound_for(direction)
        if direction == "one-way":
            return bound
        n = self.n
        return bound.not_applicable(
            f"the 2^n distinct rows of INDEX bound one-way protocols only; two-way, Bob sends b and Alice "
            f"answers a_b with ceil(log2 n) + 1 bits, and the log-rank bound (rank n) gives only "
            f"ceil(log2 n) = {ceil_log2(n)} bits", bits=ceil_log2(n),
            source="log-rank bound for INDEX (rank n), REFERENCE section 2")

    def verify(self, *, pairwise_limit: int = PAIRWISE_LIMIT) -> FoolingVerification:
        """Evaluate the whole 2^n x n table of INDEX and check its rows are pairwise distinct."""
        n = self.n
        if n > INDEX_TABLE_MAX_N:
            raise InputError(f"--verify: the INDEX table at n = {n} has 2^{n} x {n} entries, too many for an "
                             f"exhaustive check; the largest n that runs is {INDEX_TABLE_MAX_N}", "--verify")
        A, _ = self.pairs(limit=1 << INDEX_TABLE_MAX_N)
        bobs = self.problem.bob_inputs()
        table = _cross_table(self.problem, A, bobs)
        packed = np.packbits(table, axis=1)
        digests = packed.view(np.dtype((np.void, packed.shape[1]))).reshape(-1)
        clash = find_transcript_collision(digests)
        checks = int(table.size)
        if clash is not None:
            i, j = clash
            return FoolingVerification(False, f"exhaustive table: Alice inputs {i} and {j} have equal rows", checks,
                                       {"members": [i, j], "alice": [A[i].tolist(), A[j].tolist()]})
        return FoolingVerification(True, f"exhaustive: all {len(A)} x {n} values of INDEX evaluated; the {len(A)} "
                                         f"rows are pairwise distinct (checked by sorting), so every two Alice "
                                         f"inputs are separated by some Bob index", checks)


@dataclass(frozen=True)
class EqualityDiagonal(FoolingSet):
    """EQ_n: {(x, x)}, value 1."""

    def member_arrays(self, start=0, stop=None):
        start, stop = self._range(start, stop)
        A = _bits_of_range(start, stop, self.n)
        return A, A.copy()


@dataclass(frozen=True)
class DisjointComplements(FoolingSet):
    """DISJ_n: {(x, complement of x)}, value 0 (disjoint; the papers' DISJ = 1 on intersecting sets)."""

    def member_arrays(self, start=0, stop=None):
        start, stop = self._range(start, stop)
        A = _bits_of_range(start, stop, self.n)
        return A, (1 - A).astype(np.uint8)


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
            raise InputError(f"--verify: Dyck-(2,2) at N = {self.n} has 2^{self.n - 1} members, too many for a "
                             f"member-by-member check; the largest N that runs is {DYCK_STRUCTURAL_MAX_N}", "--verify")
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


# ---- construction ----------------------------------------------------------------
def check_problem_args(problem_name: str, n, max_n: int | None = None, names=FOOLING_PROBLEMS) -> int:
    """Validate a (PROBLEM, --n) pair with one-line messages naming the argument; returns n as int."""
    if problem_name not in names:
        raise InputError(f"unknown problem {problem_name!r}; expected one of {', '.join(names)}", "PROBLEM")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise InputError(f"--n must be an integer, got {n!r}", "--n")
    n = int(n)
    minimum = 2 if problem_name == "dyck22" else 1
    if n < minimum:
        raise InputError(f"--n must be at least {minimum} for {problem_name}, got {n}", "--n")
    if problem_name == "dyck22" and n % 2:
        raise InputError(f"--n must be even for dyck22 (Dyck strings have even length), got {n}", "--n")
    if max_n is not None and n > max_n:
        raise InputError(f"--n = {n} is too large; the largest n that runs is {max_n}", "--n")
    return n


def fooling_set(problem_name: str, n: int) -> FoolingSet:
    """The fooling set of REFERENCE section 2 for ``problem_name`` (index, eq, disj, dyck22) at size n."""
    n = check_problem_args(problem_name, n, MAX_FOOLING_N)
    problem = make_problem(problem_name, n)
    if problem_name == "index":
        return IndexRows(problem, 1 << n, "one-way", None,
                         f"all 2^{n} Alice inputs a in {{0,1}}^{n}; rows (a_b)_b pairwise distinct (one-way)",
                         "pigeonhole over Alice's messages; REFERENCE section 2 (used in Theorem 3 of [BHBK24])",
                         f"a one-way protocol for INDEX_{n} sends >= {n} bits: the 2^{n} Alice inputs need "
                         f"pairwise distinct messages", "contiguous")
    if problem_name == "eq":
        return EqualityDiagonal(problem, 1 << n, "two-way", 1,
                                f"{{(x, x) : x in {{0,1}}^{n}}}, value 1, size 2^{n}",
                                "fooling set {(x, x)} (Fact 4 of [BHBK24]); REFERENCE section 2",
                                f"every deterministic protocol for EQ_{n} sends >= {n} bits", "contiguous")
    if problem_name == "disj":
        return DisjointComplements(problem, 1 << n, "two-way", 0,
                                   f"{{(x, complement of x) : x in {{0,1}}^{n}}}, value 0 (disjoint), size 2^{n}",
                                   "fooling set {(x, complement x)} (Fact 4 of [BHBK24]); REFERENCE section 2",
                                   f"every deterministic protocol for DISJ_{n} sends >= {n} bits", "contiguous")
    size = count_dyck(n, 2, 2)
    return DyckMembers(problem, size, "two-way", 1,
                       f"all members of Dyck-(2,2) of length N = {n}, counted exactly by DP over the automaton's "
                       f"7 live stack states; Alice holds the odd positions, Bob the even ones; value 1",
                       "Lemma 1 of [BHBK24] (fooling set, Appendix E)",
                       f"every deterministic protocol deciding Dyck-(2,2) membership with the odd/even split "
                       f"sends >= N - 1 = {n - 1} bits", "odd-even")


def largest_verifiable_n(problem_name: str, pairwise_limit: int = PAIRWISE_LIMIT) -> int:
    """The largest n for which :meth:`FoolingSet.verify` runs."""
    if problem_name == "index":
        return INDEX_TABLE_MAX_N
    if problem_name == "dyck22":
        return DYCK_STRUCTURAL_MAX_N
    if problem_name in ("eq", "disj"):
        return pairwise_limit.bit_length() - 1
    raise InputError(f"unknown problem {problem_name!r}; expected one of {', '.join(FOOLING_PROBLEMS)}", "PROBLEM")


def cross(fs: FoolingSet, i: int, j: int) -> list[Crossing]:
    """The crossed inputs of members i and j, with their true values.

    Two-way set: ``[(x_i, y_j, f), (x_j, y_i, f)]``; at least one value differs from the set's
    value b, so a protocol giving members i and j the same transcript answers one of these wrongly
    (rectangle property, REFERENCE section 1).
    One-way set (INDEX): the Bob input b separating the two Alice inputs, ``[(x_i, b, f), (x_j, b, f)]``
    with different values; a one-way protocol sending the same message for x_i and x_j gives Bob
    the same view on both, so it answers one of them wrongly.
    """
    if i == j:
        raise InputError(f"cross needs two distinct members, got {i} twice")
    xi, yi = fs.member(i)
    xj, yj = fs.member(j)
    f = fs.problem.evaluate
    if fs.kind == "two-way":
        return [Crossing(xi, yj, f(xi, yj)), Crossing(xj, yi, f(xj, yi))]
    bobs = fs.problem.bob_inputs()
    reps = (len(bobs),) + (1,) * (np.ndim(xi))
    rows = fs.problem.evaluate_batch(np.stack([np.tile(xi, reps), np.tile(xj, reps)]).reshape(-1, *np.shape(xi)),
                                     np.concatenate([bobs, bobs])).reshape(2, len(bobs))
    separating = np.flatnonzero(rows[0] != rows[1])
    if separating.size:
        b = bobs[int(separating[0])]
        b = b.item() if isinstance(b, np.generic) else b
        return [Crossing(xi, b, f(xi, b)), Crossing(xj, b, f(xj, b))]
    raise InputError(f"members {i} and {j} of the {fs.name} set have equal rows: no separating Bob input")
