"""Sign keys for q-sparse averaging with k = O(q log N), found and verified (the keys of ``construct:qsa:keys=rip``).

The Hsu slides ("Construction using q-neighborly 0/1 polytopes", after Candès and Tao) state that there are
u_1..u_N in {+-1/sqrt(k)}^k with k = O(q log N) such that every q-set S of [N] has a w_S with

    ||w_S|| <= 2 sqrt(q),   <w_S, u_j> = 1 (j in S),   |<w_S, u_j>| <= 1/2 (j not in S).

The proof is probabilistic.  At the sizes commsim runs, the keys are *found and verified* instead
(commsim's own procedure, not the paper's):

* keys at a width k are seeded random signs s_j in {+-1}^k (u_j = s_j / sqrt(k)), drawn from
  ``numpy.random.default_rng([seed, k])``; the integer Gram matrix P = s s^T carries every inner
  product: <u_i, u_j> = P_ij / k;
* for a set S, the candidate is the least-norm w with <w, u_j> = 1 on S: w = sqrt(k) s_S^T x with
  P_S x = 1.  Writing x = adj(P_S) 1 / det(P_S), <w, u_j> = P_(j,S) adj(P_S) 1 / det(P_S) and
  ||w||^2 = k 1^T adj(P_S) 1 / det(P_S) -- integers over an integer, so the three conditions are checked
  exactly, in int64, for all C(N, q) sets at once;
* a set whose candidate breaks a condition gets a primal active-set iteration for the least-norm w under
  all three conditions: the worst offending j joins the equalities with <w, u_j> = sign/2 (w = sqrt(k) s_A^T x
  with P_A x = b, b in {1, +-1/2}, x the multipliers up to a positive factor), and a joined constraint whose
  multiplier has the wrong sign leaves again (at most k equalities, 4k steps).  The iteration runs in float64
  only to choose A and b; the (A, b) it returns is verified again in exact integer arithmetic (Cramer's rule
  by Bareiss elimination): the equalities hold exactly, every other |<w, u_j>| <= 1/2 and ||w||^2 <= 4q.
  (At the optimum of the least-norm problem the active constraints form such an (A, b), so the iteration
  finds it whenever it ends there; when it gives up, the width is rejected -- never a set passed unchecked);
* k grows geometrically (x 5/4) from q + log2 N until every set passes, then a bisection between the
  last failed and the passed width looks for a smaller one (a fresh draw at each width).  A width is
  rejected when a set fails, or when more than FALLBACK_CAP (8192) sets need the iteration (a cost cap).

The returned k is therefore the smallest width *this search* verified, not the smallest possible; its
keys satisfy the stated property on every one of the C(N, q) sets, each checked exactly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from itertools import combinations

import numpy as np

from protocols.constructions.common import ConstructionError

__all__ = [
    "RIP_MAX_K",
    "RIP_MAX_Q",
    "RIP_MAX_SETS",
    "RipKeys",
    "active_set",
    "all_sets",
    "closed_form_failures",
    "exact_check",
    "find_rip_keys",
    "solve_integer",
    "verify_keys",
]

#: the integer verification stays inside int64 up to q = 4 and k = RIP_MAX_K
RIP_MAX_Q = 4
#: at most this many q-sets are verified (C(64, 3) = 41,664 and C(128, 2) = 8,128 fit)
RIP_MAX_SETS = 1 << 17
RIP_MAX_K = 1024
_CHUNK = 1 << 21
#: at most this many sets per width go to the active-set iteration (a cost cap; more rejects the width)
FALLBACK_CAP = 8192


@dataclass(frozen=True)
class RipKeys:
    """Verified keys: ``signs`` (N, k) in {+-1}; for each set the equalities (A, b) of its w_S
    (``extra`` holds the sets whose A is more than S); ``tried`` the widths probed and their outcome."""

    signs: np.ndarray
    q: int
    seed: int
    sets_verified: int
    extra: dict = field(default_factory=dict)
    tried: tuple = ()

    @property
    def N(self) -> int:
        return int(self.signs.shape[0])

    @property
    def k(self) -> int:
        return int(self.signs.shape[1])

    @property
    def keys(self) -> np.ndarray:
        """u_j = s_j / sqrt(k), (N, k)."""
        return self.signs.astype(np.float64) / math.sqrt(self.k)

    def query(self, S) -> np.ndarray:
        """w_S (k,): sqrt(k) s_A^T x with P_A x = b for the set's verified equalities (A, b)."""
        S = tuple(sorted(int(j) for j in S))
        A, b = self.extra.get(S, (S, (Fraction(1),) * len(S)))
        sA = self.signs[list(A)].astype(np.int64)
        y, D = solve_integer((sA @ sA.T).tolist(), [int(2 * Fraction(v)) for v in b])
        return math.sqrt(self.k) * (sA.T.astype(np.float64) @ np.array([yi / D for yi in y]))

    def describe(self) -> str:
        return (f"k = {self.k} random sign keys (seed {self.seed}); every one of the C({self.N}, {self.q}) = "
                f"{self.sets_verified} q-sets verified exactly ({len(self.extra)} by the active-set iteration)")


