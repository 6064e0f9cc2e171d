"""What a plugin that loads a user's file or code needs: the one check before a file named in a spec is opened
(:func:`regular_file`), what the user's code did when it failed (:func:`user_code_failure`), the current directory
on ``sys.path`` as ``python -m`` has it, and the spec keys' limits (the largest integer, the number-format keys)."""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from commsim.core.errors import InputError
from commsim.core.precision import FORMAT_KEYS  # noqa: F401  (the keys that choose a number format: a spec's)

#: the largest integer a spec key takes (2^31 - 1): every size key is far below, and seeds stay numpy seeds
MAX_SPEC_INT = (1 << 31) - 1


# ---- files a spec names -------------------------------------------------------
def regular_file(path, what: str, *, directory: bool = False, prefix: str = "", param: str = "model") -> Path:
    """``path`` (``~`` expanded) once it is checked to be a regular file -- or, with ``directory``, a
    directory -- before anything opens it: a pipe, a socket or a device (``/dev/zero``, a FIFO) would block
    or read without end.  The one check every loader of a file named in a spec makes.  The error reads
    ``{prefix}cannot read {what}'PATH': it is a pipe (FIFO), not a regular file``; ``what`` names the spec
    key or the kind of file (``"weights="``, ``"the torch model file "``)."""
    p = Path(os.fspath(path)).expanduser()
    where = f"{prefix}cannot read {what}{str(path)!r}: it"
    try:
        mode = p.stat().st_mode                   # follows symlinks: a link to a regular file is one
    except FileNotFoundError:
        raise InputError(f"{where} does not exist", param) from None
    except OSError as exc:
        raise InputError(f"{where} cannot be opened ({exc.strerror or type(exc).__name__})", param) from None
    if stat.S_ISREG(mode) or (directory and stat.S_ISDIR(mode)):
        return p
    if stat.S_ISDIR(mode):
        raise InputError(f"{where} is a directory, not a file", param)
    kind = ("a pipe (FIFO)" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a file")
    raise InputError(f"{where} is {kind}, not a regular file{' or a directory' if directory else ''}", param)


def user_code_failure(exc: BaseException) -> str:
    """What the user's code a spec or a plugin names did, for an error line: ``raised ValueError: ...``, or
    ``called sys.exit(5); ...`` (exiting would end commsim without its report or its error line)."""
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r}); user code must return or raise, not exit"
    return f"raised {type(exc).__name__}: {exc}"


def current_directory_on_path() -> None:
    """Put the current directory first on ``sys.path`` unless it is on it already (as ``python -m`` does), so
    that a module of the project you are in imports the same way for ``--plugin MODULE`` and for
    ``python:MODULE:FUNCTION`` specs -- the console script ``commsim`` alone would not find it."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
