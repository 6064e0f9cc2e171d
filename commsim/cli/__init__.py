"""The ``commsim`` command.  Commands are thin: the work is in the library, every report
has a ``--json`` form, bad input exits 2 with a one-line reason naming the flag, and an internal fault
exits 1 (with the traceback when ``COMMSIM_DEBUG`` is set)."""
from __future__ import annotations

import contextlib
import os
import sys

import click

from commsim import __version__
from commsim.cli.common import emit_json, err_console
from commsim.cli.flags import flag_message, flags_of
from commsim.core.errors import CommsimError, InputError
from commsim.startup import release as release_startup_guard

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class _Escaped(Exception):
    """Carries an exception past click's ``main``, which would turn Ctrl-C *and* an EOFError into
    "Aborted" (exit 1) and a closed stdout into exit 1; :func:`main` handles ``original`` itself."""

    def __init__(self, original: BaseException):
        super().__init__(repr(original))
        self.original = original


class CommsimGroup(click.Group):
    """The command group; an error from a command learns that command's parameter -> flag mapping."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except CommsimError as exc:
            exc.cli_flags = flags_of(self.commands.get(ctx.invoked_subcommand or ""))
            raise
        except (KeyboardInterrupt, EOFError, BrokenPipeError) as exc:
            raise _Escaped(exc) from None
        except SystemExit as exc:
            where = _user_exit(exc)
            if where is None:      # commsim's own exit status (run --fail-on-certificate)
                raise
            error = InputError(f"user code ({where}) called sys.exit({exc.code!r}); a model, factory or plugin "
                               f"must return or raise, not exit")
            error.cli_flags = {}
            raise error from None


#: where commsim's own code and click's live: a SystemExit raised there is an exit status on purpose
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_CLICK_DIR = os.path.dirname(os.path.abspath(click.__file__)) + os.sep


def _user_exit(exc: SystemExit) -> str | None:
    """``FILE:LINE`` of the code that raised ``exc`` when it is not commsim's (a model's forward, a factory,
    a plugin called through commsim), else None: user code ending the process would skip the report and
    the error line (exit 0 with nothing on stdout under --json)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return None
    filename = os.path.abspath(tb.tb_frame.f_code.co_filename)
    if filename.startswith((_PACKAGE_DIR, _CLICK_DIR)):
        return None
    return f"{filename}:{tb.tb_lineno}"


@click.group(cls=CommsimGroup, context_settings=CONTEXT)
@click.version_option(__version__, "--version", prog_name="commsim")
def cli():
    """commsim: turn a neural sequence model into a two-party communication protocol and
    check it against the lower bounds of the papers.

    \b
    Examples:
      commsim list
      commsim cc index --n 16 --protocol one-way --instances all
      commsim run index-idxl --model memorize:capacity=7 --n 8
    """


# command modules attach themselves to the group
from commsim.cli import (  # noqa: E402,F401
    automaton,
    budget,
    cc,
    data,
    fooling,
    listing,
    matrix,
    replicate,
    run,
    separate,
    sweep,
    teach,
    tree,
)


def _wants_json(argv: list[str]) -> bool:
    return "--json" in argv


def _fail(message: str, argv: list[str], code: int) -> None:
    line = " ".join(str(message).split())
    if _wants_json(argv):
        emit_json({"error": line, "exit_code": code})
    err_console.print(f"Error: {line}", markup=False, soft_wrap=True)
    sys.exit(code)


def _plain_streams() -> None:
    """On a terminal or pipe that is not UTF-8 (``PYTHONIOENCODING=ascii``, a C locale), replace what it
    cannot show instead of failing; rich then draws its tables with ASCII boxes (it does so by itself
    whenever the encoding is not UTF)."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if not encoding.startswith("utf") and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")


def _closed_pipe() -> None:
    """The reader of stdout went away (``commsim list | head -1``): a normal end, exit 0, no message.
    stdout is pointed at /dev/null so the interpreter's final flush does not fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(0)


def _interrupted(argv: list[str]) -> None:
    """Ctrl-C: one line, exit 130 (128 + SIGINT, the shell's convention)."""
    with contextlib.suppress(OSError, ValueError):
        _fail("interrupted", argv, 130)
    sys.exit(130)


def main(argv: list[str] | None = None) -> None:
    """Entry point: exit 0 on success, 2 on bad input (one line on stderr), 1 on an internal error,
    130 on Ctrl-C; a closed stdout pipe ends quietly with 0."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)  # exact sizes such as 2^99999 are printed in full
    _plain_streams()
    try:
        try:
            release_startup_guard()   # until here Ctrl-C ended the start-up (commsim.startup); now it is handled below
            cli.main(args=argv, prog_name="commsim", standalone_mode=False)
        except _Escaped as exc:
            raise exc.original from None
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort as exc:  # click turned Ctrl-C or an EOFError (outside a command) into Abort
        if isinstance(exc.__cause__, EOFError):
            _fail(f"internal error: EOFError: {exc.__cause__}", argv, 1)
        _interrupted(argv)
    except click.UsageError as exc:
        where = f" ({exc.ctx.command_path})" if getattr(exc, "ctx", None) else ""
        _fail(f"{exc.format_message()}{where}", argv, 2)
    except click.ClickException as exc:
        _fail(exc.format_message(), argv, exc.exit_code if exc.exit_code else 1)
    except InputError as exc:
        _fail(flag_message(str(exc), exc.param, getattr(exc, "cli_flags", {})), argv, 2)
    except KeyboardInterrupt:
        _interrupted(argv)
    except BrokenPipeError:
        _closed_pipe()
    except Exception as exc:  # an internal error: one line, the traceback only on request
        if os.environ.get("COMMSIM_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (set COMMSIM_DEBUG=1 for the traceback)", argv, 1)
