"""The search for the smallest fixed-point width that keeps a model's accuracy (its effective precision p_eff), on
any accuracy function: ``commsim run --precision effective`` runs it on the run's sample, the trained-model
experiments on their own data."""
from __future__ import annotations

from typing import Callable

#: the fixed-point widths searched, smallest first
PRECISIONS = (2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 32)

#: "keeps its accuracy": the quantised model's accuracy is at most this far below the model's in its own format
TOLERANCE = 0.01


def search_width(accuracy_at: Callable[[int], float], reference: float, *, precisions=PRECISIONS,
                 tolerance: float = TOLERANCE) -> tuple[int | None, dict[int, float]]:
    """(p_eff, every width tried -> its accuracy): the first of ``precisions`` whose ``accuracy_at(p)`` is at least
    ``reference - tolerance``, by bisection (module docstring), or None when the widest does not keep it."""
    tried: dict[int, float] = {}

    def keeps(index: int) -> bool:
        p = precisions[index]
        if p not in tried:
            tried[p] = float(accuracy_at(p))
        return tried[p] >= reference - tolerance

    lo, hi = 0, len(precisions) - 1
    if not keeps(hi):
        return None, tried
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if keeps(mid) else (mid + 1, hi)
    return precisions[lo], tried
