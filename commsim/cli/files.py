"""The one way commands write files: atomically, so nothing half-written is ever left behind.

Every file is rendered into a temporary file in the target's own directory and renamed into place with
``os.replace`` (atomic on one file system); on any error the temporary file is removed and the target is
untouched.  Bad input, an :class:`InputError` naming the option (``--dot``, ``--plot``, ``--out``) and
the reason (exit 2): an empty file name, a name ending in a path separator (``r.csv/`` names a directory),
a directory that does not exist or cannot be written, a target that is not a regular file (a directory, a
device such as /dev/null, a symlink, a FIFO: renaming over it would replace it), a read-only target, and
any OS error while writing (a full disk, /proc, a read-only file system).

A file is only replaced when commsim wrote it as the same kind of file (:data:`KINDS`: an HTML page, a DOT
graph, lecture notes, a figure, ...): every file written here is marked with the extended attribute
``user.commsim`` naming its kind (a page also by its ``generator`` meta tag), and an existing target without
that mark -- the user's own file, a result table, a page where a DOT graph is asked for -- is refused, as is a
name whose suffix is not the kind's (``--format html --out results.csv``).  A command's ``--force``
(:data:`force_option`) replaces it all the same.  Result tables (``.csv``, ``.parquet``, ``.json`` of sweep and
replicate) are recognised by their content, which the table's reader checks (:mod:`commsim.batch.table`).

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

import click

from commsim.core.errors import InputError

#: prefix of the temporary files (hidden, so a listing during the write does not show them); the writer's pid
#: follows, so that a file left by a writer killed before its rename can be told from a live writer's
TEMP_PREFIX = ".commsim-"

#: the kinds of file commsim writes -> the suffixes their names may end in ("" : no suffix)
KINDS = {"html": (".html", ".htm"), "json": (".json",), "dot": (".dot", ".gv"), "markdown": (".md", ".markdown"),
         "text": (".txt", ".text", ""), "svg": (".svg",), "png": (".png",), "table": (".parquet", ".pq", ".csv", ".json")}
#: what each kind is called in messages
_CALLED = {"html": "an HTML page", "json": "a JSON file", "dot": "a Graphviz DOT file", "markdown": "Markdown notes",
           "text": "a text file", "svg": "an SVG figure", "png": "a PNG figure", "table": "a result table",
           "file": "a file"}
#: the extended attribute that marks a file commsim wrote (its value: the kind)
MARK = "user.commsim"
#: a page commsim wrote says so in its head
_PAGE_MARK = b'<meta name="generator" content="commsim">'

_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFLNK: "a symbolic link", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFIFO: "a named pipe", stat.S_IFSOCK: "a socket"}


force_option = click.option(
    "--force", is_flag=True, expose_value=False, is_eager=True,
    callback=lambda ctx, param, value: ctx.meta.__setitem__("commsim.force", bool(value)),
    help="Replace an output file that commsim did not write (or wrote as another kind of file), and write one "
         "whose name does not end in its format's suffix. A file given as a sweep or replicate result table is "
         "never replaced: it is resumed from, or refused.")


def _forced() -> bool:
    """Did the running command get ``--force``?"""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get("commsim.force"))


def _can_force() -> bool:
    ctx = click.get_current_context(silent=True)
    return ctx is not None and any(p.name == "force" for p in ctx.command.params)


def file_kind(path: str | os.PathLike) -> str:
    """The kind of file (:data:`KINDS`) a name's suffix says; ``file`` for any other suffix (a result table is never
    guessed from its name: only the table writers write one)."""
    suffix = Path(os.fspath(path)).suffix.lower()
    return next((kind for kind, suffixes in KINDS.items() if suffix and suffix in suffixes and kind != "table"),
                "file")


def _marked(target: Path, kind: str) -> bool:
    """Did commsim write ``target`` as a file of ``kind``?"""
    try:
        if os.getxattr(target, MARK, follow_symlinks=False).decode("ascii", "replace") == kind:
            return True
    except (OSError, AttributeError):              # no mark, a file system without extended attributes
        pass
    if kind == "html":
        with contextlib.suppress(OSError), open(target, "rb") as fh:
            return _PAGE_MARK in fh.read(8192)
    return False


def _check_kind(target: Path, option: str, kind: str, exists: bool) -> None:
    """A name that ends in ``kind``'s suffix, and no existing file but one commsim wrote as ``kind`` (unless
    ``--force``); result tables are left to their reader (which recognises them by their content)."""
    if _forced():
        return
    hint = "give --force to replace it, or another file name" if _can_force() else \
        "remove it or give another file name"
    suffixes = KINDS.get(kind)
    if suffixes is not None and target.suffix.lower() not in suffixes:
        named = " or ".join(s or "no suffix" for s in suffixes)
        raise InputError(f"{option}: {str(target)!r} would be {_CALLED[kind]}, whose name ends in {named}; give such "
                         "a name" + (", or --force to write it all the same" if _can_force() else ""), option)
    if exists and kind != "table" and not _marked(target, kind):
        raise InputError(f"{option}: {str(target)!r} exists and is not {_CALLED[kind]} commsim wrote; {hint}", option)


def check_target(path: str | os.PathLike, option: str, kind: str | None = None) -> Path:
    """The target of ``option`` as a Path; an :class:`InputError` naming ``option`` and the reason when the
    name is empty, its directory does not exist or cannot be written, or the target exists and is not a
    writable regular file -- or (:func:`_check_kind`) the name does not end in the suffix of ``kind`` (the
    kind of file about to be written, :data:`KINDS`; default: the one the suffix says), or the target exists and
    commsim did not write it as that kind, unless the command got ``--force``."""
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
    _check_kind(target, option, kind or file_kind(target), mode is not None)
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
def _atomic(path: str | os.PathLike, option: str, kind: str | None = None) -> Iterator[tuple[int, str]]:
    """A temporary file beside ``path`` (its descriptor and name), moved onto ``path`` when the block ends
    normally and removed when it raises; an OS error (in the block too) is an InputError naming ``option``."""
    target = check_target(path, option, kind)
    fd, tmp = _temporary(target, option)
    try:
        yield fd, tmp
        _usual_mode(tmp)
        _mark(tmp, kind or file_kind(target))
        check_target(target, option, kind)               # still a regular file (or absent) just before the rename
        os.replace(tmp, target)
    except OSError as exc:
        raise InputError(f"{option}: cannot write {str(target)!r}: {exc.strerror or exc}", option) from None
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def write_text(path: str | os.PathLike, text: str, *, option: str, kind: str | None = None) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically; ``option`` is the flag that named the file, ``kind`` the kind
    of file (:data:`KINDS`; default: the one the name's suffix says)."""
    with _atomic(path, option, kind) as (fd, _):
        with os.fdopen(os.dup(fd), "w", encoding="utf-8") as fh:
            fh.write(text)


