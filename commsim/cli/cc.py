"""``commsim cc``: plain communication protocols on the source problems."""
from __future__ import annotations

import click
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
    render_transcript,
)
from commsim.pipeline.cc import run_cc
from commsim.plugins import load_plugins
from commsim.theory.problems import PROBLEM_NAMES


@cli.command("cc")
@click.argument("problem", type=click.Choice(PROBLEM_NAMES))
@click.option("--n", "n", type=int, required=True, help="Problem size (n bits; string length for dyck22).")
@click.option("--protocol", "protocol_name", required=True, help="A registered protocol (see `commsim list`).")
@click.option("--instances", default="all", show_default=True, help="'all' (exhaustive) or a number of samples.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for sampled instances.")
@click.option("--audit", is_flag=True, help="Run each party in its own process (only bytes cross).")
@click.option("--transcript", "show_transcript", is_flag=True, help="Draw the costliest transcript.")
@plugin_option
@json_option
def cc_command(problem, n, protocol_name, instances, seed, audit, show_transcript, plugins, as_json):
    """Run a plain two-party protocol for PROBLEM on every (or sampled) instance.

    Reports the worst-case bits, bits per direction, rounds and correctness.

    \b
    Examples:
      commsim cc index --n 16 --protocol one-way --instances all
      commsim cc index --n 16 --protocol two-way --json
      commsim cc eq --n 8 --protocol one-way --instances 100 --audit --transcript
    """
    check_positive(n, "--n")
    protocol_cls = load_plugins(plugins).get("cc-protocol", protocol_name, param="protocol")
    count = parse_instances(instances)
    with progress_bar(f"{protocol_name} on {problem}", enabled=not as_json) as update:
        report = run_cc(problem, n, protocol_cls, instances=count, seed=seed, audit=audit, progress=update)
    if as_json:
        emit_json(report)
        return
    table = Table(title=f"{report.protocol} protocol for {report.problem} (n = {n})", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("instances", f"{report.instances_run} ({report.instances})")
    table.add_row("bits used (worst case)", str(report.bits_used))
    table.add_row("Alice → Bob / Bob → Alice", f"{report.bits_by_direction['alice_to_bob']} / "
                  f"{report.bits_by_direction['bob_to_alice']}")
    table.add_row("rounds", str(report.rounds))
    table.add_row("correct", "[green]yes[/]" if report.correct else f"[red]no[/] ({report.errors} wrong)")
    table.add_row("checked by the runner", f"{report.runner_checked}" + (" (audit: separate processes)" if audit else ""))
    console.print(table)
    if show_transcript and report.transcript is not None:
        console.print(render_transcript(report.transcript, "costliest transcript"))
