"""The ``commsim`` command.  Commands are thin: the work is in the library, every report
has a ``--json`` form, bad input exits 2 with a one-line reason naming the flag, and an internal fault
exits 1 (with the traceback when ``COMMSIM_DEBUG`` is set)."""
from __future__ import annotations

import os
import sys

import click

from commsim import __version__
from commsim.cli.common import emit_json, err_console
from commsim.cli.flags import flag_message, flags_of
from commsim.core.errors import CommsimError, InputError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class CommsimGroup(click.Group):
    """The command group; an error from a command learns that command's parameter -> flag mapping."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except CommsimError as exc:
            exc.cli_flags = flags_of(self.commands.get(ctx.invoked_subcommand or ""))
            raise


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
from commsim.cli import automaton, budget, cc, fooling, listing, matrix, run, separate, teach, tree  # noqa: E402,F401


def _wants_json(argv: list[str]) -> bool:
    return "--json" in argv


def _fail(message: str, argv: list[str], code: int) -> None:
    line = " ".join(str(message).split())
    if _wants_json(argv):
        emit_json({"error": line, "exit_code": code})
    err_console.print(f"Error: {line}", markup=False, soft_wrap=True)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Entry point: exit 0 on success, 2 on bad input (one line on stderr), 1 on an internal error."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)  # exact sizes such as 2^99999 are printed in full
    try:
        cli.main(args=argv, prog_name="commsim", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        _fail("aborted", argv, 1)
    except click.UsageError as exc:
        where = f" ({exc.ctx.command_path})" if getattr(exc, "ctx", None) else ""
        _fail(f"{exc.format_message()}{where}", argv, 2)
    except click.ClickException as exc:
        _fail(exc.format_message(), argv, exc.exit_code if exc.exit_code else 1)
    except InputError as exc:
        _fail(flag_message(str(exc), exc.param, getattr(exc, "cli_flags", {})), argv, 2)
    except (KeyboardInterrupt, BrokenPipeError):
        sys.exit(130)
    except Exception as exc:  # an internal error: one line, the traceback only on request
        if os.environ.get("COMMSIM_DEBUG"):
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (set COMMSIM_DEBUG=1 for the traceback)", argv, 1)
