"""``commsim teach``: narrated lower-bound proofs with real numbers."""
from __future__ import annotations

import io

import click

from commsim.cli import cli
from commsim.cli.common import console, emit_json, json_option, plugin_option
from commsim.cli.files import check_target, refuse_empty, write_text
from commsim.core.errors import InputError
from commsim.core.jsonable import to_json
from commsim.plugins import load_plugins
from commsim.teach import render_markdown, render_text


@cli.command("teach")
@click.argument("topic", required=False)
@click.option("--list", "list_topics", is_flag=True, help="List the topics.")
@click.option("--n", "n", type=int, default=None, help="Instance size (each topic has a small default).")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown"]), default="text", show_default=True,
              help="Terminal text, or Markdown lecture notes with LaTeX math.")
@click.option("--out", "out", callback=refuse_empty, default=None, metavar="FILE",
              help="Write the output to FILE instead of stdout (with --json: the lesson's JSON; stdout then "
                   "prints one object saying where).")
@plugin_option
@json_option
def teach_command(topic, list_topics, n, fmt, out, plugins, as_json):
    """Walk through the proof of a lower bound step by step, with a concrete instance.

    Every step states the claim, the instance, what each party holds, the messages with
    their bits, the inequality, and where the paper proves it.

    \b
    Examples:
      commsim teach --list
      commsim teach rnn-index
      commsim teach attention-dyck --n 8 --format markdown --out dyck-lecture.md
    """
    reg = load_plugins(plugins)
    if not list_topics and not topic and as_json:
        raise InputError("give a TOPIC (see `commsim teach --list`)", "topic")   # one JSON object: the error
    if list_topics or not topic:
        entries = reg.entries("topic")
        if as_json:
            emit_json({"topics": [{"name": e.name, "description": e.description} for e in entries]})
        else:
            for e in entries:
                console.print(f"[bold cyan]{e.name:20}[/] {e.description}")
        if not list_topics and not topic:
            raise InputError("give a TOPIC (see `commsim teach --list`)", "topic")
        return
    if n is not None and n < 1:
        raise InputError(f"--n must be at least 1, got {n}", "--n")
    if out is not None:
        check_target(out, "--out")          # before the lesson is built: a bad --out fails fast
    lesson = reg.get("topic", topic, param="topic")(n)
    if as_json:
        if out is None:
            emit_json(lesson)
        else:                               # the lesson goes to the file; stdout says where (one object)
            write_text(out, to_json(lesson) + "\n", option="--out")
            emit_json({"topic": topic, "written_to": str(out), "format": "json"})
        return
    if fmt == "markdown":
        text = render_markdown(lesson)
        if out is not None:
            write_text(out, text, option="--out")
            console.print(f"lecture notes written to {out}")
        else:
            click.echo(text, nl=False)
        return
    if out is not None:
        from rich.console import Console
        buffer = io.StringIO()
        render_text(lesson, Console(file=buffer, width=100, highlight=False))
        write_text(out, buffer.getvalue(), option="--out")
        console.print(f"walkthrough written to {out}")
    else:
        render_text(lesson, console)
