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
from commsim.cli.html import check_html, command_line, html_option, write_html
from commsim.core.errors import InputError
from commsim.pipeline.run import run_reduction
from commsim.plugins import load_plugins

#: the exit status of ``run --fail-on-certificate`` when a verified certificate says the model must fail
EXIT_CERTIFICATE = 3


def _bar(used: int, bound: int | None, width: int = 30) -> str:
    if not bound:
        return f"{used} bits"
    scale = max(used, bound)
    fill = round(width * used / scale)
    mark = min(round(width * bound / scale), width - 1)
    cells = ["█" if i < fill else "·" for i in range(width)]
    cells[mark] = "┃"
    colour = "green" if used >= bound else "red"
    return f"[{colour}]{''.join(cells)}[/]  {used} used / {bound} needed"


def _counted(entry: dict) -> str:
    """An evaluation set as "524,288 fooling-set members"."""
    return f"{entry['instances']:,} {entry['description']}"


def _joined(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def correctness_text(d: dict) -> str:
    """The "model correct" row: yes or no, and on which evaluation sets the model is right or wrong -- never
    "yes" beside a verified certificate (a verified certificate is an input the model gets wrong)."""
    sets = d.get("evaluation_sets") or []
    accuracy = f" (accuracy {d['model_accuracy']:.4f} over all {sum(e['instances'] for e in sets):,} tested)" \
        if len(sets) > 1 else f" (accuracy {d['model_accuracy']:.4f})"
    if not sets:
        return ("[green]yes[/]" if d["model_correct"] else "[red]no[/]") + accuracy
    right = [e for e in sets if not e["wrong"]]
    wrong = [e for e in sets if e["wrong"]]
    if d["model_correct"]:
        return "[green]yes[/]: " + escape(f"correct on all {_joined([_counted(e) for e in sets])}") + accuracy
    parts = []
    if right:
        parts.append("correct on the " + _joined([_counted(e) for e in right]))
    if wrong:
        parts.append("wrong on " + _joined([f"all {_counted(e)}" if e["wrong"] == e["instances"] else
                                            f"{e['wrong']:,} of the {_counted(e)}" for e in wrong]))
    cert = d.get("certificate")
    if not wrong and cert and cert.get("verified"):
        parts.append(f"wrong on the certificate's {'crossing' if cert['kind'] == 'rectangle' else 'input'} below")
    return "[red]no[/]: " + escape("; ".join(parts)) + accuracy


def measured_error_text(m: dict) -> str:
    """The "error rate" row: the measured rate with its interval, the distributional bound and the verdict."""
    interval = ("exact, every instance" if m["confidence"] == 1.0 else
                f"{m['confidence']:.0%} {m['method']} interval [{m['low']:.4g}, {m['high']:.4g}]")
    bound = (f"bound {m['bound']:.4g} over {m['distribution']} ({m['source']}: {m['statement']})" if m["applies"]
             else f"no bound ({m['source']}): {m['reason']}")
    return f"{m['rate']:.4g} measured ({m['events']:,} wrong of {m['trials']:,}; {interval}); {bound}; {m['verdict']}"


def agreement_text(a: dict) -> str:
    """The "torch agreement" row: commsim's model against the framework module's own forward."""
    where = f"on {a['instances']:,}" + (f" of {a['of_instances']:,}" if a.get("sampled") else "") + " instances"
    diff = "n/a" if a.get("max_abs_diff") is None else f"{a['max_abs_diff']:.3g}"
    if a.get("ok") is None:
        return escape(f"not judged: max |commsim − {a['framework']}| = {diff} {where} ({a.get('note', '')})")
    rule = f" ≤ {a['atol']:g} + {a['rtol']:g}·|{a['framework']}|" if a.get("atol") is not None else ""
    verdict = "[green]passed[/]" if a["ok"] else "[red]FAILED[/]"
    return verdict + escape(f": max |commsim − {a['framework']}| = {diff}{rule if a['ok'] else ''} {where}"
                            + ("" if a["ok"] else f" ({a.get('note', '')})"))


def render_report(report) -> None:
    """The summary panel, then the certificate (Alice's and Bob's inputs side by side)."""
    d = report.to_dict()
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    table.add_row("reduction", escape(f"{d['reduction']}  ({d['problem']} → {d['task']}, n = {d['n']}, "
                                      f"sequence length {d['seq_len']})"))
    table.add_row("model", escape(str(d["model"])))
    table.add_row("protocol", escape(f"{d['protocol']}  ({d['bits_formula_text']})"))
    more = [_counted(e) for e in (d.get("evaluation_sets") or [])[1:]]
    table.add_row("instances", escape(f"{d['instances_run']:,} ({d['instances']})"
                                      f"{'; also ' + _joined(more) if more else ''}; {d['runner_checked']} re-run "
                                      f"through the runner{' in separate processes' if d['audited'] else ''}"))
    table.add_row("bits used", _bar(d["bits_used"], d["lower_bound_bits"] if d["bound_applies"] else None))
    table.add_row("", f"Alice→Bob {d['bits_by_direction']['alice_to_bob']}, "
                      f"Bob→Alice {d['bits_by_direction']['bob_to_alice']}, rounds {d['rounds']}")
    if d["bound_applies"]:
        verdict = "[green]within budget[/]" if d["budget_ok"] else "[red]below the lower bound: the model must fail[/]"
        table.add_row("lower bound", escape(f"{d['lower_bound_bits']} bits — {d['bound_note']}"))
        table.add_row("verdict", verdict)
    else:
        table.add_row("lower bound", f"[yellow]does not apply[/]: {escape(str(d['bound_note']))}")
    if d.get("bound_randomized_note"):
        survives = {True: "survives randomness", False: "deterministic only", None: "randomness: not stated"}
        table.add_row("with coins", escape(f"{survives[d['bound_randomized']]} — {d['bound_randomized_note']}"))
    table.add_row("model correct", correctness_text(d))
    if d.get("measured_error"):
        table.add_row("error rate", escape(measured_error_text(d["measured_error"])))
    table.add_row("protocol = model", "[green]yes, bit for bit[/]" if d["protocol_matches_model"] else
                  "[red]NO: the protocol's output differs from the direct forward[/]")
    if d.get("torch_agreement"):
        table.add_row(f"{d['torch_agreement'].get('framework', 'torch')} agreement", agreement_text(d["torch_agreement"]))
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
              help="'all' (exhaustive) or a number of samples (default: all, or the reduction's own sample size when "
                   "its instances are too many to enumerate, e.g. compose-index).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for sampled instances and searches.")
