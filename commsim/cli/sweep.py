"""``commsim sweep``: one question over a grid -- reductions x model specs (with ranges) x n x seeds --,
run on an executor (this process, local processes, Dask), kept as a resumable table."""
from __future__ import annotations

import re

import click
from rich import box
from rich.markup import escape
from rich.table import Table

from commsim.cli import cli
from commsim.cli.budget import check_plot_path
from commsim.cli.common import (console, emit_json, err_console, json_option, parse_instances, plugin_option,
                                progress_bar)
from commsim.cli.files import check_target, force_option, refuse_empty, write_bytes
from commsim.core.errors import InputError
from commsim.core.limits import MEMORY_BUDGET_BYTES, show_bytes
from commsim.core.executors import EXECUTORS, WORKER_BYTES, WORKERS_PER_CORE
from commsim.batch.sweep import sweep, table_format

#: the most rows the terminal table shows (the whole table is in --out / --json)
SHOWN_ROWS = 200


def _split(values: tuple[str, ...]) -> list[str]:
    """Repeated options and comma lists (``--reduction a,b --reduction c``) as one list."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _verdict(row: dict) -> str:
    if not row.get("bound_applies"):
        return "[yellow]no bound[/]"
    return "[green]within[/]" if row.get("budget_ok") else "[red]below[/]"


def _yes(value) -> str:
    return "—" if value is None else ("[green]yes[/]" if value else "[red]NO[/]")


#: where a model's name may go onto the next line of the terminal table: after these, never inside a word
SPEC_BREAKS = ":,/| "


def spec_pieces(text: str) -> list[str]:
    """``text`` cut after each run of :data:`SPEC_BREAKS` (``python:``, ``mine.py:``, ``width=2,``): the pieces a
    line of the model column may hold whole."""
    return [piece for piece in re.findall(rf"[^{re.escape(SPEC_BREAKS)}]*[{re.escape(SPEC_BREAKS)}]*", text) if piece]


def wrap_spec(text: str, width: int) -> str:
    """``text`` on lines of at most ``width`` characters, broken only between :func:`spec_pieces` (a piece longer
    than ``width`` has a line of its own)."""
    lines = [""]
    for piece in spec_pieces(text):
        if lines[-1] and len(lines[-1]) + len(piece.rstrip()) > width:
            lines.append("")
        lines[-1] += piece
    return "\n".join(line.rstrip() for line in lines)


def _table(title: str, columns: list[str], cells: list[list[str]], longest: dict[str, int],
           model_width: int | None = None, fold_model: bool = False) -> Table:
    """The sweep's table of ``cells`` (one list per row, in ``columns`` order); the model column ``model_width``
    wide, its text broken by :func:`wrap_spec` and not wrapped again by rich -- unless ``fold_model`` (a console
    too narrow for a whole piece: rich folds it) --, or left out when None."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for name in columns:
        if name == "model" and model_width is None:
            continue
        table.add_column(name, justify="left" if name in ("reduction", "model", "verdict", "exact", "certificate")
                         else "right", overflow="fold", min_width=min(longest.get(name, len(name)), 26),
                         no_wrap=name not in ("reduction", "certificate") and (name != "model" or not fold_model),
                         width=model_width if name == "model" else None)
    for row in cells:
        table.add_row(*(cell for name, cell in zip(columns, row) if name != "model" or model_width is not None))
    return table


