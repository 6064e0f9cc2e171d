"""``commsim run ... --precision effective`` on the command line: p_eff, its tolerance and sample, and the verdict
about the quantised model, in the terminal and in --json, for a trained LSTM (``python:`` factory) and a hand-set
construction; any other --precision is refused."""
from __future__ import annotations

import json

import pytest
from cli_helpers import run_main


def invoke(args, capsys):
    """(exit status, stdout, stderr) of the command line ``args``."""
    return run_main(capsys, *args)


@pytest.mark.parametrize("model, p_eff, outcome", [
    ("construct:idxl", 5, "correct"),
    ("python:tests/cli/bce_factory.py:lstm", 10, "wrong_not_forced"),
])
def test_effective_precision_is_shown_with_its_tolerance_sample_and_verdict(model, p_eff, outcome, capsys):
    if model.startswith("python:"):
        pytest.importorskip("torch")
    args = ["run", "index-idxl", "--model", model, "--n", "8", "--precision", "effective"]
    code, out, err = invoke(args + ["--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert (d["p_eff"], d["p_eff_tolerance"], d["p_eff_sample"]) == (p_eff, 0.01, "2048 instances (all)")
    assert d["verdict"]["outcome"] == outcome
    assert d["effective_precision"]["quantised_accuracy"] == d["model_accuracy"]
    code, out, err = invoke(args, capsys)
    text = " ".join(out.replace("│", " ").split())
    assert code == 0, err
    assert f"effective precision p_eff = {p_eff} (fixed{p_eff}.{p_eff // 2})" in text
    assert "within 0.01 of the model's 1.0000 in its own format" in text and "on 2,048 instances (all)" in text
    assert "not about the model in its own format" in text


@pytest.mark.parametrize("value", ["8", "fixed16.8", "float32", ""])
def test_any_other_precision_is_refused(value, capsys):
    code, _, err = invoke(["run", "index-idxl", "--model", "construct:idxl", "--n", "4", "--precision", value], capsys)
    assert code == 2 and "--precision" in err and "effective" in err
