"""Lesson content a teacher can use as is: models whose behaviour teaches (transcripts that differ, states
that differ, checked), one indexing convention (1-based), and the figures the pages draw."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from built_lessons import lesson

from commsim.core.jsonable import to_json

OWN = ["rnn-index", "rnn-eq", "rnn-disj", "attention-protocol", "attention-dyck", "attention-disj"]


@pytest.fixture(scope="module")
def built():
    return {t: lesson(t) for t in OWN}


def test_attention_dyck_runs_a_layer_whose_transcripts_differ_with_the_probe_as_contrast(built):
    from protocols.lessons.attention_dyck import DYCK_SPEC, PROBE_SPEC
    steps = {s.title: s for s in built["attention-dyck"].steps}
    sweep = steps["The sweep: two members with the same transcript"]
    distinct = int(re.search(r"Distinct transcripts found: (\d+)", sweep.claim).group(1))
    assert 1 < distinct < 2 ** 7 and DYCK_SPEC in steps["A one-layer model as a protocol on this split"].claim
    contrast = [s for s in built["attention-dyck"].steps if s.title.startswith("Contrast")]
    assert len(contrast) == 1 and PROBE_SPEC in contrast[0].claim and "(1 distinct transcript)" in contrast[0].instance
    crossing = steps["The crossing: the rectangle property forces a wrong answer"]
    assert [f["kind"] for f in crossing.figures] == ["certificate"] and crossing.figures[0]["certificate"]["verified"]


def test_rnn_index_elman_maps_inputs_to_distinct_states_checked_independently(built):
    from protocols.lessons.common import engine
    step = [s for s in built["rnn-index"].steps if "Elman" in s.title][0]
    seed, states = (int(v) for v in re.search(r"seed (\d+):.* to (\d+) distinct states", step.claim).groups())
    n = built["rnn-index"].n
    reduction, problem, model, _ = engine("index-idxl", f"elman:width={max(1, (n - 1) // 2)},precision=2,seed={seed}", n)
    A = problem.alice_inputs()
    encoded = reduction.encode(problem, A, np.zeros(len(A), dtype=np.int64))
    h, _ = model.run(np.asarray(encoded.tokens)[:, :n])
    assert len({str(model.format.encode(row)) for row in np.asarray(h).reshape(len(A), -1)}) == states > 1
    assert step.figures and step.figures[0]["kind"] == "certificate"


def test_positions_are_1_based_everywhere(built):
    for topic, lesson in built.items():
        text = to_json(lesson)
        assert "0-based" not in text, topic
    index = json.loads(to_json(built["rnn-index"]))
    holds = index["steps"][0]["holdings"]["bob"]
    b = int(re.match(r"b = (\d+)", holds).group(1))
    assert 1 <= b <= index["n"] and f"#{b}" in holds          # b names the index token #b


def test_every_lesson_figure_kind_is_drawable(built):
    pytest.importorskip("matplotlib")
    from commsim.render.lesson import lesson_figures
    figs = lesson_figures(built["rnn-index"])
    assert [f.ident.split("-", 1)[1] for _, f in figs].count("certificate") == 2
    assert all(f.svg.startswith("<svg") for _, f in figs)
