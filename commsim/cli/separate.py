"""``commsim separate``: both halves of a separation side by side.

The command only renders.  Each task is a plugin of registry kind ``separation``: an object with
``run(n, *, seed, instances, progress) -> result`` whose ``to_dict()`` has the keys ``task``, ``title``,
``claim``, ``n``, ``upper`` and ``lower`` (each ``arch``, ``model``, ``source``, ``formula``), ``columns``
(``key``, ``label``), ``rows`` (one per sequence length N), ``plot`` (``x``, ``series`` of ``key`` and
``label``, ``ylabel``), ``all_verified`` and ``verdict``; optionally ``check_n(n)`` refuses a bad N
before any work is done, and ``options`` declares the keyword options its ``run`` takes
(:class:`commsim.contract.options.Option`): each becomes a flag of the command, with its type, help and check.
"""
from __future__ import annotations

from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from commsim.cli import cli
from commsim.cli.common import (
    check_positive,
    console,
    emit_json,
    json_option,
    parse_instances,
    plugin_option,
    progress_bar,
)
from commsim.cli.files import check_target, force_option, refuse_empty, write_figure
from commsim.cli.html import check_html, command_line, html_option, write_html
from commsim.core.errors import InputError
from commsim.core.limits import MAX_INSTANCES, check_seed, check_size
from commsim.plugins import load_plugins

PLOT_SUFFIXES = (".png", ".svg")


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "[green]yes[/]" if value else "[red]NO[/]"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.3g}"
    return escape(str(value))


def render_separation(data: dict) -> None:
    head = Table(show_header=False, box=None, pad_edge=False)
    head.add_column(style="bold", no_wrap=True)
    head.add_column()
    head.add_row("claim", escape(data["claim"]))
    for side, label in (("upper", "construction"), ("lower", "lower bound")):
        part = data[side]
        model = f" — {escape(part['model'])}" if part.get("model") else ""
        head.add_row(label, f"{escape(part['arch'])}{model}: {escape(part['formula'])}  ({escape(part['source'])})")
    console.print(Panel(head, title=f"commsim separate {escape(data['task'])}: {escape(data['title'])}", expand=False))
    table = Table(box=box.SIMPLE_HEAD)
    cells = [[_cell(row.get(col["key"])) for col in data["columns"]] for row in data["rows"]]
    for col in data["columns"]:
        table.add_column(escape(col["label"]), justify="right", no_wrap=True)
    for row in cells:
        table.add_row(*row)
    # never squeeze numbers: a table wider than the terminal is printed at its natural width
    plain = [[Text.from_markup(c).plain for c in row] for row in cells]
    widths = [max([len(col["label"])] + [len(r[i]) for r in plain]) for i, col in enumerate(data["columns"])]
    needed = sum(w + 3 for w in widths) + 2
    target = console if needed <= console.width else \
        Console(highlight=False, emoji=False, width=needed, no_color=console.no_color, force_terminal=console.is_terminal)
    target.print(table)
    colour = "green" if data["all_verified"] else "red"
    console.print(f"[{colour}]{escape(data['verdict'])}[/]")
    for note in data.get("notes", []):
        console.print(f"• {escape(note)}")


def write_plot(data: dict, path: Path) -> None:
    """Both sides against N on log-log axes; the format follows the suffix (PNG or SVG)."""
    try:
        from commsim.render.plots import separation_figure
        from commsim.render.svg import pyplot
        plt = pyplot()
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise InputError(f"--plot needs matplotlib (pip install 'commsim[plot]'): {exc}", "--plot") from None
    fig = separation_figure(data)
    try:
        write_figure(fig, path, option="--plot")
    finally:
        plt.close(fig)


def _check_plot_path(plot: str | None) -> Path | None:
    if plot is None:
        return None
    path = Path(plot)
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise InputError(f"--plot must end in .png or .svg, got {plot!r}", "--plot")
    return check_target(path, "--plot")


#: the --n whose rows --help shows for every task
HELP_N = 24


def _separations() -> list:
    """The registered separations (none when a plugin fails to load: the command reports that itself)."""
    try:
        return load_plugins().entries("separation")
    except Exception:      # noqa: BLE001 -- a broken plugin must not break --help; `commsim list` reports it
        return []


def option_flags(separations) -> list[click.Option]:
    """One flag per option name the separations declare (:class:`commsim.contract.options.Option`: its type, help
    and value name), in the order they first appear; a name several declare is one flag, from its first
    declaration (separations share one Option object for it)."""
    declared: dict = {}
    for entry in separations:
        for option in getattr(entry.obj, "options", ()):
            declared.setdefault(option.name, option)
    return [click.Option([option.flag, option.name], type=option.type, default=None, metavar=option.metavar,
                         help=option.help) for option in declared.values()]


def _load_named_plugins(args: list[str]) -> None:
    """Load the ``--plugin`` modules named in ``args`` before they are parsed, so that their separations' options
    are flags too.  A module that fails to load is left for the command, which reports it."""
    named = [value for flag, value in zip(args, args[1:]) if flag == "--plugin"]
    named += [arg.split("=", 1)[1] for arg in args if arg.startswith("--plugin=")]
    for module in named:
        try:
            load_plugins([module])
        except Exception:  # noqa: BLE001 -- reported by the command itself (exit 2, one line)
            pass


