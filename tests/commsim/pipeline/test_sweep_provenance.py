"""Issue 26.5: every sweep row says which commsim made it and when (``commsim_version``, ``written_at``), and a
table written before these columns existed still resumes."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

import commsim
from commsim.batch.sweep import read_table
from commsim.batch.sweep_rows import TIME_FORMAT

pytest.importorskip("pandas")

GRID = ("index-idxl", "elman:width=1..2,precision=2", 3)


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def test_every_row_says_which_commsim_made_it_and_when(tmp_path):
    out = tmp_path / "r.csv"
    before = _now()
    frame = commsim.sweep(*GRID, out=out)
    after = _now()
    columns = list(frame.columns)
    assert columns.index("seconds") + 2 == columns.index("commsim_version") + 1 == columns.index("written_at")
    for row in [*frame.to_dict("records"), *read_table(out)]:
        assert row["commsim_version"] == commsim.__version__
        made = datetime.strptime(row["written_at"], TIME_FORMAT).replace(tzinfo=timezone.utc)
        assert before <= made <= after


def test_a_failed_cells_row_has_its_provenance_too():
    from commsim.batch.grid import build_grid
    from commsim.batch.sweep import run_cell
    cell = build_grid(["dyck22-fooling"], ["elman:width=1,precision=2"], 4, [0], instances=None)[0]
    row = run_cell(cell)
    assert row["error"] and row["commsim_version"] == commsim.__version__
    datetime.strptime(row["written_at"], TIME_FORMAT)


def test_a_table_without_the_provenance_columns_still_resumes(tmp_path):
    out = tmp_path / "r.json"
    commsim.sweep(*GRID, out=out)
    rows = json.loads(out.read_text())
    old = [{k: v for k, v in row.items() if k not in ("commsim_version", "written_at")} for row in rows]
    out.write_text(json.dumps(old))                          # as a sweep before these columns wrote it
    messages = []
    again = commsim.sweep(*GRID, out=out, notify=messages.append)
    assert (again.attrs["run"], again.attrs["skipped"], again.attrs["invalid"], messages) == (0, 2, 0, [])
    assert again["written_at"].isna().all()                   # the old rows are not given a time they lack
    grown = commsim.sweep(GRID[0], "elman:width=1..3,precision=2", GRID[2], out=out)
    assert (grown.attrs["run"], grown.attrs["skipped"]) == (1, 2)
    assert grown["written_at"].notna().tolist() == [False, False, True]
