"""The one verdict (commsim.runs.verdict.judge): one model per outcome, and the same outcome and sentence
in the terminal, ``Report.verdict()``, ``Report._repr_html_``, the HTML run page, ``run --json`` and the exit
status of ``--fail-on-certificate`` / ``--fail-on-error``."""
from __future__ import annotations

import html
import json

import pytest
from cli_helpers import run_main
from page_checks import flat as _flat, page_text

import commsim.cli.common as cli_common
from commsim.runs.run import run_reduction
from commsim.runs.verdict import (
    BOUND_DOES_NOT_APPLY,
    CORRECT,
    MUST_FAIL,
    OUTCOMES,
    WRONG_NOT_FORCED,
    WRONG_OUTCOMES,
)
from commsim.plugins import load_plugins

#: (reduction, model, n, the outcome); the two-way-only reduction is the test plugin tests/cli/verdict_plugin.py
CASES = [
    ("index-idxl", "memorize:capacity=7", 8, MUST_FAIL),                       # 7 bits < 8: a collision
    ("index-idxl", "elman:width=16,precision=8", 6, WRONG_NOT_FORCED),         # 128 bits >= 6, and wrong
    ("index-idxl", "memorize", 8, CORRECT),                                    # 8 bits >= 8, right everywhere
    ("index-idxl-two-way-only", "construct:idxl", 4, BOUND_DOES_NOT_APPLY),    # Bob alone speaks: no bound
    ("index-idxl-two-way-only", "attention:heads=1,width=2,precision=4", 4, WRONG_NOT_FORCED),  # no bound, wrong
]
PLUGIN = "verdict_plugin"


@pytest.mark.parametrize("reduction, model, n, outcome", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_one_verdict_everywhere(capsys, monkeypatch, tmp_path, reduction, model, n, outcome):
    monkeypatch.setattr(cli_common.console, "_width", 1000)       # no wrapping: one line per row
    load_plugins([PLUGIN])
    report = run_reduction(reduction, model, n=n)
    assert report.outcome == outcome
    sentence = report.verdict()
    assert isinstance(sentence, str) and sentence == report.judgement.text
    assert report.to_row()["verdict"] == outcome
    assert report.to_row()["certificate_kind"] == (None if report.certificate is None else report.certificate.kind)
    assert html.escape(sentence) in report._repr_html_() and f"data-outcome='{outcome}'" in report._repr_html_()
    # the bound forces a failure only below it; "must fail" is said of nothing else
    assert ("must fail" in sentence) == (outcome == MUST_FAIL)

    page_path = tmp_path / "r.html"
    code, out, _ = run_main(capsys, "run", reduction, "--plugin", PLUGIN, "--model", model, "--n", str(n), "--json",
                            "--html", str(page_path), "--fail-on-certificate")
    assert code == (3 if outcome == MUST_FAIL else 0)
    data = json.loads(out)
    assert data["verdict"] == {"outcome": outcome, "text": sentence}
    for key in ("bits_used", "budget_ok", "certificate", "model_correct", "bound_applies"):   # the old keys stay
        assert key in data

    page = page_text(page_path.read_text())
    assert page.rows["verdict"].endswith(_flat(sentence))
    if outcome != MUST_FAIL:
        assert "must fail" not in _flat("".join(page.parts))

    code, out, _ = run_main(capsys, "run", reduction, "--plugin", PLUGIN, "--model", model, "--n", str(n),
                            "--fail-on-error")
    assert code == (3 if outcome in WRONG_OUTCOMES else 0)
    assert _flat(sentence) in _flat(out)
    if outcome != MUST_FAIL:
        assert "must fail" not in _flat(out)


def test_the_outcomes_are_four_and_the_exit_rules_name_them():
    assert set(OUTCOMES) == {MUST_FAIL, WRONG_NOT_FORCED, CORRECT, BOUND_DOES_NOT_APPLY}
    assert WRONG_OUTCOMES == {MUST_FAIL, WRONG_NOT_FORCED}


def test_below_the_bound_says_what_shows_where():
    # without the collision search, the run's first wrong answer is the certificate: an error, said as such
    report = run_reduction("index-idxl", "memorize:capacity=7", n=8, certify=False)
    assert report.outcome == MUST_FAIL and report.certificate.kind == "error"
    assert "error certificate; no collision or rectangle shown" in report.verdict()
    report = run_reduction("index-idxl", "memorize:capacity=7", n=8)
    assert report.certificate.kind == "collision" and "a verified collision" in report.verdict()


def test_help_and_readme_document_both_flags(capsys):
    code, out, _ = run_main(capsys, "run", "--help")
    text = " ".join(out.split())
    assert code == 0 and "--fail-on-error" in text and "--fail-on-certificate" in text
    assert "must_fail or wrong_not_forced" in text and "when the verdict is must_fail" in text
    from pathlib import Path
    commands = (Path(__file__).resolve().parents[3] / "docs/guide/commands.md").read_text()   # the README's manual
    assert "--fail-on-error" in commands and "--fail-on-certificate" in commands
