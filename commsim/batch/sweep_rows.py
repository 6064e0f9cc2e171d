"""What one row of a sweep table holds: its columns, the kind of value in each, and the check of a row read
back from a result table (a file the user may have edited, or that another program wrote).

Every row says which commsim made it, when, and from which files (``commsim_version``, ``written_at``,
``spec_files_hash``: a hash of the files the model spec names, :meth:`~commsim.batch.grid.Cell.files_hash`),
so that rows made before a change -- an upgrade, an edited factory file or checkpoint -- can be told apart from
newer ones; a table written before these columns existed still resumes.

A row read back is only reused when every column the table defines holds a value of its kind (a count is a
non-negative integer, a rate a number in [0, 1], a flag a bool, ...) and its coordinates are those of the
cell its key names; :func:`check_row` returns the row with its values as the sweep wrote them (a count that
a CSV reader turned into ``4.0`` is ``4`` again) or the reason it is not a sweep's row.
"""
from __future__ import annotations

import math
import re
from datetime import datetime

#: the row of one cell, in order; the spec's varied keys follow ``pattern`` as ``model.KEY`` columns
COLUMNS = ("cell", "reduction", "model", "pattern", "n", "seed", "instances", "protocol", "seq_len", "instances_run",
           "bits_used", "alice_to_bob", "bob_to_alice", "rounds", "bits_formula", "lower_bound_bits",
           "bound_applies", "bound_kind", "budget_ok", "model_accuracy", "model_correct", "protocol_matches_model",
           "runner_checked", "certificate", "certificate_kind", "audited", "torch_agreement", "measured_error",
           "error", "seconds", "commsim_version", "written_at", "spec_files_hash")

#: the columns every row has, a failed cell's too: a file without them is not a sweep table
KEY_COLUMNS = ("cell", "reduction", "model", "n", "seed", "instances", "error")

#: the kind of value each column holds (``verdict`` is the report's, kept beside :data:`COLUMNS`)
KINDS = {"cell": "key", "reduction": "text", "model": "text", "pattern": "text", "n": "count", "seed": "count",
         "instances": "instances", "protocol": "text", "seq_len": "count", "instances_run": "count",
         "bits_used": "count", "alice_to_bob": "count", "bob_to_alice": "count", "rounds": "count",
         "bits_formula": "count", "lower_bound_bits": "count", "bound_applies": "flag", "bound_kind": "text",
         "budget_ok": "flag", "model_accuracy": "rate", "model_correct": "flag", "protocol_matches_model": "flag",
         "runner_checked": "count", "certificate": "flag", "certificate_kind": "text", "audited": "flag",
         "torch_agreement": "flag", "measured_error": "rate", "error": "text", "seconds": "seconds",
         "commsim_version": "text", "written_at": "time", "spec_files_hash": "key", "verdict": "text"}

#: what a row of a cell that ran (no ``error``) always has; a failed cell's row has ``error`` instead
RAN = ("reduction", "model", "n", "seed", "instances", "protocol", "seq_len", "instances_run", "bits_used",
       "rounds", "bound_applies", "model_accuracy", "model_correct", "protocol_matches_model")

_KEY = re.compile(r"[0-9a-f]{16}")
#: how ``written_at`` is written: the UTC time the cell's row was made, to the second
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
_WHAT = {"key": "a cell key (16 hex digits)", "text": "text", "count": "a non-negative integer",
         "instances": "'all' or a positive integer", "flag": "true or false", "rate": "a number in [0, 1]",
         "seconds": "a non-negative number", "time": "a UTC time (ISO 8601, as 2026-01-31T12:00:00Z)"}


class _Invalid(Exception):
    pass


def is_key(value) -> bool:
    """Is ``value`` a cell key (:meth:`~commsim.batch.grid.Cell.key`: 16 hex digits)?"""
    return isinstance(value, str) and _KEY.fullmatch(value) is not None


