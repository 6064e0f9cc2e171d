"""Lesson claims checked against the engine: counts the text states are recomputed here, and a pigeonhole
reason is given only where counting really forces a collision."""
from __future__ import annotations

import re

import pytest
from built_lessons import lesson
from hypothesis import given, settings
from hypothesis import strategies as st


def build(topic, n=None):
    return lesson(topic, n)                # one build per test process (tests/built_lessons.py)


@pytest.mark.parametrize("n", [2, 3, 4, 6, 8])
def test_attention_disj_step7_counts_transcripts_and_gives_the_true_reason(n):
    from commsim.theory.fooling import fooling_set
    from protocols.lessons.attention_disj import QSA_PROBE
    from protocols.lessons.common import engine, run_one
    step = [s for s in build("attention-disj", n).steps if s.title == "Right on the fooling set is not enough"][0]
    stated = re.search(r"give the (\d+) members only (\d+) distinct transcript", step.claim)
    assert stated, step.claim
    r, p, m, w = engine("disj-qsa", QSA_PROBE, n)
    A, B = fooling_set("disj", n).member_arrays()
    seen = {tuple(str(mm.bits) for mm in run_one(r, p, m, w, a, b)[1].transcript.messages) for a, b in zip(A, B)}
    assert (int(stated.group(1)), int(stated.group(2))) == (len(A), len(seen)) and len(seen) < len(A)
    assert "ignores" in step.claim
    for inputs, messages in re.findall(r"2\^(\d+) Alice inputs outnumber the 2\^(\d+)", step.notes + step.claim):
        assert int(inputs) > int(messages)            # "outnumber" only where it is true
    bits = int(re.search(r"Its (\d+)-bit messages", step.claim).group(1))
    assert ("not forced by counting" in step.notes) == (n <= bits)
    assert "Fact 4 of [BHBK24]" in step.reference and "Facts 1-3" not in step.reference


# ---- the text form of the lessons' LaTeX --------------------------------------------------------
RESIDUE = re.compile(r"\\[A-Za-z]|left\(|right\)|underbrace|overbrace|≤ft|\bfrac\b|mathrm|\\text|\bll\b|[_^]\(\)")


def test_every_topic_text_output_has_no_latex_residue():
    from commsim.teach import render_plain
    from protocols.lessons import TOPICS
    for topic in TOPICS:
        text = render_plain(build(topic))
        assert "{" not in "".join(line for line in text.splitlines() if line.startswith("  so:")), topic
        assert not RESIDUE.search(text), (topic, RESIDUE.search(text).group(0))


def test_latex_to_text_on_the_reported_formulas():
    from commsim.teach import latex_to_text
    assert latex_to_text(r"g(N) = \Omega\left(\frac{N}{\log^2 N}\right)") == "g(N) = Ω(N/(log^2 N))"
    assert latex_to_text(r"\underbrace{2\lceil\log_2 8\rceil}_{\text{two-way}} = 6 \ll "
                         r"\underbrace{\lceil\log_2 8^{8}\rceil}_{\text{one-way}} = 24") == \
        "2⌈log2 8⌉ [two-way] = 6 ≪ ⌈log2 8^8⌉ [one-way] = 24"
    assert latex_to_text(r"a \le b \leq c \ne d \in \left\{1\right\}") == "a ≤ b ≤ c ≠ d ∈ {1}"
    assert latex_to_text(r"\text{rank}_\mathbb{R} = 4, x^\frac{1}{2}") == "rank_R = 4, x^(1/2)"   # a command as index


LATEX_PIECES = [r"\left(", r"\right)", r"\le ", r"\ge ", r"\leq ", r"\lceil", r"\rceil", r"\log_2 ", r"\log^2 ",
                r"\frac{N}{2}", r"\frac{N - 1}{\log N}", r"\underbrace{x}_{\text{one-way}}", r"\ll ", r"\Omega",
                r"\text{bits}", r"\mathrm{DISJ}_n", r"\cdot", r"\quad", r"\ ", r"2^{n}", r"x_{i+1}", "N", " = ", "7",
                r"\#", r"\implies ", r"\epsilon", r"\Pr", r"\min(", r"\max(", ")", r"_\mathbb{R}", r"^\frac{1}{2}"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(LATEX_PIECES), max_size=12))
def test_latex_to_text_leaves_no_command_or_brace(pieces):
    from commsim.teach import latex_to_text
    text = latex_to_text("".join(pieces))
    assert "\\" not in text and "{" not in text and "}" not in text
    assert not re.search(r"≤ft|≥q|underbrace|left\(|right\)|mathrm|[_^]\(\)", text), text


@pytest.mark.parametrize("topic", ["graph-transformers", "randomized", "attention-disj", "rnn-index"])
def test_no_lesson_says_one_bits(topic):
    from commsim.teach import render_plain
    from protocols.lessons import TOPICS
    t = TOPICS[topic]
    for n in sorted({t.minimum, t.default}):
        text = render_plain(build(topic, n))
        assert not re.search(r"(?<![-−+] )(?<![\w.])1 bits", text), (topic, n)


def test_attributions_match_the_paper():
    """[BHBK24]: Facts 1, 2, 3 are the DISJ, EQ and INDEX bounds, Fact 4 the fooling-set bound; log-rank is not
    one of its facts. The attention protocol on index lookup's split is one-way Bob -> Alice."""
    import json

    from click.testing import CliRunner

    from commsim.cli import cli
    out = json.loads(CliRunner().invoke(cli, ["separate", "two-layers", "--n", "4", "--json"]).stdout)
    text = json.dumps(out)
    assert "Facts 1, 2" not in text and "fooling-set bound (Fact 4 of [BHBK24])" in text
    assert "log-rank bound (standard, not in [BHBK24]" in text
    step = [s for s in build("rnn-index").steps if "attention escapes" in s.title][0]
    assert "two-way" not in step.claim + step.inequality and "Bob → Alice" in step.claim
    assert "one-way from Bob to Alice" in step.instance           # what the run itself reports