def render_sweep(frame) -> None:
    """The rows as a table: per cell, bits used against the bound, accuracy, the certificate (the reduction,
    seed and protocol = model columns only when they vary); then the reasons of the cells that failed.

    Models are named by what differs between their specs (:func:`~commsim.cli.sweep_plot.spec_labels`, as the
    plot names them; the part they share is in the title), and the model column takes the width the other
    columns leave, its names broken onto lines only after a ``:``, ``,`` or ``/`` -- never inside a word."""
    from rich.measure import Measurement

    from commsim.cli.sweep_plot import spec_labels
    rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
    shown = rows[:SHOWN_ROWS]
    many_reductions = len({r["reduction"] for r in rows}) > 1
    many_seeds = len({r["seed"] for r in rows}) > 1
    inexact = any(r.get("protocol_matches_model") is False for r in rows)
    models = list(dict.fromkeys(str(r["model"]) for r in shown))
    labels, common = spec_labels(models)
    label = dict(zip(models, labels))
    title = "commsim sweep" + ("" if many_reductions or not rows else f": {rows[0]['reduction']}") + \
        (f"\nmodels {common} (the model column says what differs)" if common else "")
    columns = (["reduction"] if many_reductions else []) + ["model", "n"] + (["seed"] if many_seeds else []) + \
        ["bits/bound", "verdict", "acc."] + (["exact"] if inexact else []) + ["certificate"]
    longest = {"reduction": max([len(str(r["reduction"])) for r in shown] + [len("reduction")]), "certificate": 9}
    failures: dict[str, list[str]] = {}
    cells = []
    for row in shown:
        head = ([escape(str(row["reduction"]))] if many_reductions else []) + [label[str(row["model"])], str(row["n"])] \
            + ([str(row["seed"])] if many_seeds else [])
        if row.get("error"):
            failures.setdefault(str(row["error"]), []).append(f"{row['reduction']} {row['model']} n = {row['n']}"
                                                              + (f" seed {row['seed']}" if many_seeds else ""))
            cells.append([*head, "", "[red]error[/]", "", *([""] if inexact else []), f"({len(failures)})"])
            continue
        kind = row.get("certificate_kind")
        shown_cert = "—" if kind is None else escape(str(kind)) + ("" if row.get("certificate")
                                                                  else " [red](not verified)[/]")
        bound = f"{row['lower_bound_bits']}" if row.get("bound_applies") else "—"
        cells.append([*head, f"{row['bits_used']}/{bound}", _verdict(row), f"{row['model_accuracy']:.3f}",
                      *([_yes(row.get("protocol_matches_model"))] if inexact else []), shown_cert])
    others = Measurement.get(console, console.options, _table(title, columns, cells, longest)).maximum
    piece = max([len(p.rstrip()) for name in labels for p in spec_pieces(name)] + [len("model")])
    room = console.width - others - 2                # the model column's own padding
    width = min(max([len(name) for name in labels] + [len("model")]), max(room, 8))
    model = columns.index("model")
    for row in cells:
        row[model] = escape(wrap_spec(row[model], width))
    table = _table(title, columns, cells, longest, model_width=width, fold_model=piece > width)
    notes = [] if inexact or not any(r.get("protocol_matches_model") for r in rows) else \
        ["protocol = model bit for bit in every cell that ran"]
    if len(rows) > SHOWN_ROWS:
        notes.append(f"the first {SHOWN_ROWS} of {len(rows)} rows (all are in --out and --json)")
    table.caption = "; ".join(notes) or None
    table.caption_justify = "left"
    console.print(table)
    for number, (reason, where) in enumerate(failures.items(), 1):
        listed = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
        console.print(escape(f"({number}) {listed}: {reason}"), soft_wrap=False)


#: the most dropped rows listed one by one (all are in --json)
SHOWN_PRUNED = 10


def _print_pruned(attrs: dict, out: str) -> None:
    """How many rows --prune dropped from ``out``, of which kind, and which (the first :data:`SHOWN_PRUNED`)."""
    stale, total = attrs["pruned_stale"], attrs["pruned"]
    kinds = ([f"{stale} of this grid's cells made from other spec files or settings"] if stale else []) + \
        ([f"{total - stale} outside this grid"] if total > stale else [])
    console.print(escape(f"dropped {total} row{'s' if total != 1 else ''} from {out}: {', '.join(kinds)}"),
                  soft_wrap=True)
    for described in attrs["pruned_rows"][:SHOWN_PRUNED]:
        console.print(escape(f"  {described}"), soft_wrap=True)
    if total > SHOWN_PRUNED:
        console.print(f"  and {total - SHOWN_PRUNED} more (--json lists them all)")


