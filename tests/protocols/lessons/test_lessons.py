"""``commsim teach``: every topic builds from real engine calls, renders every step, and rejects a bad --n."""
from __future__ import annotations

import json
import re

import pytest
from built_lessons import lesson
from cli_helpers import run_main
from click.testing import CliRunner

from commsim.cli import cli
from commsim.plugins import load_plugins
from commsim.teach import latex_to_text, render_markdown
from protocols.lessons import TOPICS

REQUIRED = {"rnn-index", "rnn-eq", "rnn-disj", "attention-protocol", "attention-dyck", "attention-disj",
            "fooling-sets", "two-layers", "randomized", "compose", "graph-transformers"}

#: a size other than the default that every topic accepts, and one it must reject
OTHER_N = {"rnn-index": 4, "rnn-eq": 3, "rnn-disj": 3, "attention-protocol": 4, "attention-dyck": 6,
           "attention-disj": 3, "fooling-sets": 3, "two-layers": 3, "randomized": 16, "compose": 5,
           "graph-transformers": 2}
BAD_N = {"rnn-index": 99, "rnn-eq": 99, "rnn-disj": 99, "attention-protocol": 999, "attention-dyck": 7,
         "attention-disj": 99, "fooling-sets": 99, "two-layers": 99, "randomized": 2048, "compose": 17,
         "graph-transformers": 99}


def build(topic, n=None):
    return lesson(topic, n)                # one build per test process (tests/built_lessons.py)


@pytest.fixture(scope="module")
def lessons():
    return {topic: build(topic) for topic in TOPICS}


def test_every_required_topic_is_registered():
    assert REQUIRED <= set(TOPICS)
    names = {e.name for e in load_plugins().entries("topic")}
    assert REQUIRED <= names


@pytest.mark.parametrize("topic", sorted(REQUIRED))
def test_topic_builds_with_complete_steps(lessons, topic):
    lesson = lessons[topic]
    assert lesson.topic == topic and lesson.steps
    for step in lesson.steps:
        assert step.title and step.claim and step.reference, (topic, step.title)
        for sender, label, bits in step.messages:
            assert sender in ("alice", "bob") and label
            assert set(bits) <= {"0", "1"}, (topic, step.title, bits)
    if topic != "fooling-sets":  # its opening step states the rectangle property in words only
        # every step states an instance or an inequality: the concrete numbers
        assert all(step.instance or step.inequality for step in lesson.steps), topic


@pytest.mark.parametrize("topic", sorted(REQUIRED))
def test_markdown_has_every_step(lessons, topic):
    lesson = lessons[topic]
    md = render_markdown(lesson)
    assert md.startswith(f"# {lesson.title}")
    for k, step in enumerate(lesson.steps, 1):
        assert f"## Step {k}. {step.title}" in md
        assert step.claim in md
        if step.inequality:
            assert f"$$\n{step.inequality}\n$$" in md
    assert f"## Step {len(lesson.steps) + 1}." not in md


@pytest.mark.parametrize("topic", sorted(REQUIRED))
def test_other_n_builds(topic):
    lesson = build(topic, OTHER_N[topic])
    assert lesson.steps and lesson.n == OTHER_N[topic]


@pytest.mark.parametrize("topic", sorted(REQUIRED))
def test_bad_n_exits_2_with_one_line(capsys, topic):
    code, out, err = run_main(capsys, ["teach", topic, "--n", str(BAD_N[topic])])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--n" in err


def test_bad_n_json_is_an_error_object(capsys):
    code, out, err = run_main(capsys, ["teach", "rnn-eq", "--n", "99", "--json"])
    assert code == 2
    d = json.loads(out)
    assert "--n" in d["error"] and d["exit_code"] == 2


def test_teach_json_has_the_steps():
    result = CliRunner().invoke(cli, ["teach", "attention-protocol", "--json"], catch_exceptions=False)
    assert result.exit_code == 0
    d = json.loads(result.stdout)
    assert d["topic"] == "attention-protocol" and d["n"] == 6
    assert len(d["steps"]) == len(build("attention-protocol").steps)
    for step in d["steps"]:
        assert {"title", "claim", "instance", "holdings", "messages", "inequality", "reference", "notes"} <= set(step)
    assert any(m["bits"] for s in d["steps"] for m in s["messages"])


def test_teach_markdown_to_file(tmp_path):
    out = tmp_path / "notes.md"
    result = CliRunner().invoke(cli, ["teach", "rnn-eq", "--n", "3", "--format", "markdown", "--out", str(out)],
                                catch_exceptions=False)
    assert result.exit_code == 0 and "written" in result.stdout
    text = out.read_text()
    steps = build("rnn-eq", 3).steps
    assert len(re.findall(r"^## Step \d+\. ", text, flags=re.M)) == len(steps)
    assert "$$" in text


