"""Rate intervals: statsmodels' Wilson and Clopper-Pearson intervals, with input checks."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from commsim.core.errors import InputError
from commsim.core.stats import rate_interval


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5000), st.floats(0, 1), st.sampled_from(["wilson", "clopper-pearson"]))
def test_interval_contains_the_rate(trials, fraction, method):
    events = int(round(fraction * trials))
    iv = rate_interval(events, trials, method=method)
    assert 0.0 <= iv.low <= iv.rate <= iv.high <= 1.0
    assert iv.contains(iv.rate)


def test_clopper_pearson_is_wider_than_wilson_and_shrinks_with_trials():
    small = rate_interval(5, 100, method="clopper-pearson")
    wilson = rate_interval(5, 100, method="wilson")
    assert small.high - small.low > wilson.high - wilson.low
    big = rate_interval(500, 10000, method="clopper-pearson")
    assert big.high - big.low < small.high - small.low


def test_coverage_of_the_wilson_interval():
    rng = np.random.default_rng(0)
    p, trials = 0.1, 400
    covered = sum(rate_interval(int(rng.binomial(trials, p)), trials).contains(p) for _ in range(400))
    assert covered / 400 > 0.9


@pytest.mark.parametrize("events, trials, kw", [(5, 0, {}), (6, 5, {}), (-1, 5, {}), (1, 5, {"method": "exact"}),
                                                (1, 5, {"confidence": 1.0})])
def test_bad_input_is_refused(events, trials, kw):
    with pytest.raises(InputError):
        rate_interval(events, trials, **kw)
