"""`commsim teach TOPIC --exercises` and `commsim teach check ANSWERS.json`: for every topic a right answer is
marked right and a wrong one wrong (by running commsim), the exercises are the same at the same seed, and a
malformed answers file exits 2 naming the field."""
from __future__ import annotations

import json
import re

import pytest
from cli_helpers import invoke, run_main

from commsim.plugins import load_plugins
from protocols.lessons import TOPICS

SEED = 0


def _wrong(example):
    """A wrong answer of the same shape as ``example`` (a right one)."""
    if isinstance(example, bool):
        return not example
    if isinstance(example, int):
        return example + 1
    if isinstance(example, str):                            # a bit string or a Dyck string: another one
        flip = {"0": "1", "1": "0", "(": "[", "[": "(", ")": "]", "]": ")"}
        return "".join(flip[c] for c in example)
    if isinstance(example, dict):
        return {k: 1 - v if v in (0, 1) else v + 1 for k, v in example.items()}
    if isinstance(example, list) and len(example) == 2 and all(isinstance(v, (str, list)) for v in example) \
            and not all(isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) for v in example):
        return [example[0], example[0]]                       # a "collision" of one input with itself
    if isinstance(example, list) and example and isinstance(example[0], list):   # a fooling set: too few pairs
        return example[:2]
    if isinstance(example, list):
        return [example[0] + 1] + example[1:]
    raise AssertionError(f"no wrong answer for {example!r}")


