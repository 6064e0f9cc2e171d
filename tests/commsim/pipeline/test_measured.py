"""The report's ``measured_error``: a measured rate with its statsmodels interval beside a distributional bound."""
from __future__ import annotations

import pytest

from commsim.core.stats import rate_interval
from commsim.runs.measured import measured_error
from commsim.theory.bounds import ErrorBound

BOUND = ErrorBound(0.25, "a theorem", "Pr[wrong] >= 0.25", "uniform inputs", values={"R": 3.0})


def test_consistent_when_the_interval_reaches_the_bound():
    m = measured_error(BOUND, 240, 1000)
    ref = rate_interval(240, 1000)
    assert (m["low"], m["high"], m["rate"]) == (ref.low, ref.high, 0.24) and m["high"] >= 0.25
    assert m["consistent"] is True and m["bound"] == 0.25 and m["R"] == 3.0 and m["kind"] == "distributional"


def test_a_rate_whose_whole_interval_lies_below_the_bound_contradicts_it():
    m = measured_error(BOUND, 100, 1000, method="clopper-pearson")
    assert m["high"] < 0.25 and m["consistent"] is False and m["verdict"].startswith("CONTRADICTS")
    assert m["method"] == "clopper-pearson"


def test_a_bound_that_does_not_apply_rules_nothing_out():
    off = ErrorBound(0.0, "a theorem", "", "uniform inputs", applies=False, reason="the message is long enough")
    m = measured_error(off, 0, 50)
    assert m["consistent"] is None and m["verdict"] == "not ruled out: the message is long enough"


def test_every_instance_gives_the_exact_rate():
    m = measured_error(BOUND, 3, 12, exhaustive=True)
    assert m["low"] == m["rate"] == m["high"] == pytest.approx(0.25) and m["confidence"] == 1.0
    assert m["consistent"] is True
