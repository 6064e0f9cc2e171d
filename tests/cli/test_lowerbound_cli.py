"""The lower-bound commands: fooling, automaton, matrix, tree (contract keys, exit codes, one-line errors)."""
from __future__ import annotations

import json

import pytest
from cli_helpers import invoke, run_main


# ---- fooling ---------------------------------------------------------------------------
def test_fooling_dyck22_n1000_json_has_the_exact_size(capsys):
    code, out, err = run_main(capsys, ["fooling", "dyck22", "--n", "1000", "--json"])
    assert code == 0 and err == ""
    d = json.loads(out)
    assert d["size"] == str(2 ** 999)
    assert d["problem"] == "dyck22" and d["n"] == 1000
    assert d["log2_size"] == 999.0 and d["lower_bound_bits"] == 999 and d["verified"] is None
    assert "Dyck-(2,2)" in d["method"]


@pytest.mark.parametrize("problem,n,size,bits", [("index", 5, 32, 5), ("eq", 8, 256, 8), ("disj", 6, 64, 6),
                                                 ("dyck22", 10, 512, 9)])
def test_fooling_json_contract(problem, n, size, bits):
    d = invoke(["fooling", problem, "--n", str(n), "--verify", "--json"])
    assert {"problem", "n", "size", "log2_size", "lower_bound_bits", "verified", "method"} <= set(d)
    assert (d["problem"], d["n"], d["size"], d["lower_bound_bits"], d["verified"]) == (problem, n, size, bits, True)
    assert "verified by" in d["method"]


def test_fooling_big_sizes_are_decimal_strings():
    d = invoke(["fooling", "eq", "--n", "60", "--json"])
    assert d["size"] == str(2 ** 60)
    d = invoke(["fooling", "eq", "--n", "52", "--json"])
    assert d["size"] == 2 ** 52
    d = invoke(["fooling", "index", "--n", "20000", "--json"])  # beyond Python's 4300-digit default
    from commsim.cli.fooling import decimal
    assert d["size"] == decimal(2 ** 20000) and len(d["size"]) == 6021


def test_fooling_tables():
    out = invoke(["fooling", "dyck22", "--n", "8", "--verify"])
    assert "Lemma 1" in out and "yes" in out and "(()()())" in out
    out = invoke(["fooling", "index", "--n", "4"])
    assert "does not apply" in out


@pytest.mark.parametrize("args,needle", [
    (["fooling", "dyck22", "--n", "7"], "--n must be even"),
    (["fooling", "dyck22", "--n", "7", "--json"], "--n must be even"),
    (["fooling", "parity", "--n", "4"], "PROBLEM"),
    (["fooling", "eq", "--n", "13", "--verify"], "largest n that runs is 12"),
    (["fooling", "dyck22", "--n", "30", "--verify"], "largest N that runs is 20"),
    (["fooling", "index", "--n", "21", "--verify"], "largest n that runs is 20"),
    (["fooling", "eq", "--n", "0"], "at least 1"),
    (["automaton", "ineq", "--n", "40"], "largest N that runs is 16"),
    (["automaton", "ineq", "--n", "5"], "--n must be an even"),
    (["automaton", "dyck22", "--n", "3"], "--n must be an even"),
    (["automaton", "nfa", "--n", "4"], "LANGUAGE"),
    (["matrix", "eq", "--n", "12"], "largest n that runs is 10"),
    (["matrix", "dyck22", "--n", "3"], "even"),
    (["tree", "eq", "--n", "9", "--protocol", "one-way"], "largest n that runs is 6"),
    (["tree", "eq", "--n", "2", "--protocol", "nope"], "--protocol"),
])
def test_bad_input_exits_2_with_one_line(capsys, args, needle):
    code, out, err = run_main(capsys, args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and needle in lines[0], err
    if "--json" in args:
        assert json.loads(out)["exit_code"] == 2


# ---- automaton ------------------------------------------------------------------------
def test_automaton_json_contract():
    d = invoke(["automaton", "dyck22", "--n", "8", "--json"])
    assert {"language", "n", "states", "live_states", "state_bits", "lower_bound_bits"} <= set(d)
    assert (d["language"], d["n"], d["states"], d["live_states"], d["state_bits"], d["lower_bound_bits"]) == \
        ("dyck22", 8, 8, 7, 3, 3)
    d = invoke(["automaton", "ineq", "--n", "10", "--json"])
    assert (d["states"], d["live_states"], d["state_bits"], d["lower_bound_bits"]) == (99, 98, 7, 5)
    assert d["distinguishable_prefixes"] == 32 and d["distinguishable_verified"] is True


def test_automaton_table_and_dot(tmp_path):
    out = invoke(["automaton", "dyck22", "--n", "4", "--dot", str(tmp_path / "d.dot")])
    assert "7 live" in out and "reject" in out
    assert (tmp_path / "d.dot").read_text().startswith("digraph")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".commsim-")]


# ---- matrix ---------------------------------------------------------------------------
def test_matrix_command():
    d = invoke(["matrix", "disj", "--n", "4", "--json"])
    assert (d["rank_real"], d["rank_gf2"], d["one_way_bits"], d["fooling_search"]["verified"]) == (15, 15, 4, True)
    assert d["lower_bound_bits"] == 4
    out = invoke(["matrix", "eq", "--n", "2"])
    assert "█···" in out and "rank over GF(2)" in out


# ---- tree ------------------------------------------------------------------------------
def test_tree_command(tmp_path, capsys):
    d = invoke(["tree", "index", "--n", "3", "--protocol", "two-way", "--json"])
    assert (d["depth"], d["all_rectangles"], d["all_monochromatic"], d["correct"]) == (3, True, True, True)
    dot = tmp_path / "t.dot"
    out = invoke(["tree", "eq", "--n", "2", "--protocol", "one-way", "--dot", str(dot)])
    assert "leaves are rectangles" in out and dot.read_text().startswith("digraph protocol_tree")
    code, out, err = run_main(capsys, ["tree", "eq", "--n", "2", "--protocol", "one-way", "--dot",
                                       str(tmp_path / "missing" / "t.dot")])
    assert code == 2 and "--dot" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["fooling", "automaton", "matrix", "tree"])
def test_help_has_examples(command):
    out = invoke([command, "--help"])
    assert "Examples:" in out and f"commsim {command}" in out