def all_sets(N: int, q: int) -> np.ndarray:
    """Every q-subset of range(N), (C(N, q), q), in lexicographic order."""
    return np.array(list(combinations(range(N), q)), dtype=np.int64).reshape(-1, q)


def _det(M: np.ndarray) -> np.ndarray:
    """Integer determinants of stacked (..., n, n) int64 matrices by Laplace expansion (n <= 4)."""
    n = M.shape[-1]
    if n == 1:
        return M[..., 0, 0]
    cols = list(range(n))
    return sum((-1) ** j * M[..., 0, j] * _det(M[..., 1:, :][..., [c for c in cols if c != j]]) for j in cols)


def _adjugate(M: np.ndarray) -> np.ndarray:
    """adj(M) of stacked (..., n, n) int64 matrices: adj_ij = (-1)^(i+j) det(M without row j, column i)."""
    n = M.shape[-1]
    if n == 1:
        return np.ones_like(M)
    out = np.empty_like(M)
    idx = list(range(n))
    for i in idx:
        for j in idx:
            minor = M[..., [r for r in idx if r != j], :][..., [c for c in idx if c != i]]
            out[..., i, j] = (-1) ** (i + j) * _det(minor)
    return out


def closed_form_failures(P: np.ndarray, sets: np.ndarray, k: int) -> np.ndarray:
    """The rows of ``sets`` whose least-norm equality solution breaks a condition, checked on integers:
    det(P_S) > 0, 2 |P_(j,S) c| <= det for j not in S, P_S c = det 1, and k sum(c) <= 4q det (c = adj(P_S) 1)."""
    N, q = P.shape[0], sets.shape[1]
    bad = []
    step = max(1, _CHUNK // max(N * q, 1))
    for lo in range(0, len(sets), step):
        idx = sets[lo:lo + step]
        G = P[idx[:, :, None], idx[:, None, :]]
        det = _det(G)
        c = _adjugate(G).sum(-1)
        inner = np.einsum("cjq,cq->cj", P[idx].transpose(0, 2, 1), c)
        outside = np.ones(inner.shape, dtype=bool)
        np.put_along_axis(outside, idx, False, axis=1)
        on_set = np.take_along_axis(inner, idx, axis=1)
        ok = ((det > 0) & np.all(on_set == det[:, None], axis=1)
              & np.all(~outside | (2 * np.abs(inner) <= det[:, None]), axis=1) & (k * c.sum(-1) <= 4 * q * det))
        bad.append(lo + np.flatnonzero(~ok))
    return np.concatenate(bad) if bad else np.zeros(0, dtype=np.int64)


def active_set(P: np.ndarray, S, k: int):
    """The equalities (A, b) of a w_S, or None: a primal active-set iteration for the least-norm w with the
    three conditions.  With w = sqrt(k) s_A^T x and P_A x = b, x holds the multipliers (up to a positive factor);
    a constraint <w, u_j> = +-1/2 whose multiplier has the sign of its bound is dropped, else the worst offending
    j joins with <w, u_j> = sign/2.  float64 only chooses A and b; :func:`exact_check` decides."""
    q = len(S)
    A, b = list(S), [1.0] * q
    for _ in range(4 * k):
        try:
            x = np.linalg.solve(P[np.ix_(A, A)].astype(np.float64), np.array(b))
        except np.linalg.LinAlgError:
            return None
        wrong = [i for i in range(q, len(A)) if x[i] * b[i] > 1e-12]
        if wrong:
            i = max(wrong, key=lambda i: x[i] * b[i])
            del A[i], b[i]
            continue
        inner = P[:, A] @ x
        inner[A] = 0.0
        j = int(np.argmax(np.abs(inner)))
        if abs(inner[j]) <= 0.5 - 1e-9:
            if k * float(np.dot(b, x)) > 4 * q - 1e-9:
                return None
            return tuple(A), tuple(Fraction(1) if v == 1.0 else Fraction(int(np.sign(v)), 2) for v in b)
        if len(A) >= k:
            return None
        A.append(j)
        b.append(0.5 * float(np.sign(inner[j])))
    return None


def solve_integer(M: list, b2: list) -> tuple[list, int]:
    """(y, D) with M (y / D) = b2 / 2, D = 2 det(M) and y integer (Cramer's rule), for an integer matrix M;
    D = 0 if M is singular.  Bareiss's fraction-free elimination of [M | b2] (every division exact) gives
    det(M) and an integer triangular system; back substitution in Fractions gives x = y / D."""
    n = len(M)
    R = [[int(v) for v in M[i]] + [int(b2[i])] for i in range(n)]
    sign, prev = 1, 1
    for c in range(n):
        if R[c][c] == 0:
            r = next((r for r in range(c + 1, n) if R[r][c] != 0), None)
            if r is None:
                return [0] * n, 0
            R[c], R[r], sign = R[r], R[c], -sign
        for i in range(c + 1, n):
            for j in range(c + 1, n + 1):
                R[i][j] = (R[i][j] * R[c][c] - R[i][c] * R[c][j]) // prev
            R[i][c] = 0
        prev = R[c][c]
    det = sign * R[n - 1][n - 1]
    x = [Fraction(0)] * n
    for i in range(n - 1, -1, -1):
        x[i] = (R[i][n] - sum(R[i][j] * x[j] for j in range(i + 1, n))) / Fraction(R[i][i])
    y = [v * det for v in x]                   # M x = b2, so x / 2 = y / D with y = det x = adj(M) b2
    if any(v.denominator != 1 for v in y):
        raise ArithmeticError("Cramer's numerators are integers")
    return [int(v) for v in y], 2 * det


def exact_check(P: np.ndarray, S, A, b, k: int) -> bool:
    """The key property for S in exact integer arithmetic: w = sqrt(k) s_A^T x with P_A x = b (b in
    {1, +-1/2}), so <w, u_j> = P_(j,A) x and ||w||^2 = k b.x.  With x = y / D (:func:`solve_integer`, D > 0 as
    P_A is a Gram matrix): P_(j,A) y = D on S, 2 |P_(j,A) y| <= D off S, and k (2b).y <= 8q D."""
    A = [int(a) for a in A]
    b2 = [int(2 * Fraction(v)) for v in b]
    y, D = solve_integer(P[np.ix_(A, A)].tolist(), b2)
    if D <= 0:
        return False
    q = len(S)
    if k * sum(bi * yi for bi, yi in zip(b2, y)) > 8 * q * D:
        return False
    inner = P[:, A].astype(object) @ np.array(y, dtype=object)
    on = np.zeros(P.shape[0], dtype=bool)
    on[[int(j) for j in S]] = True
    return bool(all(v == D for v in inner[on]) and all(2 * abs(v) <= D for v in inner[~on]))


def verify_keys(signs: np.ndarray, q: int, *, cap: int | None = None):
    """Verify signs (N, k) for every q-set: the ``extra`` dict {S: (A, b)} when all pass, else None
    (also None when more than ``cap`` sets need the active-set iteration)."""
    s = np.asarray(signs, dtype=np.int64)
    N, k = s.shape
    P = s @ s.T
    sets = all_sets(N, q)
    failing = closed_form_failures(P, sets, k)
    if cap is not None and len(failing) > cap:
        return None
    extra = {}
    for r in failing:
        S = tuple(int(j) for j in sets[r])
        found = active_set(P, S, k)
        if found is None or not exact_check(P, S, *found, k):
            return None
        extra[S] = found
    return extra


def _draw(N: int, k: int, seed: int) -> np.ndarray:
    return np.random.default_rng([int(seed), int(k)]).choice(np.array([-1, 1], dtype=np.int8), size=(N, k))


@lru_cache(maxsize=32)
def find_rip_keys(N: int, q: int, seed: int = 0) -> RipKeys:
    """The search of the module docstring: keys at the smallest width it verifies for every q-set of [N]."""
    if not 1 <= q <= RIP_MAX_Q:
        raise ConstructionError(f"keys=rip is verified for 1 <= q <= {RIP_MAX_Q}, got q = {q}", "model")
    if N < q + 1:
        raise ConstructionError(f"keys=rip needs N >= q + 1 keys, got N = {N}", "model")
    total = math.comb(N, q)
    if total > RIP_MAX_SETS:
        raise ConstructionError(f"keys=rip verifies every q-set: C({N}, {q}) = {total} is over {RIP_MAX_SETS}; "
                                f"use a smaller length or keys=lemma2", "model")
    cap = min(total, FALLBACK_CAP)
    tried = []

    def probe(k: int):
        signs = _draw(N, k, seed)
        extra = verify_keys(signs, q, cap=cap)
        tried.append((k, extra is not None))
        return None if extra is None else RipKeys(signs, q, seed, total, extra)

    lo, k, found = 0, q + max(1, math.ceil(math.log2(N))), None
    while found is None:
        if k > RIP_MAX_K:
            raise ConstructionError(f"keys=rip found no verified keys up to k = {RIP_MAX_K} (N = {N}, q = {q})",
                                    "model")
        found = probe(k)
        if found is None:
            lo, k = k, max(k + 1, math.ceil(1.25 * k))
    hi = found.k
    while hi - lo > 1:
        mid = (lo + hi) // 2
        better = probe(mid)
        if better is None:
            lo = mid
        else:
            hi, found = mid, better
    return RipKeys(found.signs, q, seed, total, found.extra, tuple(tried))
