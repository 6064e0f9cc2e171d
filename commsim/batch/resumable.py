"""A resumable table run: the one implementation behind ``sweep`` and ``replicate``.

Both run a list of cells on an executor and keep a result table (``out``) up to date; they differ only in what a
:class:`~commsim.batch.table.TableKind` says (the table's name, its key columns, its column order and the words
of its messages) and in what the caller hands in: each cell's key, the check a row read back must pass to be
reused (``check(row, cell) -> (row as the cell writes it | None, reason)``) and the function that runs a cell.

* :func:`opened_table` holds the table's lock (:func:`~commsim.batch.table.table_lock`), removes the temporaries
  a killed save left, and reads the rows back (:func:`~commsim.batch.table.read_table`), saying how many repeated
  a cell key.
* :func:`run_cells` reuses the rows that pass the check (a row that does not is reported and its cell runs
  again), runs the other cells -- a cell listed twice once --, and rewrites the table: at the first finished
  cell, then at most every ``save_every`` seconds, and once more when the run ends or is interrupted.  A row of
  these cells waiting to run again stays until its new row replaces it; the rows of other cells are kept unless
  ``drop`` lists them (a sweep's ``prune``); a table is never written without a row.
* :func:`table_bytes` and :func:`to_frame` turn rows into the file's content and the DataFrame returned.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

from commsim.core.errors import InputError
from commsim.core.executors import Executor, make_executor
from commsim.core.jsonable import to_jsonable
from commsim.batch.sweep_rows import report_invalid_rows
from commsim.batch.table import TableKind, read_table, remove_stale_temporaries, report_duplicates, table_lock


# ---- rows as a frame and as a file ----------------------------------------------------------------
def nullable_frame(rows: list[dict], order: list[str]):
    """Rows as a DataFrame with the columns in ``order``; pandas' nullable types, so ints stay ints beside missing
    values (Int64, boolean, string)."""
    import pandas as pd
    frame = pd.DataFrame.from_records(rows, columns=order)
    for column in frame.columns:
        if frame[column].notna().any():
            frame[column] = frame[column].convert_dtypes()
    return frame


def to_frame(rows: list[dict], kind: TableKind):
    """Rows as a DataFrame, columns in ``kind``'s order (:attr:`TableKind.order`)."""
    return nullable_frame(rows, kind.columns(list(dict.fromkeys(k for row in rows for k in row))))


def table_bytes(rows: list[dict], fmt: str, kind: TableKind) -> bytes:
    """The rows as a parquet, csv or json file's content, columns in ``kind``'s order."""
    import pandas as pd
    if fmt == "json":
        return (json.dumps(to_jsonable(rows), indent=1) + "\n").encode()
    frame = to_frame(rows, kind)
    if fmt == "csv":
        return frame.to_csv(index=False).encode()
    buffer = io.BytesIO()
    for column in frame.columns:                   # a column of text and numbers (instances: "all" or K) as text
        if frame[column].dtype != object:
            continue
        kinds = {type(v) for v in frame[column] if not pd.isna(v)}
        if str in kinds and len(kinds) > 1:
            frame[column] = [None if pd.isna(v) else str(v) for v in frame[column]]
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


# ---- reading back -------------------------------------------------------------------------------
@contextlib.contextmanager
def opened_table(out, kind: TableKind, notify=None) -> Iterator[tuple[list[dict], int]]:
    """``(rows, duplicates)`` of the table ``out`` (``([], 0)`` when ``out`` is None), its lock held while the
    block runs, the temporaries a killed save left removed, and the rows that repeated a cell key reported."""
    if out is None:
        yield [], 0
        return
    with table_lock(out):                          # one run writes a table at a time
        remove_stale_temporaries(out)
        old, duplicates = read_table(out, kind)
        report_duplicates(out, duplicates, notify)
        yield old, duplicates


