"""The fooling set as a value: members, exact size, the lower bound it gives, and exhaustive verification.

A *fooling set* for f (Definition 1 / Fact 4 of [BHBK24]) is a set S of input
pairs and a value b with f(x, y) = b on S such that for every two distinct members (x1, y1), (x2, y2):
f(x1, y2) != b or f(x2, y1) != b.  Distinct members then need distinct transcripts (rectangle property),
so every deterministic protocol sends >= log2 |S| bits.  The sets themselves are built in
:mod:`commsim.theory.fooling` (INDEX, EQ, DISJ) and :mod:`commsim.theory.dyck_fooling` (Dyck-(2,2)).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, NamedTuple

import numpy as np

from commsim.core.errors import InputError
from commsim.theory.bounds import Conditions, LowerBound, ceil_log2, log2_exact
from commsim.theory.problems import Problem

#: largest fooling set whose |S|^2 crossings are all evaluated (pairwise verification)
PAIRWISE_LIMIT = 1 << 12


#: members per vectorized chunk
CHUNK = 1 << 16


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


# ---- the fooling set ----------------------------------------------------------------
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
                             f"at most {limit} are materialized at once (use members() for chunks)", "n")
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
    @staticmethod
    def largest_verifiable_n(pairwise_limit: int = PAIRWISE_LIMIT) -> int:
        """The largest n whose set (2^n members) :meth:`verify` checks pairwise."""
        return pairwise_limit.bit_length() - 1

    def verify(self, *, pairwise_limit: int = PAIRWISE_LIMIT) -> FoolingVerification:
        """Check the fooling property exhaustively (pairwise for |S| <= ``pairwise_limit``).

        Raises :class:`InputError` naming the largest verifiable n when the set is too large.
        """
        if self.size > pairwise_limit:
            raise self._too_large(pairwise_limit)
        return self._verify_pairwise()

    def _too_large(self, pairwise_limit: int = PAIRWISE_LIMIT) -> InputError:
        largest = self.largest_verifiable_n(pairwise_limit)
        return InputError(f"the {self.name} fooling set at n = {self.n} has {self.size} members, too many "
                          f"for an exhaustive check; the largest n that runs is {largest}", "verify")

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
        S = cross_table(self.problem, A, B)
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


def cross_table(problem: Problem, A: np.ndarray, B: np.ndarray, budget: int = 1 << 20) -> np.ndarray:
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
