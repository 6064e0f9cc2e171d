"""``commsim list``: everything registered."""
from __future__ import annotations

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
        out[kind.replace("-", "_") + "s"] = [{"name": e.name, "description": e.description, "plugin": e.plugin}
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
        table = Table(title=section.replace("_", " "), title_justify="left", show_header=False)
        table.add_column(style="bold cyan")
        table.add_column()
        for item in items:
            table.add_row(escape(item["name"]), escape(item["description"]))
        console.print(table)
