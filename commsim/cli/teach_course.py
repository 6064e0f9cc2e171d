"""``commsim teach course --out DIR`` and ``commsim teach TOPIC --format slides``: a course's lessons as pages in
teaching order with a handout and one reference list, and a lesson as a slide deck."""
from __future__ import annotations

import os
from pathlib import Path

import click
from rich.markup import escape

from commsim.cli.common import console, emit_json
from commsim.cli.files import check_target, write_files, write_text
from commsim.core.errors import InputError

#: the words ``teach`` reads as a command instead of a topic
COURSE = "course"


def write_slides(lesson, out, kind: str) -> None:
    """The lesson as a deck: to ``out`` (an HTML file), or to stdout."""
    from commsim.cli.html import command_line
    from commsim.render.slides import lesson_slides
    text = lesson_slides(lesson, command_line())
    if out is None:
        click.echo(text, nl=False)
        return
    write_text(out, text, option="--out", kind=kind)
    console.print(f"slides ({len(lesson.steps) + 1}) written to {escape(str(out))}")


def _course(reg):
    entries = reg.entries("course")
    if not entries:
        raise InputError("no course is registered (a plugin registers one under the 'course' kind)", "topic")
    return entries[0].obj


def _plan(course, registered: list[str], topics: str | None):
    """The lessons to write, in the course's order (then the registered topics the course leaves out), or the
    ones ``--topics`` names, kept in that order."""
    from commsim.teach.course import CourseLesson
    order = list(course.lessons) + [CourseLesson(t, 0) for t in registered
                                    if t not in {c.topic for c in course.lessons}]
    order = [c for c in order if c.topic in registered]
    if topics is None:
        return order
    wanted = [t.strip() for t in topics.split(",") if t.strip()]
    unknown = [t for t in wanted if t not in registered]
    if not wanted or unknown:
        raise InputError(f"--topics: {'unknown topic ' + repr(unknown[0]) if unknown else 'no topic given'}; "
                         f"known: {', '.join(registered)}", "--topics")
    return [c for c in order if c.topic in wanted]


def course_command(reg, out, topics, as_json, n=None, fmt="text") -> None:
    """Write the course into the directory ``out``: ``NN-TOPIC.html`` per lesson, ``handout.html`` and
    ``references.html``; all of them or none.  Each lesson at its own default size (``--n`` is per topic)."""
    from commsim.cli.html import command_line
    from commsim.render import require
    from commsim.render.lesson import lesson_page
    from commsim.render.page import page
    from commsim.teach.course import cited, handout_markdown, references_markdown
    if n is not None:
        raise InputError("--n is per topic; teach course writes each lesson at its default size", "--n")
    if fmt not in ("text", "html"):
        raise InputError(f"--format {fmt}: teach course writes HTML pages (give no --format)", "--format")
    if out is None:
        raise InputError("teach course writes a directory of pages: give --out DIR", "--out")
    require("teach course")
    directory = Path(out)
    if directory.exists() and not directory.is_dir():
        raise InputError(f"--out: {str(out)!r} is not a directory", "--out")
    if not directory.parent.is_dir():
        raise InputError(f"--out: directory {str(directory.parent)!r} does not exist", "--out")
    course = _course(reg)
    plan = _plan(course, reg.names("topic"), topics)
    files, rows, texts = [], [], []
    for k, lesson_entry in enumerate(plan, 1):
        lesson = reg.get("topic", lesson_entry.topic)(None)
        name = f"{k:02d}-{lesson_entry.topic}.html"
        files.append((directory / name, lesson_page(lesson, command_line())))
        rows.append((lesson_entry, lesson.title, name))
        texts += [lesson.summary] + [s.claim + " " + s.reference for s in lesson.steps]
    keys = cited(texts)
    command = command_line()
    files.append((directory / "references.html", page(f"{course.title}: references",
                                                       references_markdown(course, keys), [], command,
                                                       figure_list=False)))
    files.append((directory / "handout.html", page(f"{course.title}: handout", handout_markdown(course, rows),
                                                   [], command, figure_list=False)))
    if not directory.exists():
        try:
            os.mkdir(directory)
        except OSError as exc:
            raise InputError(f"--out: cannot make directory {str(out)!r}: {exc.strerror}", "--out") from None
    for path, _ in files:
        check_target(path, "--out", "html")
    write_files(files, option="--out", kind="html")
    if as_json:
        emit_json({"course": course.title, "written_to": str(directory), "files": [str(p.name) for p, _ in files],
                   "order": [c.topic for c, _, _ in rows], "references": keys})
    else:
        console.print(f"{len(rows)} lessons, a handout and a reference list written to {escape(str(directory))}")
