"""budget's paper max N for Theorem 5 in the paper's own form (log N unrounded) beside commsim's whole-bit form."""
from __future__ import annotations

import json

from click.testing import CliRunner

from commsim.cli import cli
from commsim.budget.compute import budget, paper_max_n_text


def test_theorem_5s_paper_max_n_in_the_papers_form_beside_the_ceiling_form():
    report = budget("attention", 64, 16, "dyck22-fooling", heads=2)
    d = report.to_dict()
    assert d["paper_own_form"] == {"form": "3m(p + log2 N)H, log2 N unrounded", "max_n": 11314,
                                   "first_ruled_out": 11316}
    assert (d["paper_max_n"], d["paper_first_ruled_out"]) == (11520, 11522)
    text = paper_max_n_text(d)
    assert text.startswith("11314 (first ruled out: 11316) with the paper's 3m(p + log2 N)H, log2 N unrounded; "
                           "11520 (first ruled out: 11522) with commsim's whole-bit form")
    assert "paper_max_n uses the paper's count" not in text and "cite paper_max_n for the theorem" not in text
    out = json.loads(CliRunner().invoke(cli, ["budget", "--arch", "attention", "--width", "64", "--precision", "16",
                                              "--heads", "2", "--reduction", "dyck22-fooling", "--json"]).stdout)
    assert out["paper_own_form"]["first_ruled_out"] == 11316 and out["paper_max_n"] == 11520


def test_a_count_without_a_log_has_no_second_form():
    d = budget("rnn", 128, 64, "index-idxl").to_dict()
    assert d["paper_own_form"] is None and "whole-bit" not in paper_max_n_text(d)
