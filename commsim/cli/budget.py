"""``commsim budget``: an architecture's protocol bits against a task's lower bound."""
from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from commsim.cli import cli
from commsim.cli.common import console, emit_json, json_option, plugin_option
from commsim.cli.files import check_target, force_option, refuse_empty, write_figure
from commsim.cli.html import check_html, command_line, html_option, write_html
from commsim.core.errors import InputError
from commsim.core.limits import MAX_HEADS, check_size, show_size
from commsim.budget.compute import DTYPES, budget, paper_count_text, paper_max_n_text
from commsim.budget.solve import SOLVABLE, solve
from commsim.plugins import load_plugins

#: the most lengths one --n-range table may have
MAX_RANGE_LENGTHS = 10_000


def parse_range(text: str | None) -> list[int]:
    """``A:B`` (powers of two from A to B), ``A:B:S`` (step S) or ``a,b,c``."""
    if not text:
        return []
    try:
        if "," in text:
            items = [v for v in text.split(",") if v.strip()]
            if len(items) > MAX_RANGE_LENGTHS:
                raise InputError(f"--n-range gives {len(items)} lengths, at most {MAX_RANGE_LENGTHS}", "--n-range")
            values = [int(v) for v in items]
        else:
            parts = [int(v) for v in text.split(":")]
            if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] < 1):
                raise ValueError
    except ValueError:
        raise InputError(f"--n-range must be A:B (doublings), A:B:STEP or a comma list, got {text!r}",
                         "--n-range") from None
    if "," not in text:
        # the ends are checked before any list is built: doubling from 0 never ends, a negative start never
        # reaches B, and 1:10^9:1 has 10^9 entries
        start = check_size(parts[0], "--n-range", 1, why="lengths N are positive")
        stop = check_size(parts[1], "--n-range", start, why="B is at least A")
        if len(parts) == 2:
            count = stop.bit_length() - start.bit_length() + 1
        else:
            count = (stop - start) // parts[2] + 1
        if count > MAX_RANGE_LENGTHS:
            raise InputError(f"--n-range {text!r} would give {show_size(count)} lengths, at most {MAX_RANGE_LENGTHS}",
                             "--n-range")
        values = [start << k for k in range(count) if start << k <= stop] if len(parts) == 2 else \
            list(range(start, stop + 1, parts[2]))
    if not values or min(values) < 1:
        raise InputError(f"--n-range {text!r} must give 1..{MAX_RANGE_LENGTHS} positive lengths", "--n-range")
    return values


def check_plot_path(path: str) -> None:
    """``--plot`` must name a .png or .svg file in a directory that can be written."""
    if not path.lower().endswith((".png", ".svg")):
        raise InputError(f"--plot must name a .png or .svg file, got {path!r}", "--plot")
    check_target(path, "--plot")


def plot_budget(report, path: str) -> None:
    """Protocol bits and the lower bound against N, the crossing (max_n) marked (written atomically)."""
    check_plot_path(path)
    try:
        from commsim.render.plots import budget_figure
        from commsim.render.svg import pyplot
        plt = pyplot()
    except ImportError:
        raise InputError("--plot needs matplotlib: pip install 'commsim[plot]'", "--plot") from None
    fig = budget_figure(report)
    try:
        write_figure(fig, path, option="--plot")
    finally:
        plt.close(fig)


ARCH_HELP = ("The architecture, NAME[:key=value]; what --width means: elman, gru: m hidden units (state m numbers); "
             "lstm: m hidden units (state (h, c), 2m numbers); ssm: d diagonal units (complex, 2d numbers; "
             "ssm:complex=false, d); linear-attention: key/value width d (state d·d numbers; "
             "linear-attention:normalize=true, d·d + d); rnn: the state's numbers themselves; attention: one "
             "layer, m = query/key/value width per head (--heads H, --dim d).")


@cli.command("budget")
@click.option("--arch", required=True, help=ARCH_HELP)
@click.option("--width", type=int, default=None,
              help="The architecture's own width (see --arch); the handoff sends the state it makes.")
@click.option("--precision", type=int, default=None,
              help="p: bits per number, p-bit fixed point with p // 2 fraction bits (the format is printed).")
@click.option("--dtype", type=click.Choice(DTYPES), default=None,
              help="Plan a floating-point layer of this dtype instead (p is its width; the attention exchange sends "
                   "its sums at their exact widths, as run does for attention:dtype=float32).")
@click.option("--heads", type=int, default=1, show_default=True, help="H: attention heads.")
@click.option("--dim", type=int, default=8, show_default=True,
              help="d: the attention layer's embedding width (a one-way plan may send x_N, d·p bits).")
@click.option("--reduction", "--task", "task", required=True, metavar="REDUCTION",
              help="The reduction whose bound to judge, e.g. index-idxl, eq-ineq, dyck22-fooling (--task is the "
                   "same option under its older name).")
@click.option("--n", "n", type=int, default=None,
              help="Sequence length N in tokens to judge (default: max_n); not run --n, the source problem's size.")
@click.option("--solve", "solve_for", type=click.Choice(SOLVABLE), default=None,
              help="The smallest width, precision or heads (the others as given) that --n does not rule out, from "
                   "the protocol's own plan.")
