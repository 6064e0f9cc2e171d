"""The verdict on a paper's claim, from a stated test on the measured accuracies.

A claim is **reproduced** only when the measured pattern is the paper's and every comparison it rests on lies
outside sampling noise: each accuracy is read with its 95% Wilson interval over the strings it was measured on
(``eval`` of the row; :func:`commsim.core.stats.rate_interval`), a level is "near-perfect" when the whole
interval lies at or above :data:`NEAR_PERFECT`, "below it" when the whole interval lies below, and one accuracy is
above another when their intervals do not overlap.  Otherwise the claim is **not reproduced** -- the pattern is
not there, or not there beyond the noise -- or **not tested at this scale**, when the rows lack what the claim is
about (lengths above 100 at a scale that stops at 100).  At the ``quick`` scale no claim is judged: its rows are a
**smoke test** of the machinery, a few dozen strings after a few dozen steps.
"""
from __future__ import annotations

from commsim.contract import rate_interval

REPRODUCED, NOT_REPRODUCED, NOT_TESTED, SMOKE = (
    "reproduced", "not reproduced", "not tested at this scale", "smoke test")
VERDICTS = (REPRODUCED, NOT_REPRODUCED, NOT_TESTED)
#: "near-perfect", as the claims use it
NEAR_PERFECT = 0.95
#: the interval every verdict reads
CONFIDENCE = 0.95
INTERVAL = f"{CONFIDENCE:.0%} Wilson interval of each accuracy over its evaluation strings (the row's eval)"


def interval(row: dict, column: str = "accuracy", trials_key: str = "eval") -> tuple[float, float]:
    """(low, high): the Wilson interval of ``row[column]`` measured on ``row[trials_key]`` strings."""
    trials = int(row[trials_key])
    ci = rate_interval(round(float(row[column]) * trials), trials, confidence=CONFIDENCE, method="wilson")
    return ci.low, ci.high


def shown(row: dict) -> str:
    """``0.982 [0.973, 0.988]``: an accuracy with its interval."""
    low, high = interval(row)
    return f"{row['accuracy']:.3f} [{low:.3f}, {high:.3f}]"


def near_perfect(rows: list[dict]) -> str:
    """Every row near-perfect beyond noise: reproduced; any row below the level beyond noise, or any row whose
    interval straddles it: not reproduced."""
    return REPRODUCED if rows and all(interval(r)[0] >= NEAR_PERFECT for r in rows) else NOT_REPRODUCED


def below_near_perfect(rows: list[dict]) -> str:
    """Every row below the near-perfect level beyond noise (its whole interval under it)."""
    return REPRODUCED if rows and all(interval(r)[1] < NEAR_PERFECT for r in rows) else NOT_REPRODUCED


def above(a: dict, b: dict) -> bool:
    """``a``'s accuracy above ``b``'s beyond noise: the two intervals do not overlap."""
    return interval(a)[0] > interval(b)[1]


def claim(claim: str, paper: str, ours: str, status: str, test: str) -> dict:
    """One claim row: what is claimed, the paper's words, what the rows show, the verdict and the test it came
    from (``interval``: the interval that test reads)."""
    if status not in VERDICTS:
        raise ValueError(f"a claim's verdict is one of {VERDICTS}, got {status!r}")
    return {"claim": claim, "paper": paper, "ours": ours, "status": status, "test": test, "interval": INTERVAL}


def judged_at_scale(claims: list[dict], rows: list[dict]) -> list[dict]:
    """The claims as the scale allows: at ``quick`` every verdict is replaced by "smoke test" (the test and what
    the rows show are kept)."""
    if rows and all(r.get("scale") == "quick" for r in rows):
        return [{**c, "status": SMOKE, "test": f"not judged at the quick scale (a smoke test); at a real scale: "
                                              f"{c['test']}"} for c in claims]
    return claims
