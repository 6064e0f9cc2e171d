"""``commsim list``: everything registered."""
from __future__ import annotations

import re

from rich.markup import escape
from rich.table import Table

from commsim.cli import cli
from commsim.cli.common import console, emit_json, json_option, plugin_option
from commsim.plugins import KINDS, load_plugins
from commsim.theory.problems import PROBLEM_NAMES, make_problem


def registered(plugins=()) -> dict:
    reg = load_plugins(plugins)
    out = {"problems": [{"name": p, "description": make_problem(p, 2).description} for p in PROBLEM_NAMES]}
    for kind in KINDS:
        key = kind.replace("-", "_") + ("" if kind.endswith("s") else "s")     # "topics", "exercises"
        out[key] = [{"name": e.name, "description": e.description, "plugin": e.plugin}
                    for e in reg.entries(kind)]
    out["model_protocols"] = out["simulators"]   # the first landing's name for simulators, kept for scripts
    return out


@cli.command("list")
@plugin_option
@json_option
def list_command(plugins, as_json):
    """List problems, protocols, reductions, models and teaching topics.

    \b
    Examples:
      commsim list
      commsim list --json
    """
    data = registered(plugins)
    if as_json:
        emit_json(data)
        return
    for section, items in data.items():
        if not items:
            continue
        name_width = max(len(item["name"]) for item in items)
        text_width = max(console.width - name_width - TABLE_FRAME, MIN_TEXT_WIDTH)
        table = Table(title=section.replace("_", " "), title_justify="left", show_header=False)
        table.add_column(style="bold cyan", no_wrap=True, min_width=name_width)
        table.add_column(overflow="fold", max_width=text_width)
        for item in items:
            table.add_row(escape(item["name"]), escape("\n".join(wrap_description(item["description"], text_width))))
        console.print(table)


#: the table's frame and padding around its two columns: "│ name │ text │"
TABLE_FRAME = 7
#: below this many columns the text is folded where it must be, not wrapped at its commas
MIN_TEXT_WIDTH = 20


def wrap_description(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken at spaces and after commas -- a model's key list
    (``heads=H,width=M,...``) is one long word, which a terminal-wide table would otherwise cut short with an
    ellipsis.  Nothing is dropped: a piece longer than ``width`` stays whole (the table folds it)."""
    lines: list[str] = []
    line = ""
    for piece in re.findall(r"[^\s,]*,|[^\s,]+|\s+", text):
        if piece.isspace():
            if line:
                line += " "
            continue
        if line and len(line) + len(piece) > width:
            lines.append(line.rstrip())
            line = ""
        line += piece
    if line.strip():
        lines.append(line.rstrip())
    return lines
