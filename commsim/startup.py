"""Ctrl-C while the ``commsim`` command starts: one line and exit 130, never a traceback.

The command spends its first second or two importing (numpy, click, the pipeline, the plugins); Python's own
SIGINT handler would raise KeyboardInterrupt inside whichever import is running, print its traceback and end
the process by the signal.  :func:`guard` -- the first statement of the ``commsim`` package, which Python
runs before the console script's ``from commsim.cli import main`` or ``python -m commsim`` reach anything else
-- installs a handler that ends the process at once with the command's interrupt line (exit 130, 128 + SIGINT);
:func:`release` -- the first statement of :func:`commsim.cli.main` -- gives Python's handler back, and the
command's own handling takes over (``Error: interrupted``, exit 130, the JSON error line under ``--json``).
The guard is installed only when this process is the command: importing commsim as a library changes no
signal handler.  Standard library only: nothing heavy is imported before the guard is in place.
"""
from __future__ import annotations

import os
import signal
import sys

#: what :func:`commsim.cli.main` prints on Ctrl-C (its ``_interrupted``), as bytes written without Python's I/O
_LINE = b"Error: interrupted\n"
_JSON = b'{\n  "error": "interrupted",\n  "exit_code": 130\n}\n'
#: interpreter options that take the next argument as their value (``python -X importtime -m commsim``)
_WITH_VALUE = ("-X", "-W", "--check-hash-based-pycs")


def is_command(orig_argv: list[str] | None = None, argv0: str | None = None) -> bool:
    """Is this process the ``commsim`` command: the console script (``sys.argv[0]`` named ``commsim``) or
    ``python -m commsim`` (read from the interpreter's own command line, ``sys.orig_argv``)?"""
    argv0 = (sys.argv[0] if sys.argv else "") if argv0 is None else argv0
    name = os.path.basename(argv0)
    if name in ("commsim", "commsim.exe", "commsim-script.py"):
        return True
    args = list(getattr(sys, "orig_argv", []) if orig_argv is None else orig_argv)[1:]
    skip = False
    for at, arg in enumerate(args):
        if skip:
            skip = False
        elif arg in _WITH_VALUE:
            skip = True
        elif arg == "-m":
            return at + 1 < len(args) and args[at + 1] in ("commsim", "commsim.__main__")
        elif arg.startswith("-m"):
            return arg[2:] in ("commsim", "commsim.__main__")
        elif arg == "-c" or not arg.startswith("-"):     # a script or -c code: not the command
            return False
    return False


def _interrupted(signum, frame) -> None:  # noqa: ARG001 - a signal handler's signature
    """Ctrl-C before the command's own handling is in place: its line (and its JSON line under --json), exit 130."""
    try:
        if "--json" in sys.argv[1:]:
            os.write(1, _JSON)
        os.write(2, _LINE)
    finally:
        os._exit(130)


def guard() -> None:
    """Install the start-up handler when this process is the command and SIGINT has Python's default handler."""
    try:
        if is_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _interrupted)
    except (ValueError, OSError):   # not the main thread, or no signals here: nothing to guard
        pass


def release() -> None:
    """Give Python's SIGINT handler back once the command can handle KeyboardInterrupt itself."""
    if signal.getsignal(signal.SIGINT) is _interrupted:
        signal.signal(signal.SIGINT, signal.default_int_handler)
