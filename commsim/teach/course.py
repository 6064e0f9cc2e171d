"""A course: lessons in teaching order, with the time each takes and what it builds on, and the references they cite.

A plugin registers one under the ``course`` registry kind; ``commsim teach course`` writes its lessons, a handout
(:func:`handout_markdown`) and one reference list (:func:`references_markdown`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Course", "CourseLesson", "cited", "handout_markdown", "references_markdown"]

#: a citation key as the lessons write it: [BHBK24], [SHT23]
CITATION = re.compile(r"\[([A-Z][A-Za-z]*\d{2}[a-z]?)\]")


@dataclass(frozen=True)
class CourseLesson:
    """One lesson of a course: its topic, the minutes it takes in class, the topics it builds on, its point."""

    topic: str
    minutes: int
    prerequisites: tuple[str, ...] = ()
    point: str = ""


@dataclass
class Course:
    """Lessons in teaching order (``session`` numbers the class each is taught in) and the references by key."""

    title: str
    lessons: list[CourseLesson]
    references: dict[str, str] = field(default_factory=dict)
    sessions: dict[str, int] = field(default_factory=dict)     # topic -> session number (default 1)

    def __post_init__(self):
        seen: set[str] = set()
        for lesson in self.lessons:
            if lesson.topic in seen:
                raise ValueError(f"topic {lesson.topic!r} is twice in the course")
            missing = [p for p in lesson.prerequisites if p not in seen]
            if missing:
                raise ValueError(f"{lesson.topic} builds on {', '.join(missing)}, taught after it (or not at all)")
            seen.add(lesson.topic)


def cited(texts) -> list[str]:
    """The citation keys in ``texts``, in order of first appearance."""
    keys: dict[str, None] = {}
    for text in texts:
        for key in CITATION.findall(text):
            keys.setdefault(key, None)
    return list(keys)


def _minutes(total: int) -> str:
    return f"{total // 60} h {total % 60:02d} min" if total >= 60 else f"{total} min"


def handout_markdown(course: Course, rows: list[tuple[CourseLesson, str, str]]) -> str:
    """The handout: per lesson (``rows``: the lesson, its title, the file written) its place, time,
    prerequisites and point, grouped by session, with each session's total time."""
    out = [f"# {course.title}: handout", "",
           "The lessons in teaching order. Each is a self-contained page (math as MathML, figures inline); the "
           "numbers in them are computed by commsim when the page is written.", ""]
    session, total = None, 0
    for k, (lesson, title, file) in enumerate(rows, 1):
        s = course.sessions.get(lesson.topic, 1)
        if s != session:
            if session is not None:
                out += ["", f"Session {session}: {_minutes(total)} in all.", ""]
            session, total = s, 0
            out += [f"## Session {s}", "", "| # | lesson | time | builds on | file |", "|---|---|---|---|---|"]
        total += lesson.minutes
        needs = ", ".join(lesson.prerequisites) or "—"
        out.append(f"| {k} | **{title}** ({lesson.topic}){' — ' + lesson.point if lesson.point else ''} | "
                   f"{lesson.minutes} min | {needs} | {file} |")
    if session is not None:
        out += ["", f"Session {session}: {_minutes(total)} in all.", ""]
    return "\n".join(out).rstrip() + "\n"


def references_markdown(course: Course, keys: list[str]) -> str:
    """One reference list for the course: every key the lessons cite, with its entry."""
    out = [f"# {course.title}: references", ""]
    for key in keys:
        out.append(f"- **[{key}]** {course.references.get(key, '(no entry given by the course)')}")
    return "\n".join(out) + "\n"