@click.option("--audit", is_flag=True, help="Re-run the checked instances with each party in its own process.")
@click.option("--transcript", "show_transcript", is_flag=True, help="Draw the costliest transcript.")
@click.option("--no-certificate", is_flag=True, help="Skip the certificate search.")
@click.option("--fail-on-certificate", is_flag=True,
              help=f"Exit with status {EXIT_CERTIFICATE} when the report has a verified certificate (an input the "
                   "model must fail on), for CI gating; the report is printed as usual.")
@html_option
@plugin_option
@json_option
def run_command(reduction, model_spec, n, instances, seed, audit, show_transcript, no_certificate, fail_on_certificate,
                html_path, plugins, as_json):
    """Run REDUCTION with a model: bits used against the lower bound, correctness, exactness,
    and (below the bound) the input on which the model must fail.

    \b
    Exit status: 0 the run completed; 2 bad input; 1 an internal error;
    3 with --fail-on-certificate, a verified certificate was found (the model must fail).

    \b
    Examples:
      commsim run index-idxl
      commsim run index-idxl --model memorize:capacity=7 --n 8 --json
      commsim run eq-ineq --model lstm:width=2,precision=8 --n 6 --transcript
      commsim run index-idxl --model python:my_model.py:factory --fail-on-certificate
      commsim run dyck22-fooling --html report.html
    """
    if fail_on_certificate and no_certificate:
        raise InputError("--fail-on-certificate needs the certificate search: drop --no-certificate",
                         "--fail-on-certificate")
    load_plugins(plugins)
    count = parse_instances(instances) if instances is not None else \
        load_plugins().get("reduction", reduction, param="reduction").default_instances
    check_html(html_path)
    with progress_bar(reduction, enabled=not as_json) as update:
        report = run_reduction(reduction, model_spec, n, instances=count, seed=seed, audit=audit,
                               certify=not no_certificate,
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
            console.print(f"report written to {html_path}")
    if fail_on_certificate and report.certificate is not None and report.certificate.verified:
        sys.exit(EXIT_CERTIFICATE)   # not click's Exit: the entry point runs click without standalone mode