def test_compose_index_randomized_note_states_a_necessary_condition():
    """Theorem 1 of [PNP24] bounds the error of a C-bit message from below: C >= (1 - 3 eps) n log2 n is needed
    for error eps, which is not a protocol attaining it ("needs only" read as sufficiency)."""
    import json

    from click.testing import CliRunner

    from commsim.cli import cli
    out = CliRunner().invoke(cli, ["run", "compose-index", "--n", "3", "--json"]).stdout
    reasons = re.findall(r'"randomized_reason": "([^"]*)"', out)
    assert reasons and json.loads(out)
    for reason in reasons:
        assert "needs only" not in reason and "requires C >= (1 - 3 eps)" in reason and "necessary" in reason


# ---- teach's options --------------------------------------------------------------------------------
def test_teach_help_says_per_topic_whether_n_is_n_or_N():
    from click.testing import CliRunner

    from commsim.cli import cli
    from protocols.lessons import TOPICS
    text = " ".join(CliRunner().invoke(cli, ["teach", "--help"], terminal_width=400).stdout.split())
    for name, t in TOPICS.items():
        assert t.size.split(",")[0] in ("n", "N"), name
        assert f"[--n = {t.size}:" in text, name
    assert "--n = n, the bits of each party's string (N = 2n)" in text                       # rnn-eq
    assert "--n = N, the string length" in text                                             # attention-dyck


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_teach_refuses_json_with_a_format(capsys, fmt):
    from cli_helpers import run_main
    code, out, err = run_main(capsys, ["teach", "rnn-eq", "--json", "--format", fmt])
    assert code == 2 and "--format" in err and err.count("\n") == 1


# ---- numbering: every member, instance and element a reader sees counts from 1 -----------------------
def test_attention_dyck_names_the_same_members_in_steps_and_notes():
    lesson = build("attention-dyck")
    sweep = [s for s in lesson.steps if s.title.startswith("The sweep")][0]
    crossing = [s for s in lesson.steps if s.title.startswith("The crossing")][0]
    shown = [int(k) for k in re.findall(r"^member (\d+):", sweep.instance, flags=re.M)]
    noted = [int(k) for k in re.search(r"members (\d+) and (\d+) collide", sweep.notes).groups()]
    assert shown == noted and min(shown) >= 1
    assert [int(k) for k in re.search(r"members (\d+) and (\d+) of", crossing.notes).groups()] == noted
    assert f"member {noted[0]}'s half and Bob member {noted[1]}'s half" in crossing.claim
    from commsim.theory.fooling import fooling_set
    fs = fooling_set("dyck22", lesson.n)
    for k in noted:                                   # member k is the k-th string of the set's own order
        assert f"member {k}: {fs.language.decode(fs.strings(k - 1, k)[0])}" in sweep.instance


def test_fooling_sets_lesson_counts_its_dyck_member_from_1():
    from commsim.theory.fooling import fooling_set
    lesson = build("fooling-sets")
    step = [s for s in lesson.steps if s.title.startswith("Dyck-(2,2)")][0]
    k, string = re.search(r"member #(\d+) of \d+: (\S+)", step.instance).groups()
    fs = fooling_set("dyck22", 2 * lesson.n)
    assert fs.language.decode(fs.strings(int(k) - 1, int(k))[0]) == string


@pytest.mark.parametrize("problem", ["eq", "disj", "index", "dyck22"])
def test_fooling_command_numbers_members_from_1(problem):
    from click.testing import CliRunner

    from commsim.cli import cli
    from commsim.theory.fooling import fooling_set
    out = CliRunner().invoke(cli, ["fooling", problem, "--n", "4"], terminal_width=200).stdout
    rows = re.findall(r"^\W*(\d+)\s*[│|]\s*(\S+)", out.split("first 4 members")[1], flags=re.M)
    assert [int(k) for k, _ in rows] == [1, 2, 3, 4]
    fs = fooling_set(problem, 4)
    first = fs.problem.split(fs.strings(0, 1))[0][0] if problem == "dyck22" else fs.member_arrays(0, 1)[0][0]
    assert rows[0][1] == "".join(str(int(v)) for v in first) or problem == "dyck22"


def test_graph_transformers_counts_elements_and_nodes_from_1():
    lesson = build("graph-transformers")
    n = lesson.n
    step = lesson.steps[0]
    a, b, k, x, y = re.search(r"a = (\d+), b = (\d+) \(they share element (\d+): x = (\d+), y = (\d+)\)",
                              step.instance).groups()
    k, x, y = int(k), int(x), int(y)
    assert 1 <= x <= n and 1 <= y <= n and k == (x - 1) * n + y and a[k - 1] == b[k - 1] == "1"
    assert f"u{x}→v{y}" in step.instance and "u0" not in step.instance and "v0" not in step.instance


def test_attention_disj_certificate_counts_the_instance_from_1():
    from commsim.runs.run import run_reduction
    from protocols.lessons.common import reduction_default
    step = [s for s in build("attention-disj").steps if s.title == "A real layer on every instance"][0]
    cert = run_reduction("disj-match3", reduction_default("disj-match3"), 4).certificate
    if cert is not None and "instance_index" in cert.details:
        assert f"on instance {cert.details['instance_index'] + 1} of" in step.instance
    assert "on instance 0 " not in step.instance
