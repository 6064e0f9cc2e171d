"""``commsim separate``: both halves of each separation, as data, tables and plots; bad input exits 2."""
from __future__ import annotations

import json

import pytest
from cli_helpers import invoke, run_main

from commsim.plugins import load_plugins
from protocols.separations import lengths

KEYS = {"task", "title", "claim", "n", "upper", "lower", "columns", "rows", "plot", "all_verified", "verdict", "notes"}


def test_lengths():
    assert lengths(16, 4) == [4, 8, 16]
    assert lengths(20, 4) == [4, 8, 16, 20]
    assert lengths(6, 2, even=True) == [2, 4, 6]
    assert lengths(4, 4) == [4]


def test_idxl_json():
    d = invoke("separate", "idxl", "--n", "16", "--json")
    assert KEYS <= set(d) and d["task"] == "idxl" and d["n"] == 16
    assert [r["N"] for r in d["rows"]] == [4, 8, 16]
    assert d["all_verified"] is True
    for row in d["rows"]:
        assert row["accuracy"] == 1.0 and row["protocol_exact"] is True and row["memorize_accuracy"] == 1.0
        assert row["rnn_bound_bits"] == row["memorize_bits"] == row["N"]
        assert row["width_bits"] == row["width"] * row["precision"] and row["qk_width"] == row["k"]
        assert row["width"] == max(row["qk_width"], row["dim"])          # [BHBK24]'s width, max(m, d)
    assert d["rows"][0]["instances"] == "all" and d["rows"][0]["inputs"] == 4 * 2 ** 4
    assert d["rows"][-1]["instances"] == "1000 sampled"
    assert d["upper"]["source"] == "Theorem 1 of [BHBK24]" and "Theorem 3" in d["lower"]["source"]
    keys = {c["key"] for c in d["columns"]} | {s["key"] for s in d["plot"]["series"]}
    assert keys <= set(d["rows"][0])


def test_dyck22_json():
    d = invoke("separate", "dyck22", "--n", "8", "--json")
    assert [r["N"] for r in d["rows"]] == [2, 4, 8]
    assert d["all_verified"] is True
    for row in d["rows"]:
        assert row["dfa_state_bits"] == 3 and row["dfa_accuracy"] == 1.0
        assert row["attn_bound_bits"] == row["N"] - 1
        assert row["lookup_protocol_bits"] >= row["N"] - 1 and row["lookup_accuracy"] == 1.0
        assert row["lookup_qk_width"] == row["N"] + 4
        assert row["lookup_width"] == max(row["lookup_qk_width"], row["lookup_dim"])
    assert d["rows"][-1]["inputs"] == 4 ** 8           # every string of length 8


def test_eq_json_and_gamma():
    d = invoke("separate", "eq", "--n", "8", "--json")
    assert [r["N"] for r in d["rows"]] == [4, 8] and d["all_verified"] is True
    for row in d["rows"]:
        assert row["embedding_dim"] == 2 * row["k"] + 5 and row["rnn_bound_bits"] == row["N"] // 2
        assert row["width"] == max(row["qk_width"], row["embedding_dim"])
        assert row["one_layer_bound_bits"] == row["N"] // 2 and row["instances"] == "all"
    g = invoke("separate", "eq", "--n", "8", "--gamma", "0.5", "--json")
    assert g["all_verified"] and g["rows"][-1]["k"] < d["rows"][-1]["k"]


def test_table_output():
    out = invoke("separate", "idxl", "--n", "8")
    assert "Theorem 1 of [BHBK24]" in out and "at N = 8" in out and "RNN m·p≥" in out


@pytest.mark.parametrize("suffix,magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_plot(tmp_path, suffix, magic):
    pytest.importorskip("matplotlib")
    path = tmp_path / f"sep{suffix}"
    d = invoke("separate", "dyck22", "--n", "6", "--plot", str(path), "--json")
    assert d["plot_file"] == str(path)
    assert path.read_bytes()[:len(magic)] == magic
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]     # no temporary left behind


