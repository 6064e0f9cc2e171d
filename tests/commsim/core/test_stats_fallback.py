"""Rate intervals without the stats extra: with statsmodels (and scipy) made unimportable, rate_interval gives the
same Wilson and Clopper-Pearson intervals from the standard library, and the teaching lessons that report a measured
error build."""
import sys

import pytest

from commsim.core.intervals import clopper_pearson, wilson
from commsim.core.stats import rate_interval

CASES = [(0, 10), (1, 10), (5, 100), (37, 400), (400, 400), (3, 4000), (1999, 4000)]


def _block(monkeypatch, *names):
    for name in names:
        for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            monkeypatch.delitem(sys.modules, mod)
        monkeypatch.setitem(sys.modules, name, None)       # `import name` now raises ImportError


@pytest.mark.parametrize("events, trials", CASES)
@pytest.mark.parametrize("method", ["wilson", "clopper-pearson"])
def test_without_statsmodels_the_interval_is_statsmodels_own(monkeypatch, events, trials, method):
    pytest.importorskip("statsmodels")
    want = rate_interval(events, trials, method=method, confidence=0.95)
    _block(monkeypatch, "statsmodels")
    got = rate_interval(events, trials, method=method, confidence=0.95)
    assert got.low == pytest.approx(want.low, abs=1e-9) and got.high == pytest.approx(want.high, abs=1e-9)


@pytest.mark.parametrize("events, trials", CASES)
def test_without_scipy_clopper_pearson_by_bisection_matches_scipy(monkeypatch, events, trials):
    pytest.importorskip("scipy")
    want = clopper_pearson(events, trials, 0.05)
    _block(monkeypatch, "scipy", "statsmodels")
    got = clopper_pearson(events, trials, 0.05)
    assert got == pytest.approx(want, abs=1e-9)
    iv = rate_interval(events, trials, method="clopper-pearson")
    assert iv.low == pytest.approx(max(0.0, want[0]), abs=1e-9)


def test_wilson_known_value():
    # 5 of 100 at 95%: the textbook Wilson interval [0.0215, 0.1118]
    low, high = wilson(5, 100, 0.05)
    assert round(low, 4) == 0.0215 and round(high, 4) == 0.1118


def test_compose_lesson_reports_an_interval_without_statsmodels(monkeypatch):
    _block(monkeypatch, "statsmodels")
    from protocols.lessons.compose import compose
    lesson = compose(4)
    text = " ".join(s.instance for s in lesson.steps)
    assert "95% wilson interval [" in text
