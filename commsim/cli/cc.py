"""``commsim cc``: plain communication protocols on the source problems."""
from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from commsim.cli import cli
from commsim.cli.common import (
    check_positive,
    console,
    emit_json,
    json_option,
    parse_instances,
    plugin_option,
    progress_bar,
    protocol_problem,
    render_transcript,
)
from commsim.runs.cc import run_cc
from commsim.plugins import load_plugins


@cli.command("cc")
@click.argument("problem", metavar="PROBLEM")
@click.option("--n", "n", type=int, required=True, help="Problem size (n bits).")
@click.option("--protocol", "protocol_name", required=True, help="A registered protocol (see `commsim list`).")
@click.option("--instances", default="all", show_default=True, help="'all' (exhaustive) or a number of samples.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for sampled instances.")
@click.option("--audit", is_flag=True, help="Run each party in its own process (only bytes and coins cross).")
@click.option("--error", "error", type=float, default=None,
              help="Randomized protocols: the error to aim for (default 0.01); the report gives the promised "
                   "error, the measured one with a 95% interval, and whether they are consistent.")
@click.option("--transcript", "show_transcript", is_flag=True, help="Draw the costliest transcript.")
@plugin_option
@json_option
def cc_command(problem, n, protocol_name, instances, seed, audit, error, show_transcript, plugins, as_json):
    """Run a plain two-party protocol for PROBLEM (index, eq or disj: the problems the registered protocols
    are for) on every (or sampled) instance.

    Reports the worst-case bits, bits per direction, rounds and correctness.  A randomized protocol
    (inner-product, fingerprint, sample) draws instance i's coins from the seed and instance i; they are
    recorded in the transcript, and the report gives the measured error against the promised one.

    \b
    Examples:
      commsim cc index --n 16 --protocol one-way --instances all
      commsim cc index --n 16 --protocol two-way --json
      commsim cc eq --n 8 --protocol one-way --instances 100 --audit --transcript
      commsim cc eq --n 1024 --protocol fingerprint --error 0.01 --instances 10000 --json
      commsim cc eq --n 64 --protocol inner-product --error 0.1 --instances 2000
      commsim cc index --n 256 --protocol sample --error 0.1 --instances 5000 --transcript
    """
    check_positive(n, "--n")
    registry = load_plugins(plugins)
    protocol_problem(problem, registry)
    protocol_cls = registry.get("cc-protocol", protocol_name, param="protocol")
    count = parse_instances(instances)
    with progress_bar(f"{protocol_name} on {problem}", enabled=not as_json) as update:
        report = run_cc(problem, n, protocol_cls, instances=count, seed=seed, audit=audit, progress=update,
                        error=error)
    if as_json:
        emit_json(report)
        return
    table = Table(title=escape(f"{report.protocol} protocol for {report.problem} (n = {n})"), show_header=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("instances", f"{report.instances_run} ({report.instances})")
    table.add_row("bits used (worst case)", str(report.bits_used))
    table.add_row("Alice → Bob / Bob → Alice", f"{report.bits_by_direction['alice_to_bob']} / "
                  f"{report.bits_by_direction['bob_to_alice']}")
    table.add_row("rounds", str(report.rounds))
    if report.randomized is None:
        table.add_row("correct", "[green]yes[/]" if report.correct else f"[red]no[/] ({report.errors} wrong)")
    else:
        _randomized_rows(table, report.randomized)
    table.add_row("checked by the runner", f"{report.runner_checked}" + (" (audit: separate processes)" if audit else ""))
    console.print(table)
    if show_transcript and report.transcript is not None:
        console.print(render_transcript(report.transcript, "costliest transcript"))
        for c in report.transcript.coins:
            shown = str(c.bits) if len(c.bits) <= 48 else str(c.bits[:48]) + "…"
            console.print(escape(f"coins ({c.stream}, drawn by {c.party}, {c.label}): {len(c.bits)} bits "
                                 f"at {c.offset}: {shown}"))


def _interval(iv: dict) -> str:
    return (f"{iv['rate']:.4g} ({iv['events']:,} of {iv['trials']:,}); {iv['confidence']:.0%} "
            f"{iv['method']} interval [{iv['low']:.4g}, {iv['high']:.4g}]")


def _randomized_rows(table: Table, r: dict) -> None:
    """The coins, the promise, the measured error and the randomized bound of a randomized run."""
    table.add_row("coins", escape(f"{r['coins']} (seed {r['coin_seed']}; instance i uses CoinSource(seed, i))"))
    table.add_row("promised error", escape(f"<= {r['error_promised']:.4g} on every input: {r['promise']}"))
    table.add_row("measured error", escape(_interval(r["measured_error_detail"])))
    for answer, iv in r["measured_error_by_answer"].items():
        table.add_row(f"  where the answer is {answer}", escape(_interval(iv)))
    table.add_row("consistent with the promise", "[green]yes[/]" if r["consistent_with_promise"] else
                  "[red]no: the error is significantly above the promise[/]")
    bound = r["randomized_bound"]
    if bound is not None:
        verdict = "" if bound["satisfied"] is None else ("; the protocol sends enough" if bound["satisfied"]
                                                        else "; the protocol sends FEWER bits")
        table.add_row("randomized bound", escape(f"{bound['bits']} bits — {bound['statement']} ({bound['source']})"
                                                 f"{verdict}"))
    if r["randomness_note"]:
        table.add_row("the bound and coins", escape(r["randomness_note"]))
