"""``replicate``: a paper's experiment at a chosen scale -- trained models, the bounds beside them -- as a
resumable table, run on the sweep executors.

An experiment is a plugin (registry kind ``experiment``; [BHBK24]'s are in ``protocols/experiments``) with

* ``name``, ``title``, ``source``, ``figure`` and ``scales`` (the scale names it knows: ``quick``, ``cpu``,
  ``paper``);
* ``cells(scale)`` -- the grid, plain JSON-able dicts with at least ``model``, ``layers``, ``width``, ``N``,
  ``seed`` (and every size the cell depends on: the cell is its own provenance);
* ``run_cell(cell)`` -- trains and measures one cell: a dict of figures with at least ``accuracy``;
* ``check(rows)`` -- the invariants the rows violate, as sentences (empty: none);
* ``claims(rows)`` -- the paper's claims checked on the rows: dicts ``claim``, ``paper``, ``ours``,
  ``status`` (``reproduced``, ``not reproduced``, ``not tested at this scale``; ``smoke test`` at ``quick``),
  ``test`` (the test the verdict comes from) and ``interval`` (the interval it reads);
* ``bound_curve(rows, N)`` -- the accuracy ceiling over state bits at length N (``bits``, ``ceiling``,
  ``line``, ``label``, ``line_label``) or None;
* optionally ``ceiling_column`` -- the row's column holding that ceiling at the quantised model's state bits
  (what the command's table shows);
* the declarations of :class:`commsim.contract.experiment.Experiment` -- ``legend`` and ``columns`` (how its
  figures and page show the rows) and ``provenance()`` (the versions of the libraries a row ran on).

Each cell is keyed by a hash of the experiment's name and the cell (:func:`cell_key`); with ``out`` the rows of
a table written before are read first and every cell whose key is there without an error is not run again; the
table is rewritten after every cell, so an interrupted run loses only the cells that were running (a row waiting
to run again stays until its new row replaces it); one run writes a table at a time, and the table is read back as
a sweep's is (:mod:`commsim.batch.table`).  A file that
is not a replicate table is refused, never overwritten.  A row read back is reused only when it is what a cell
writes (:func:`check_row`: every known column holds a value of its kind, :data:`KINDS`; any other column a
single value; its coordinates and sizes those of the cell its key names); a row that is not -- edited by hand,
or written by another program -- is refused with the reason naming the row and the column, and its cell runs
again.
"""
from __future__ import annotations

import functools
import hashlib
import json
import platform
import time
from typing import Callable

from commsim.contract.experiment import Experiment
from commsim.core.errors import InputError
from commsim.core.jsonable import to_jsonable
from commsim.core.executors import Executor, check_workers
from commsim.batch.resumable import opened_table, run_cells, to_frame
from commsim.batch.sweep_rows import checked_value, is_key
from commsim.batch.table import TableKind, read_table, table_format
from commsim.batch.table import plain as _plain
from commsim.plugins import load_plugins

#: the scales an experiment may define
SCALES = ("quick", "cpu", "paper")
#: the columns every row has (a failed cell's too); a file without them is not a replicate table
KEY_COLUMNS = ("cell", "experiment", "scale", "model", "layers", "width", "N", "seed", "error")
#: bumped when what a cell computes changes: rows of an older version are run again
VERSION = 1

#: the kind of value each known column holds (:func:`commsim.batch.sweep_rows.checked_value`'s kinds;
#: ``seconds`` is any non-negative number); a column not listed holds a single value of any kind
KINDS = {"cell": "key", **dict.fromkeys(("experiment", "scale", "model", "error", "commsim_version", "torch_version",
                                        "python", "machine", "precisions_tried", "run_verdict", "run_certificate",
                                        "run_note", "run_protocol", "theorem5_note"), "text"),
         **dict.fromkeys(("layers", "width", "N", "seed", "k", "steps", "batch", "eval", "bound_eval", "run_instances",
                          "steps_run", "p_eff", "state_numbers", "state_bits", "run_bits_used", "run_lower_bound_bits",
                          "run_bits_formula", "mH", "theorem5_p"), "count"),
         **dict.fromkeys(("accuracy", "chance", "float_commsim_accuracy", "quantised_accuracy", "fano_ceiling",
                          "eq_random_ceiling", "run_binary_accuracy", "sampling_margin"), "rate"),
         **dict.fromkeys(("recurrent", "run_bound_applies", "run_protocol_matches_model", "run_certificate_verified",
                          "run_certificate_searched", "run_torch_agreement"), "flag"),
         **dict.fromkeys(("seconds", "train_seconds", "final_loss", "lr", "one_way_bits", "theorem5_min_mH"),
                         "seconds")}
