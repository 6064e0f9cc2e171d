"""Fooling sets: build, count, verify; rectangle crossings for certificates.

A *fooling set* for f (Definition 1 / Fact 4 of [BHBK24]) is a set S of
input pairs and a value b with f(x, y) = b on S such that for every two distinct members
(x1, y1), (x2, y2): f(x1, y2) != b or f(x2, y1) != b.  Distinct members then need distinct
transcripts (rectangle property), so every deterministic protocol sends >= log2 |S| bits.

The sets (Facts 1-4 of [BHBK24], Appendices B.1 and E), built by :func:`fooling_set` -- values of
:class:`~commsim.theory.fooling_set.FoolingSet`; the Dyck one lives in :mod:`commsim.theory.dyck_fooling`:

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

import numpy as np

from commsim.core.digests import collision_groups
from commsim.core.errors import InputError
from commsim.core.limits import check_size, show_size
from commsim.theory.bounds import LowerBound, ceil_log2
from commsim.theory.dyck import count_dyck
from commsim.theory.dyck_fooling import DYCK_STRUCTURAL_MAX_N, DyckMembers
from commsim.theory.fooling_set import (
    PAIRWISE_LIMIT,
    Crossing,
    FoolingSet,
    FoolingVerification,
    cross_table,
)
from commsim.theory.problems import make_problem

__all__ = ["FOOLING_PROBLEMS", "FoolingSet", "FoolingVerification", "Crossing", "IndexRows", "EqualityDiagonal",
           "DisjointComplements", "DyckMembers", "check_problem_args", "fooling_set", "largest_verifiable_n", "cross",
           "INDEX_TABLE_MAX_N", "DYCK_STRUCTURAL_MAX_N", "MAX_FOOLING_N"]

FOOLING_PROBLEMS = ("index", "eq", "disj", "dyck22")


#: INDEX: the 2^n x n table is evaluated in full up to this n
INDEX_TABLE_MAX_N = 20


#: largest n for which a fooling set (exact size) is built at all
MAX_FOOLING_N = 100_000


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


@dataclass(frozen=True)
class IndexRows(FoolingSet):
    """INDEX_n one-way: all 2^n Alice inputs; rows a -> (a_b)_b are pairwise distinct."""

    @staticmethod
    def largest_verifiable_n(pairwise_limit: int = PAIRWISE_LIMIT) -> int:
        """The largest n whose full 2^n x n table :meth:`verify` evaluates."""
        return INDEX_TABLE_MAX_N

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
            source="log-rank bound for INDEX (rank n; Kushilevitz and Nisan, ch. 1)")

    def verify(self, *, pairwise_limit: int = PAIRWISE_LIMIT) -> FoolingVerification:
        """Evaluate the whole 2^n x n table of INDEX and check its rows are pairwise distinct."""
        n = self.n
        if n > INDEX_TABLE_MAX_N:
            raise InputError(f"the INDEX table at n = {n} has 2^{n} x {n} entries, too many for an "
                             f"exhaustive check; the largest n that runs is {INDEX_TABLE_MAX_N}", "verify")
        A, _ = self.pairs(limit=1 << INDEX_TABLE_MAX_N)
        bobs = self.problem.bob_inputs()
        table = cross_table(self.problem, A, bobs)
        clash = collision_groups(np.packbits(table, axis=1)).first()
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


# ---- construction ----------------------------------------------------------------
def check_problem_args(problem_name: str, n, max_n: int | None = None, names=FOOLING_PROBLEMS) -> int:
    """Validate a (problem, n) pair with one-line messages naming the parameter; returns n as int."""
    if problem_name not in names:
        raise InputError(f"unknown problem {problem_name!r}; expected one of {', '.join(names)}", "problem")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise InputError(f"n must be an integer, got {n!r}", "n")
    n = int(n)
    minimum = 2 if problem_name == "dyck22" else 1
    if n < minimum:
        raise InputError(f"n must be at least {minimum} for {problem_name}, got {show_size(n)}", "n")
    if max_n is not None:
        check_size(n, "n", minimum, max_n)
    if problem_name == "dyck22" and n % 2:
        raise InputError(f"n must be even for dyck22 (Dyck strings have even length), got {show_size(n)}", "n")
    return n


def fooling_set(problem_name: str, n: int) -> FoolingSet:
    """The fooling set (Facts 1-4 of [BHBK24]) for ``problem_name`` (index, eq, disj, dyck22) at size n."""
    n = check_problem_args(problem_name, n, MAX_FOOLING_N)
    problem = make_problem(problem_name, n)
    if problem_name == "index":
        return IndexRows(problem, 1 << n, "one-way", None,
                         f"all 2^{n} Alice inputs a in {{0,1}}^{n}; rows (a_b)_b pairwise distinct (one-way)",
                         "pigeonhole over Alice's messages (Fact 3 of [BHBK24], used in Theorem 3)",
                         f"a one-way protocol for INDEX_{n} sends >= {n} bits: the 2^{n} Alice inputs need "
                         f"pairwise distinct messages", "contiguous")
    if problem_name == "eq":
        return EqualityDiagonal(problem, 1 << n, "two-way", 1,
                                f"{{(x, x) : x in {{0,1}}^{n}}}, value 1, size 2^{n}",
                                "fooling set {(x, x)} (Facts 2 and 4 of [BHBK24])",
                                f"every deterministic protocol for EQ_{n} sends >= {n} bits", "contiguous")
    if problem_name == "disj":
        return DisjointComplements(problem, 1 << n, "two-way", 0,
                                   f"{{(x, complement of x) : x in {{0,1}}^{n}}}, value 0 (disjoint), size 2^{n}",
                                   "fooling set {(x, complement x)} (Facts 1 and 4 of [BHBK24])",
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
    sets = {"index": IndexRows, "eq": EqualityDiagonal, "disj": DisjointComplements, "dyck22": DyckMembers}
    if problem_name in sets:
        return sets[problem_name].largest_verifiable_n(pairwise_limit)
    raise InputError(f"unknown problem {problem_name!r}; expected one of {', '.join(FOOLING_PROBLEMS)}", "problem")


def cross(fs: FoolingSet, i: int, j: int) -> list[Crossing]:
    """The crossed inputs of members i and j, with their true values.

    Two-way set: ``[(x_i, y_j, f), (x_j, y_i, f)]``; at least one value differs from the set's
    value b, so a protocol giving members i and j the same transcript answers one of these wrongly
    (rectangle property, behind Fact 4 of [BHBK24]).
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
