"""The ``--html FILE`` option the report commands share: checked before any work, written atomically."""
from __future__ import annotations

import shlex

import click

from commsim.cli.files import check_target, refuse_empty, write_text
from commsim.core.errors import InputError

html_option = click.option(
    "--html", "html_path", callback=refuse_empty, default=None, metavar="FILE",
    help="Also write the report as one self-contained HTML page (figures as inline SVG, math as MathML; "
         "opens offline). Needs the html extra: pip install 'commsim[html]'.")


def check_html(path: str | None, option: str = "--html") -> None:
    """Before the command's work: the target can be written and the html extra is installed."""
    if path is None:
        return
    if not str(path).lower().endswith((".html", ".htm")):
        raise InputError(f"{option} must name a .html file, got {path!r}", option)
    check_target(path, option)
    from commsim.render import require
    require(option)


def command_line() -> str:
    """The running command and its arguments with values (for the page's footer)."""
    ctx = click.get_current_context()
    words = ctx.command_path.split()
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if value in (None, False, ()) or param.name in ("html_path", "out") or value == param.default:
            continue
        if isinstance(param, click.Argument):
            words.append(str(value))
        elif value is True:
            words.append(param.opts[0])
        else:
            words += [param.opts[0], str(value)]
    return " ".join(shlex.quote(w) for w in words)


def write_html(path: str, text: str, option: str = "--html") -> None:
    write_text(path, text, option=option)
