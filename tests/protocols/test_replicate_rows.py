"""Replicate tables re-validated on read, as sweep rows are: a row read back is reused only when it is what its cell
writes; a tampered or malformed row is refused with a reason naming the row and the column, and its cell runs
again (the API's ``notify``, the command's warning on stderr)."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from cli_helpers import run_main

pytest.importorskip("torch")

import commsim  # noqa: E402
from commsim.batch.replicate import cell_key, check_row, read_rows  # noqa: E402
from protocols.experiments.bhbk24 import EXPERIMENTS  # noqa: E402

WIDTH = next(e for e in EXPERIMENTS if e.name == "bhbk24-width")


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A quick bhbk24-width table (2 cells), as the command writes it: (path, its rows)."""
    path = tmp_path_factory.mktemp("rows") / "w.csv"
    commsim.replicate("bhbk24-width", "quick", out=str(path))
    return path, read_rows(path)


def _cell(row: dict) -> dict:
    return next(c for c in WIDTH.cells("quick") if cell_key(WIDTH.name, c) == row["cell"])


def test_rows_as_written_pass_and_come_back_typed(table):
    _, rows = table
    for row in rows:
        checked, reason = check_row(row, WIDTH.name, _cell(row))
        assert reason == "" and checked["N"] == row["N"] and isinstance(checked["p_eff"], int)
        again, _ = check_row({**row, "p_eff": float(row["p_eff"]), "recurrent": "True"}, WIDTH.name, _cell(row))
        assert again["p_eff"] == row["p_eff"] and again["recurrent"] is True     # a CSV's 4.0 and "True"


@pytest.mark.parametrize("column,value,reason", [
    ("accuracy", 1.7, "is not a number in [0, 1]"),
    ("quantised_accuracy", -0.2, "is not a number in [0, 1]"),
    ("p_eff", 2.5, "is not a non-negative integer"),
    ("state_bits", "many", "is not a non-negative integer"),
    ("run_protocol_matches_model", "yes", "is not true or false"),
    ("seconds", float("inf"), "is not a non-negative number"),
    ("cell", "not-a-key", "is not a cell key"),
    ("N", 7, "but its cell key is for"),
    ("width", 64, "but its cell key is for"),
    ("steps", 99999, "but its cell key is for"),
    ("experiment", "bhbk24-index", "in a table of bhbk24-width"),
    ("accuracy", None, "missing in a cell that ran"),
    ("precisions_tried", ["2:0.5"], "is not text"),
    ("a_column_of_mine", [1, 2], "is not a single value"),
])
def test_a_tampered_row_is_refused_naming_its_column(table, column, value, reason):
    _, rows = table
    row = dict(rows[0])
    row[column] = value
    checked, why = check_row(row, WIDTH.name, _cell(rows[0]))
    assert checked is None and why.startswith(f"{column}: ") and reason in why


def test_a_tampered_row_is_run_again_and_replaced(table, tmp_path):
    path, rows = table
    tampered = tmp_path / "t.csv"
    frame = pd.read_csv(path, dtype={"cell": str})
    frame.loc[0, "accuracy"] = 1.7                     # an impossible accuracy in the first row
    frame.to_csv(tampered, index=False)
    said = []
    result = commsim.replicate("bhbk24-width", "quick", out=str(tampered), notify=said.append)
    assert result.attrs["invalid"] == 1 and result.attrs["run"] == 1 and result.attrs["skipped"] == len(rows) - 1
    assert len(said) == 1 and rows[0]["cell"] in said[0] and "accuracy: 1.7 is not a number in [0, 1]" in said[0]
    again = {r["cell"]: r for r in read_rows(tampered)}
    assert again[rows[0]["cell"]]["accuracy"] == rows[0]["accuracy"]   # rerun: deterministic, the same figure


def test_the_command_warns_naming_the_row_and_column(table, tmp_path, capsys):
    path, rows = table
    tampered = tmp_path / "t.json"
    records = read_rows(path)
    records[1]["N"] = 12345
    tampered.write_text(json.dumps(records), encoding="utf-8")
    code, out, err = run_main(capsys, "replicate", "bhbk24-width", "--out", str(tampered), "--json")
    assert code == 0, err
    assert "Warning:" in err and rows[1]["cell"] in err and "N: 12345 but its cell key is for" in err
    report = json.loads(out)
    assert report["invalid"] == 1 and report["run"] == 1
