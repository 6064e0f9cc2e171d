"""The one way commands write files: atomically, so nothing half-written is ever left behind.

Every file is rendered into a temporary file in the target's own directory and renamed into place with
``os.replace`` (atomic on one file system); on any error the temporary file is removed and the target is
untouched.  Bad input, an :class:`InputError` naming the option (``--dot``, ``--plot``, ``--out``) and
the reason (exit 2): an empty file name, a name ending in a path separator (``r.csv/`` names a directory),
a directory that does not exist or cannot be written, a target that is not a regular file (a directory, a
device such as /dev/null, a symlink, a FIFO: renaming over it would replace it), a read-only target, and
any OS error while writing (a full disk, /proc, a read-only file system).

Several files that belong together (lecture notes and their figures) go through :func:`write_files`: every
target is checked before any is written, and a failure part-way puts back what was there -- a file commsim
created in that call is removed, a file it replaced gets its old content back, nothing else is touched.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Iterator, Sequence

from commsim.core.errors import InputError

#: prefix of the temporary files (hidden, so a listing during the write does not show them)
TEMP_PREFIX = ".commsim-"

_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFLNK: "a symbolic link", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFIFO: "a named pipe", stat.S_IFSOCK: "a socket"}


def check_target(path: str | os.PathLike, option: str) -> Path:
    """The target of ``option`` as a Path; an :class:`InputError` naming ``option`` and the reason when the
    name is empty, its directory does not exist or cannot be written, or the target exists and is not a
    writable regular file."""
    _check_name(path, option)
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


def _check_name(path, option: str) -> None:
    """The name itself, before the file system is asked: not empty, not ending in a separator (``Path``
    would drop the ``/`` of ``r.csv/`` and write a regular file where the user named a directory)."""
    if path is None or not str(path).strip():
        raise InputError(f"{option}: the file name is empty; give a path or leave {option} out", option)
    text = os.fspath(path)
    if isinstance(text, str) and text.endswith(tuple(filter(None, (os.sep, os.altsep)))):
        raise InputError(f"{option}: {text!r} ends in a path separator (a directory); give a file name", option)


def refuse_empty(ctx, param, value):
    """click callback of an output option: an empty file name is an error, not "no file", and a name ending
    in a separator is refused too -- both at parse time, before any work."""
    if value is not None:
        _check_name(value, param.opts[0])
    return value


@contextlib.contextmanager
def _atomic(path: str | os.PathLike, option: str) -> Iterator[tuple[int, str]]:
    """A temporary file beside ``path`` (its descriptor and name), moved onto ``path`` when the block ends
    normally and removed when it raises; an OS error (in the block too) is an InputError naming ``option``."""
    target = check_target(path, option)
    fd, tmp = _temporary(target, option)
    try:
        yield fd, tmp
        _usual_mode(tmp)
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


def write_files(contents: Sequence[tuple[str | os.PathLike, str | bytes]], *, option: str) -> None:
    """Write several files that belong together (``[(path, text or bytes), ...]``), all or nothing.

    Every target is checked (:func:`check_target`) before any is written, so a bad one (a symlink, a
    directory, a read-only file) leaves the others as they were.  The contents go to temporary files first;
    then each is renamed into place, an existing target first kept under a temporary name (a hard link, or a
    copy).  If a rename fails, the files already renamed are put back: a file this call created is removed,
    a file it replaced gets its old content back -- never is a file removed that commsim did not create."""
    targets = [check_target(path, option) for path, _ in contents]
    names = [os.path.abspath(t) for t in targets]
    if len(set(names)) != len(names):
        raise InputError(f"{option}: the same file would be written twice", option)
    staged: list[str] = []             # temporary files: the new contents, then the old contents kept
    done: list[tuple[Path, str | None, int]] = []   # (target, its old content's temporary name or None, new inode)
    current = targets[0] if targets else None
    try:
        for target, (_, content) in zip(targets, contents):
            current = target
            fd, tmp = _temporary(target, option)
            staged.append(tmp)
            with os.fdopen(fd, "wb") as fh:
                fh.write(content.encode("utf-8") if isinstance(content, str) else content)
            _usual_mode(tmp)
        for target, tmp in zip(targets, staged[:len(targets)]):
            current = target
            check_target(target, option)           # still a regular file (or absent) just before the rename
            backup = _keep_old(target, option)
            if backup is not None:
                staged.append(backup)              # removed at the end unless it is put back
            os.replace(tmp, target)
            done.append((target, backup, os.lstat(target).st_ino))
    except BaseException as exc:
        for target, backup, inode in reversed(done):
            with contextlib.suppress(OSError):
                if os.lstat(target).st_ino != inode:
                    continue                       # no longer the file this call wrote: not ours to touch
                if backup is None:
                    os.unlink(target)              # this call created it
                else:
                    os.replace(backup, target)     # this call replaced it: the old content goes back
        if isinstance(exc, OSError):
            raise InputError(f"{option}: cannot write {str(current)!r}: {exc.strerror or exc}", option) from None
        raise
    finally:
        for tmp in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _temporary(target: Path, option: str) -> tuple[int, str]:
    """A new temporary file beside ``target`` (descriptor, name)."""
    try:
        return tempfile.mkstemp(dir=str(target.parent.resolve()), prefix=TEMP_PREFIX, suffix=target.suffix)
    except OSError as exc:
        raise InputError(f"{option}: cannot write in {str(target.parent)!r}: {exc.strerror}", option) from None


def _usual_mode(tmp: str) -> None:
    """mkstemp makes 0600; give the new file the permissions the umask gives any other."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)


def _keep_old(target: Path, option: str) -> str | None:
    """The existing ``target``'s content under a new temporary name beside it (a hard link when the file
    system allows, else a copy), to put back if a later file fails; None when ``target`` does not exist."""
    if not os.path.lexists(target):
        return None
    fd, backup = _temporary(target, option)
    os.close(fd)
    try:
        os.unlink(backup)
        os.link(target, backup)
    except OSError:
        shutil.copy2(target, backup)
    return backup


def write_figure(figure, path: str | os.PathLike, *, option: str) -> None:
    """Save a matplotlib ``figure`` to ``path`` atomically, in the format its suffix names (``.png``, ``.svg``)."""
    with _atomic(path, option) as (_, tmp):
        figure.savefig(tmp, format=Path(path).suffix.lower().lstrip(".") or None)
