"""Nearly orthogonal sign vectors (Lemma 2 and Corollary 8.1 of [BHBK24]).

N vectors T(1..N) in {+-1/sqrt(k)}^k with <T(i), T(i)> = 1 and |<T(i), T(j)>| <= gamma for i != j.
The lemma's probabilistic argument (Hoeffding plus a union bound over the pairs) says random signs
work with probability at least 1/2 once k = 8 ln(2N) / gamma^2.  Here a seeded search finds much
smaller k, and every set it returns is *verified exactly*:

* the vectors are stored as +-1 signs, so <T(i), T(j)> = G_ij / k with G the integer Gram matrix of
  the signs; the condition is |G_ij| <= floor(gamma k), checked on integers;
* G is computed by blocked float32 matrix products (upper-triangular tiles only); its entries are
  integers of magnitude <= k < 2^24, so float32 holds them exactly.

The search draws random signs, then repairs: every vector in a violating pair (one per pair) is
redrawn and re-checked against all others, until no pair violates (a Moser-Tardos resampling; the
Lovász local lemma guarantees it succeeds once e * p * (2N - 3) <= 1, where p is the exact binomial
probability that one pair violates).  :func:`smallest_k` walks k down from where a redraw is expected
to create fewer than 1/4 new violations and bisects for the smallest k whose search succeeds.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from commsim.contract import InputError

__all__ = ["NearlyOrthogonal", "theorem_k", "pair_violation_probability", "lll_k", "start_k", "search",
           "find", "smallest_k", "gram_violations", "max_abs_inner", "DEFAULT_GAMMA", "MAX_K"]

DEFAULT_GAMMA = 0.25
_TILE_ROWS = 2048
_TILE_COLS = 8192


#: the widest set built: Lemma 2's k at gamma = 0.1 and the longest sequence (N = 4096) is 7,210
MAX_K = 1 << 13


def theorem_k(n: int, gamma: float = DEFAULT_GAMMA) -> int:
    """Lemma 2's dimension: k = 8 ln(2N) / gamma^2 (rounded up).  An :class:`InputError` naming gamma when
    gamma is not in (0, 1) or so small that k passes :data:`MAX_K` (every search starts below this k, so a
    gamma refused here is refused before any work; gamma = 1e-300 would divide by gamma^2 = 0)."""
    try:
        gamma = float(gamma)
    except (TypeError, ValueError):
        gamma = math.nan
    if not 0 < gamma < 1:                       # NaN too
        raise InputError(f"gamma must be a number in (0, 1) (Lemma 2), got {gamma!r}", "gamma")
    numerator = 8 * math.log(2 * n)
    if numerator > MAX_K * gamma * gamma:       # k > MAX_K, judged without dividing by an underflowed gamma^2
        smallest = math.sqrt(numerator / MAX_K)
        k_text = f"{numerator / gamma / gamma:.3g}" if gamma > 1e-150 else "more than 10^300"
        raise InputError(f"gamma = {gamma:g} is too small for N = {n}: Lemma 2's width k = 8 ln(2N)/gamma^2 would "
                         f"be {k_text}; the widest set built has k = {MAX_K}, so gamma must be at least "
                         f"{math.ceil(smallest * 1000) / 1000:g}", "gamma")
    return math.ceil(numerator / gamma ** 2)


def _threshold(k: int, gamma: float) -> int:
    """Largest allowed |integer inner product| of two sign vectors of length k: floor(gamma k)."""
    return math.floor(gamma * k + 1e-9)


@lru_cache(maxsize=4096)
def pair_violation_probability(k: int, gamma: float = DEFAULT_GAMMA) -> float:
    """Exact probability that two independent uniform sign vectors of length k have
    |<s, t>| > gamma k (the inner product is 2B - k with B ~ Binomial(k, 1/2))."""
    t = _threshold(k, gamma)
    bad = sum(math.comb(k, b) for b in range(k + 1) if abs(2 * b - k) > t)
    return bad / 2 ** k


def lll_k(n: int, gamma: float = DEFAULT_GAMMA) -> int:
    """Smallest k meeting the symmetric local-lemma condition e * p * (2N - 3) <= 1: at this k a
    resampling search provably succeeds (Moser-Tardos), a much smaller k than Lemma 2's."""
    return _first_k(lambda k: math.e * pair_violation_probability(k, gamma) * max(2 * n - 3, 1) <= 1, gamma, n)


