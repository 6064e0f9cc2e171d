"""The effective precision p_eff (``commsim.run(..., precision="effective")``): the search itself on known accuracy
curves, and on a trained one-logit LSTM, the same LSTM with a sigmoid-probability head, and a hand-set attention
construction -- p_eff checked against runs at fixed widths, its tolerance and sample reported, the run's verdict at
p_eff about the quantised model."""
from __future__ import annotations

import pytest

import commsim
from commsim.core.errors import InputError
from commsim.runs.effective import PRECISIONS, TOLERANCE, WHAT_FOLLOWS, search_width

torch = pytest.importorskip("torch")


def test_search_width_finds_the_first_width_that_keeps_the_accuracy():
    curve = {p: (0.5 if p < 7 else 0.995 if p < 12 else 1.0) for p in PRECISIONS}
    p_eff, tried = search_width(curve.__getitem__, 1.0)
    assert p_eff == 7 and tried[7] == 0.995 and tried[6] == 0.5       # 0.995 is within 0.01 of 1.0
    p_eff, _ = search_width(curve.__getitem__, 1.0, tolerance=0.001)
    assert p_eff == 12
    assert search_width(lambda p: 0.0, 1.0) == (None, {32: 0.0})     # the widest does not keep it: none


def _fixed_accuracy(reduction, model, n, p) -> float:
    """The model's accuracy on every instance at p-bit fixed point, from its own run (no search)."""
    report = commsim.run(reduction, model, n=n, precision=p, certify=False) if not isinstance(model, str) else \
        commsim.run(reduction, f"{model}:precision={p}", n=n, certify=False)
    return report.model_accuracy


def _check(report, reduction, model, n):
    """The report's p_eff against runs at fixed widths: p_eff keeps the accuracy within the tolerance of the
    model's own format, the widths tried below it do not; the run is at p_eff; the fields are reported."""
    d = report.to_dict()
    found = d["effective_precision"]
    p_eff = d["p_eff"]
    assert p_eff is not None and found["p_eff"] == p_eff and d["p_eff_tolerance"] == TOLERANCE
    assert found["sample"] == "all" and found["sample_size"] == report.instances_run
    assert d["p_eff_sample"] == f"{report.instances_run} instances (all)"
    reference = found["own_format_accuracy"]
    assert _fixed_accuracy(reduction, model, n, p_eff) == pytest.approx(report.model_accuracy)
    assert report.model_accuracy >= reference - TOLERANCE
    below = [p for p in map(int, found["precisions_tried"]) if p < p_eff]
    assert below, "the bisection tried a width below p_eff"
    assert _fixed_accuracy(reduction, model, n, max(below)) < reference - TOLERANCE
    assert WHAT_FOLLOWS in found["statement"] and f"within {TOLERANCE:g}" in found["statement"]
    assert f"p_eff = {p_eff}" in found["statement"] and d["verdict"]["outcome"]
    return d


@pytest.fixture(scope="module")
def bce():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).parents[2] / "protocols" / "adapters" / "data" / "bce_nets.py"
    spec = importlib.util.spec_from_file_location("bce_nets", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load


def test_a_trained_one_logit_lstm(bce):
    net, _ = bce("lstm", "index-idxl", 8)
    report = commsim.run("index-idxl", net, n=8, precision="effective")
    d = _check(report, "index-idxl", net, 8)
    found = d["effective_precision"]
    assert found["own_format"] == "float32" and found["own_format_accuracy"] == 1.0
    # the quantised LSTM sends its (h, c): 32 numbers of p_eff bits, above INDEX's 8: not forced to fail
    assert d["bits_used"] == 32 * d["p_eff"] and d["verdict"]["outcome"] in ("correct", "wrong_not_forced")


def test_a_trained_lstm_with_a_sigmoid_probability_head(bce):
    net, _ = bce("lstm", "index-idxl", 8, probability=True)
    report = commsim.run("index-idxl", net, n=8, precision="effective")
    d = _check(report, "index-idxl", net, 8)
    assert d["effective_precision"]["own_format_accuracy"] == 1.0


def test_a_hand_set_attention_construction():
    report = commsim.run("index-idxl", "construct:idxl", n=8, precision="effective")
    d = _check(report, "index-idxl", "construct:idxl", 8)
    assert d["model"] == f"construct:idxl:precision={d['p_eff']}"
    assert d["verdict"]["outcome"] == "correct" and d["model_accuracy"] == 1.0


@pytest.mark.parametrize("call, param", [
    (lambda: commsim.run("index-idxl", "memorize:capacity=7", n=4, precision="effective"), "precision"),
    (lambda: commsim.run("index-idxl", "lstm:width=2,precision=8", n=4, precision="effective"), "precision"),
    (lambda: commsim.run("index-idxl", torch.nn.LSTM(4, 2), n=4, precision="effective", frac=2), "frac"),
])
def test_what_has_no_effective_precision_is_refused_naming_the_argument(call, param):
    with pytest.raises(InputError) as caught:
        call()
    assert caught.value.param == param
