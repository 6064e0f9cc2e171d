"""``commsim replicate EXPERIMENT``: a paper's experiment at a chosen scale -- trained models, the bounds
beside them, the paper's claims checked -- as a resumable table, a figure and an HTML page."""
from __future__ import annotations

import click
from rich import box
from rich.markup import escape
from rich.table import Table

from commsim.cli import cli
from commsim.cli.budget import check_plot_path
from commsim.cli.common import console, emit_json, err_console, json_option, plugin_option, progress_bar
from commsim.cli.files import check_target, force_option, refuse_empty, write_bytes, write_figure
from commsim.cli.html import check_html, command_line, html_option, write_html
from commsim.core.errors import InputError
from commsim.core.executors import EXECUTORS
from commsim.contract.experiment import DEFAULT_COLUMNS, Experiment
from commsim.batch.replicate import SCALES, bound_curves, experiment_object, frame_rows, replicate
from commsim.batch.sweep import table_format
from commsim.render.replicate_page import ceiling_check_line


def _number(value, digits: int = 3) -> str:
    if value is None:
        return "—"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def render_replicate(frame, rows: list[dict]) -> None:
    """The rows (accuracy, and for recurrent models p_eff, S, the ceiling and the run), the claims, the
    invariants."""
    a = frame.attrs
    table = Table(title=f"commsim replicate {a['experiment']} ({a['scale']})", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for name in ("model", "N", "steps", "accuracy", "p_eff", "S bits", "one-way line", "ceiling", "quantised", "run"):
        table.add_column(name, justify="left" if name in ("model", "run") else "right")
    ceiling = a.get("ceiling_column")
    for r in rows:
        run = "—" if r.get("run_verdict") is None else \
            f"{r['run_bits_used']}/{r['run_lower_bound_bits']} {r['run_verdict']}" + \
            (f", {r['run_certificate']}" if r.get("run_certificate") else "")
        table.add_row(escape(f"{r['model']}-({r['layers']}, {r['width']})"), str(r["N"]), str(r.get("steps_run")),
                      _number(r["accuracy"]), _number(r.get("p_eff")), _number(r.get("state_bits")),
                      _number(r.get("one_way_bits"), 1), _number(r.get(ceiling) if ceiling else None),
                      _number(r.get("quantised_accuracy")), escape(run))
    console.print(table)
    claims = Table(title="the paper's claims", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ("claim", "ours", "status", "test"):
        claims.add_column(name, overflow="fold")
    for c in a["claims"]:
        colour = {"reproduced": "green", "not reproduced": "red"}.get(c["status"], "yellow")
        claims.add_row(escape(c["claim"]), escape(c["ours"]), f"[{colour}]{escape(c['status'])}[/]",
                       escape(c.get("test", "")))
    console.print(claims)
    intervals = sorted({c["interval"] for c in a["claims"] if c.get("interval")})
    if intervals:
        console.print(escape("verdicts read the " + "; ".join(intervals)), soft_wrap=True)
    check = ceiling_check_line(rows)
    if a["violations"]:
        for v in a["violations"]:
            console.print(f"[red]invariant violated:[/] {escape(v)}")
        if check:
            console.print(escape(check), soft_wrap=True)
    else:
        console.print(escape("invariants hold: no quantised model above its ceiling, certificates verified, "
                             "protocol = quantised model" + (f" ({check})" if check else "")), soft_wrap=True)


@cli.command("replicate")
@click.argument("experiment")
@click.option("--scale", type=click.Choice(SCALES), default="quick", show_default=True,
              help="quick: seconds, a smoke test (the test suite; no claim is judged); cpu: the figures in "
                   "docs/EXPERIMENTS.md (tens of minutes on 2 cores); paper: the paper's sizes (a GPU cluster's "
                   "work).")
@click.option("--executor", type=click.Choice(EXECUTORS), default="inprocess", show_default=True,
              help="Where the cells run: inprocess, processes (local), dask (--scheduler's cluster or a local one).")
@click.option("--scheduler", default=None, metavar="ADDR", help="A running Dask scheduler (implies --executor dask).")
@click.option("--workers", type=int, default=None, help="Local workers of processes/dask (default: one per core).")
@click.option("--out", "out", callback=refuse_empty, default=None, metavar="FILE",
              help="Result table (.parquet, .csv, .json), one row per model x N x width x seed, with provenance; a "
                   "re-run with the same --out runs only the cells not yet in it; one run writes a table at a time.")
@click.option("--plot", "plot_path", callback=refuse_empty, default=None, metavar="FILE",
              help="The figure (.png/.svg): accuracy vs N, and accuracy vs state bits with the ceiling.")
@html_option
@force_option
@plugin_option
@json_option
def replicate_command(experiment, scale, executor, scheduler, workers, out, plot_path, html_path, plugins, as_json):
    """Run a paper's experiment: train its models (PyTorch, seeded, deterministic on CPU), evaluate them on
    fresh strings of length exactly N, and put commsim's bounds beside them.

    For every trained recurrent model: the smallest fixed-point precision p_eff at which the model run
    through commsim keeps its accuracy, its state bits S, the one-way line N·log2 k and the Fano
    ceiling on accuracy (docs/EXPERIMENTS.md), and a `commsim run` of the quantised model (bits,
    verdict, certificate). The invariants are checked and the paper's claims compared point by point, each
    with the verdict of a stated test on the accuracies' Wilson intervals (reproduced, not reproduced, not
    tested at this scale; at --scale quick none is judged: smoke test).

    \b
    Examples:
      commsim replicate bhbk24-index --scale quick
      commsim replicate bhbk24-index --scale cpu --executor processes --workers 2 --out idx.parquet \\
                        --plot idx.png --html idx.html
      commsim replicate bhbk24-dyck --scale cpu --out dyck.csv
    """
    exp = experiment_object(experiment, plugins)           # an unknown name fails before anything runs
    name = exp.name
    if out is not None:
        table_format(out, "--out")
        check_target(out, "--out", "table")
    if plot_path is not None:
        check_plot_path(plot_path)
    check_html(html_path)
    if scheduler is not None:
        if executor not in ("inprocess", "dask"):
            raise InputError(f"--scheduler is a Dask cluster's address; it does not go with --executor {executor}",
                             "--scheduler")
        executor = "dask"
    with progress_bar("replicate", enabled=not as_json) as update:
        frame = replicate(name, scale, executor=executor, scheduler=scheduler, workers=workers, out=out,
                          write=lambda path, data: write_bytes(path, data, option="--out"), plugins=plugins,
                          progress=lambda done, total: update(done, total, "replicate: cells"),
                          notify=lambda message: err_console.print(f"Warning: {message}", markup=False,
                                                                   soft_wrap=True))
    rows = frame_rows(frame)
    curves = bound_curves(name, frame) if (plot_path or html_path) else {}
    legend, columns = (exp.legend, exp.columns) if isinstance(exp, Experiment) else ({}, DEFAULT_COLUMNS)
    if plot_path is not None:
        from commsim.render.replicate_page import replicate_figure
        write_figure(replicate_figure(rows, curves, frame.attrs["title"], legend), plot_path, option="--plot")
    if html_path is not None:
        from commsim.render.replicate_page import replicate_page
        write_html(html_path, replicate_page(frame, rows, curves, command_line(), legend, columns))
    a = frame.attrs
    if as_json:
        emit_json({key: a[key] for key in ("experiment", "scale", "cells", "run", "skipped", "failed", "invalid",
                                           "duplicates", "written", "executor", "violations", "claims")} |
                  {"out": out, "plot": plot_path, "html": html_path,
                   "rows": frame.astype(object).where(frame.notna(), None).to_dict("records")})
        return
    render_replicate(frame, rows)
    console.print(escape(f"{a['cells']} cells: {a['run']} run on {a['executor']}, {a['skipped']} already in the table"
                         + (f"; {a['failed']} failed" if a["failed"] else "")
                         + (f"; {a['invalid']} invalid row(s) of the table run again" if a["invalid"] else "")
                         + (f"; {a['duplicates']} repeated row(s) of the table dropped" if a["duplicates"] else "")
                         + (f"; nothing to write to {out}" if out and not a["written"] else "")
                         + "".join(f"; {what} written to {path}" for what, path in
                                   (("table", out if a["written"] else None), ("plot", plot_path),
                                    ("page", html_path)) if path)))
