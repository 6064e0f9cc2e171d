"""A sweep's result table is the user's file too: a file that is not a sweep table is refused and left as it
is (issue 29, item 4); a row read back that is not what a sweep writes is not trusted -- its cell runs again
(item 5); and local workers are checked against the memory budget and the cores before anything starts
(item 7)."""
from __future__ import annotations

import json
import os

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import commsim
from commsim.core.errors import InputError
from commsim.core.executors import WORKERS_PER_CORE, check_workers, make_executor
from commsim.batch.grid import build_grid
from commsim.batch.sweep import read_table, run_cell
from commsim.batch.sweep_rows import KINDS, check_row

pytest.importorskip("pandas")

GRID = dict(reductions="index-idxl", models="elman:width=1..2,precision=2", n=3)


def _sweep(out, **options):
    return commsim.sweep(GRID["reductions"], GRID["models"], GRID["n"], out=out, **options)


# ---- a file that is not a sweep table (item 4) --------------------------------------------------
def _parquet(frame):
    def write(path):
        frame.to_parquet(path, index=False)
    return write


NOT_TABLES = {
    "header-only.csv": lambda p: p.write_text("name,email\n"),
    "contacts.csv": lambda p: p.write_text("name,email\nAda,ada@example.org\n"),
    "cell-column.csv": lambda p: p.write_text("cell,phone\nA1,555-0100\n"),
    "empty-list.json": lambda p: p.write_text("[]\n"),
    "records.json": lambda p: p.write_text('[{"name": "Ada", "email": "ada@example.org"}]\n'),
    "no-rows.parquet": _parquet(pd.DataFrame({"name": pd.Series([], dtype=str), "email": pd.Series([], dtype=str)})),
    "contacts.parquet": _parquet(pd.DataFrame({"name": ["Ada"], "email": ["ada@example.org"]})),
}


@pytest.mark.parametrize("name", sorted(NOT_TABLES))
def test_a_file_that_is_not_a_sweep_table_is_refused_and_left_alone(tmp_path, name):
    out = tmp_path / name
    NOT_TABLES[name](out)
    before = out.read_bytes()
    with pytest.raises(InputError, match="is not a commsim sweep table") as err:
        _sweep(out)
    assert err.value.param == "out"
    assert out.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [name]


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet"])
def test_an_empty_file_has_nothing_to_lose_and_becomes_the_table(tmp_path, suffix):
    out = tmp_path / f"r{suffix}"
    out.write_bytes(b"")
    frame = _sweep(out)
    assert frame.attrs["run"] == 2 and len(read_table(out)) == 2


# ---- rows read back (item 5) --------------------------------------------------------------------
def _edit(out, column, value):
    """Set ``column`` of the first row of the table ``out`` to ``value``, as an editor or a script would."""
    if out.suffix == ".json":
        rows = json.loads(out.read_text())
        rows[0][column] = value
        out.write_text(json.dumps(rows))
        return
    frame = pd.read_csv(out) if out.suffix == ".csv" else pd.read_parquet(out)
    frame[column] = [value if i == 0 else None if pd.isna(v) else str(v) for i, v in enumerate(frame[column])]
    frame.to_csv(out, index=False) if out.suffix == ".csv" else frame.to_parquet(out, index=False)


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet"])
@pytest.mark.parametrize("column, value", [("model_accuracy", "high"), ("bits_used", "-3"), ("bound_applies", "maybe"),
                                           ("n", "4")])
def test_an_invalid_row_is_not_trusted_its_cell_runs_again(tmp_path, suffix, column, value):
    """The issue's row ("model_accuracy": "high" used to exit 1 with a ValueError), a negative count, a flag
    that is no flag, and coordinates other than the cell's key: the cell runs again, a warning says so, and
    the table holds the right row again."""
    out = tmp_path / f"r{suffix}"
    whole = _sweep(out)
    _edit(out, column, value)
    with pytest.warns(UserWarning, match=rf"{out.name}: 1 row of this grid is not what a sweep writes .*{column}"):
        again = _sweep(out)
    assert (again.attrs["run"], again.attrs["skipped"], again.attrs["invalid"]) == (1, 1, 1)
    made = ["seconds", "written_at"]                       # when the row was made: the rerun's own
    pd.testing.assert_frame_equal(again.drop(columns=made), whole.drop(columns=made))
    messages = []
    third = _sweep(out, notify=messages.append)          # the table is whole again: nothing to run, no warning
    assert (third.attrs["run"], third.attrs["invalid"], messages) == (0, 0, [])


