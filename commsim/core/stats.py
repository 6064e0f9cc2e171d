"""Confidence intervals for measured rates (error rates of models and of randomized protocols).

The intervals come from statsmodels when it is installed (the ``stats`` extra: ``pip install commsim[stats]``).
Without it they are computed from what every install has: the Wilson score interval from the standard library's
normal quantile (``statistics.NormalDist``), the exact Clopper-Pearson interval from ``scipy.stats.beta`` when
scipy is there, else by bisection on the binomial tail (exact sums in log space).  The three agree to rounding
(tests/commsim/core/test_stats_fallback.py).  A rate measured on ``trials`` independent draws with ``events`` hits
gets a two-sided interval at level ``confidence``.
"""
from __future__ import annotations

from dataclasses import dataclass

from commsim.core.errors import InputError

#: the interval methods offered (statsmodels' names): Wilson score and exact Clopper-Pearson ("beta")
METHODS = {"wilson": "wilson", "clopper-pearson": "beta"}


@dataclass(frozen=True)
class RateInterval:
    """A measured rate ``events / trials`` with its confidence interval [low, high]."""

    events: int
    trials: int
    low: float
    high: float
    confidence: float
    method: str

    @property
    def rate(self) -> float:
        return self.events / self.trials if self.trials else 0.0

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def to_dict(self) -> dict:
        return {"events": self.events, "trials": self.trials, "rate": self.rate, "low": self.low,
                "high": self.high, "confidence": self.confidence, "method": self.method}


def rate_interval(events: int, trials: int, *, confidence: float = 0.95, method: str = "wilson") -> RateInterval:
    """The two-sided ``confidence`` interval of the rate ``events / trials`` (Wilson or Clopper-Pearson)."""
    if method not in METHODS:
        raise InputError(f"interval method must be one of {', '.join(METHODS)}, got {method!r}")
    if not 0.0 < confidence < 1.0:
        raise InputError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    events, trials = int(events), int(trials)
    if trials < 1 or not 0 <= events <= trials:
        raise InputError(f"a rate needs 0 <= events <= trials and trials >= 1, got {events}/{trials}")
    try:
        from statsmodels.stats.proportion import proportion_confint
    except ImportError:      # no stats extra: the same intervals from the standard library (and scipy, if any)
        from commsim.core.intervals import clopper_pearson, wilson
        low, high = (wilson if method == "wilson" else clopper_pearson)(events, trials, 1.0 - confidence)
    else:
        low, high = proportion_confint(events, trials, alpha=1.0 - confidence, method=METHODS[method])
    rate = events / trials   # the bounds carry rounding noise (e.g. 1e-18 above a zero rate): clamp
    return RateInterval(events, trials, max(0.0, min(float(low), rate)), min(1.0, max(float(high), rate)),
                        float(confidence), method)
