"""``sweep``: one question over a grid of runs -- reductions x model specs x n x seeds -- as a table.

Each cell of the grid (:mod:`commsim.batch.grid`) is one :func:`~commsim.runs.run.run_reduction`,
kept as one row of the report's key figures (:data:`COLUMNS`: bits used against the bound, accuracy,
protocol = model, the certificate found).  The cells run on an executor (:mod:`commsim.core.executors`:
in this process, local processes, Dask) and the rows come back in grid order whatever the executor.

Resuming: with ``out`` naming a result table (``.parquet``, ``.csv``, ``.json``), the rows already in it
are read first and every cell whose key (a hash of the cell, :meth:`~commsim.batch.grid.Cell.key`) is
there without an error is not run again; the table is rewritten as cells finish (at the first finished cell,
then at most every ``save_every`` seconds, and once more when the sweep ends or is interrupted), so an interrupted sweep
loses at most the cells that were running.  A second identical sweep runs nothing and writes nothing.  One
sweep writes a table at a time (:func:`~commsim.batch.table.table_lock`: a second is refused, naming the
first's pid), a table is read back through :func:`~commsim.batch.table.read_table` (its size checked first,
repeated cell keys counted and reported), and a row of this grid waiting to run again stays in the table until
its new row replaces it.
Rows of the table that belong to other grids are kept -- unless ``prune``: then every row whose cell is not in
this grid is dropped, those of this grid's coordinates made from other files (an edited factory or checkpoint:
another key, :meth:`~commsim.batch.grid.Cell.key` hashes the spec's files) or settings and those outside it,
and the table rewritten.  A row of this grid that is not what a sweep writes
(:mod:`commsim.batch.sweep_rows`: a value of the wrong kind, coordinates other than its key's) is not
trusted: its cell runs again, and the caller is told.  A file that is not a sweep table at all is refused,
never overwritten.

A cell that cannot run as asked (a spec a reduction refuses, :class:`~commsim.core.errors.InputError`) is a
row with its ``error``; such a cell runs again on the next sweep.  When every cell fails, the first reason
is raised.
"""
from __future__ import annotations

import functools
import time
from datetime import datetime, timezone
from typing import Callable

from commsim.core.errors import InputError
from commsim.core.jsonable import to_jsonable
from commsim.core.executors import Executor, check_main_guarded, check_workers
from commsim.batch.grid import Cell, build_grid
from commsim.runs.run import run_reduction
from commsim.runs.stages import check_run_size
from commsim.batch.sweep_rows import (
    COLUMNS,
    KEY_COLUMNS,
    TIME_FORMAT,
    cell_coordinates,
    check_row,
)
from commsim.batch.resumable import opened_table, run_cells
from commsim.batch.resumable import to_frame as rows_frame
from commsim.batch.table import FORMATS, TableKind, table_format  # noqa: F401 - FORMATS: part of this module's API
from commsim.batch.table import read_table as read_any_table
from commsim.plugins import load_plugins
from commsim.spec import ModelSpec

# ---- one cell -----------------------------------------------------------------------------------
def run_cell(cell: Cell, plugins: tuple[str, ...] = ()) -> dict:
    """Run one cell and return its row (:data:`COLUMNS`: the cell's coordinates, then
    :meth:`~commsim.runs.report.Report.to_row` -- ``certificate`` is True when a verified certificate was
    found -- with ``runner_checked``, ``certificate_kind`` and which commsim made the row, when and from which
    files); an InputError (the cell cannot run as asked) becomes the row's ``error``.  Module-level, so that the
    processes and Dask executors can pickle it."""
    row = {"cell": cell.key(), "reduction": cell.reduction, "model": cell.model, "pattern": cell.pattern,
           "n": cell.n, "seed": cell.seed, "instances": "all" if cell.instances is None else cell.instances}
    row.update({f"model.{k}": v for k, v in cell.varied})
    start = time.perf_counter()
    try:
        load_plugins(plugins)
        report = run_reduction(cell.reduction, cell.model, cell.n, instances=cell.instances, seed=cell.seed,
                               certify=cell.certify)
    except InputError as exc:
        row.update({"error": " ".join(str(exc).split()) or type(exc).__name__,
                    "seconds": round(time.perf_counter() - start, 4)})
        return {**row, **_provenance(cell)}
    figures = report.to_row()                        # the report's key figures, the API's flat row
    figures.pop("reduction")
    figures["model"] = cell.model if cell.model is not None else figures["model"]
    row.update(figures)
    row.update({"runner_checked": report.runner_checked,
                "certificate_kind": None if report.certificate is None else report.certificate.kind,
                "error": None, "seconds": round(time.perf_counter() - start, 4)})
    return to_jsonable({**row, **_provenance(cell)})


