"""Binomial confidence intervals without the ``stats`` extra (:func:`commsim.core.stats.rate_interval` uses
statsmodels when it is installed, these otherwise).

* :func:`wilson`: the Wilson score interval, closed form, with the normal quantile of the standard library
  (``statistics.NormalDist``) -- the same formula statsmodels evaluates.
* :func:`clopper_pearson`: the exact interval, the ``alpha/2`` and ``1 - alpha/2`` quantiles of the beta
  distributions Beta(k, n - k + 1) and Beta(k + 1, n - k).  With scipy installed they are ``scipy.stats.beta``'s;
  without it, the same bounds are found by bisection on the binomial tail, which equals the regularized
  incomplete beta function (P[X >= k; p] = I_p(k, n - k + 1)), summed exactly in log space.
"""
from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["wilson", "clopper_pearson"]


def wilson(events: int, trials: int, alpha: float) -> tuple[float, float]:
    """The Wilson score interval of ``events / trials`` at level ``1 - alpha``."""
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    p, n = events / trials, trials
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denom
    return centre - half, centre + half


def clopper_pearson(events: int, trials: int, alpha: float) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of ``events / trials`` at level ``1 - alpha``."""
    k, n = events, trials
    try:
        from scipy.stats import beta
    except ImportError:
        low = 0.0 if k == 0 else _solve(lambda p: _upper_tail(k, n, p), alpha / 2.0, increasing=True)
        high = 1.0 if k == n else _solve(lambda p: 1.0 - _upper_tail(k + 1, n, p), alpha / 2.0, increasing=False)
        return low, high
    low = 0.0 if k == 0 else float(beta.ppf(alpha / 2.0, k, n - k + 1))
    high = 1.0 if k == n else float(beta.isf(alpha / 2.0, k + 1, n - k))
    return low, high


def _upper_tail(k: int, n: int, p: float) -> float:
    """P[X >= k] for X ~ Binomial(n, p), summed in log space (no overflow for any n)."""
    if p <= 0.0:
        return 1.0 if k <= 0 else 0.0
    if p >= 1.0:
        return 1.0 if k <= n else 0.0
    lp, lq = math.log(p), math.log1p(-p)
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq
            for i in range(max(k, 0), n + 1)]
    if not logs:
        return 0.0
    top = max(logs)
    return min(1.0, math.exp(top) * math.fsum(math.exp(v - top) for v in logs))


def _solve(f, target: float, *, increasing: bool) -> float:
    """The p in [0, 1] with f(p) = target, f monotone (bisection to double precision)."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        if (f(mid) < target) == increasing:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0
