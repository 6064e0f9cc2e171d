"""A result table on disk -- a sweep's or a replicate's ``out`` --: read once and checked, written by one run at
a time.

* :func:`read_table` reads the rows of a table ([] when there is none yet): a file over
  :data:`MAX_TABLE_BYTES` is refused before it is read (reading a table takes several times its size in
  memory), a file that is not a table of the kind asked for is refused (never overwritten), a cell holding a
  list or a mapping is refused naming its row and column, and rows that repeat a cell key are counted (the
  last of each is kept, as a later save wrote it).
* :func:`table_lock` holds a lock file beside the table (``.NAME.commsim-lock``, with the holder's pid) for the
  whole run: a second run on the same table is refused with the holder's pid instead of the last writer
  silently dropping the other's rows.  The lock is an ``flock`` on that file, so the kernel frees it when its
  holder dies (kill -9 included): a lock file left by a dead process is simply taken over.
* :func:`remove_stale_temporaries` removes the hidden temporary files (``.commsim-PID-*``) that a writer killed
  in the middle of a save left beside the table -- those of processes no longer alive only.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from commsim.core.errors import InputError
from commsim.core.limits import show_bytes
from commsim.batch.sweep_rows import is_key

#: result-table formats by file suffix
FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json"}

#: the largest table read back (a sweep of the most cells, each row well under a kilobyte, is a few MB)
MAX_TABLE_BYTES = 256 * 2**20

#: the lock file beside a table ``NAME``: ``.NAME`` + this
LOCK_SUFFIX = ".commsim-lock"

#: a temporary file of the one safe writer: ``.commsim-PID-...`` (:mod:`commsim.cli.files` names them so)
_TEMPORARY = re.compile(r"\.commsim-(\d+)-.*")


def table_format(path, param: str = "out") -> str:
    """The format ``path``'s suffix names (parquet, csv, json); an InputError naming ``param`` otherwise."""
    fmt = FORMATS.get(Path(str(path)).suffix.lower())
    if fmt is None:
        raise InputError(f"{param} must end in .parquet, .csv or .json, got {str(path)!r}", param)
    return fmt


@dataclass(frozen=True)
class TableKind:
    """What a kind of table is: its name in messages (``sweep``, ``replicate``), the columns every row has (a
    ``cell`` holding a cell key among them), the order of its columns (``order``: the rows' column names -> the
    table's, default: the key columns first), and the words of a resumable run's messages
    (:mod:`commsim.batch.resumable`): how an invalid row read back is named (``row_word``), whose rows they are
    (``scope``), what writes them (``writer``), and the ``param`` of the error when every cell failed."""

    name: str
    key_columns: tuple[str, ...]
    order: Callable[[list[str]], list[str]] | None = None
    row_word: str = "row"
    scope: str = "this table"
    writer: str = "a cell"
    failure_param: str | None = None

    def columns(self, names: list[str]) -> list[str]:
        """The table's columns for rows with these column names, in order."""
        if self.order is not None:
            return self.order(names)
        return [c for c in self.key_columns if c in names] + [k for k in names if k not in self.key_columns]


def plain(value):
    """A cell value read back from a table as a plain Python value (NaN and NA as None)."""
    if value is None:
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)) and getattr(value, "size", 1) == 1:
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _is_list(value) -> bool:
    """A value that is several values (a list, an array, a mapping): never in a table commsim writes."""
    return isinstance(value, (list, tuple, dict, set)) or (hasattr(value, "shape") and getattr(value, "ndim", 0) > 0)


def _frame(path: Path, fmt: str):
    import pandas as pd
    if fmt == "json":
        rows = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise ValueError("not a list of rows")
        return pd.DataFrame.from_records(rows)
    if fmt == "csv":
        return pd.read_csv(path, dtype={"cell": str})
    return pd.read_parquet(path)