def write_bytes(path: str | os.PathLike, data: bytes, *, option: str, kind: str | None = "table") -> None:
    """Write ``data`` (a binary file's content; by default a result table's: csv, parquet, json) to ``path``
    atomically."""
    with _atomic(path, option, kind) as (fd, _):
        with os.fdopen(os.dup(fd), "wb") as fh:
            fh.write(data)


def write_files(contents: Sequence[tuple[str | os.PathLike, str | bytes]], *, option: str,
                kind: str | None = None) -> None:
    """Write several files that belong together (``[(path, text or bytes), ...]``), all or nothing.

    Every target is checked (:func:`check_target`) before any is written, so a bad one (a symlink, a
    directory, a read-only file) leaves the others as they were.  The contents go to temporary files first;
    then each is renamed into place, an existing target first kept under a temporary name (a hard link, or a
    copy).  If a rename fails, the files already renamed are put back: a file this call created is removed,
    a file it replaced gets its old content back -- never is a file removed that commsim did not create.
    ``kind``: the kind of the last file (the document; the others -- its figures -- are of the kind their
    suffix says)."""
    kinds = [None] * (len(contents) - 1) + [kind] if contents else []
    targets = [check_target(path, option, k) for (path, _), k in zip(contents, kinds)]
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
        for target, tmp, k in zip(targets, staged[:len(targets)], kinds):
            current = target
            _mark(tmp, k or file_kind(target))
            check_target(target, option, k)        # still a regular file (or absent) just before the rename
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
    """A new temporary file beside ``target`` (descriptor, name): ``.commsim-PID-XXXX`` and ``target``'s suffix."""
    try:
        return tempfile.mkstemp(dir=str(target.parent.resolve()), prefix=f"{TEMP_PREFIX}{os.getpid()}-",
                                suffix=target.suffix)
    except OSError as exc:
        raise InputError(f"{option}: cannot write in {str(target.parent)!r}: {exc.strerror}", option) from None


def _mark(tmp: str, kind: str) -> None:
    """Mark a file commsim wrote (:data:`MARK`, its kind); nothing where the file system keeps no such marks."""
    with contextlib.suppress(OSError, AttributeError):
        os.setxattr(tmp, MARK, kind.encode("ascii"))


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
    with _atomic(path, option, file_kind(path)) as (_, tmp):
        figure.savefig(tmp, format=Path(path).suffix.lower().lstrip(".") or None)
