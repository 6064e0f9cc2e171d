"""``commsim teach course --out DIR``: the lessons in teaching order as pages, a handout (order, time,
prerequisites) and one reference list; ``teach TOPIC --format slides`` writes a deck; bad input exits 2."""
from __future__ import annotations

import re

import pytest
from cli_helpers import invoke, run_main

pytest.importorskip("latex2mathml", reason="teach course needs the html extra: pip install 'commsim[html]'")


def _text(path) -> str:
    """A page's visible text, roughly (tags removed)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8")))


def test_course_writes_pages_in_teaching_order_a_handout_and_references(tmp_path):
    out = tmp_path / "lectures"
    said = invoke("teach", "course", "--out", str(out), "--topics", "rnn-index,fooling-sets", "--json")
    assert said["order"] == ["fooling-sets", "rnn-index"]                      # the course's order, not the flag's
    assert said["files"] == ["01-fooling-sets.html", "02-rnn-index.html", "references.html", "handout.html"]
    assert sorted(p.name for p in out.iterdir()) == sorted(said["files"])
    handout = _text(out / "handout.html")
    assert handout.index("01-fooling-sets.html") < handout.index("02-rnn-index.html")
    assert "15 min" in handout and "Session 1: 30 min in all." in handout
    row = handout[handout.index("02-rnn-index.html") - 300:handout.index("02-rnn-index.html")]
    assert "fooling-sets" in row                                                # rnn-index builds on fooling sets
    refs = _text(out / "references.html")
    assert said["references"] == ["BHBK24"] and "[BHBK24] S. Bhattamishra" in refs
    assert "<math" in (out / "02-rnn-index.html").read_text(encoding="utf-8")
    assert "Figures" not in handout and "Figures" not in refs


def test_the_course_plan_covers_every_topic_after_the_first_class():
    from commsim.plugins import load_plugins
    course = load_plugins().get("course", "lectures")
    order = [c.topic for c in course.lessons]
    assert order[:5] == ["fooling-sets", "rnn-index", "attention-protocol", "attention-dyck", "two-layers"]
    assert sorted(order) == sorted(load_plugins().names("topic"))
    assert sum(c.minutes for c in course.lessons if course.sessions[c.topic] == 1) <= 90


def test_a_course_lists_a_prerequisite_before_the_lesson_that_needs_it():
    from commsim.teach.course import Course, CourseLesson
    with pytest.raises(ValueError, match="builds on"):
        Course("c", [CourseLesson("b", 10, ("a",)), CourseLesson("a", 10)])


@pytest.mark.parametrize("args, param", [
    (["teach", "course"], "--out"),
    (["teach", "course", "--out", "D", "--n", "4"], "--n"),
    (["teach", "course", "--out", "D", "--format", "slides"], "--format"),
    (["teach", "course", "--out", "D", "--topics", "nope"], "--topics"),
    (["teach", "rnn-index", "--topics", "rnn-index"], "--topics"),
    (["teach", "rnn-index", "--format", "slides", "--out", "deck.md"], "--out"),
])
def test_bad_course_and_slides_arguments_exit_2_naming_the_argument(capsys, tmp_path, monkeypatch, args, param):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_main(capsys, *args)
    assert code == 2 and param in err and len(err.strip().splitlines()) == 1, err


def test_slides_go_to_an_html_file(tmp_path):
    deck = tmp_path / "deck.html"
    invoke("teach", "fooling-sets", "--n", "2", "--format", "slides", "--out", str(deck))
    text = deck.read_text(encoding="utf-8")
    assert text.count('<section class="slide"') >= 4 and text.count("<script") == 1


def test_the_course_directory_may_end_in_a_separator_a_lessons_file_may_not(tmp_path, capsys):
    """`teach course --out lectures/` (as the tour writes it) names a directory; `teach TOPIC --out x/` is refused."""
    said = invoke("teach", "course", "--out", f"{tmp_path / 'lectures'}/", "--topics", "fooling-sets", "--json")
    assert said["files"][0] == "01-fooling-sets.html" and (tmp_path / "lectures" / "01-fooling-sets.html").exists()
    code, _, err = run_main(capsys, "teach", "fooling-sets", "--out", f"{tmp_path / 'x'}/")
    assert code == 2 and "ends in a path separator" in err
