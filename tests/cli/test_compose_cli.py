"""``commsim run compose-index``: the measured error with its interval and the bound, in JSON and in the panel."""
from __future__ import annotations

import math

from cli_helpers import invoke, run_main

MODEL = "attention:heads=1,width=1,dim=2,precision=4,frac=0,classes=16,seed=1"


def test_run_compose_json_reports_the_measured_error_against_theorem_1():
    d = invoke("run", "compose-index", "--model", MODEL, "--n", "16", "--instances", "1500", "--seed", "2",
               "--no-certificate", "--json")
    me = d["measured_error"]
    assert d["reduction"] == "compose-index" and d["protocol"] == "attention-public-query"
    assert d["lower_bound_bits"] == 64 and d["bits_used"] < 64 and d["budget_ok"] is False
    assert {"rate", "low", "high", "confidence", "method", "bound", "consistent", "kind", "R"} <= set(me)
    assert me["kind"] == "distributional" and me["method"] == "wilson" and me["trials"] == 1500
    assert me["bound"] == (64 - d["bits_used"]) / (3 * 16 * math.log2(16)) and me["consistent"] is True
    assert me["low"] <= me["rate"] <= me["high"]
    assert d["error_rate"] == me["rate"] and d["error_rate_interval"] == [me["low"], me["high"]]
    assert d["error_bound"] == me["bound"]


def test_run_compose_panel_shows_the_error_row(capsys):
    code, out, _ = run_main(capsys, ["run", "compose-index", "--model", MODEL, "--n", "16", "--instances", "800"])
    assert code == 0 and "error rate" in out and "wilson" in out and "Theorem 1 of [PNP24]" in " ".join(out.split())
    assert "collision" in out


def test_run_compose_above_the_bound_is_not_ruled_out(capsys):
    d = invoke("run", "compose-index", "--model", "attention:width=2,dim=4,precision=8,classes=4,seed=0", "--n",
               "4", "--instances", "300", "--json")
    assert d["measured_error"]["consistent"] is None and d["measured_error"]["verdict"].startswith("not ruled out")
    code, _, err = run_main(capsys, ["run", "compose-index", "--model", "attention:dtype=float16,classes=4",
                                     "--n", "4", "--instances", "10"])
    assert code == 2 and "fixed-point" in " ".join(err.split())


def test_budget_compose_rnn_is_one_way_and_attention_plans_the_public_query_message():
    d = invoke("budget", "--arch", "rnn", "--width", "2", "--precision", "4", "--task", "compose-index", "--n", "17",
               "--json")
    assert d["protocol_bits"] == 8 and d["lower_bound_bits"] == 24 and d["max_n"] == 9 and d["first_ruled_out"] == 11
    d = invoke("budget", "--arch", "attention", "--width", "2", "--precision", "4", "--task", "compose-index", "--n",
               "17", "--json")     # what run runs: Alice's one-way partial softmax (K = 6 candidate maxima at frac 2)
    assert d["bits_by_direction"] == {"alice_to_bob": 124, "bob_to_alice": 0} and d["lower_bound_bits"] == 24
    assert d["bits_formula"] == 1 * (8 + 1) * 4 and (d["max_n"], d["first_ruled_out"]) == (67, 69)