class SeparateCommand(click.Command):
    """``separate``: its own flags, then one per option the registered separations declare (built when the
    command is used, from the plugins then loaded); ``--help`` ends with every registered separation and the
    lengths N its rows run over."""

    def __init__(self, *args, **kwargs):
        self._built: tuple | None = None
        super().__init__(*args, **kwargs)

    @property
    def params(self) -> list[click.Parameter]:
        """The command's own parameters with the separations' option flags after ``--plot``."""
        separations = _separations()
        key = tuple((entry.name, id(entry.obj)) for entry in separations)
        if self._built is None or self._built[0] != key:
            at = next(i for i, param in enumerate(self._own) if param.name == "plot") + 1
            self._built = (key, self._own[:at] + option_flags(separations) + self._own[at:])
        return self._built[1]

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        self._own, self._built = list(value), None

    def parse_args(self, ctx, args):
        _load_named_plugins(args)
        return super().parse_args(ctx, args)

    def format_epilog(self, ctx, formatter):
        super().format_epilog(ctx, formatter)
        entries = _separations()
        if not entries:
            return
        rows = []
        for e in entries:
            try:
                Ns = ", ".join(str(N) for N in e.obj.lengths(HELP_N))
                at = f" [rows at --n {HELP_N}: N = {Ns}]"
            except Exception:  # noqa: BLE001 -- a plugin without lengths() still gets its line
                at = ""
            rows.append((e.name, e.description + at))
        with formatter.section("Separations (see `commsim list`)"):
            formatter.write_dl(rows)


@cli.command("separate", cls=SeparateCommand)
@click.argument("task", metavar="SEPARATION")
@click.option("--n", "n", type=int, required=True,
              help="Largest sequence length N. Which lengths the rows run over depends on the task (mostly "
                   "powers of two, and N itself): listed per task below.")
@click.option("--instances", default="1000", show_default=True,
              help="Seeded inputs per N. Not given: a row checks every input up to the task's own limit "
                   "(2^10 to 2^16 inputs), else up to 1000 samples (fewer where a row's work is capped). Given: "
                   "at most that many per N ('all' forces exhaustive). The inputs column says how many were "
                   "checked (* = all).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for sampled inputs and constructions.")
@click.option("--plot", "plot", callback=refuse_empty, default=None, metavar="FILE", help="Also draw both sides against N (.png or .svg).")
@html_option
@plugin_option
@force_option
@json_option
def separate_command(task, n, instances, seed, plot, html_path, plugins, as_json, **options):
    """Both halves of a separation: a verified construction's size against the other
    architecture's lower bound, over sequence lengths up to N.

    The separations (every registered one, with the lengths its rows run over) are listed
    below.

    \b
    Examples:
      commsim separate idxl --n 1024
      commsim separate dyck22 --n 64 --plot dyck.svg
      commsim separate eq --n 256 --json
      commsim separate eq --n 16 --instances 50
      commsim separate qsa --n 64 --q 1
      commsim separate two-layers --n 12 --partition 1,3,5,8,10,12
      commsim separate 3cycle --n 12
      commsim separate match3 --n 9
    """
    check_positive(n, "--n")
    separation = load_plugins(plugins).get("separation", task, param="task")
    plot_path = _check_plot_path(plot)
    check_html(html_path)
    count = parse_instances(instances)
    given = click.get_current_context().get_parameter_source("instances") != click.core.ParameterSource.DEFAULT
    if given and not getattr(separation, "samples", True):
        raise InputError(f"--instances does not apply to {task}: it samples no inputs", "--instances")
    check_seed(seed, "--seed")
    if count is not None:
        check_size(count, "--instances", 1, MAX_INSTANCES, "each instance is a full model run and protocol run",
               noun="number of instances")
    if hasattr(separation, "check_n"):
        separation.check_n(n)
    options = _options_given(separation, task, options)
    with progress_bar(f"separate {task}", enabled=not as_json) as update:
        result = separation.run(n, seed=seed, instances=count, progress=update, instances_given=given, **options)
    data = result.to_dict()
    if plot_path is not None:
        write_plot(data, plot_path)
        data["plot_file"] = str(plot_path)
    if html_path is not None:
        from commsim.render.reports import separation_page
        write_html(html_path, separation_page(data, command_line()))
        data["html_file"] = str(html_path)
    if as_json:
        emit_json(data)
        return
    render_separation(data)
    if plot_path is not None:
        console.print(f"plot written to {escape(str(plot_path))}")
    if html_path is not None:
        console.print(f"report written to {escape(str(html_path))}")


def _options_given(separation, task: str, values: dict) -> dict:
    """The separation's options the user gave (flags in the order the command lists them), each checked by its
    declaration; an option the separation does not declare is refused (exit 2, naming the flag)."""
    order = [param.name for param in click.get_current_context().command.params]
    declared = {option.name: option for option in getattr(separation, "options", ())}
    given = {}
    for name in sorted((name for name, value in values.items() if value is not None), key=order.index):
        if name not in declared:
            raise InputError(f"--{name} does not apply to {task}", f"--{name}")
        given[name] = declared[name].checked(values[name])
    return given