@cli.command("sweep")
@click.option("--reduction", "reductions", multiple=True, required=True, metavar="ID[,ID...]",
              help="Reduction(s) to run: repeat the option or give a comma list (commsim list shows them).")
@click.option("--model", "models", multiple=True, metavar="SPEC",
              help="Model spec with ranges in its values: width=2..8:x2 (geometric), precision=4..8:+4 "
                   "(arithmetic), a..b (step 1), alternatives a|b; a file glob as target (torch:DIR/*.pt). "
                   "Repeatable; default: each reduction's default model. A python: spec runs code: never pass "
                   "an untrusted spec.")
@click.option("--n", "n", default=None, metavar="RANGE", help="Sizes n: 8..16:x2, 4..12:+4, 8,12,16 or one value "
              "(default: the reduction's).")
@click.option("--seed", "seeds", default="0", show_default=True, metavar="RANGE", help="Run seeds (sampled instances, "
              "searches): 0..3, 0,5 or one value.")
@click.option("--instances", default="all", show_default=True, help="'all' (exhaustive) or a number of samples per cell.")
@click.option("--precision", default=None, metavar="RANGE", help="Add precision=P to every spec: 4..16:+4, 8,16.")
@click.option("--dtype", default=None, metavar="LIST", help="Add dtype=NAME to every spec: float16,float32.")
@click.option("--executor", type=click.Choice(EXECUTORS), default=None,
              help="Where the cells run: inprocess (default), processes (local), dask (an embedded LocalCluster, "
                   "or --scheduler's cluster).")
@click.option("--scheduler", default=None, metavar="ADDR", help="A running Dask scheduler, tcp://host:8786 "
              "(implies --executor dask; e.g. a dask-jobqueue SLURM/PBS cluster).")
@click.option("--workers", type=int, default=None,
              help=f"Local workers of processes/dask (default: one per core); at most {WORKERS_PER_CORE} per core "
                   f"and what the {show_bytes(MEMORY_BUDGET_BYTES)} memory budget holds (about "
                   f"{show_bytes(WORKER_BYTES['processes'])} per process, {show_bytes(WORKER_BYTES['dask'])} per "
                   "Dask worker).")
@click.option("--out", "out", callback=refuse_empty, default=None, metavar="FILE",
              help="Result table (.parquet, .csv, .json), kept up to date as cells finish; a re-run with the same "
                   "--out skips the cells already in it. An existing file that is not a commsim sweep table is "
                   "refused, never overwritten; one run writes a table at a time (a second is refused, naming "
                   "the first's pid).")
@click.option("--plot", "plot_path", callback=refuse_empty, default=None, metavar="FILE",
              help="Faceted plot (.png/.svg): bits vs bound, accuracy, certificate found, over n.")
@click.option("--no-certificate", is_flag=True, help="Skip the certificate search in every cell.")
@click.option("--prune", is_flag=True,
              help="Drop the rows of --out whose cells are not in this grid: rows made from files the specs name "
                   "that have changed since (an edited python: factory, a new checkpoint or weights file) or with "
                   "other settings, and rows of other grids. The dropped rows are counted and listed.")
