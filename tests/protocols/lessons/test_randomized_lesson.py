"""``commsim teach randomized`` and the fooling-sets lesson's step on randomness: built from engine calls."""
from __future__ import annotations

import pytest
from built_lessons import lesson as built_lesson

from commsim.core.errors import InputError
from commsim.plugins import load_plugins
from commsim.teach import render_markdown
from commsim.theory.problems import make_problem
from protocols.baseline.randomized import FingerprintEquality
from protocols.lessons.randomized import randomized


@pytest.fixture(scope="module")
def lesson():
    return built_lesson("randomized", 16)


def test_lesson_steps_are_complete(lesson):
    assert lesson.topic == "randomized" and lesson.n == 16 and len(lesson.steps) >= 7
    for step in lesson.steps:
        assert step.title and step.claim and step.reference and (step.instance or step.inequality)
        for sender, label, bits in step.messages:
            assert sender in ("alice", "bob") and label and set(bits) <= {"0", "1"}
    md = render_markdown(lesson)
    assert all(step.title in md for step in lesson.steps)


def test_lesson_numbers_come_from_the_protocols(lesson):
    fp = FingerprintEquality(make_problem("eq", 16), 0.1)
    fingerprint = next(s for s in lesson.steps if "fingerprint" in s.title)
    assert f"q = {fp.prime}" in fingerprint.claim and f"{2 * fp.width} bits instead of 16" in fingerprint.claim
    assert [len(bits) for _, _, bits in fingerprint.messages] == [fp.width, fp.width]
    measured = next(s for s in lesson.steps if s.title.startswith("Measured"))
    assert "consistent with the promise: yes" in measured.instance
    index = next(s for s in lesson.steps if s.title.startswith("INDEX"))
    assert "(1 - H2(eps))" in index.title and "sample protocol" in index.instance


def test_lesson_size_is_checked():
    with pytest.raises(InputError, match="n"):
        randomized(2)


def test_fooling_sets_lesson_has_a_step_on_randomness():
    lesson = load_plugins().get("topic", "fooling-sets")(3)
    step = lesson.steps[-1]
    assert "deterministic protocols only" in step.title
    assert "eq: the bound does not survive coins" in step.instance and "disj: the bound survives" in step.instance
    assert step.messages and all(set(bits) <= {"0", "1"} for _, _, bits in step.messages)