def _value(kind: str, value):
    """``value`` as the sweep writes a value of ``kind``; :class:`_Invalid` when it is not one."""
    if kind == "key":
        if is_key(value):
            return value
    elif kind == "text":
        if isinstance(value, str):
            return value
    elif kind == "flag":
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            value = value.strip().lower() == "true"     # a column read back as text (one odd value makes it so)
        if isinstance(value, bool):
            return value
    elif kind == "instances" and value == "all":
        return value
    elif kind == "time":
        if isinstance(value, str) and _TIME.fullmatch(value):
            try:
                datetime.strptime(value, TIME_FORMAT)
                return value
            except ValueError:
                pass
    else:                                               # count, instances, rate, seconds: numbers
        number = _number(value)
        if kind in ("count", "instances"):
            if isinstance(number, float) and number.is_integer():
                number = int(number)                    # a CSV column with blanks is read back as floats
            if isinstance(number, int) and number >= (1 if kind == "instances" else 0):
                return number
        elif isinstance(number, (int, float)) and math.isfinite(number) and number >= 0 and \
                (kind == "seconds" or number <= 1):
            return number
    raise _Invalid(f"{value!r:.40} is not {_WHAT[kind]}")


def checked_value(kind: str, value):
    """``value`` as a result table writes a value of ``kind`` (a kind of :data:`KINDS`' values: ``count``,
    ``rate``, ``flag``, ...; a count read back as ``4.0`` is ``4``); a ValueError saying why when it is not one.
    The replicate table checks its rows with it."""
    try:
        return _value(kind, value)
    except _Invalid as exc:
        raise ValueError(str(exc)) from None


def _number(value):
    """``value`` as an int or float when it is one or is the text of one (a table column read back as text);
    anything else (a bool included) as it is, for the caller to refuse."""
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            try:
                return float(text)
            except ValueError:
                return value
    return None if isinstance(value, bool) else value


def check_row(row: dict, cell=None) -> tuple[dict | None, str]:
    """``(row, "")`` with the values as a sweep writes them, or ``(None, reason)`` when ``row`` is not a row
    a sweep wrote: a column of :data:`KINDS` holding another kind of value, a cell that ran without one of
    :data:`RAN`, a ``model.KEY`` value that is not a scalar, or coordinates other than ``cell``'s (the
    :class:`~commsim.batch.grid.Cell` its key names, when given)."""
    checked = dict(row)
    try:
        for name, value in row.items():
            kind = KINDS.get(name)
            if value is None:
                continue
            if kind is not None:
                checked[name] = _value(kind, value)
            elif name.startswith("model.") and not isinstance(value, (str, int, float, bool)):
                raise _Invalid(f"{value!r:.40} is not a single value")
    except _Invalid as exc:
        return None, f"{name}: {exc}"
    if checked.get("cell") is None:
        return None, "cell: missing"
    if checked.get("error") is None:
        missing = [name for name in RAN if checked.get(name) is None]
        if missing:
            return None, f"{missing[0]}: missing in a cell that ran"
    if cell is not None:
        for name, value in cell_coordinates(cell).items():
            if checked.get(name) != value:
                return None, f"{name}: {checked.get(name)!r:.40} but its cell key is for {value!r:.40}"
    return checked, ""


def cell_coordinates(cell) -> dict:
    """What every row of ``cell`` (a :class:`~commsim.batch.grid.Cell`) says of it, as a sweep writes it:
    ``reduction``, ``seed``, ``instances``, and ``n`` and ``model`` when the cell names them (a cell of the
    reduction's default size or model has the report's in its row)."""
    coordinates = {"reduction": cell.reduction, "seed": cell.seed,
                   "instances": "all" if cell.instances is None else cell.instances}
    if cell.n is not None:
        coordinates["n"] = cell.n
    if cell.model is not None:
        coordinates["model"] = cell.model
    return coordinates


def report_invalid_rows(out, invalid: list, of: str, writer: str, notify=None) -> None:
    """Say (``notify``, else a UserWarning) that ``invalid`` rows of ``out`` (of this grid / experiment) are not what
    a ``writer`` writes, naming the first, and that their cells run again."""
    if not invalid:
        return
    many = len(invalid) > 1
    message = (f"{out}: {len(invalid)} row{'s' if many else ''} of {of} {'are' if many else 'is'} not what "
               f"{writer} writes ({invalid[0]}); running {'their cells' if many else 'its cell'} again")
    if notify is None:
        import warnings
        warnings.warn(message, UserWarning, stacklevel=3)
    else:
        notify(message)