def _check(tmp_path, capsys, doc, name="answers.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    code, out, err = run_main(capsys, "teach", "check", str(path), "--json")
    return code, (json.loads(out) if out.strip().startswith("{") else out), err


@pytest.mark.parametrize("topic", sorted(TOPICS))
def test_teach_check_marks_right_and_wrong_answers(tmp_path, capsys, topic):
    ex = invoke("teach", topic, "--exercises", "--solutions", "--seed", str(SEED), "--json")
    assert 3 <= len(ex["exercises"]) <= 5
    right = {e["id"]: e["example_answer"] for e in ex["exercises"]}
    code, report, _ = _check(tmp_path, capsys, {"topic": topic, "seed": SEED, "n": ex["n"], "answers": right})
    assert code == 0, report
    assert report["wrong"] == 0 and report["right"] == len(right), report
    wrong = {k: _wrong(v) for k, v in right.items()}
    if topic == "attention-dyck":       # a string the layer gets right: a member (it is right on every member)
        wrong["e3"] = right["e1"]
    if topic == "rnn-index":            # another index: the colliding strings differ at one position only
        wrong["e2"] = right["e2"] - 1 if right["e2"] > 1 else right["e2"] + 1
    if topic == "rnn-eq":               # a suffix equal to neither half: INEQ is 1 after both
        halves = re.findall(r"x[12] = ([01]+)", ex["exercises"][3]["statement"])
        n = len(right["e4"])
        wrong["e4"] = next(s for s in (format(v, f"0{n}b") for v in range(2 ** n)) if s not in halves)
    code, report, _ = _check(tmp_path, capsys, {"topic": topic, "seed": SEED, "answers": wrong}, "wrong.json")
    assert code == 1, report
    marked = {r["exercise"]: r["right"] for r in report["results"]}
    assert not any(marked.values()), report              # every wrong answer is caught, by running commsim
    assert all(r["reason"] for r in report["results"])


@pytest.mark.parametrize("topic", ["rnn-index", "attention-dyck", "fooling-sets"])
def test_exercises_are_the_same_at_the_same_seed(topic):
    build = load_plugins().get("exercises", topic)
    first, again = build(None, 5).to_dict(True), build(None, 5).to_dict(True)
    assert first == again
    others = [build(None, s).to_dict(True) for s in range(6, 10)]
    assert any(o["exercises"] != first["exercises"] for o in others)     # the seed changes them


def test_a_partial_answer_sheet_is_checked_and_the_rest_listed(tmp_path, capsys):
    ex = invoke("teach", "rnn-index", "--exercises", "--solutions", "--json")
    e3 = next(e for e in ex["exercises"] if e["id"] == "e3")
    code, report, _ = _check(tmp_path, capsys, {"topic": "rnn-index", "seed": 0,
                                                "answers": {"e3": e3["example_answer"]}})
    assert code == 0 and report["right"] == 1 and "e1" in report["unanswered"]


@pytest.mark.parametrize("doc, field", [
    ({"topic": "rnn-index", "seed": 0, "answers": {"e1": "0101"}}, "answers.e1"),
    ({"topic": "rnn-index", "seed": 0, "answers": {"e9": 1}}, "answers.e9"),
    ({"topic": "rnn-index", "seed": -1, "answers": {"e3": True}}, "seed"),
    ({"topic": "no-such-topic", "answers": {"e1": 1}}, "no-such-topic"),
    ({"topic": "rnn-index", "answers": {}}, "answers"),
    ({"topic": "rnn-index", "answers": {"e3": True}, "extra": 1}, "extra"),
    ({"topic": "attention-protocol", "answers": {"e2": {"Z_A": 1}}}, "answers.e2"),
    ({"topic": "attention-dyck", "answers": {"e1": "abcdefgh"}}, "answers.e1"),
])
def test_a_malformed_answers_file_exits_2_naming_the_field(tmp_path, capsys, doc, field):
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    code, out, err = run_main(capsys, "teach", "check", str(path))
    assert code == 2, (out, err)
    assert field in err and len(err.strip().splitlines()) == 1


def test_an_unreadable_answers_file_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    code, _, err = run_main(capsys, "teach", "check", str(bad))
    assert code == 2 and "not JSON" in err
    code, _, err = run_main(capsys, "teach", "check", str(tmp_path / "missing.json"))
    assert code == 2 and "cannot read" in err


def test_exercise_text_markdown_and_solution_sheet(tmp_path, capsys):
    text = invoke("teach", "two-layers", "--exercises")
    assert "Exercise 1 (e1)" in text and "solution:" not in text
    shown = invoke("teach", "two-layers", "--exercises", "--solutions")
    assert "solution:" in shown and "a right answer:" in shown
    out = tmp_path / "ex.md"
    code, _, err = run_main(capsys, "teach", "two-layers", "--exercises", "--solutions", "--format", "markdown",
                            "--out", str(out))
    assert code == 0, err
    sheet = tmp_path / "ex-solutions.md"
    assert "**Solution.**" not in out.read_text() and "### Exercise 1." in out.read_text()
    assert "**Solution.**" in sheet.read_text()


def test_exercise_page_folds_the_solutions(tmp_path, capsys):
    pytest.importorskip("markdown_it")
    page = invoke("teach", "fooling-sets", "--exercises", "--format", "html")
    assert page.count("<details") == 3 and "<details class=\"solution\" open" not in page
    assert 'id="exercises"' in page
    sheet = invoke("teach", "fooling-sets", "--exercises", "--solutions", "--format", "html")
    assert sheet.count("<details class=\"solution\" open") == 3


def test_solutions_without_exercises_is_refused(capsys):
    code, _, err = run_main(capsys, "teach", "rnn-index", "--solutions")
    assert code == 2 and "--solutions" in err


def test_teach_list_keeps_square_brackets(capsys):
    code, out, _ = run_main(capsys, "teach", "--list")
    assert code == 0 and "[--n" in out.replace("\n", " ")


def test_lesson_page_ends_with_folded_exercises_and_writes_the_solutions_sheet(tmp_path, capsys):
    pytest.importorskip("markdown_it")
    page = tmp_path / "notes.html"
    code, _, err = run_main(capsys, "teach", "fooling-sets", "--format", "html", "--out", str(page), "--solutions",
                            "--seed", "2")
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    assert text.index("Definition 1 and Fact 4 of [BHBK24]") < text.index("Step 1.") < text.index('id="exercises"')
    assert text.count('<details class="solution">') == 3 and "Exercises (seed 2, n = 4)" in text
    sheet = (tmp_path / "notes-solutions.html").read_text(encoding="utf-8")
    assert sheet.count('<details class="solution" open') == 3
    code, _, err = run_main(capsys, "teach", "fooling-sets", "--format", "html", "--solutions")
    assert code == 2 and "--out" in err
