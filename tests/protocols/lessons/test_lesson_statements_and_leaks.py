"""Every lesson opens with its formal statement (theorem, source, conventions where the papers differ), and no
lesson text shows commsim's internals: JSON field names, a search's parameters, 0-based heads, a Python list."""
from __future__ import annotations

import json
import re

import pytest
from built_lessons import lesson

from commsim.teach import render_markdown, render_plain
from protocols.lessons import TOPICS
from protocols.lessons.statements import STATEMENTS

#: what a lesson must never say (internals that leaked into lesson text before)
LEAKS = ["paper_max_n", "bound_randomized", "the search's starting k", "default format", "1 distinct transcripts",
         "--json:", "head 0", "(1-based): ["]


@pytest.fixture(scope="module")
def lessons():
    return {t: lesson(t) for t in TOPICS}


def test_every_topic_has_a_statement_with_a_source():
    assert set(STATEMENTS) == set(TOPICS)
    for topic, s in STATEMENTS.items():
        assert s.name and s.text and s.source, topic
        assert re.search(r"\[(BHBK24|SHT23|PNP24)\]|Kushilevitz|Kremer", s.source), topic


@pytest.mark.parametrize("topic", ["rnn-disj", "attention-disj", "fooling-sets", "graph-transformers"])
def test_disj_lessons_say_which_convention(topic):
    conv = STATEMENTS[topic].conventions
    assert "[BHBK24]" in conv and "[SHT23]" in conv and "MEET" in conv and "DISJOINT" in conv


def test_lessons_open_with_the_statement_in_every_form(lessons):
    for topic, lesson in lessons.items():
        assert lesson.statement is STATEMENTS[topic]
        md = render_markdown(lesson)
        assert md.index(f"**{lesson.statement.name}.**") < md.index("## Step 1."), topic
        assert "*Source.*" in md
        plain = render_plain(lesson)
        assert plain.index("  theorem:") < plain.index("Step 1."), topic
        assert lesson.to_dict()["statement"]["source"] == lesson.statement.source


def test_no_internals_in_lesson_text(lessons):
    for topic, lesson in lessons.items():
        text = json.dumps(lesson.to_dict(), ensure_ascii=False)
        for leak in LEAKS:
            assert leak not in text, f"{topic} says {leak!r}"
        for step in lesson.steps:
            assert not re.search(r"\bis \[\d+(, \d+)*\]", step.claim), (topic, step.title)


def test_heads_count_from_1_in_lessons_while_the_transcript_keeps_its_keys(lessons):
    labels = [m[1] for lesson in lessons.values() for step in lesson.steps for m in step.messages]
    assert any("head 1" in lab for lab in labels) and not any("head 0" in lab for lab in labels)
    from protocols.lessons.common import human_label
    assert human_label("query/head 0") == "query/head 1" and human_label("U/head 11 (member 2)") == \
        "U/head 12 (member 2)" and human_label("hidden state") == "hidden state"


def test_dyck_certificate_cells_carry_the_strings_positions(lessons):
    pytest.importorskip("matplotlib")
    from commsim.certify.view import certificate_view
    from commsim.render.exchange import certificate_figure
    entry = next(f for s in lessons["attention-dyck"].steps for f in s.figures if f["kind"] == "certificate")
    cert = entry["certificate"]
    fig = certificate_figure(certificate_view(cert, "dyck22"), cert.get("details"))
    numbers = [t.get_text() for t in fig.axes[0].texts if t.get_text().isdigit() and t.get_fontsize() == 6]
    N = len(cert["details"]["alice_positions"]) * 2
    assert numbers == [str(i) for i in range(1, N, 2)] + [str(i) for i in range(2, N + 1, 2)]