def _provenance(cell: Cell) -> dict:
    """Which commsim made a row (the worker's), when (UTC, :data:`~commsim.batch.sweep_rows.TIME_FORMAT`) and
    from which files (:meth:`~commsim.batch.grid.Cell.files_hash`, None when the spec names none)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        commsim_version = version("commsim")            # as commsim.__version__ (importing commsim crosses layers)
    except PackageNotFoundError:  # pragma: no cover - a source tree that is not installed
        commsim_version = "0.0.0+source"
    return {"commsim_version": commsim_version, "written_at": datetime.now(timezone.utc).strftime(TIME_FORMAT),
            "spec_files_hash": cell.files_hash()}


# ---- result tables ------------------------------------------------------------------------------
def _sweep_columns(names: list[str]) -> list[str]:
    """A sweep table's columns: :data:`COLUMNS` order with the ``model.KEY`` columns after ``pattern``, any other
    column last."""
    varied = [k for k in names if k.startswith("model.")]
    front = list(COLUMNS[:COLUMNS.index("pattern") + 1])
    return front + varied + [c for c in COLUMNS if c not in front] + \
        [k for k in names if k not in COLUMNS and k not in varied]


#: what a sweep table is (:func:`commsim.batch.table.read_table`, :mod:`commsim.batch.resumable`)
SWEEP_TABLE = TableKind("sweep", KEY_COLUMNS, order=_sweep_columns, row_word="cell", scope="this grid",
                        writer="a sweep")


def read_table(path, param: str = "out") -> list[dict]:
    """The rows of a result table written by a sweep ([] when the file does not exist or is empty: nothing to
    lose), each cell key once; an InputError naming ``param`` when it exists but is not one
    (:func:`commsim.batch.table.read_table`: too large, unreadable, without rows or without the columns every
    row of a sweep has, :data:`~commsim.batch.sweep_rows.KEY_COLUMNS`, a row without a cell key): such a file
    is the user's, never overwritten."""
    return read_any_table(path, SWEEP_TABLE, param)[0]


def to_frame(rows: list[dict]):
    """Rows as a DataFrame, columns in :data:`COLUMNS` order with the ``model.KEY`` columns after ``pattern``;
    pandas' nullable types, so a count stays an integer in a column where an error row has none."""
    return rows_frame(rows, SWEEP_TABLE)


def _stale_rows(old: list[dict], cells: list[Cell], keys: set[str]) -> tuple[list[dict], list[dict]]:
    """The rows of ``old`` whose cells are not in this grid (``keys``), as (stale, outside): a stale row has the
    coordinates of a cell of the grid (:func:`~commsim.batch.sweep_rows.cell_coordinates`) under another key
    -- made from other files the spec names, or with other settings --; the others are outside the grid."""
    shapes: dict[tuple, set] = {}
    for cell in cells:
        coordinates = cell_coordinates(cell)
        shape = tuple(sorted(coordinates))
        shapes.setdefault(shape, set()).add(tuple(coordinates[name] for name in shape))
    stale, outside = [], []
    for row in old:
        if row["cell"] in keys:
            continue
        values = check_row(row)[0] or row             # values as a sweep writes them (a CSV's 4.0 is 4)
        same = any(tuple(values.get(name) for name in shape) in places for shape, places in shapes.items())
        (stale if same else outside).append(row)
    return stale, outside


def describe_row(row: dict) -> str:
    """A row's cell in a few words: ``index-idxl elman:width=2 n = 8 seed 0``."""
    instances = row.get("instances")
    return (f"{row.get('reduction')} {row.get('model')} n = {row.get('n')} seed {row.get('seed')}"
            + ("" if instances in (None, "all") else f" instances {instances}"))