def read_table(path, kind: TableKind, param: str = "out", *, limit: int = MAX_TABLE_BYTES) -> tuple[list[dict], int]:
    """``(rows, duplicates)``: the rows of a ``kind`` table, each cell key once (the last row of a key kept, in the
    place of its first), and how many rows repeated a key before; ``([], 0)`` when the file does not exist or is
    empty (nothing to lose).  An InputError naming ``param`` when it exists and is not one -- not a regular file,
    over ``limit`` bytes, unreadable, without rows or without ``kind``'s key columns, a row whose cell is not a
    cell key, a cell holding a list or a mapping: such a file is the user's, never overwritten."""
    path = Path(str(path))
    fmt = table_format(path, param)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return [], 0
    except OSError as exc:
        raise InputError(f"{param}: cannot read {str(path)!r}: {exc.strerror}", param) from None
    if not path.is_file():
        raise InputError(f"{param}: {str(path)!r} is not a regular file", param)
    if info.st_size == 0:
        return [], 0
    if info.st_size > limit:
        raise InputError(f"{param}: {str(path)!r} is {show_bytes(info.st_size)}, more than a {kind.name} table read "
                         f"back may be ({show_bytes(limit)}); give another file", param)
    head = f"{param}: {str(path)!r} exists and"
    try:
        frame = _frame(path, fmt)
    except Exception as exc:  # noqa: BLE001 - a file that does not read as a table: the user's to move away
        raise InputError(f"{head} does not read as a {fmt} table ({type(exc).__name__}); give another file or "
                         "remove it", param) from None
    missing = [name for name in kind.key_columns if name not in frame.columns]
    if missing or not len(frame):
        reason = "no rows" if not len(frame) else \
            f"no {', '.join(repr(m) for m in missing)} column{'s' if len(missing) > 1 else ''}"
        raise InputError(f"{head} is not a commsim {kind.name} table ({reason}); give another file or remove it",
                         param)
    rows = []
    for number, record in enumerate(frame.astype(object).to_dict("records"), 1):
        for column, value in record.items():
            if _is_list(value):
                raise InputError(f"{head} is not a commsim {kind.name} table (row {number}'s {str(column)!r:.40} "
                                 f"holds a list, not a single value); give another file or remove it", param)
        row = {k: plain(v) for k, v in record.items()}
        if not is_key(row["cell"]):
            raise InputError(f"{head} is not a commsim {kind.name} table (row {number}'s cell, {row['cell']!r:.40}, "
                             "is not a cell key); give another file or remove it", param)
        rows.append(row)
    unique: dict = {}
    for row in rows:
        unique[row["cell"]] = row                  # a later row of a key replaces an earlier one, in its place
    return list(unique.values()), len(rows) - len(unique)


def report_duplicates(out, duplicates: int, notify=None) -> None:
    """Say (``notify``, else a UserWarning) that ``duplicates`` rows of ``out`` repeated a cell key already in it,
    and that the last row of each key is the one kept."""
    if not duplicates:
        return
    many = duplicates > 1
    message = (f"{out}: {duplicates} row{'s' if many else ''} repeat{'' if many else 's'} a cell key of an earlier "
               "row; the last row of each key is kept and the table is written without the repeats")
    if notify is None:
        import warnings
        warnings.warn(message, UserWarning, stacklevel=3)
    else:
        notify(message)


# ---- one writer per table -----------------------------------------------------------------------
def lock_path(path) -> Path:
    """The lock file of the table ``path``: hidden, beside it."""
    path = Path(str(path))
    return path.with_name(f".{path.name}{LOCK_SUFFIX}")


def _holder(fd: int) -> str:
    """The pid written in a lock file (as text), or "unknown"."""
    with contextlib.suppress(OSError, ValueError):
        text = os.pread(fd, 32, 0).decode("ascii").strip()
        if text.isdigit():
            return text
    return "unknown"


@contextlib.contextmanager
def table_lock(path, param: str = "out") -> Iterator[Path]:
    """Hold the lock of the table ``path`` while the block runs; an InputError naming ``param`` and the holder's
    pid when another process holds it.  The lock file is removed when the block ends."""
    import fcntl
    lock = lock_path(path)
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) |
                         getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise InputError(f"{param}: cannot lock {str(path)!r} ({str(lock)!r}: {exc.strerror})", param) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):    # a FIFO or a device planted under the lock's name
            os.close(fd)
            raise InputError(f"{param}: cannot lock {str(path)!r}: {str(lock)!r} is not a regular file; remove it",
                             param)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _holder(fd)
            os.close(fd)
            raise InputError(f"{param}: {str(path)!r} is being written by another commsim run (pid {holder}, lock "
                             f"file {str(lock)!r}); wait for it to end or give another file", param) from None
        try:                                       # the file locked is still the one the name names
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except OSError:
            same = False
        if same:
            break
        os.close(fd)                               # its holder removed it as we opened it: lock the new one
    try:
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        except OSError as exc:
            raise InputError(f"{param}: cannot lock {str(path)!r} ({str(lock)!r}: {exc.strerror})", param) from None
        yield lock
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:                                # another user's process (EPERM): alive
        return True
    return True


def remove_stale_temporaries(path) -> list[str]:
    """Remove the writer's temporary files beside the table ``path`` (``.commsim-PID-*`` with its suffix) whose
    process is no longer alive -- a save killed before its rename; return their names.  Call it holding the
    table's lock."""
    path = Path(str(path))
    directory = path.parent if str(path.parent) else Path(".")
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        match = _TEMPORARY.fullmatch(name)
        if match is None or not name.endswith(path.suffix) or int(match.group(1)) == os.getpid() or \
                _alive(int(match.group(1))):
            continue
        with contextlib.suppress(OSError):
            target = directory / name
            if os.path.isfile(target) and not os.path.islink(target):
                os.unlink(target)
                removed.append(name)
    return removed
