"""The one resumable-table run behind sweep and replicate (commsim/batch/resumable.py), driven with a table kind
of its own: rows reused when they pass the check, the others run again and reported, a cell listed twice run
once, the table rewritten with the rows of other cells kept (or dropped), never written without a row, and a
run where every cell fails refused with the kind's param."""
from __future__ import annotations

import hashlib

import pytest

pytest.importorskip("pandas")

from commsim.batch.resumable import opened_table, run_cells, table_bytes, to_frame  # noqa: E402
from commsim.batch.table import TableKind, read_table  # noqa: E402
from commsim.core.errors import InputError  # noqa: E402

KIND = TableKind("square", ("cell", "x", "error"), row_word="row", scope="these squares", writer="a square",
                 failure_param="x")


def key(x: int) -> str:
    return hashlib.sha256(str(x).encode()).hexdigest()[:16]


def square(x: int) -> dict:
    if x < 0:
        return {"cell": key(x), "x": x, "error": "negative", "y": None}
    return {"cell": key(x), "x": x, "error": None, "y": x * x}


def check(row: dict, x: int):
    """A row is reused when it is the square of its cell."""
    if row.get("y") != x * x:
        return None, f"y: {row.get('y')!r} is not {x}²"
    return dict(row), ""


class Disk:
    """The writer: every write's content kept, the file written as the atomic writer would."""

    def __init__(self):
        self.writes = []

    def __call__(self, path, data):
        self.writes.append(data)
        with open(path, "wb") as fh:
            fh.write(data)


def run(path, cells, disk, ran, notes, **options):
    def task(x):
        ran.append(x)
        return square(x)
    with opened_table(path, KIND, notes.append) as (old, duplicates):
        return run_cells(KIND, cells, [key(x) for x in cells], old, duplicates, check=check, task=task,
                         executor="inprocess", out=path, fmt="json", write=disk, notify=notes.append, **options)


def test_rows_are_reused_rerun_or_kept(tmp_path):
    path, disk, ran, notes = tmp_path / "t.json", Disk(), [], []
    first = run(path, [1, 2, 3, 2], disk, ran, notes)
    assert ran == [1, 2, 3] and [row["y"] for row in first.ordered] == [1, 4, 9]       # 2 listed twice: run once
    assert [row["x"] for row in read_table(path, KIND)[0]] == [1, 2, 3] and first.written
    ran.clear()
    disk.writes.clear()
    again = run(path, [1, 2, 3], disk, ran, notes)
    assert ran == [] and disk.writes == [] and set(again.done) == {key(1), key(2), key(3)} and not notes
    rows = read_table(path, KIND)[0]
    rows[1]["y"] = 5                                                             # a row edited by hand
    path.write_bytes(table_bytes(rows, "json", KIND))
    fixed = run(path, [2, 4], disk, ran, notes)
    assert ran == [2, 4] and fixed.invalid == [f"{key(2)}: y: 5 is not 2²"]
    assert len(notes) == 1 and "1 row of these squares is not what a square writes (row " in notes[0]
    assert [row["x"] for row in read_table(path, KIND)[0]] == [2, 4, 1, 3]      # this run's cells first, others kept
    ran.clear()
    dropped = run(path, [4], disk, ran, notes, drop=([r for r in read_table(path, KIND)[0] if r["x"] != 4],))
    assert ran == [] and [row["x"] for row in read_table(path, KIND)[0]] == [4] and dropped.written


def test_no_table_without_a_row_and_every_failure_refused(tmp_path):
    path, disk, ran, notes = tmp_path / "t.json", Disk(), [], []
    with pytest.raises(InputError, match="every cell failed; the first: negative") as caught:
        run(path, [-1, -2], disk, ran, notes)
    assert caught.value.param == "x" and ran == [-1, -2]
    assert [row["error"] for row in read_table(path, KIND)[0]] == ["negative", "negative"]   # rows of failed cells
    outcome = run(path, [], disk, [], notes, drop=(read_table(path, KIND)[0],))
    assert not outcome.written and [row["x"] for row in read_table(path, KIND)[0]] == [-1, -2]


def test_the_kind_orders_the_columns():
    rows = [{"y": 1, "error": None, "x": 1, "cell": key(1)}]
    assert list(to_frame(rows, KIND).columns) == ["cell", "x", "error", "y"]
    backwards = TableKind("square", KIND.key_columns, order=lambda names: sorted(names, reverse=True))
    assert list(to_frame(rows, backwards).columns) == ["y", "x", "error", "cell"]
