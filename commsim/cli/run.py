"""``commsim run``: a reduction end to end — bits used against the lower bound, with a certificate."""
from __future__ import annotations

import sys

import click
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from commsim.certify.view import certificate_view
from commsim.cli import cli
from commsim.cli.common import (
    console,
    emit_json,
    json_option,
    parse_instances,
    plugin_option,
    progress_bar,
    render_certificate,
    render_exchange,
)
from commsim.cli.files import force_option
from commsim.cli.html import check_html, command_line, html_option, write_html
from commsim.core.errors import InputError
from commsim.runs.run import run_reduction
from commsim.runs.verdict import MUST_FAIL, WRONG_OUTCOMES
from commsim.plugins import load_plugins
from commsim.render.summary import run_summary

#: the exit status of ``run --fail-on-certificate`` (the verdict is must_fail) and ``--fail-on-error`` (must_fail
#: or wrong_not_forced)
EXIT_CERTIFICATE = 3


_COLOURS = {"good": "green", "bad": "red", "warn": "yellow"}


def _bar(used: int, bound: int, colour: str, width: int = 30) -> str:
    """Bits used against the bound as a bar, the bound marked ┃."""
    scale = max(used, bound)
    fill = round(width * used / scale)
    mark = min(round(width * bound / scale), width - 1)
    cells = ["█" if i < fill else "·" for i in range(width)]
    cells[mark] = "┃"
    return f"[{colour}]{''.join(cells)}[/]  "


def summary_cell(row) -> str:
    """A :class:`commsim.render.summary.SummaryRow` as rich markup: the lead coloured by the status, the
    bits bar in front of the bits row."""
    colour = _COLOURS.get(row.status)
    bar = _bar(row.bar[0], row.bar[1], colour or "default") if row.bar and row.bar[1] else ""
    if row.lead and colour:
        return f"{bar}[{colour}]{escape(row.lead)}[/]{escape(row.rest)}"
    return bar + escape(row.text)


def render_report(report) -> None:
    """The summary panel (the rows of :func:`commsim.render.summary.run_summary`), then the certificate
    (Alice's and Bob's inputs side by side)."""
    d = report.to_dict()
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for row in run_summary(report):
        table.add_row(escape(row.label), summary_cell(row))
    console.print(Panel(table, title="commsim run", expand=False))
    if d["certificate"]:
        console.print(render_certificate(certificate_view(d["certificate"], d["problem"])))
    elif d["certificate_search"]:
        console.print(f"certificate search: {escape(d['certificate_search'])}")


@cli.command("run")
@click.argument("reduction")
@click.option("--model", "model_spec", default=None, metavar="SPEC",
              help="Model spec KIND[:key=value,...] (default: the reduction's own default model). A python: "
                   "spec imports and runs code (python:os:system:command=... runs a shell command): never pass "
                   "an untrusted spec.")
@click.option("--n", "n", type=int, default=None, help="Size of the source problem (default: the reduction's).")
@click.option("--instances", default=None,
              help="'all' (exhaustive) or a number of samples. Default: the reduction's own sample size where it "
                   "declares one (compose-index and disj-3cycle: 2000 sampled; qsa-approx: 32 sampled, its inputs "
                   "are real vectors), else all -- whatever their number: "
                   "over 2^24 instances are swept in shards (--workers), and over 2^32 (over 2^24 for dyck22-fooling, "
                   "which judges the model on added sets too) the run exits 2 asking for a number (e.g. eq-ineq at "
                   "n = 32: give --instances 1000).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for sampled instances and searches.")
@click.option("--audit", is_flag=True, help="Re-run the checked instances with each party in its own process.")
@click.option("--transcript", "show_transcript", is_flag=True, help="Draw the costliest transcript.")
@click.option("--no-certificate", is_flag=True, help="Skip the certificate search.")
@click.option("--simulator", default=None, metavar="NAME",
              help="The simulator that turns the model into party programs (see `commsim list`). Default: the "
                   "model's kind selects it -- of the simulators that accept the model, the one of lowest "
                   "precedence; a reduction may run a variant (compose-index: attention-public-query).")
@click.option("--fail-on-certificate", is_flag=True,
              help=f"Exit with status {EXIT_CERTIFICATE} when the verdict is must_fail: the bits used are below a "
                   "bound that applies, so the bound forces the model to fail somewhere (not when the model is "
                   "merely wrong within budget: see --fail-on-error). For CI gating; the report is printed as usual.")