def start_k(n: int, gamma: float = DEFAULT_GAMMA) -> int:
    """Where :func:`smallest_k` starts: a redrawn vector is expected to violate with fewer than
    1/4 of the others (N p <= 1/4), so repairs die out quickly."""
    return _first_k(lambda k: n * pair_violation_probability(k, gamma) <= 0.25, gamma, n)


def _first_k(ok, gamma: float, n: int) -> int:
    """The smallest k from which ``ok`` holds for three values in a row (coarse scan, then fine)."""
    hi = max(theorem_k(n, gamma), 4)
    lo = 1
    # p(k) is not monotone in k at the level of single steps (the floor in the threshold), so scan
    # coarsely then finely: the smallest k from which the condition holds for the next 3 values too
    k = lo
    while k < hi and not ok(k):
        k += max(1, k // 64)
    k = max(lo, k - max(1, k // 64))
    while not (ok(k) and ok(k + 1) and ok(k + 2)):
        k += 1
    return k


@dataclass(frozen=True)
class NearlyOrthogonal:
    """A verified set of N sign vectors: ``signs`` is (N, k) int8 with entries +-1;
    T(i) = signs[i - 1] / sqrt(k) (1-based i as in the paper)."""

    signs: np.ndarray
    gamma: float
    seed: int
    max_abs_inner_int: int          # max over i != j of |<signs_i, signs_j>| (the threshold if not re-verified)
    rounds: int = 0                 # repair rounds the search used
    redrawn: int = 0                # vectors redrawn in all
    seconds: float = 0.0

    @property
    def n(self) -> int:
        """N: the number of vectors."""
        return int(self.signs.shape[0])

    @property
    def k(self) -> int:
        """k: the dimension."""
        return int(self.signs.shape[1])

    @property
    def threshold_int(self) -> int:
        """The largest |<s_i, s_j>| allowed for gamma (an integer: entries are +-1)."""
        return _threshold(self.k, self.gamma)

    @property
    def max_abs_inner(self) -> float:
        """max over i != j of |<T(i), T(j)>| (<= gamma)."""
        return self.max_abs_inner_int / self.k

    def vectors(self) -> np.ndarray:
        """T(1..N) as float64 rows (entries +-1/sqrt(k))."""
        return self.signs.astype(np.float64) / math.sqrt(self.k)

    def verify(self) -> bool:
        """Exact re-check of the whole Gram matrix (blocked float32 products of the signs)."""
        return max_abs_inner(self.signs) <= self.threshold_int and bool(np.all(np.abs(self.signs) == 1))

    def summary(self) -> dict:
        """The set's sizes and search statistics as a JSON-able dict."""
        return {"n": self.n, "k": self.k, "gamma": self.gamma, "seed": self.seed,
                "max_abs_inner": self.max_abs_inner, "max_abs_inner_times_k": self.max_abs_inner_int,
                "k_theorem": theorem_k(self.n, self.gamma), "repair_rounds": self.rounds,
                "vectors_redrawn": self.redrawn, "seconds": round(self.seconds, 3)}


# ---- exact Gram checks -----------------------------------------------------
def _tiles(n: int, rows=None):
    """Upper-triangular tiles (r0, r1, c0, c1) of an n x n Gram matrix, or the rows ``rows`` against all."""
    for r0 in range(0, n, _TILE_ROWS):
        r1 = min(r0 + _TILE_ROWS, n)
        for c0 in range(r0, n, _TILE_COLS):
            yield r0, r1, c0, min(c0 + _TILE_COLS, n)


def max_abs_inner(signs: np.ndarray) -> int:
    """max over i != j of |<signs_i, signs_j>|, exactly (0 for a single vector)."""
    s = np.asarray(signs, dtype=np.float32)
    n = s.shape[0]
    best = 0
    for r0, r1, c0, c1 in _tiles(n):
        g = s[r0:r1] @ s[c0:c1].T
        if c0 <= r0 < c1:  # the tile holds part of the diagonal: keep only j > i
            g = np.triu(g, k=r0 - c0 + 1)
        best = max(best, int(max(g.max(initial=0), -g.min(initial=0))))
    return best


def gram_violations(signs32: np.ndarray, threshold: int, rows: np.ndarray | None = None,
                    limit: int | None = None) -> np.ndarray | None:
    """Pairs (i, j), i != j, with |<signs_i, signs_j>| > threshold, as a (P, 2) array.

    With ``rows`` given, only pairs involving those rows (checked against every vector).  With
    ``limit``, gives up (returns None) as soon as more than ``limit`` pairs are found."""
    n = signs32.shape[0]
    found = []
    if rows is None:
        for r0, r1, c0, c1 in _tiles(n):
            g = signs32[r0:r1] @ signs32[c0:c1].T
            if c0 <= r0 < c1:  # a diagonal tile: only j > i counts
                g = np.triu(g, k=r0 - c0 + 1)
            if -threshold <= g.min() and g.max() <= threshold:
                continue
            i, j = np.nonzero(np.abs(g) > threshold)
            i, j = i + r0, j + c0
            keep = j > i
            if keep.any():
                found.append(np.stack([i[keep], j[keep]], axis=1))
                if limit is not None and sum(len(f) for f in found) > limit:
                    return None
    else:
        rows = np.unique(np.asarray(rows, dtype=np.int64))
        for r0 in range(0, rows.size, _TILE_ROWS):
            chunk = rows[r0:r0 + _TILE_ROWS]
            for c0 in range(0, n, _TILE_COLS):
                g = signs32[chunk] @ signs32[c0:c0 + _TILE_COLS].T
                i, j = np.nonzero(np.abs(g) > threshold)
                i, j = chunk[i], j + c0
                keep = i != j
                if keep.any():
                    found.append(np.sort(np.stack([i[keep], j[keep]], axis=1), axis=1))
    if not found:
        return np.zeros((0, 2), dtype=np.int64)
    return np.unique(np.concatenate(found), axis=0)


# ---- search ----------------------------------------------------------------
def search(n: int, k: int, gamma: float = DEFAULT_GAMMA, seed: int = 0, max_rounds: int = 60,
           max_redraw_fraction: float = 0.5, verify: bool = True) -> NearlyOrthogonal | None:
    """Random signs from ``seed``, repaired by redrawing one vector of every violating pair.

    Returns a set whose every pair has been checked with its final vectors, or None when the repair
    does not finish within ``max_rounds`` (or would redraw more than ``max_redraw_fraction`` of the
    vectors in one round: k is too small).  ``verify`` adds an independent full recomputation of
    the Gram matrix (and fills in the exact maximum |inner product|)."""
    if n < 1 or k < 1:
        raise ValueError(f"need n >= 1 and k >= 1, got n={n}, k={k}")
    start = time.perf_counter()
    rng = np.random.default_rng([int(seed), int(n), int(k)])
    threshold = _threshold(k, gamma)
    signs = (rng.integers(0, 2, size=(n, k), dtype=np.int8) * 2 - 1).astype(np.int8)
    s32 = signs.astype(np.float32)
    # more violating pairs than 2N cannot be repaired by redrawing at most half the vectors
    bad = gram_violations(s32, threshold, limit=2 * n)
    if bad is None:
        return None
    rounds = redrawn = 0
    while bad.size:
        rounds += 1
        if rounds > max_rounds:
            return None
        # one endpoint per violating pair: the larger index, unless the smaller is already chosen
        chosen: set[int] = set()
        for i, j in bad.tolist():
            if i not in chosen and j not in chosen:
                chosen.add(j)
        rows = np.fromiter(sorted(chosen), dtype=np.int64)
        if rows.size > max_redraw_fraction * n:
            return None
        fresh = (rng.integers(0, 2, size=(rows.size, k), dtype=np.int8) * 2 - 1).astype(np.int8)
        signs[rows] = fresh
        s32[rows] = fresh.astype(np.float32)
        redrawn += int(rows.size)
        # every pair that involves a redrawn vector is re-checked; all other pairs were already clean
        bad = gram_violations(s32, threshold, rows=rows)
    result = NearlyOrthogonal(signs, gamma, int(seed), threshold, rounds, redrawn, time.perf_counter() - start)
    return _verified(result) if verify else result


def _verified(result: NearlyOrthogonal) -> NearlyOrthogonal:
    """Recompute the whole Gram matrix independently; record the exact maximum |inner product|."""
    worst = max_abs_inner(result.signs)
    if worst > result.threshold_int:  # pragma: no cover - the search's bookkeeping makes this impossible
        raise AssertionError(f"nearly-orthogonal search bookkeeping failed: {worst} > {result.threshold_int}")
    return replace(result, max_abs_inner_int=worst)


@lru_cache(maxsize=32)
def find(n: int, gamma: float = DEFAULT_GAMMA, seed: int = 0, k: int | None = None) -> NearlyOrthogonal:
    """A verified set for N = ``n`` (cached): at ``k`` if given, else from :func:`start_k` upwards."""
    k = start_k(n, gamma) if k is None else int(k)
    step = max(1, k // 32)
    for _ in range(200):
        result = search(n, k, gamma, seed)
        if result is not None:
            return result
        k += step
    raise RuntimeError(f"no nearly orthogonal set found for N={n}, gamma={gamma}")  # pragma: no cover


@dataclass
class SmallestK:
    """The outcome of :func:`smallest_k`: the best verified set and every attempt made."""

    best: NearlyOrthogonal
    attempts: list = field(default_factory=list)   # [(k, succeeded, seconds)]

    def to_dict(self) -> dict:
        """The best set's summary with the bounds k is compared with and every attempt."""
        d = self.best.summary()
        d.update({"k_found": self.best.k, "k_lll": lll_k(self.best.n, self.best.gamma),
                  "k_start": start_k(self.best.n, self.best.gamma),
                  "ratio_to_theorem": self.best.k / theorem_k(self.best.n, self.best.gamma),
                  "attempts": [{"k": k, "found": ok, "seconds": round(t, 3)} for k, ok, t in self.attempts]})
        return d


def smallest_k(n: int, gamma: float = DEFAULT_GAMMA, seed: int = 0, *, floor: float = 0.5,
               resolution: int | None = None, progress=None) -> SmallestK:
    """The smallest k whose seeded search succeeds, by bisection.

    Starts at :func:`start_k` (walking up in steps of k/32 on failure), then bisects between the
    smallest success and ``floor`` times it (taken as a failure unless a search there succeeds, in
    which case the floor moves down), until the interval is ``resolution`` wide (default k/64).
    Only the final set is re-verified by an independent full Gram pass; every search checks each
    pair with its final vectors anyway."""
    attempts: list = []

    def attempt(k: int):
        """One seeded search at k, recorded."""
        t0 = time.perf_counter()
        result = search(n, k, gamma, seed, verify=False)
        attempts.append((k, result is not None, time.perf_counter() - t0))
        if progress:
            progress(n, k, result is not None)
        return result

    k = start_k(n, gamma)
    best = attempt(k)
    while best is None:
        k += max(1, k // 32)
        best = attempt(k)
    resolution = resolution or max(1, best.k // 64)
    lo = max(0, int(best.k * floor))
    while lo >= 1:                       # make sure lo fails (or reaches 0)
        found = attempt(lo)
        if found is None:
            break
        best, lo = found, int(lo * floor)
    while best.k - lo > resolution:
        mid = (lo + best.k) // 2
        found = attempt(mid)
        if found is None:
            lo = mid
        else:
            best = found
    return SmallestK(_verified(best), attempts)
