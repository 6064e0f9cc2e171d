"""The figures are drawn from engine data: every message, bit count, decisive position, fooling-set cell,
tree leaf and DFA state the data has shows up in the SVG (text stays text, so it can be read back)."""
from __future__ import annotations

import re
from html import unescape

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("matplotlib")

from commsim.certify.view import certificate_view  # noqa: E402
from commsim.render.exchange import certificate_figure, sequence_figure  # noqa: E402
from commsim.render.plots import dfa_figure, matrix_figure, tree_figure  # noqa: E402
from commsim.render.svg import HIGHLIGHT, to_svg  # noqa: E402
from commsim.teach.exchange import exchange_rows  # noqa: E402


def texts(svg: str) -> list[str]:
    """The <text> strings of an SVG, in order."""
    return [unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


messages = st.lists(st.tuples(st.sampled_from(["alice", "bob"]),
                              st.sampled_from(["query/head 0", "max/head 1", "Z", "hidden state", "U/head 0"]),
                              st.text("01", min_size=1, max_size=70)), min_size=1, max_size=8)


@settings(max_examples=15, deadline=None)
@given(messages)
def test_sequence_diagram_has_one_labelled_arrow_per_message(msgs):
    svg = to_svg(sequence_figure(msgs))
    shown = texts(svg)
    for sender, label, bits in msgs:
        size = f"{len(bits)} bit{'s' if len(bits) != 1 else ''}"
        assert f"{label} — {size}" in shown
        assert (bits if len(bits) <= 40 else bits[:40] + "…") in shown
    rounds = exchange_rows(msgs)[-1].round
    assert [t for t in shown if t.startswith("round ")] == [f"round {r}" for r in range(1, rounds + 1)]
    a2b = sum(len(b) for s, _, b in msgs if s == "alice")
    b2a = sum(len(b) for s, _, b in msgs if s == "bob")
    assert f"total {a2b + b2a} bits: Alice→Bob {a2b}, Bob→Alice {b2a}, {rounds} round(s)" in shown
    assert svg.startswith("<svg") and " width=" not in svg[:svg.index(">")]     # scales with the page


@settings(max_examples=15, deadline=None)
@given(messages)
def test_the_three_layouts_of_an_exchange_draw_the_same_rows(msgs):
    """The lesson's text and mermaid block, the command line's diagram and the SVG figure all lay out
    exchange_rows: the same messages, sizes and rounds."""
    from commsim.cli.common import sequence_lines
    from commsim.core.channel import Transcript
    from commsim.teach import Step, message_line, mermaid_sequence
    rows = exchange_rows(msgs)
    svg = texts(to_svg(sequence_figure(msgs)))
    mermaid = "\n".join(mermaid_sequence(msgs))
    lines = [message_line(r) for r in exchange_rows(Step("t", "c", messages=msgs).messages)]
    for row, line in zip(rows, lines):
        assert line.startswith(f"{row.arrow}: {row.label} ({row.size()})")       # "k bits", "1 bit"
        assert f"{row.label} — {row.size()}" in svg
        assert f"{row.label} ({row.size()})" in mermaid
    assert mermaid.count("Note over A,B: round") == len({r.round for r in rows})
    from commsim.core.bits import Bits
    transcript = Transcript.build((r.sender, r.label, Bits.from_str(r.bits)) for r in rows)
    text = "\n".join(sequence_lines(transcript))
    assert all(f"{r.label}, {r.count} bits" in text for r in rows)
    assert text.count("  round ") == len({r.round for r in rows})          # one tag per round


def test_sequence_diagram_groups_heads_by_colour():
    msgs = [("bob", "query/head 0", "01"), ("bob", "query/head 1", "10"), ("alice", "Z/head 0", "0011"),
            ("alice", "Z/head 1", "0101")]
    shown = texts(to_svg(sequence_figure(msgs)))
    assert "■ head 0" in shown and "■ head 1" in shown


def _rectangle_certificate():
    return {"kind": "rectangle", "alice_input": [0, 1, 1, 1], "bob_input": [0, 0, 1, 1], "expected": 0,
            "model_output": 1, "verified": True, "explanation": "crossing",
            "details": {"member_1": {"index": 0, "alice": [0, 1, 1, 1], "bob": [0, 0, 0, 1]},
                        "member_2": {"index": 1, "alice": [0, 1, 1, 0], "bob": [0, 0, 1, 1]},
                        "transcript_bits": 16, "transcript_digest": "15eb1887b89e13db", "transcripts_equal": True}}


def test_certificate_figure_highlights_exactly_the_decisive_positions():
    cert = _rectangle_certificate()
    view = certificate_view(cert, "dyck22")
    svg = to_svg(certificate_figure(view, cert["details"]))
    shown = texts(svg)
    assert "member 1" in shown and "member 2" in shown and "crossing" in shown
    assert any("shared transcript: 16 bits" in t for t in shown)
    # one highlighted cell per row and per marked position (Alice's and Bob's marks)
    marks = len(view.alice_marks) + len(view.bob_marks)
    assert marks == 2
    assert svg.lower().count(f"fill: {HIGHLIGHT.lower()}") == marks * len(view.rows)


def test_certificate_figure_shows_a_collision_with_bobs_index_as_a_1_based_position():
    cert = {"kind": "collision", "alice_input": [0, 0, 0, 0, 0, 1], "bob_input": 5, "expected": 1,
            "model_output": 0, "verified": True, "explanation": "",
            "details": {"colliding_alice_input": [0, 0, 0, 0, 0, 0], "message_bits": 5, "message": "00000"}}
    shown = texts(to_svg(certificate_figure(certificate_view(cert, "index"), cert["details"])))
    assert "position 6" in shown and any("shared message: 5 bits = 00000" in t for t in shown)
    assert certificate_view(cert, "index").alice_marks == [5]          # Alice's bit at position 6 decides
    assert any("highlighted: the decisive positions" in t for t in shown)


def test_certificate_figure_says_highlighted_only_when_something_is():
    cert = {"kind": "error", "alice_input": [1, 0, 1], "bob_input": [1, 0, 1], "expected": 1, "model_output": 0,
            "verified": True, "explanation": "", "details": {}}
    view = certificate_view(cert, "eq")
    assert not view.alice_marks
    svg = to_svg(certificate_figure(view, {}))
    assert not any("highlighted" in t for t in texts(svg))
    assert HIGHLIGHT.lower() not in svg.lower()


def test_matrix_heatmap_outlines_each_fooling_cell():
    from commsim.render.svg import BOB
    from commsim.theory.comm_matrix import analyze_matrix
    report = analyze_matrix("eq", 3)
    svg = to_svg(matrix_figure(report))
    assert report.fooling.size == 8
    assert svg.lower().count(f"stroke: {BOB.lower()}") == report.fooling.size
    shown = texts(svg)
    assert "000" in shown and "111" in shown


def test_protocol_tree_colours_leaves_by_output():
    import networkx as nx
    from commsim.plugins import load_plugins
    from commsim.theory.protocol_tree import build_protocol_tree
    tree = build_protocol_tree("index", 3, load_plugins().get("cc-protocol", "two-way"))
    svg = to_svg(tree_figure(tree))
    shown = texts(svg)
    assert "output 0" in shown and "output 1" in shown
    bits = {d["bits"] for _, _, d in tree.graph.edges(data=True) if d["kind"] == "message"}
    assert bits <= set(shown)
    assert isinstance(tree.graph, nx.DiGraph)


def test_dfa_drawing_names_every_state_and_the_sink():
    from commsim.theory.automaton import automaton_report
    dfa = automaton_report("dyck22", 8).dfa
    shown = texts(to_svg(dfa_figure(dfa)))
    for q in range(dfa.num_states):
        assert dfa.name(q) in shown
    assert "start" in shown
    assert any(f"{dfa.num_states} states" in t for t in shown)


def test_too_large_objects_are_not_drawn():
    from commsim.theory.comm_matrix import analyze_matrix
    assert matrix_figure(analyze_matrix("eq", 7)) is None


def test_budget_figure_marks_the_crossing():
    from commsim.budget.compute import budget
    from commsim.render.plots import budget_figure
    report = budget("rnn", 4, 8, "index-idxl", n_range=[8, 16, 32, 64])
    shown = texts(to_svg(budget_figure(report)))
    assert f"max N = {report.max_n}" in shown
    assert np.isfinite(report.max_n)
