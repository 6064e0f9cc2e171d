"""The measured error rate of a run set beside a distributional bound (the report's ``measured_error``).

A distributional bound (:class:`~commsim.theory.bounds.ErrorBound`) says that over some input distribution
every protocol of a given size errs with probability at least ``rate``.  A run that samples its instances
from that distribution measures the model's error rate; the interval comes from
:func:`commsim.core.stats.rate_interval` (statsmodels: Wilson, or Clopper-Pearson).  The measurement is
*consistent* with the bound when the interval's upper end reaches the bound; a measured rate whose whole
interval lies below the bound would contradict the theorem (or reveal that the protocol does not simulate
the model).  When every instance of the distribution was run the rate is exact: no interval is needed.
"""
from __future__ import annotations

from commsim.core.stats import rate_interval
from commsim.theory.bounds import ErrorBound

#: the level of the interval a report gives
CONFIDENCE = 0.95
#: the interval method (commsim.core.stats.METHODS)
METHOD = "wilson"


def measured_error(bound: ErrorBound, wrong: int, trials: int, *, exhaustive: bool = False,
                   confidence: float = CONFIDENCE, method: str = METHOD) -> dict:
    """``measured_error`` of a report: the rate ``wrong / trials`` with its interval, the bound, whether the
    measurement is consistent with it (None when the bound does not apply) and the verdict in words."""
    wrong, trials = int(wrong), int(trials)
    if exhaustive:
        rate = wrong / trials if trials else 0.0
        interval = {"events": wrong, "trials": trials, "rate": rate, "low": rate, "high": rate,
                    "confidence": 1.0, "method": "exact (every instance of the distribution)"}
    else:
        interval = rate_interval(wrong, trials, confidence=confidence, method=method).to_dict()
    if not bound.applies:
        consistent, verdict = None, f"not ruled out: {bound.reason}"
    elif interval["high"] >= bound.rate:
        consistent = True
        verdict = (f"consistent: the measured error {interval['rate']:.4g} (interval [{interval['low']:.4g}, "
                   f"{interval['high']:.4g}]) is at least the bound {bound.rate:.4g} within the interval")
    else:
        consistent = False
        verdict = (f"CONTRADICTS the bound: the whole interval [{interval['low']:.4g}, {interval['high']:.4g}] "
                   f"lies below {bound.rate:.4g}")
    return {**interval, **bound.to_dict(), "consistent": consistent, "verdict": verdict}