@click.option("--fail-on-error", is_flag=True,
              help=f"Exit with status {EXIT_CERTIFICATE} when the verdict is must_fail or wrong_not_forced: the "
                   "bound forces a failure, or the model is wrong on a tested input (or a verified certificate) "
                   "whatever its bits.")
@click.option("--workers", type=int, default=None, metavar="N",
              help="Worker processes of an exhaustive run too large for one batch (over 2^24 instances, swept in "
                   "shards). Default: one per usable CPU core; 1 sweeps in this process. The result is the same.")
@click.option("--precision", "precision", default=None, metavar="effective",
              help="'effective': search the smallest fixed-point width p (2..32 bits, p/2 fraction bits) at which the "
                   "model keeps its accuracy within 0.01 of its own format's, on the run's instances (at most 4096), "
                   "then run the model quantised to p_eff bits: the verdict is about that quantised model. A fixed "
                   "format goes in the spec (precision=P).")
@click.option("--q", "q", type=int, default=None,
              help="The sparsity q of a reduction that takes it (qsa-approx: each row averages q values; default 1).")
@click.option("--value-dim", "value_dim", type=int, default=None, metavar="D",
              help="The dimension d' of the averaged values, for a reduction that takes it (qsa-approx; default 1).")
@html_option
@plugin_option
@force_option
@json_option
def run_command(reduction, model_spec, n, instances, seed, audit, show_transcript, no_certificate, simulator,
                workers, fail_on_certificate, fail_on_error, precision, q, value_dim, html_path, plugins, as_json):
    """Run REDUCTION with a model: bits used against the lower bound, correctness, exactness,
    and (below the bound) the input on which the model must fail.

    The verdict is one of: must_fail (bits below a bound that applies: the bound forces a failure),
    wrong_not_forced (wrong on a tested input, but within budget or with no bound), correct (correct on
    everything tested, within budget), bound_does_not_apply (correct on everything tested, no bound).

    \b
    Exit status: 0 the run completed; 2 bad input; 1 an internal error;
    3 with --fail-on-certificate when the verdict is must_fail,
      with --fail-on-error when it is must_fail or wrong_not_forced.

    \b
    Examples:
      commsim run index-idxl
      commsim run index-idxl --model memorize:capacity=7 --n 8 --json
      commsim run eq-ineq --model lstm:width=2,precision=8 --n 6 --transcript
      commsim run index-idxl --model python:my_model.py:factory --fail-on-certificate
      commsim run dyck22-fooling --html report.html
      commsim run index-idxl --model memorize:capacity=7 --simulator rnn-handoff --json
      commsim run index-idxl --model construct:idxl --precision effective
      commsim run qsa-approx --model fnn:width=4,precision=16 --n 8 --q 1
    """
    if fail_on_certificate and no_certificate:
        raise InputError("--fail-on-certificate needs the certificate search: drop --no-certificate",
                         "--fail-on-certificate")
    load_plugins(plugins)
    count = parse_instances(instances) if instances is not None else \
        load_plugins().get("reduction", reduction, param="reduction").default_instances
    check_html(html_path)
    runner = run_reduction
    if precision is not None:
        if precision.strip().lower() != "effective":
            raise InputError(f"--precision: only 'effective' (got {precision!r}); a fixed format goes in the spec, "
                             f"e.g. --model lstm:width=8,precision=8", "--precision")
        from commsim.runs.effective import run_effective
        runner = run_effective
    with progress_bar(reduction, enabled=not as_json) as update:
        options = {key: value for key, value in (("q", q), ("value_dim", value_dim)) if value is not None}
        report = runner(reduction, model_spec, n, instances=count, seed=seed, audit=audit,
                        certify=not no_certificate, simulator=simulator, workers=workers, **options,
                        progress=lambda stage, done, total: update(done, total, f"{reduction}: {stage}"))
    if as_json:
        emit_json(report)
    else:
        render_report(report)
        if show_transcript:
            if report.transcript is None:
                console.print("no transcript was recorded for this run")
            else:
                console.print(render_exchange(report.transcript, report.details,
                                              f"costliest transcript ({report.protocol}, "
                                              f"{report.transcript.total_bits} bits)"))
    if html_path:
        from commsim.render.reports import run_page
        write_html(html_path, run_page(report, command_line()))
        if not as_json:
            console.print(f"report written to {escape(str(html_path))}")
    outcome = report.outcome
    if (fail_on_certificate and outcome == MUST_FAIL) or (fail_on_error and outcome in WRONG_OUTCOMES):
        sys.exit(EXIT_CERTIFICATE)   # not click's Exit: the entry point runs click without standalone mode
