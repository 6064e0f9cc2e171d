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
    """``teach --help`` ends with the registered topics and the --n each accepts.  ``teach check ...`` is
    ``commsim teach check`` (:data:`SUBCOMMANDS`), not a topic."""

    def make_context(self, info_name, args, parent=None, **extra):
        from commsim.cli.teach_check import check_command
        subcommands = {"check": check_command}
        if args and args[0] in subcommands:
            return subcommands[args[0]].make_context(f"{info_name} {args[0]}", list(args[1:]), parent=parent,
                                                     **extra)
        return super().make_context(info_name, args, parent=parent, **extra)

    def format_epilog(self, ctx, formatter):
        super().format_epilog(ctx, formatter)
        try:
            entries = load_plugins().entries("topic")
        except Exception:      # noqa: BLE001 -- a broken plugin must not break --help; `teach --list` reports it
            return
        with formatter.section("Topics (and the --n each accepts)"):
            formatter.write_dl([(e.name, e.description) for e in entries])


FORMATS = ["text", "markdown", "html", "slides"]


def _out_name(ctx, param, value):
    """``--out``: a file name (checked at parse time), or with ``teach course`` a directory, which may end in a
    separator (``lectures/``)."""
    if value is not None and ctx.params.get("topic") == "course":
        if not str(value).strip():
            raise InputError("--out: the directory name is empty; give the directory the course goes to", "--out")
        return value
    return refuse_empty(ctx, param, value)


@cli.command("teach", cls=TeachCommand)
@click.argument("topic", required=False, is_eager=True)   # read before --out, whose name may be a directory
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
@click.option("--out", "out", callback=_out_name, default=None, metavar="FILE",
              help="Write the output to FILE instead of stdout (with --json: the lesson's JSON; stdout then "
                   "prints one object saying where). Its name ends in the format's suffix (.txt or none, .md, .html, "
                   ".json); an existing file is replaced only if commsim wrote it in that format (else --force).")
@click.option("--topics", "topics", default=None, metavar="T1,T2,...",
              help="With `teach course`: write only these topics (kept in the course's order).")
@click.option("--exercises", "exercises", is_flag=True,
              help="Print the topic's exercises (3 to 5, made from the lesson's own objects at --seed) instead of "
                   "the lesson; answers are checked with `commsim teach check ANSWERS.json`. HTML pages have them "
                   "in an Exercises section, solutions folded.")
@click.option("--solutions", "solutions", is_flag=True,
              help="With --exercises: show each exercise's solution; with --out FILE (and with --format html): "
                   "also write them to a separate solutions sheet FILE's-stem-solutions beside FILE, for print.")
@click.option("--seed", "seed", type=click.IntRange(0, 2 ** 32 - 1), default=0, show_default=True,
              help="The seed the exercises are made at (the same seed, the same exercises).")
@force_option
@plugin_option
@json_option
def teach_command(topic, list_topics, n, fmt, out, topics, exercises, solutions, seed, plugins, as_json):
    """Walk through the proof of a lower bound step by step, with a concrete instance.

    Every step states the claim, the instance, what each party holds, the messages with
    their bits, the inequality, and where the paper proves it. Positions are 1-based, as in
    the papers. Measured error rates carry a confidence interval computed with what is
    installed (statsmodels if present, else the standard library and scipy).

    `commsim teach TOPIC --exercises` prints the topic's exercises; `commsim teach check
    ANSWERS.json` checks answers by running commsim (see `commsim teach check --help` for
    the file's format).

    \b
    Examples:
      commsim teach --list
      commsim teach rnn-index
      commsim teach attention-dyck --n 8 --format markdown --out dyck-lecture.md
      commsim teach attention-protocol --format html --out notes.html
      commsim teach attention-dyck --format slides --out deck.html
      commsim teach course --out lectures/
      commsim teach rnn-index --exercises --seed 3
      commsim teach rnn-index --exercises --solutions --format markdown --out ex.md
      commsim teach check answers.json

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
                console.print(f"[bold cyan]{escape(e.name):20}[/] {escape(e.description)}", soft_wrap=True)
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
    if solutions and not exercises and (fmt != "html" or out is None):
        raise InputError("--solutions goes with --exercises, or with --format html --out FILE (the solutions sheet "
                         "is written beside the page)", "--solutions")
    if exercises:
        _exercises(reg, topic, n, seed, fmt, out, solutions, as_json, kind)
        return
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
        from commsim.render.lesson import exercises_page, lesson_page, with_exercises
        ex_set = _exercise_set(reg, topic, n, seed) if topic in reg.names("exercises") else None
        text = lesson_page(lesson, command_line())
        text = with_exercises(text, ex_set) if ex_set is not None else text
        if out is not None:
            sheets = [(_solutions_path(out), exercises_page(ex_set, command_line(), solutions=True))] \
                if solutions and ex_set is not None else []
            write_files(sheets + [(out, text)], option="--out", kind=kind)
            console.print(f"lecture notes (HTML) written to {escape(str(out))}"
                          + (f", solutions to {escape(str(sheets[0][0]))}" if sheets else ""))
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



def _exercise_set(reg, topic, n, seed):
    from commsim.cli.teach_check import exercise_set
    return exercise_set(reg, topic, n, seed)


def _solutions_path(out):
    from pathlib import Path
    target = Path(out)
    return target.with_name(f"{target.stem}-solutions{target.suffix}")


def _exercises(reg, topic, n, seed, fmt, out, solutions, as_json, kind) -> None:
    """``teach TOPIC --exercises``: the exercises in the chosen form; with --solutions and --out, the solutions
    in a separate sheet beside the file (stdout shows them inline)."""
    from commsim.teach.exercises import exercises_markdown, exercises_plain
    ex_set = _exercise_set(reg, topic, n, seed)
    if as_json:
        if out is None:
            emit_json(ex_set.to_dict(solutions))
        else:
            write_text(out, to_json(ex_set.to_dict(solutions)) + "\n", option="--out", kind=kind)
            emit_json({"topic": topic, "written_to": str(out), "format": "json"})
        return

    def render(with_solutions: bool) -> str:
        if fmt == "html":
            from commsim.cli.html import command_line
            from commsim.render.lesson import exercises_page
            return exercises_page(ex_set, command_line(), solutions=with_solutions)
        if fmt == "markdown":
            return f"# Exercises: {ex_set.title}\n\n" + exercises_markdown(ex_set, with_solutions)
        return exercises_plain(ex_set, with_solutions)
    if out is None:
        click.echo(render(solutions), nl=False)
        return
    files = [(_solutions_path(out), render(True))] if solutions else []
    write_files(files + [(out, render(False))], option="--out", kind=kind)
    console.print(f"exercises written to {escape(str(out))}"
                  + (f", solutions to {escape(str(files[0][0]))}" if files else ""))