# ---- the sweep ----------------------------------------------------------------------------------
def sweep(reductions, models=None, n=None, *, seeds=0, instances: int | None = None, precision=None, dtype=None,
          certify: bool = True, executor: str = "inprocess", scheduler=None, workers: int | None = None,
          out=None, write: Callable[[str, bytes], None] | None = None, plugins: tuple[str, ...] = (),
          progress: Callable[[int, int], None] | None = None, save_every: float = 1.0,
          notify: Callable[[str], None] | None = None, prune: bool = False):
    """Run every cell of reductions x models x n x seeds and return the rows as a pandas DataFrame.

    ``models``: spec patterns with ranges (``"elman:width=2..8:x2,precision=4..8:+4"``), a list of them,
    or None (each reduction's default model); ``n``, ``seeds``: an int, a list or a range text
    (``"8..16:x2"``); ``precision``/``dtype``: values or a range added to every spec.  ``executor``:
    ``inprocess``, ``processes`` or ``dask`` (``scheduler``: a running cluster's address), ``workers``
    local workers -- or an :class:`~commsim.core.executors.Executor` already started (left open).
    ``out``: a result table to resume from and keep up to date, written with ``write(path, content)``
    (the command line's atomic writer).  ``progress(done, total)`` counts cells.

    A row of ``out`` that belongs to this grid but is not what a sweep writes (a value of the wrong kind, such
    as ``model_accuracy = "high"``, coordinates other than its key's: :func:`~commsim.batch.sweep_rows.check_row`)
    is not trusted: its cell runs again and its row is replaced; ``notify(message)`` says so once (default: a
    :class:`UserWarning`).

    ``prune``: drop the rows of ``out`` whose cells are not in this grid -- stale rows, of this grid's coordinates
    but made from other files the spec names (a factory or checkpoint edited since: the cell key hashes them) or
    other settings, and rows outside the grid -- and rewrite ``out`` without them (needs ``out``).

    The frame's ``attrs`` say ``cells`` (in the grid), ``run`` (run now), ``skipped`` (found in ``out``),
    ``failed`` (rows with an error), ``invalid`` (rows of ``out`` found invalid and run again), ``executor``,
    and with ``prune`` ``pruned`` (rows dropped), ``pruned_stale`` (of them, the stale ones) and
    ``pruned_rows`` (each dropped row's cell in words, :func:`describe_row`, stale ones first).
    """
    if not isinstance(prune, bool):
        raise InputError(f"prune must be True or False, got {prune!r}", "prune")
    if prune and out is None:
        raise InputError("prune drops rows of the result table out: give out", "prune")
    cells = build_grid(reductions, models, n, seeds, instances=instances, certify=certify, precision=precision,
                       dtype=dtype)
    if not isinstance(executor, Executor):
        check_workers(executor, workers)             # before anything starts, even when nothing is left to run
        check_main_guarded(executor, scheduler)      # a script's unguarded call would run again in each worker
    registry = load_plugins(plugins)                 # names checked before anything runs: a typo fails at once
    for name in dict.fromkeys(cell.reduction for cell in cells):
        reduction = registry.get("reduction", name, param="reduction")
        for size in dict.fromkeys(cell.n for cell in cells if cell.n is not None):
            check_run_size(reduction, size)
    for spec in dict.fromkeys(cell.model for cell in cells if cell.model):
        ModelSpec.parse(spec, registry.names("model"))
    fmt = None if out is None else table_format(out)
    if out is not None and write is None:
        raise InputError("out needs a writer: call commsim.sweep (which brings the atomic file writer)", "out")
    with opened_table(out, SWEEP_TABLE, notify) as (old, duplicates):
        keys = [cell.key() for cell in cells]
        stale, outside = _stale_rows(old, cells, set(keys)) if prune else ([], [])
        outcome = run_cells(SWEEP_TABLE, cells, keys, old, duplicates, check=check_row,
                            task=functools.partial(run_cell, plugins=tuple(plugins)), executor=executor,
                            scheduler=scheduler, workers=workers, out=out, fmt=fmt, write=write, progress=progress,
                            notify=notify, save_every=save_every, drop=(stale, outside) if prune else ())
    frame = to_frame(outcome.ordered)
    frame.attrs.update({"cells": len(cells), "run": len(outcome.ran),
                        "skipped": sum(1 for key in keys if key in outcome.done),
                        "failed": sum(1 for row in outcome.ordered if row.get("error")),
                        "invalid": len(outcome.invalid), "duplicates": duplicates, "written": outcome.written,
                        "executor": outcome.executor, "out": None if out is None else str(out)})
    if prune:
        frame.attrs.update({"pruned": len(stale) + len(outside), "pruned_stale": len(stale),
                            "pruned_rows": [describe_row(row) for row in stale + outside]})
    return frame