#: what the row of a cell that ran (no ``error``) always has
RAN = ("accuracy", "seconds")


def experiment_object(name, plugins=()):
    """The registered experiment ``name`` (an InputError naming ``experiment`` with the known names)."""
    if not isinstance(name, str):
        return name
    return load_plugins(plugins).get("experiment", name, param="experiment")


def cell_key(experiment: str, cell: dict) -> str:
    """16 hex digits: a hash of the experiment, the cell (its sizes included) and :data:`VERSION`."""
    text = json.dumps({"experiment": experiment, "cell": cell, "version": VERSION}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _provenance(exp) -> dict:
    """commsim's version, the experiment's libraries' (:meth:`commsim.contract.experiment.Experiment.provenance`),
    Python's and the machine's."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        commsim_version = version("commsim")
    except PackageNotFoundError:  # pragma: no cover - a source tree that is not installed
        commsim_version = "0.0.0+source"
    libraries = exp.provenance() if isinstance(exp, Experiment) else {}
    return {"commsim_version": commsim_version, **libraries, "python": platform.python_version(),
            "machine": platform.machine()}


def run_experiment_cell(cell: dict, experiment: str, plugins: tuple[str, ...] = ()) -> dict:
    """One cell's row: its key, coordinates and sizes, the experiment's figures, provenance, seconds; an
    InputError becomes the row's ``error``.  Module-level, so the processes and Dask executors can pickle it."""
    row = {"cell": cell_key(experiment, cell), "experiment": experiment, **cell, "error": None}
    start, exp = time.perf_counter(), None
    try:
        exp = experiment_object(experiment, plugins)
        row.update(exp.run_cell(dict(cell)))
    except InputError as exc:
        row["error"] = " ".join(str(exc).split()) or type(exc).__name__
    row.update(_provenance(exp))
    row["seconds"] = round(time.perf_counter() - start, 3)
    return to_jsonable(row)


# ---- tables ---------------------------------------------------------------------------------------
def check_row(row: dict, experiment: str, cell: dict | None = None) -> tuple[dict | None, str]:
    """``(row, "")`` with its values as a cell writes them (a count read back as ``4.0`` is ``4``), or
    ``(None, "COLUMN: reason")`` when ``row`` is not what a cell of ``experiment`` writes: a known column
    (:data:`KINDS`) holding another kind of value, another column holding more than a single value, a cell that
    ran without one of :data:`RAN`, or -- with ``cell``, the cell its key names -- another experiment, or a
    coordinate or size other than the cell's."""
    checked = dict(row)
    for name, value in row.items():
        if value is None:
            continue
        kind = KINDS.get(name)
        if kind is None:
            if not isinstance(value, (str, int, float, bool)):
                return None, f"{name}: {value!r:.40} is not a single value"
            continue
        try:
            checked[name] = checked_value(kind, value)
        except ValueError as exc:
            return None, f"{name}: {exc}"
    if not is_key(checked.get("cell")):
        return None, "cell: missing"
    if checked.get("experiment") != experiment:
        return None, f"experiment: {checked.get('experiment')!r:.40} in a table of {experiment}"
    if checked.get("error") is None:
        missing = [name for name in RAN if checked.get(name) is None]
        if missing:
            return None, f"{missing[0]}: missing in a cell that ran"
    for name, value in (cell or {}).items():
        if checked.get(name) != value:
            return None, f"{name}: {checked.get(name)!r:.40} but its cell key is for {value!r:.40}"
    return checked, ""


#: what a replicate table is (:func:`commsim.batch.table.read_table`, :mod:`commsim.batch.resumable`): every row
#: keyed by a cell key, the key columns first
REPLICATE_TABLE = TableKind("replicate", KEY_COLUMNS, row_word="row", scope="this experiment", writer="a cell",
                            failure_param="experiment")


def read_rows(path, param: str = "out") -> list[dict]:
    """The rows of a replicate table ([] when the file does not exist or is empty), each cell key once; an
    InputError naming ``param`` when the file exists and is not one (never overwritten)."""
    return read_table(path, REPLICATE_TABLE, param)[0]


# ---- the run --------------------------------------------------------------------------------------
def replicate(experiment, scale: str = "quick", *, executor="inprocess", scheduler=None, workers: int | None = None,
              out=None, write: Callable[[str, bytes], None] | None = None, plugins: tuple[str, ...] = (),
              progress: Callable[[int, int], None] | None = None, notify: Callable[[str], None] | None = None):
    """Run every cell of ``experiment`` at ``scale`` and return the rows as a pandas DataFrame whose ``attrs``
    hold ``experiment``, ``title``, ``source``, ``figure``, ``scale``, ``cells``, ``run``, ``skipped``,
    ``failed``, ``invalid``, ``executor``, ``sizes`` and ``paper_sizes`` (the scale's sizes and the paper's),
    ``ceiling_column``, ``violations`` (the experiment's invariants the rows break) and ``claims`` (the paper's
    claims checked).  ``out``: a table to resume from and keep up to date (after every cell), written with
    ``write(path, content)``; a row of it that is not what its cell writes (:func:`check_row`) is not reused: its
    cell runs again and ``notify(message)`` says which row and column (default: a :class:`UserWarning`)."""
    if not isinstance(scale, str) or scale not in SCALES:
        raise InputError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}", "scale")
    exp = experiment_object(experiment, plugins)
    if scale not in exp.scales:
        raise InputError(f"{exp.name} has no scale {scale!r}; it has {', '.join(exp.scales)}", "scale")
    if not isinstance(executor, Executor):
        check_workers(executor, workers)
    fmt = None if out is None else table_format(out)
    if out is not None and write is None:
        raise InputError("out needs a writer: call commsim.replicate (which brings the atomic file writer)", "out")
    cells = exp.cells(scale)
    keys = [cell_key(exp.name, cell) for cell in cells]
    with opened_table(out, REPLICATE_TABLE, notify) as (old, duplicates):
        outcome = run_cells(REPLICATE_TABLE, cells, keys, old, duplicates,
                            check=lambda row, cell: check_row(row, exp.name, cell),
                            task=functools.partial(run_experiment_cell, experiment=exp.name, plugins=tuple(plugins)),
                            executor=executor, scheduler=scheduler, workers=workers, out=out, fmt=fmt, write=write,
                            progress=progress, notify=notify, save_every=0.0)
    ordered = outcome.ordered
    frame = to_frame(ordered, REPLICATE_TABLE)
    good = [r for r in ordered if not r.get("error")]
    frame.attrs.update({"experiment": exp.name, "title": exp.title, "source": exp.source, "figure": exp.figure,
                        "scale": scale, "cells": len(cells), "run": len(outcome.ran), "skipped": len(outcome.done),
                        "failed": sum(1 for r in ordered if r.get("error")), "invalid": len(outcome.invalid),
                        "duplicates": duplicates, "written": outcome.written,
                        "executor": outcome.executor, "ceiling_column": getattr(exp, "ceiling_column", None),
                        "violations": list(exp.check(good)), "claims": list(exp.claims(good)),
                        "sizes": dict(exp.scales[scale]), "paper_sizes": dict(exp.scales.get("paper", {})),
                        "out": None if out is None else str(out)})
    return frame


def bound_curves(experiment, frame) -> dict:
    """N -> the experiment's ceiling over state bits at N (``bound_curve``), for the figures and the page."""
    exp = experiment_object(experiment)
    rows = frame_rows(frame)
    out = {}
    for N in sorted({r["N"] for r in rows}):
        curve = exp.bound_curve(rows, N)
        if curve is not None:
            out[N] = curve
    return out


def frame_rows(frame) -> list[dict]:
    """A frame's rows as plain dicts (NA as None), the cells that failed left out."""
    rows = [{k: _plain(v) for k, v in r.items()} for r in frame.astype(object).to_dict("records")]
    return [r for r in rows if not r.get("error")]
