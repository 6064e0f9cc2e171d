"""``commsim teach``: narrated lower-bound proofs with real numbers."""
from __future__ import annotations

import click
from rich.markup import escape

from commsim.cli import cli
from commsim.cli.common import console, emit_json, json_option, plugin_option
from commsim.cli.files import check_target, force_option, refuse_empty, write_files, write_text
from commsim.core.errors import InputError
from commsim.core.jsonable import to_json
from commsim.plugins import load_plugins
from commsim.teach import render_plain, render_text


class TeachCommand(click.Command):
    """``teach --help`` ends with the registered topics and the --n each accepts."""

    def format_epilog(self, ctx, formatter):
        super().format_epilog(ctx, formatter)
        try:
            entries = load_plugins().entries("topic")
        except Exception:      # noqa: BLE001 -- a broken plugin must not break --help; `teach --list` reports it
            return
        with formatter.section("Topics (and the --n each accepts)"):
            formatter.write_dl([(e.name, e.description) for e in entries])


FORMATS = ["text", "markdown", "html", "slides"]


@cli.command("teach", cls=TeachCommand)
@click.argument("topic", required=False)
@click.option("--list", "list_topics", is_flag=True, help="List the topics.")
@click.option("--n", "n", type=int, default=None,
              help="Instance size: n (a party's input) for some topics, N (the sequence length) for others; "
                   "what it is, its range and its small default are listed per topic below.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="Terminal text; Markdown lecture notes with LaTeX math, mermaid diagrams and (with --out) SVG "
                   "figures written beside the .md; one self-contained HTML page (MathML, inline SVG figures); or "
                   "slides: one self-contained HTML deck, a step a slide (arrows, Space, PageUp/PageDown or a swipe "
                   "turn the page, n shows the speaker notes, printed a slide a page). "
                   "Not with --json (the lesson's JSON has one form).")
@click.option("--out", "out", callback=refuse_empty, default=None, metavar="FILE",
              help="Write the output to FILE instead of stdout (with --json: the lesson's JSON; stdout then "
                   "prints one object saying where). Its name ends in the format's suffix (.txt or none, .md, .html, "
                   ".json); an existing file is replaced only if commsim wrote it in that format (else --force).")
@click.option("--topics", "topics", default=None, metavar="T1,T2,...",
              help="With `teach course`: write only these topics (kept in the course's order).")
@force_option
@plugin_option
@json_option
def teach_command(topic, list_topics, n, fmt, out, topics, plugins, as_json):
    """Walk through the proof of a lower bound step by step, with a concrete instance.

    Every step states the claim, the instance, what each party holds, the messages with
    their bits, the inequality, and where the paper proves it. Positions are 1-based, as in
    the papers.

    \b
    Examples:
      commsim teach --list
      commsim teach rnn-index
      commsim teach attention-dyck --n 8 --format markdown --out dyck-lecture.md
      commsim teach attention-protocol --format html --out notes.html
      commsim teach attention-dyck --format slides --out deck.html
      commsim teach course --out lectures/

    `teach course --out DIR` writes the lessons in teaching order as HTML pages
    (01-fooling-sets.html, ...), a handout (order, time, prerequisites) and one
    reference list.
    """
    from commsim.cli.teach_course import COURSE, course_command, write_slides
    reg = load_plugins(plugins)
    if topics is not None and topic != COURSE:
        raise InputError("--topics goes with `teach course` (a topic is given as TOPIC)", "--topics")
    if topic == COURSE and not list_topics:
        course_command(reg, out, topics, as_json, n, fmt)
        return
    if not list_topics and not topic and as_json:
        raise InputError("give a TOPIC (see `commsim teach --list`)", "topic")   # one JSON object: the error
    if list_topics or not topic:
        entries = reg.entries("topic")
        if as_json:
            emit_json({"topics": [{"name": e.name, "description": e.description} for e in entries]})
        else:
            for e in entries:
                console.print(f"[bold cyan]{e.name:20}[/] {e.description}", soft_wrap=True)
        if not list_topics and not topic:
            raise InputError("give a TOPIC (see `commsim teach --list`)", "topic")
        return
    if as_json and fmt != "text":
        raise InputError(f"--format {fmt} does not combine with --json (the lesson's JSON has one form); drop one "
                         "of them", "--format")
    if n is not None and n < 1:
        raise InputError(f"--n must be at least 1, got {n}", "--n")
    build = reg.get("topic", topic, param="topic")
    kind = "json" if as_json else "html" if fmt == "slides" else fmt    # the kind of file --out gets
    if out is not None:
        check_target(out, "--out", kind)    # before the lesson is built: a bad --out fails fast
    if fmt in ("html", "slides"):
        from commsim.render import require
        require(f"--format {fmt}")
    lesson = build(n)
    if fmt == "slides":
        write_slides(lesson, out, kind)
        return
    if as_json:
        if out is None:
            emit_json(lesson)
        else:                               # the lesson goes to the file; stdout says where (one object)
            write_text(out, to_json(lesson) + "\n", option="--out", kind=kind)
            emit_json({"topic": topic, "written_to": str(out), "format": "json"})
        return
    if fmt == "html":
        from commsim.cli.html import command_line
        from commsim.render.lesson import lesson_page
        text = lesson_page(lesson, command_line())
        if out is not None:
            write_text(out, text, option="--out", kind=kind)
            console.print(f"lecture notes (HTML) written to {escape(str(out))}")
        else:
            click.echo(text, nl=False)
        return
    if fmt == "markdown":
        from commsim.render.lesson import lesson_markdown, svg_document
        text, files = lesson_markdown(lesson, out) if out is not None and _can_draw() else \
            lesson_markdown(lesson, None)
        if out is not None:                 # the notes and their figures, all or nothing (every target checked first)
            write_files([(path, svg_document(svg)) for path, svg in files] + [(out, text)], option="--out",
                        kind=kind)
            console.print(f"lecture notes written to {escape(str(out))}" + (f" with {len(files)} figure(s) beside it"
                                                               if files else ""))
        else:
            click.echo(text, nl=False)
        return
    if out is not None:
        write_text(out, render_plain(lesson), option="--out", kind=kind)
        console.print(f"walkthrough written to {escape(str(out))}")
    elif console.is_terminal:
        render_text(lesson, console)
    else:                                   # piped: plain lines, never wrapped mid-row
        click.echo(render_plain(lesson), nl=False)


def _can_draw() -> bool:
    import importlib.util
    return importlib.util.find_spec("matplotlib") is not None