def reusable_rows(old: list[dict], cells: dict, check: Callable) -> tuple[dict[str, dict], list[str]]:
    """(key -> the checked row, for the rows of ``cells`` -- key -> cell -- that ran without an error and pass
    ``check(row, cell)``), and the invalid rows among those of ``cells`` ("KEY: the reason")."""
    done, invalid = {}, []
    for row in old:
        cell = cells.get(row.get("cell"))
        if cell is None or row.get("error"):
            continue
        checked, reason = check(row, cell)
        if checked is None:
            invalid.append(f"{row['cell']}: {reason}")
        else:
            done[row["cell"]] = checked
    return done, invalid


# ---- the run ------------------------------------------------------------------------------------
@dataclass
class Outcome:
    """What :func:`run_cells` did: every key's row (``rows``), the rows reused (``done``), the invalid rows read
    back, the rows run now in the order they finished (``ran``), whether the table was written, the executor."""

    keys: list[str]
    rows: dict[str, dict]
    done: dict[str, dict]
    invalid: list[str]
    ran: list[dict] = field(default_factory=list)
    written: bool = False
    executor: str = "none"

    @property
    def ordered(self) -> list[dict]:
        """Each cell's row once, in the cells' order."""
        return [self.rows[key] for key in dict.fromkeys(self.keys)]


def run_cells(kind: TableKind, cells: list, keys: list[str], old: list[dict], duplicates: int, *,
              check: Callable, task: Callable, executor, scheduler=None, workers: int | None = None, out=None,
              fmt: str | None = None, write: Callable[[str, bytes], None] | None = None,
              progress: Callable[[int, int], None] | None = None, notify: Callable[[str], None] | None = None,
              save_every: float = 0.0, drop: tuple[list[dict], ...] = ()) -> Outcome:
    """Run ``task(cell)`` for every cell of ``cells`` (keyed ``keys``) whose row in ``old`` cannot be reused
    (:func:`reusable_rows` with ``check``), on ``executor`` (a name, or an :class:`Executor` already started:
    left open), keeping ``out`` -- holding ``old``'s rows, its lock held -- up to date (module docstring).
    ``drop``: lists of rows of ``old`` not among ``keys`` to leave out of the table (every such row when given);
    the table is rewritten then even if nothing runs, as it is when ``old`` repeated cell keys."""
    done, invalid = reusable_rows(old, dict(zip(keys, cells)), check)
    report_invalid_rows(out, [f"{kind.row_word} {row}" for row in invalid], kind.scope, kind.writer, notify)
    first = {key: i for i, key in reversed(list(enumerate(keys)))}   # a cell listed twice runs once
    todo = [i for i, key in enumerate(keys) if key not in done and first[key] == i]
    result = Outcome(keys, {key: done[key] for key in keys if key in done}, done, invalid)
    key_set = set(keys)
    waiting = {row["cell"]: row for row in old if row["cell"] in key_set}  # kept until their cells' new rows come
    pruning = bool(drop)
    kept = [] if pruning else [row for row in old if row["cell"] not in key_set]

    def save() -> None:
        table = [result.rows.get(k) or waiting[k] for k in dict.fromkeys(keys) if k in result.rows or k in waiting]
        if out is None or not (table or kept):       # a table is never written without a row
            return
        write(str(out), table_bytes(table + kept, fmt, kind))
        result.written = True

    total, finished = len(cells), len(cells) - len(todo)
    if progress is not None:
        progress(finished, total)
    dirty = bool(any(drop) or duplicates)            # rows to drop: the table is rewritten even if nothing runs
    if todo:
        last_save = -math.inf                        # the first finished cell is on disk at once
        try:
            with (contextlib.nullcontext(executor) if isinstance(executor, Executor) else
                  make_executor(executor, scheduler, workers)) as ex:
                result.executor = ex.describe()
                for index, row in ex.as_completed(task, [cells[i] for i in todo]):
                    result.rows[keys[todo[index]]] = row
                    result.ran.append(row)
                    finished += 1
                    dirty = True
                    if progress is not None:
                        progress(finished, total)
                    if time.monotonic() - last_save >= save_every:
                        save()
                        last_save, dirty = time.monotonic(), False
        finally:
            if dirty:
                save()
    elif dirty:
        save()
    if result.ran and all(row.get("error") for row in result.ordered):
        raise InputError(f"every cell failed; the first: {result.ran[0]['error']}", kind.failure_param)
    return result
