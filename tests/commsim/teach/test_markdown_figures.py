"""Markdown notes: a mermaid sequence diagram per step with messages, figure lines where they belong, the
plain form for pipes and files never wraps a row."""
from __future__ import annotations

from commsim.teach import Lesson, Step, mermaid_sequence, render_markdown, render_plain

MSGS = [("bob", "query/head 0", "01"), ("alice", "max; #1", "0101"), ("alice", "U", "1" * 90)]
LESSON = Lesson("t", "Title", "summary", [Step("one", "claim", messages=MSGS, inequality=r"a \ge b"),
                                          Step("two", "claim two")])


def test_mermaid_block_has_one_arrow_per_message_and_rounds():
    lines = mermaid_sequence(MSGS)
    assert lines[0] == "```mermaid" and lines[1] == "sequenceDiagram" and lines[-1] == "```"
    arrows = [line for line in lines if "->>" in line]
    assert arrows == ["    B->>A: query/head 0 (2 bits)", "    A->>B: max, no. 1 (4 bits)", "    A->>B: U (90 bits)"]
    assert [line.strip() for line in lines if "Note" in line] == ["Note over A,B: round 1", "Note over A,B: round 2"]


def test_markdown_places_figure_lines_and_lists_them():
    text = render_markdown(LESSON, {1: ["![Step 1](notes-fig1-sequence.svg)"]},
                           figure_list=["1. [Step 1](notes-fig1-sequence.svg)"])
    assert text.index("**Figures.**") < text.index("## Step 1")
    step1 = text[text.index("## Step 1"):text.index("## Step 2")]
    assert "```mermaid" in step1 and "![Step 1](notes-fig1-sequence.svg)" in step1
    assert "```mermaid" not in text[text.index("## Step 2"):]
    assert "```mermaid" not in render_markdown(LESSON, mermaid=False)


def test_plain_text_keeps_each_message_on_one_line():
    text = render_plain(LESSON)
    assert any(line.startswith("  message:") and "1" * 64 in line and len(line) > 80 for line in text.splitlines())
    assert "so:       a ≥ b" in text


def test_runs_side_by_side_get_their_own_rounds():
    msgs = [("bob", "q (member 2)", "01"), ("alice", "U (member 2)", "1"), ("bob", "q (member 6)", "01")]
    lines = [line.strip() for line in mermaid_sequence(msgs) if "Note" in line]
    assert lines == ["Note over A,B: member 2", "Note over A,B: round 1", "Note over A,B: round 2",
                     "Note over A,B: member 6", "Note over A,B: round 1"]