@force_option
@plugin_option
@json_option
def sweep_command(reductions, models, n, seeds, instances, precision, dtype, executor, scheduler, workers, out,
                  plot_path, no_certificate, prune, plugins, as_json):
    """Run a grid of reductions x model specs x n x seeds, one `commsim run` per cell, as one table.

    Each cell keeps the report's key figures (bits used, lower bound, accuracy, protocol = model, the
    certificate). With --out the table is resumable: cells are keyed by a hash of the cell, the file is
    rewritten as cells finish, and a re-run runs only the cells not yet in it (an identical second
    command does no work). Cells that fail with an error are listed and run again next time. A row of
    --out that is not what a sweep writes (a value of the wrong type, e.g. model_accuracy "high", or
    coordinates other than its cell key's) is not trusted: its cell runs again, its row is replaced, and
    a warning on stderr says so. A file that is not a sweep table at all (no cell key column, no rows)
    is refused (exit 2) and left as it is. Every row says which commsim made it, when, and a hash of the
    files its spec names (spec_files_hash); rows of other grids are kept unless --prune.

    Trust: with --scheduler, results come back from that cluster as pickles that this process loads --
    whoever controls the cluster can run code in commsim's process, so use only a cluster you trust. The
    embedded cluster (--executor dask without --scheduler) listens on 127.0.0.1 without authentication:
    on a shared machine (a login node) another user can connect to it while the sweep runs.

    \b
    Examples:
      commsim sweep --reduction index-idxl --model "elman:width=2..8:x2,precision=4..8:+4" --n 8..16:x2
      commsim sweep --reduction index-idxl --model "elman:width=2..8:x2,precision=4..8:+4" --n 8..16:x2 \\
                    --executor dask --out r.parquet --plot r.png
      commsim sweep --reduction index-idxl,eq-ineq --model "torch:ckpt/*.pt" --n 8..32:x2 --out r.csv
      commsim sweep --reduction index-idxl --model lstm:width=4 --precision 2..8:+2 --seed 0..3 --instances 500
      commsim sweep --reduction index-idxl --n 8..20:+4 --scheduler tcp://headnode:8786 --out r.parquet
    """
    if out is not None:
        table_format(out, "--out")
        check_target(out, "--out", "table")
    elif prune:
        raise InputError("--prune drops rows of the result table: give --out", "--prune")
    if plot_path is not None:
        check_plot_path(plot_path)
    if scheduler is not None and executor is None:
        executor = "dask"
    count = parse_instances(instances)
    with progress_bar("sweep", enabled=not as_json) as update:
        frame = sweep(_split(reductions), list(models) or None, n, seeds=seeds, instances=count,
                      precision=precision, dtype=dtype, certify=not no_certificate, executor=executor or "inprocess",
                      scheduler=scheduler, workers=workers, out=out,
                      write=lambda path, data: write_bytes(path, data, option="--out"), plugins=plugins, prune=prune,
                      progress=lambda done, total: update(done, total, "sweep: cells"),
                      notify=lambda message: err_console.print(f"Warning: {message}", markup=False, soft_wrap=True))
    if plot_path is not None:
        from commsim.cli.sweep_plot import plot_sweep
        plot_sweep(frame, plot_path)
    a = frame.attrs
    if as_json:
        rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
        pruned = {key: a[key] for key in ("pruned", "pruned_stale", "pruned_rows")} if prune else {}
        emit_json({"cells": a["cells"], "run": a["run"], "skipped": a["skipped"], "failed": a["failed"],
                   "invalid": a["invalid"], "duplicates": a["duplicates"], "written": a["written"],
                   "executor": a["executor"], "out": out, "plot": plot_path, **pruned,
                   "rows": rows})
        return
    render_sweep(frame)
    where = f" on {a['executor']}" if a["run"] else ""
    found = f", {a['skipped']} already in {out}" if out is not None else ""
    console.print(escape(f"{a['cells']} cells: {a['run']} run{where}{found}" +
                         (f"; {a['failed']} failed (run again next time)" if a["failed"] else "") +
                         ("" if out is None else (f"; table written to {out}" if a["written"]
                                                  else "; nothing to do, nothing to write"))))
    if a["duplicates"]:
        console.print(escape(f"{a['duplicates']} repeated row(s) of {out} dropped (the last row of each cell kept)"))
    if a.get("pruned"):
        _print_pruned(a, out)
    if plot_path is not None:
        console.print(f"plot written to {escape(plot_path)}")
