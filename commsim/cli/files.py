"""The one way commands write files: atomically, so nothing half-written is ever left behind.

Every file is rendered into a temporary file in the target's own directory and renamed into place with
``os.replace`` (atomic on one file system); on any error the temporary file is removed and the target is
untouched.  A directory that does not exist or cannot be written is bad input: an :class:`InputError`
naming the option (``--dot``, ``--plot``, ``--out``).
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

from commsim.core.errors import InputError

#: prefix of the temporary files (hidden, so a listing during the write does not show them)
TEMP_PREFIX = ".commsim-"


def check_target(path: str | os.PathLike, option: str) -> Path:
    """The target of ``option`` as a Path; an :class:`InputError` naming ``option`` when its directory does
    not exist, is not a directory or cannot be written, or the target is itself a directory."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(f"{option}: directory {str(directory)!r} does not exist", option)
    if target.is_dir():
        raise InputError(f"{option}: {str(target)!r} is a directory, not a file", option)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(f"{option}: cannot write in {str(directory)!r}: permission denied", option)
    return target


@contextlib.contextmanager
def _atomic(path: str | os.PathLike, option: str) -> Iterator[tuple[int, str]]:
    """A temporary file beside ``path`` (its descriptor and name), moved onto ``path`` when the block ends
    normally and removed when it raises."""
    target = check_target(path, option)
    try:
        fd, tmp = tempfile.mkstemp(dir=str(target.parent.resolve()), prefix=TEMP_PREFIX, suffix=target.suffix)
    except OSError as exc:
        raise InputError(f"{option}: cannot write in {str(target.parent)!r}: {exc.strerror}", option) from None
    try:
        yield fd, tmp
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)                     # mkstemp makes 0600; give the usual permissions
        try:
            os.replace(tmp, target)
        except OSError as exc:
            raise InputError(f"{option}: cannot write {str(target)!r}: {exc.strerror}", option) from None
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text(path: str | os.PathLike, text: str, *, option: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically; ``option`` is the flag that named the file."""
    with _atomic(path, option) as (fd, _):
        with os.fdopen(os.dup(fd), "w", encoding="utf-8") as fh:
            fh.write(text)


def write_figure(figure, path: str | os.PathLike, *, option: str) -> None:
    """Save a matplotlib ``figure`` to ``path`` atomically, in the format its suffix names (``.png``, ``.svg``)."""
    with _atomic(path, option) as (_, tmp):
        figure.savefig(tmp, format=Path(path).suffix.lower().lstrip(".") or None)