def test_an_invalid_row_of_another_grid_is_kept_as_it_is(tmp_path):
    out = tmp_path / "r.json"
    _sweep(out)
    rows = json.loads(out.read_text())
    rows[0]["model_accuracy"] = "high"
    out.write_text(json.dumps(rows))
    other = commsim.sweep("eq-ineq", "elman:width=1,precision=2", 3, out=out)
    assert other.attrs["invalid"] == 0
    assert [r["model_accuracy"] for r in read_table(out)][1] == "high"   # not this grid's to judge or to drop


@pytest.fixture(scope="module")
def good_rows():
    cells = build_grid(["index-idxl", "dyck22-fooling"], ["elman:width=1,precision=2"], 4, [0], instances=None)
    return [(run_cell(cell), cell) for cell in cells]       # a row that ran and a failed cell's row


WRONG = {"key": ["abc", 5, "28ACACD319F047B7"], "text": [5, 1.5, True], "count": [-1, 2.5, "many", True, float("nan")],
         "instances": [0, "some", -2, 1.5], "flag": [1, "yes", 0.0], "rate": [1.5, -0.1, "high", True, float("inf")],
         "seconds": [-1, "fast", float("nan")], "time": ["yesterday", 5, "2026-13-01T00:00:00Z", "2026-01-31 12:00"]}


def test_every_row_a_sweep_writes_passes_and_reads_back_the_same(good_rows):
    for row, cell in good_rows:
        assert check_row(row, cell) == (row, "")
        floats = {k: float(v) if KINDS.get(k) == "count" and v is not None else v for k, v in row.items()}
        assert check_row(floats, cell) == (row, "")          # a CSV reader's 4.0 is the count 4 again


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_value_of_the_wrong_kind_in_any_column_makes_the_row_invalid(good_rows, data):
    row, cell = good_rows[0]
    column = data.draw(st.sampled_from(sorted(k for k in KINDS if k in row)))
    value = data.draw(st.sampled_from(WRONG[KINDS[column]]))
    checked, reason = check_row({**row, column: value}, cell)
    assert checked is None and reason.startswith(f"{column}:")


def test_a_row_that_ran_without_its_figures_or_for_another_cell_is_invalid(good_rows):
    (ran, cell), (failed, failed_cell) = good_rows
    assert check_row({**ran, "bits_used": None}, cell) == (None, "bits_used: missing in a cell that ran")
    assert check_row({**failed, "bits_used": None}, failed_cell)[0] is not None      # a failed cell has no figures
    assert check_row(ran, failed_cell)[1].startswith("reduction:")
    assert check_row({**ran, "seed": 7}, cell)[1].startswith("seed:")


# ---- local workers (item 7) ---------------------------------------------------------------------
def test_workers_beyond_the_memory_budget_or_the_cores_are_refused_before_anything_starts(tmp_path):
    cores = len(os.sched_getaffinity(0))
    for kind, workers, reason in (("dask", 1024, "would need about 128.0 GiB"),
                                  ("processes", 100, "would need about 6.2 GiB"),
                                  ("dask", WORKERS_PER_CORE * cores + 1, f"more than {WORKERS_PER_CORE} per core")):
        if WORKERS_PER_CORE * cores + 1 > 32 and "per core" in reason:
            continue                                         # a large machine: the memory budget refuses first
        with pytest.raises(InputError, match=reason) as err:
            make_executor(kind, workers=workers)
        assert err.value.param == "workers"
    check_workers("dask", min(2, WORKERS_PER_CORE * cores))
    out = tmp_path / "r.json"
    _sweep(out)
    with pytest.raises(InputError, match="workers"):      # refused even when every cell is already done
        _sweep(out, executor="processes", workers=1024)
