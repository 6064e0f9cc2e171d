"""``commsim run`` on the state-space and linear-attention models and a user's step recurrence (Theorem 2 of
[BHBK24] for any recurrent model): the exact state size as bits_used, a verified certificate below the bound."""
from __future__ import annotations

import pytest
from cli_helpers import invoke, run_main


@pytest.mark.parametrize("spec, bits", [("ssm:width=1,precision=3", 2 * 1 * 3),
                                        ("ssm:width=2,complex=false,precision=3", 2 * 3),
                                        ("linear-attention:dim=1,precision=6", 1 * 1 * 6)])
def test_narrow_models_get_a_verified_certificate_on_index_idxl(spec, bits):
    report = invoke("run", "index-idxl", "--model", spec, "--n", "8", "--json")
    assert report["bits_used"] == bits and report["lower_bound_bits"] == 8 and report["budget_ok"] is False
    assert report["protocol_matches_model"] is True and report["protocol"] == "rnn-handoff"
    assert report["certificate"]["kind"] == "collision" and report["certificate"]["verified"] is True


def test_the_state_size_is_the_bits_used_and_the_kinds_are_listed():
    report = invoke("run", "index-idxl", "--model", "linear-attention:dim=3,precision=6", "--n", "8",
                    "--instances", "64", "--json")
    assert report["bits_used"] == 3 * 3 * 6 and report["budget_ok"] is True
    assert "S: 3×3 = 9 numbers of fixed6.3" in report["bits_formula_text"]
    models = {m["name"] for m in invoke("list", "--json")["models"]}
    assert {"ssm", "linear-attention"} <= models


def test_python_step_recurrence_from_the_command_line():
    report = invoke("run", "index-idxl", "--model", "python:examples.recurrences:shift_register:capacity=5",
                    "--n", "6", "--json")
    assert report["bits_used"] == 6 and report["certificate"]["verified"] is True


@pytest.mark.parametrize("spec, word", [("ssm:complex=yes", "complex"), ("linear-attention:decay=2", "decay"),
                                        ("linear-attention:dim=500", "dim")])
def test_bad_keys_exit_2_naming_them(capsys, spec, word):
    code, out, err = run_main(capsys, "run", "index-idxl", "--model", spec, "--n", "4")
    assert code == 2 and word in err and len(err.strip().splitlines()) == 1
