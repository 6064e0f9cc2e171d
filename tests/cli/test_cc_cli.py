"""``commsim cc``, ``commsim list`` and ``commsim --version``: through click's CliRunner and through
``commsim.cli.main`` (the console-script entry point: exit 0 / 2, one line on stderr)."""
from __future__ import annotations

import json

import pytest
from cli_helpers import invoke, run_main
from click.testing import CliRunner

import commsim
from commsim.cli import cli


# ---- cc: the numbers --------------------------------------------------------------------------
def test_index_one_way_exhaustive():
    r = invoke("cc", "index", "--n", "16", "--protocol", "one-way", "--instances", "all", "--json")
    assert r["problem"] == "index" and r["protocol"] == "one-way" and r["n"] == 16
    assert r["instances_run"] == 16 * 2 ** 16 and r["instances"] == "all"
    assert r["bits_used"] == 16
    assert r["bits_by_direction"] == {"alice_to_bob": 16, "bob_to_alice": 0}
    assert r["rounds"] == 1
    assert r["correct"] is True
    assert r["runner_checked"] >= 1 and r["audited"] is False
    t = r["transcript"]
    assert t["total_bits"] == 16 and t["one_way"] is True and len(t["messages"][0]["bits"]) == 16


def test_index_two_way_uses_log_n_plus_one_bits():
    r = invoke("cc", "index", "--n", "16", "--protocol", "two-way", "--json")
    assert r["bits_used"] == 5  # ceil(log2 16) + 1
    assert r["bits_by_direction"] == {"alice_to_bob": 1, "bob_to_alice": 4}
    assert r["rounds"] == 2 and r["correct"] is True
    assert r["transcript"]["one_way"] is False
    r = invoke("cc", "index", "--n", "13", "--protocol", "two-way", "--instances", "300", "--seed", "4", "--json")
    assert (r["bits_used"], r["instances_run"], r["correct"]) == (5, 300, True)  # ceil(log2 13) + 1


@pytest.mark.parametrize("problem", ["eq", "disj"])
def test_eq_and_disj_one_way(problem):
    r = invoke("cc", problem, "--n", "8", "--protocol", "one-way", "--json")
    assert r["problem"] == problem
    assert r["instances_run"] == 4 ** 8
    assert r["bits_used"] == 8 and r["rounds"] == 1 and r["correct"] is True


def test_audit_mode_from_the_command_line():
    r = invoke("cc", "eq", "--n", "6", "--protocol", "one-way", "--audit", "--instances", "20", "--json")
    assert r["audited"] is True
    assert r["instances_run"] == 20 and r["runner_checked"] == 20  # every instance crossed processes
    assert r["bits_used"] == 6 and r["correct"] is True


def test_human_readable_report():
    out = invoke("cc", "index", "--n", "8", "--protocol", "two-way", "--transcript")
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in out.splitlines()
            if line.count("│") == 3}
    assert rows["bits used (worst case)"] == "4"  # ceil(log2 8) + 1
    assert rows["Alice → Bob / Bob → Alice"] == "1 / 3"
    assert rows["rounds"] == "2" and rows["correct"] == "yes"
    assert "index" in out and "answer" in out  # the transcript's labels


# ---- list and version -----------------------------------------------------------------------
def test_list_json_includes_the_baseline_protocols():
    r = invoke("list", "--json")
    assert {p["name"] for p in r["problems"]} >= {"index", "eq", "disj", "dyck22"}
    protocols = {p["name"]: p for p in r["cc_protocols"]}
    assert {"one-way", "two-way"} <= set(protocols)
    assert protocols["one-way"]["plugin"].startswith("protocols.baseline")
    assert all(p["description"] for p in protocols.values())


def test_version(capsys):
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and commsim.__version__ in result.stdout
    code, out, err = run_main(capsys, "--version")
    assert code == 0 and commsim.__version__ in out and "commsim" in out and err == ""


# ---- main(): exit codes and one-line errors ----------------------------------------------------
def test_main_success_exits_zero(capsys):
    code, out, err = run_main(capsys, "cc", "index", "--n", "4", "--protocol", "two-way", "--json")
    assert code == 0 and err == ""
    r = json.loads(out)
    assert r["bits_used"] == 3 and r["correct"] is True


BAD_ARGS = [
    (["cc", "index", "--n", "0", "--protocol", "one-way"], "--n"),
    (["cc", "index", "--n", "-3", "--protocol", "one-way"], "--n"),
    (["cc", "index", "--n", "8", "--protocol", "telepathy"], "telepathy"),
    (["cc", "parity", "--n", "8", "--protocol", "one-way"], "parity"),
    (["cc", "index", "--n", "8", "--protocol", "one-way", "--instances", "foo"], "--instances"),
    (["cc", "index", "--n", "8", "--protocol", "one-way", "--instances", "0"], "--instances"),
    (["cc", "eq", "--n", "8", "--protocol", "two-way"], "two-way"),
    (["cc", "dyck22", "--n", "4", "--protocol", "one-way"], "PROBLEM must be a problem a registered protocol is for"),
    (["cc", "index", "--n", "eight", "--protocol", "one-way"], "eight"),
    (["cc", "index", "--protocol", "one-way"], "--n"),
    (["no-such-command"], "no-such-command"),
]


@pytest.mark.parametrize("args,mention", BAD_ARGS)
def test_bad_input_exits_2_with_one_line(capsys, args, mention):
    code, out, err = run_main(capsys, *args)
    assert code == 2
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1, err
    assert lines[0].startswith("Error: ") and mention in lines[0]
    assert "Traceback" not in err and out == ""


@pytest.mark.parametrize("args,mention", BAD_ARGS)
def test_bad_input_with_json_prints_an_error_object(capsys, args, mention):
    code, out, err = run_main(capsys, *args, "--json")
    assert code == 2
    payload = json.loads(out)
    assert mention in payload["error"] and "\n" not in payload["error"]
    assert payload.get("exit_code", 2) == 2
    assert len(err.strip("\n").split("\n")) == 1


def test_usage_errors_exit_2_through_click_too():
    result = CliRunner().invoke(cli, ["cc", "index", "--n", "eight", "--protocol", "one-way"])
    assert result.exit_code == 2 and "eight" in result.stderr
