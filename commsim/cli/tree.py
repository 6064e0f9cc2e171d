"""``commsim tree``: a registered protocol run on every input, as a protocol tree."""
from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from commsim.cli import cli
from commsim.cli.common import console, emit_json, json_option, plugin_option, protocol_problem
from commsim.cli.html import check_html, command_line, html_option, write_html
from commsim.cli.files import force_option, refuse_empty, write_text
from commsim.core.errors import InputError
from commsim.plugins import load_plugins


@cli.command("tree")
@click.argument("problem", metavar="PROBLEM")
@click.option("--n", "n", type=int, required=True, help="Problem size (small: every input pair is run).")
@click.option("--protocol", "protocol_name", required=True, help="A registered protocol (see `commsim list`).")
@click.option("--dot", "dot_file", callback=refuse_empty, type=click.Path(dir_okay=False), default=None,
              help="Write the tree as Graphviz DOT to this file.")
@html_option
@plugin_option
@force_option
@json_option
def tree_command(problem, n, protocol_name, dot_file, html_path, plugins, as_json):
    """Run a registered protocol on every input pair of PROBLEM (index, eq or disj: the problems the registered
    protocols are for) and draw its protocol tree: nodes are transcript prefixes, edges messages; each leaf's
    inputs must form a rectangle, each answer leaf a monochromatic rectangle; depth = worst-case bits.

    \b
    Examples:
      commsim tree index --n 3 --protocol two-way
      commsim tree eq --n 3 --protocol one-way --dot eq3.dot
      commsim tree disj --n 2 --protocol one-way --json
    """
    from commsim.theory.protocol_tree import build_protocol_tree

    registry = load_plugins(plugins)
    protocol_problem(problem, registry)
    protocol_cls = registry.get("cc-protocol", protocol_name, param="protocol")
    if getattr(protocol_cls, "coins", "none") != "none":
        raise InputError(f"--protocol {protocol_name!r} flips coins, and a protocol tree is drawn for deterministic "
                         f"protocols; run it with `commsim cc {problem} --protocol {protocol_name}`", "protocol")
    check_html(html_path)
    tree = build_protocol_tree(problem, n, protocol_cls)
    if dot_file:
        write_text(dot_file, tree.to_dot(), option="--dot")
    if html_path:
        from commsim.render.reports import tree_page
        write_html(html_path, tree_page(tree, command_line()))
    d = tree.to_dict()
    if as_json:
        emit_json(d)
        return
    table = Table(title=escape(f"protocol tree: {protocol_name} for {problem} (n = {n})"), show_header=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    yes = lambda ok: "[green]yes[/]" if ok else "[red]NO[/]"  # noqa: E731
    table.add_row("input pairs run", str(d["pairs_run"]))
    table.add_row("nodes", f"{d['nodes']} ({d['transcript_leaves']} transcript leaves, "
                           f"{d['output_leaves']} answer leaves)")
    table.add_row("depth (worst-case bits)", str(d["depth"]))
    table.add_row("rounds", str(d["rounds"]))
    table.add_row("leaves are rectangles", yes(d["all_rectangles"]))
    table.add_row("answer leaves monochromatic", yes(d["all_monochromatic"]))
    table.add_row("correct on every input", yes(d["correct"]))
    table.add_row("well formed", yes(d["well_formed"]) + " (next speaker and end determined by the transcript)")
    fc = d["fooling_check"]
    if fc and fc.get("applies"):
        table.add_row("fooling set separated", f"{yes(fc['separated'])}: {fc['members']} members in "
                                               f"{fc['distinct_leaves']} distinct leaves (bound {fc['bound_bits']} bits)")
    elif fc:
        table.add_row("fooling set", f"[yellow]not applicable[/]: {escape(str(fc['reason']))}")
    if dot_file:
        table.add_row("DOT", escape(dot_file))
    console.print(table)
    leaves = Table(title="transcript leaves", show_header=True)
    for col in ("transcript", "inputs", "rectangle", "f values", "answers"):
        leaves.add_column(col)
    for leaf in d["leaves"][:16]:
        leaves.add_row(escape(leaf["transcript"]), escape(str(leaf["inputs"])),
                       escape(leaf["rectangle"]) + ("" if leaf["is_rectangle"] else " [red]not a rectangle[/]"),
                       ",".join(map(str, leaf["true_values"])), ",".join(map(str, leaf["outputs"])))
    if len(d["leaves"]) > 16:
        leaves.add_row(f"… {d['transcript_leaves'] - 16} more", "", "", "", "")
    console.print(leaves)
