"""The one way commands write files: atomically, so nothing half-written is ever left behind.

Every file is rendered into a temporary file in the target's own directory and renamed into place with
``os.replace`` (atomic on one file system); on any error the temporary file is removed and the target is
untouched.  Bad input, an :class:`InputError` naming the option (``--dot``, ``--plot``, ``--out``) and
the reason (exit 2): an empty file name, a directory that does not exist or cannot be written, a target
that is not a regular file (a directory, a device such as /dev/null, a symlink, a FIFO: renaming over it
would replace it), a read-only target, and any OS error while writing (a full disk, /proc, a read-only
file system).
"""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Iterator

from commsim.core.errors import InputError

#: prefix of the temporary files (hidden, so a listing during the write does not show them)
TEMP_PREFIX = ".commsim-"



_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFLNK: "a symbolic link", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFIFO: "a named pipe", stat.S_IFSOCK: "a socket"}


def check_target(path: str | os.PathLike, option: str) -> Path:
    """The target of ``option`` as a Path; an :class:`InputError` naming ``option`` and the reason when the
    name is empty, its directory does not exist or cannot be written, or the target exists and is not a
    writable regular file."""
    if path is None or not str(path).strip():
        raise InputError(f"{option}: the file name is empty; give a path or leave {option} out", option)
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(f"{option}: directory {str(directory)!r} does not exist", option)
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise InputError(f"{option}: cannot write {str(target)!r}: {exc.strerror}", option) from None
    if mode is not None and not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
        raise InputError(f"{option}: {str(target)!r} is {kind}, not a regular file; commsim only writes "
                         "regular files", option)
    if mode is not None and not mode & 0o222:
        raise InputError(f"{option}: {str(target)!r} is read-only", option)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(f"{option}: cannot write in {str(directory)!r}: permission denied", option)
    return target


def refuse_empty(ctx, param, value):
    """click callback of an output option: an empty file name is an error, not "no file"."""
    if value is not None and not str(value).strip():
        check_target(value, param.opts[0])
    return value


@contextlib.contextmanager
def _atomic(path: str | os.PathLike, option: str) -> Iterator[tuple[int, str]]:
    """A temporary file beside ``path`` (its descriptor and name), moved onto ``path`` when the block ends
    normally and removed when it raises; an OS error (in the block too) is an InputError naming ``option``."""
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
        check_target(target, option)                     # still a regular file (or absent) just before the rename
        os.replace(tmp, target)
    except OSError as exc:
        raise InputError(f"{option}: cannot write {str(target)!r}: {exc.strerror or exc}", option) from None
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def write_text(path: str | os.PathLike, text: str, *, option: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically; ``option`` is the flag that named the file."""
    with _atomic(path, option) as (fd, _):
        with os.fdopen(os.dup(fd), "w", encoding="utf-8") as fh:
            fh.write(text)


def write_bytes(path: str | os.PathLike, data: bytes, *, option: str) -> None:
    """Write ``data`` (a binary file's content, e.g. parquet) to ``path`` atomically."""
    with _atomic(path, option) as (fd, _):
        with os.fdopen(os.dup(fd), "wb") as fh:
            fh.write(data)


def write_figure(figure, path: str | os.PathLike, *, option: str) -> None:
    """Save a matplotlib ``figure`` to ``path`` atomically, in the format its suffix names (``.png``, ``.svg``)."""
    with _atomic(path, option) as (_, tmp):
        figure.savefig(tmp, format=Path(path).suffix.lower().lstrip(".") or None)