@pytest.mark.parametrize("args,fragment", [
    (("separate", "nope", "--n", "8"), "unknown separation"),
    (("separate", "dyck22", "--n", "7"), "even"),
    (("separate", "idxl", "--n", "2"), "--n must be in 4..16384 for idxl"),
    (("separate", "idxl", "--n", "8", "--plot", "out.pdf"), ".png or .svg"),
    (("separate", "idxl", "--n", "8", "--plot", "/no/such/dir/x.png"), "does not exist"),
    (("separate", "dyck22", "--n", "8", "--gamma", "0.5"), "--gamma does not apply"),
    (("separate", "eq", "--n", "8", "--gamma", "1.5"), "(0, 1)"),
    (("separate", "eq", "--n", "8", "--instances", "0"), "--instances"),
    (("separate", "eq", "--n", "8", "--q", "2"), "--q does not apply"),
    (("separate", "qsa", "--n", "8", "--q", "9"), "--q must be in"),
    (("separate", "two-layers", "--n", "8", "--partition", "1,x"), "--partition"),
    (("separate", "idxl", "--n", "8", "--partition", "1,2"), "--partition does not apply"),
])
def test_bad_input_exits_2(capsys, tmp_path, monkeypatch, args, fragment):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(capsys, *args)
    assert code == 2, (out, err)
    assert fragment in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_bad_input_json_error(capsys):
    code, out, err = run_main(capsys, "separate", "dyck22", "--n", "5", "--json")
    assert code == 2 and json.loads(out)["exit_code"] == 2


def test_separations_registered_with_run():
    reg = load_plugins()
    for name in ("idxl", "dyck22", "eq"):
        sep = reg.get("separation", name)
        assert callable(sep.run) and sep.description


@pytest.mark.parametrize("task,n,more", [("nstnb", 8, ["--instances", "64"]), ("disj", 8, ["--instances", "64"]),
                                         ("qsa", 8, ["--instances", "64"]), ("two-layers", 6, [])])
def test_issue16_separations_json_and_table(task, n, more):
    d = invoke("separate", task, "--n", str(n), *more, "--json")
    assert KEYS <= set(d) and d["task"] == task and d["all_verified"] is True
    keys = {c["key"] for c in d["columns"]} | {s["key"] for s in d["plot"]["series"]}
    assert keys <= set(d["rows"][0])
    out = invoke("separate", task, "--n", str(n), *more)
    assert f"commsim separate {task}" in out and "at N = " in out


def test_two_layers_plot_marks_both_sides(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "two.svg"
    d = invoke("separate", "two-layers", "--n", "6", "--partition", "1,2,6", "--plot", str(path), "--json")
    assert path.read_bytes()[:5] == b"<?xml" and d["rows"][-1]["user_partition"] == [1, 2, 6]


def test_an_explicit_instances_caps_every_row_and_the_output_says_how_many():
    """--instances K given: at most K inputs per N, also where the task would check all of them (eq at N = 16:
    65536 pairs); not given: every input up to the task's limit, as before."""
    d = invoke("separate", "eq", "--n", "16", "--instances", "50", "--json")
    assert [(r["N"], r["instances"], r["inputs"]) for r in d["rows"]] == [(4, "all", 16), (8, "50 sampled", 50),
                                                                         (16, "50 sampled", 50)]
    d = invoke("separate", "eq", "--n", "8", "--json")
    assert [(r["instances"], r["inputs"]) for r in d["rows"]] == [("all", 16), ("all", 256)]
    d = invoke("separate", "dyck22", "--n", "4", "--instances", "8", "--json")
    assert [r["inputs"] for r in d["rows"]] == [8, 8] and d["all_verified"]


def test_instances_is_refused_where_no_input_is_sampled(capsys):
    code, _, err = run_main(capsys, "separate", "two-layers", "--n", "4", "--instances", "5")
    assert code == 2 and "--instances" in err and err.count("\n") == 1


def test_help_lists_every_separation_with_its_row_lengths():
    from click.testing import CliRunner

    from commsim.cli import cli
    text = " ".join(CliRunner().invoke(cli, ["separate", "--help"], terminal_width=300).stdout.split())
    for sep in load_plugins().entries("separation"):
        rows = ", ".join(str(N) for N in sep.obj.lengths(24))
        assert f"{sep.name} " in text and f"[rows at --n 24: N = {rows}]" in text, sep.name
    assert {"3cycle", "match3"} <= {e.name for e in load_plugins().entries("separation")}
    assert "N = 2, 4, 6, 8, 10, 12, 16, 24" in text                  # two-layers: every even N up to 12
    assert "powers of two up to N)" not in text


def test_idxl_plot_legend_says_one_way_like_its_notes():
    d = invoke("separate", "idxl", "--n", "8", "--json")
    label = {s["key"]: s["label"] for s in d["plot"]["series"]}["protocol_bits"]
    assert "one-way, Bob → Alice" in label and "two-way" not in label
    assert any("only Bob" in note for note in d["notes"])
