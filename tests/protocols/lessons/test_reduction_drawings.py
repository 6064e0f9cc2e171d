"""The drawings of the reductions: drawn (commsim.render.figures) from their declared data -- one cell per position
numbered from 1, owners coloured, marks and groups drawn, text escaped, the SVG kept whole by the page sanitizer --
and declared by each lesson from its own instance (the tokens, the partition, the edges it states)."""
from __future__ import annotations

import re

import pytest
from built_lessons import lesson

from commsim.render.figures import MARK, digraph_svg, drawing_svg, tokens_svg
from commsim.render.sanitize import sanitize
from protocols.lessons.drawings import digraph_drawing, sequence_drawing


def _page(svg: str) -> str:
    return f"<!DOCTYPE html><html><head><title>t</title></head><body><figure>{svg}</figure></body></html>"


def test_a_sequence_draws_each_cell_numbered_with_its_owner_and_marks():
    entry = sequence_drawing("t", "c", [2, 1, 4, 9, 0], ["alice", "alice", "bob", "bob", "bob"], marks=[0, 3],
                             mark_label="the triple", groups=[(0, 2, "a = 10", "alice")], arcs=[(0, 4)])
    svg = tokens_svg(entry)
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert all(str(k) in texts for k in range(1, 6))         # positions numbered from 1
    assert svg.count("<rect") == 5 + 3                 # 5 cells, legend: Alice, Bob, the mark
    assert svg.count(f'stroke="{MARK}"') == 2 + 1 + 1     # 2 marked cells, the arc, the legend's swatch
    assert "a = 10" in texts and "the triple" in texts
    assert re.search(r'--min-width: \d+px', svg) and 'viewBox="0 0 ' in svg


def test_long_sequences_wrap_into_rows_and_drop_their_arcs():
    entry = sequence_drawing("t", "c", [f"g(b{k})=c{k}" for k in range(17)], ["alice"] * 8 + ["bob"] * 9,
                             arcs=[(0, 16)])
    svg = tokens_svg(entry)
    width = float(re.search(r'viewBox="0 0 ([0-9.]+)', svg).group(1))
    assert width <= 620 and "<path" not in svg       # several rows, no arc across them
    ys = {float(y) for y in re.findall(r'<rect x="[0-9.]+" y="([0-9.]+)" width="[0-9.]+" height="26"', svg)}
    assert len(ys) >= 3


def test_a_digraph_draws_its_layers_edges_and_marked_cycle():
    entry = digraph_drawing("t", "c", [("U", "alice", ["u1", "u2"]), ("V", "bob", ["v1", "v2"]),
                                       ("W", "public", ["w1", "w2"])],
                            [("u1", "v1"), ("v1", "w1"), ("w1", "u1"), ("w2", "u2")], marks=["u1", "v1", "w1"])
    svg = digraph_svg(entry)
    assert svg.count("<circle") == 6 and svg.count("<polygon") == 4          # one arrowhead per edge
    assert svg.count('stroke-dasharray="4 3"') == 1                         # the public edge not on the cycle
    assert len(re.findall(rf'<circle[^>]*stroke="{MARK}"', svg)) == 3


def test_text_is_escaped_and_the_sanitizer_keeps_the_drawing_whole():
    svg = drawing_svg(sequence_drawing("<b>", "c", ["<script>x</script>", "&"], ["alice", "bob"]))
    assert "<script" not in svg and "&lt;script&gt;" in svg
    clean = sanitize(_page(svg))
    for element in ("rect", "text", "svg"):
        assert clean.count(f"<{element}") == svg.count(f"<{element}"), element
    assert "--min-width" in clean


def test_a_drawing_refuses_data_that_does_not_fit():
    with pytest.raises(ValueError, match="owners"):
        sequence_drawing("t", "c", [1, 2], ["alice"])
    with pytest.raises(ValueError, match="no layer"):
        digraph_drawing("t", "c", [("U", "alice", ["u1"])], [("u1", "x9")])


LESSONS = {}


def _lesson(topic: str):
    from protocols.lessons import TOPICS
    if topic not in LESSONS:
        LESSONS[topic] = lesson(topic, TOPICS[topic].minimum)
    return LESSONS[topic]


def _drawings(topic: str) -> list[tuple[int, dict]]:
    return [(i, f) for i, s in enumerate(_lesson(topic).steps, 1) for f in s.figures
            if f["kind"] in ("tokens", "digraph")]


def _line(step, prefix: str) -> str:
    return next(line for line in step.instance.splitlines() if line.startswith(prefix))


def _match3(lesson, step, fig):
    assert [c["text"] for c in fig["cells"]] == _line(step, "z = ")[4:].split()
    assert len(fig["marks"]) == 3 and fig["cells"][fig["marks"][-1]]["text"] == "0"     # the triple through z_N


def _mqar(lesson, step, fig):
    tokens = _line(step, "model input").split(": ", 1)[1].split()
    assert [c["text"] for c in fig["cells"]] == tokens
    n = len(tokens) // 3
    assert [c["owner"] for c in fig["cells"]] == ["alice"] * (2 * n) + ["bob"] * n


def _odd_even(lesson, step, fig):
    member = "".join(c["text"] for c in fig["cells"])
    assert f"for {member}: Alice holds {member[0::2]}, Bob holds {member[1::2]}" in step.instance
    assert {c["owner"] for c in fig["cells"][0::2]} == {"alice"} and {c["owner"] for c in fig["cells"][1::2]} == {"bob"}


def _compose(lesson, step, fig):
    assert " ".join(c["text"] for c in fig["cells"]) == step.instance.splitlines()[0]
    x = int(re.search(r"x = (\d+)", step.instance).group(1))
    assert fig["cells"][-1]["text"] == f"a{x}?" and len(fig["marks"]) == 3


def _three_cycle(lesson, step, fig):
    stated = _line(step, "edges: ")[len("edges: "):].split(", ")
    assert sorted(f"{a}→{b}" for a, b in fig["edges"]) == sorted(stated)
    on_cycle = _line(step, "nodes on a directed 3-cycle: ").split(": ")[1].split(", ")
    assert sorted(fig["marks"]) == sorted(on_cycle)
    assert [layer["owner"] for layer in fig["layers"]] == ["alice", "bob", "public"]


def _two_layers(lesson, step, fig):
    left, right = _line(step, "x = ")[4:].split(" | ")
    assert "".join(c["text"] for c in fig["cells"]) == left + right
    assert fig["arcs"] == [[i, len(left) + i] for i in range(len(left))]
    assert fig["marks"] and all(m >= len(left) for m in fig["marks"])             # Bob's outputs that moved


CHECKS = {"attention-disj": _match3, "rnn-disj": _mqar, "attention-dyck": _odd_even, "compose": _compose,
          "graph-transformers": _three_cycle, "two-layers": _two_layers}


@pytest.mark.parametrize("topic", list(CHECKS))
def test_each_reduction_lesson_draws_its_reduction_from_its_instance(topic):
    lesson = _lesson(topic)
    (step_no, fig), = _drawings(topic)
    CHECKS[topic](lesson, lesson.steps[step_no - 1], fig)
    svg = drawing_svg(fig)
    assert svg.startswith("<svg") and svg.count("<text") >= len(fig.get("cells", fig.get("edges", [])))