@click.option("--n-range", default=None, help="Table over N: A:B (doublings), A:B:STEP or a,b,c.")
@click.option("--plot", "plot_path", callback=refuse_empty, default=None, metavar="FILE", help="Plot bits vs bound over --n-range (.png/.svg).")
@html_option
@plugin_option
@force_option
@json_option
def budget_command(arch, width, precision, dtype, heads, dim, task, n, solve_for, n_range, plot_path, html_path,
                   plugins, as_json):
    """Protocol bits of an architecture against TASK's lower bound, and the largest N not ruled out.

    N (--n, max_n, paper_max_n) is the sequence length in tokens; run --n is the source problem's size, shown
    beside N as run_n (e.g. eq-ineq N = 2n, index-idxl N = n + 1, index-assoc and disj-match3 N = 2n + 1,
    disj-mqar N = 3n, dyck22-fooling N even); max_n is a valid length, first_ruled_out the smallest ruled out.
    protocol_bits is what the simulator really sends at N (the attention exchange's message plan, laid
    out for the papers' layer: the query attends to itself, no residual path, fixed point of p bits
    with p // 2 fraction bits; the handoff's state of m·p bits); bits_formula is the paper's count for that
    protocol (none where the papers give none), and paper_max_n the largest N the paper's inequality (count >=
    bound) does not rule out.  --solve answers the
    inverse question at --n.

    \b
    Examples:
      commsim budget --arch rnn --width 128 --precision 64 --reduction index-idxl
      commsim budget --arch lstm --precision 16 --reduction index-idxl --solve width --n 4096
      commsim budget --arch attention --width 8 --precision 16 --heads 2 --reduction dyck22-fooling --n-range 16:4096
      commsim budget --arch rnn --width 16 --precision 8 --reduction eq-ineq --n 512 --json
      commsim budget --arch attention --width 8 --heads 2 --dtype float32 --reduction dyck22-fooling --n 64
    """
    load_plugins(plugins)
    lengths = parse_range(n_range)
    if plot_path:
        check_plot_path(plot_path)
    check_html(html_path)
    if (plot_path or html_path) and not lengths:
        lengths = parse_range("2:65536")
    if dim < 1:
        raise InputError(f"dim must be at least 1, got {dim}", "--dim")
    check_size(heads, "--heads", 1, MAX_HEADS, "the message plan holds every head's messages and is rebuilt at "
               "each length the max-N search judges", noun="number of heads")
    if dtype is not None and precision is not None:
        raise InputError(f"--dtype {dtype} sets p; give --dtype or --precision, not both", "--dtype")
    if dtype is not None and solve_for == "precision":
        raise InputError("--solve precision searches fixed-point widths; leave out --dtype", "--dtype")
    for value, name in ((width, "width"), (precision if dtype is None else dtype, "precision")):
        if value is None and solve_for != name:
            unless = f"--solve {name}" + (" or --dtype" if name == "precision" else "")
            raise InputError(f"--{name} is required (unless {unless})", f"--{name}")
    if solve_for:
        if n is None:
            raise InputError(f"--solve {solve_for} needs --n, the sequence length N to solve at", "--n")
        if lengths:
            raise InputError("--solve answers at one --n; leave out --n-range, --plot and --html", "--solve")
        report = solve(arch, task, solve_for, n, width=width or 1, precision=precision or 1, heads=heads, dim=dim,
                       dtype=dtype)
    else:
        report = budget(arch, width, precision, task, heads=heads, n=n, n_range=lengths, dim=dim, dtype=dtype)
    if plot_path:
        plot_budget(report, plot_path)
    if html_path:
        from commsim.render.reports import budget_page
        write_html(html_path, budget_page(report, command_line()))
    if as_json:
        emit_json(report)
        return
    d = report.to_dict()
    table = Table(show_header=False, title=f"budget: {task}, {arch}")
    table.add_column(style="bold")
    table.add_column()
    if d["solve"]:
        table.add_row(f"solved {d['solve']['parameter']}", escape(f"{d['solve']['value']}: {d['solve']['text']}"))
        paper = d["solve"].get("paper")
        table.add_row("the paper's answer", escape("none: the papers give no count for this protocol, or the bound "
                                                   "does not apply" if paper is None else
                                                   f"{paper['value']}: {paper['text']}"))
    table.add_row("number format", escape(d["number_format_text"]))
    table.add_row("N", escape(f"{d['n']} tokens; run --n {d['run_n']} ({d['n_meaning']})"))
    if d["state_units"] is not None:
        table.add_row("width", escape(f"{d['width']}: {d['width_meaning']}; {d['state_text']}"))
    if d["protocol_bits"] is not None:
        table.add_row("protocol bits", escape(f"{d['protocol_bits']}: {d['protocol_text']}"))
    table.add_row("the paper's count", escape(paper_count_text(d)))
    table.add_row("lower bound", escape(f"{d['lower_bound_bits']} bits — {d['bound_note']}") if d["bound_applies"]
                  else escape(f"does not apply: {d['bound_note']}"))
    table.add_row("max N", ("not ruled out up to N = " + str(d["searched_up_to"]) if d["searched_up_to"] else "unbounded")
                  if d["max_n"] is None else f"{d['max_n']} (first ruled out: {d['first_ruled_out']})")
    table.add_row("paper's max N", escape(paper_max_n_text(d)))
    for note in d["notes"]:
        table.add_row("note", escape(note))
    table.add_row("verdict", escape(d["verdict"]))
    console.print(table)
    if report.table:
        t = Table(title="over N")
        for col in ("N", "run --n", "protocol bits", "lower bound", "ok"):
            t.add_column(col, justify="right")
        for r in report.table:
            ok = "—" if r["ok"] is None else ("[green]yes[/]" if r["ok"] else "[red]no[/]")
            t.add_row(str(r["n"]), str(r["run_n"]), str(r["bits"]),
                      "—" if r["lower_bound_bits"] is None else str(r["lower_bound_bits"]), ok)
        console.print(t)
    if plot_path:
        console.print(f"plot written to {escape(str(plot_path))}")
    if html_path:
        console.print(f"report written to {escape(str(html_path))}")