def test_teach_text_and_list():
    runner = CliRunner()
    listed = runner.invoke(cli, ["teach", "--list"], catch_exceptions=False).stdout
    for topic in REQUIRED:
        assert topic in listed
    d = json.loads(runner.invoke(cli, ["teach", "--list", "--json"], catch_exceptions=False).stdout)
    assert REQUIRED <= {t["name"] for t in d["topics"]}
    text = runner.invoke(cli, ["teach", "two-layers"], catch_exceptions=False).stdout
    assert "Step 1." in text and "Lemma 5" in text


def test_teach_unknown_topic(capsys):
    code, out, err = run_main(capsys, ["teach", "rnn-everything"])
    assert code == 2 and "rnn-everything" in err and err.count("\n") == 1


# ---- what the lessons show ----------------------------------------------------------------------
def _step(lesson, word):
    return next(s for s in lesson.steps if word in s.title)


def test_rnn_index_handoff_and_certificate(lessons):
    lesson = lessons["rnn-index"]
    handoff = _step(lesson, "Theorem 2")
    assert len(handoff.messages) == 1 and len(handoff.messages[0][2]) == 6   # m·p = n = 6 bits
    cert = _step(lesson, "One bit short")
    assert "verified by a direct forward: True" in cert.notes
    bits = {m[2] for m in cert.messages}
    assert len(cert.messages) == 2 and len(bits) == 1                       # two inputs, one message
    assert "8192" in _step(lesson, "scale").instance


def test_rnn_eq_both_proofs(lessons):
    lesson = lessons["rnn-eq"]
    titles = " | ".join(s.title for s in lesson.steps)
    assert "Proof 1" in titles and "Proof 2" in titles and "Myhill" in titles
    mn = _step(lesson, "Myhill")
    assert "16 pairwise distinguishable" in mn.instance and "verified: True" in mn.notes
    assert "INEQ(x1 x1) = 0, INEQ(x2 x1) = 1" in mn.instance


def test_rnn_disj_reads_back_alices_set(lessons):
    step = _step(lessons["rnn-disj"], "From MQAR")
    assert "(= a: True)" in step.instance and len(step.messages) == 1


def test_attention_protocol_shows_every_number(lessons):
    lesson = lessons["attention-protocol"]
    text = "\n".join(s.instance for s in lesson.steps)
    for needle in ("A_i (units)", "M =", "e_i = [exp] (units)", "Z_A =", "Z_B =", "U_A =", "U_B =",
                   "o = [U / Z]", "identical", "float64"):
        assert needle in text, needle
    assert "DIFFERENT" not in text and "≠ direct" not in text
    labels = [m[1] for s in lesson.steps for m in s.messages]
    assert any(label.startswith(k) for label in labels for k in ("query",))
    assert {k for k in ("query", "max", "Z", "U") if any(label.startswith(k) for label in labels)} == \
        {"query", "max", "Z", "U"}


def test_attention_dyck_collision_and_crossing(lessons):
    lesson = lessons["attention-dyck"]
    sweep = _step(lesson, "same transcript")
    assert "transcripts equal (runner, bit for bit): True" in sweep.instance
    crossing = _step(lesson, "crossing")
    assert "(member? 0)" in crossing.instance and "the truth is 0" in crossing.instance
    assert "certificate verified: True" in crossing.notes
    theorem5 = _step(lesson, "Theorem 5").instance
    assert "whole-bit form" in theorem5 and "paper_max_n" not in theorem5 and "(max N)" in theorem5


def test_attention_disj_match3_and_qsa(lessons):
    lesson = lessons["attention-disj"]
    assert "Match3 = DISJ on every one: True" in lesson.steps[0].instance
    assert "exactly when disjoint: True" in _step(lesson, "q-sparse").instance
    assert "certificate verified: True" in _step(lesson, "not enough").notes


def test_two_layers_refusal_and_lemma5(lessons):
    lesson = lessons["two-layers"]
    assert "256 of 256" in lesson.steps[0].instance
    assert "Lemma 5" in _step(lesson, "refuses").instance
    assert "4 of 4" in _step(lesson, "mixes").inequality
    assert "256 of 256" in _step(lesson, "balanced").instance
    assert "overtakes" in _step(lesson, "stops").notes


def test_inequalities_read_in_the_terminal(lessons):
    """The LaTeX the lessons use has a clean terminal form (no stray command names)."""
    for lesson in lessons.values():
        for step in lesson.steps:
            if step.inequality:
                text = latex_to_text(step.inequality)
                assert not re.search(r"\b(langle|rangle|frac|cap|Sigma|exists|mathrm|text)\b", text), text
