"""The researcher's commands through click's CliRunner and the real entry point: ``run`` (summary panel,
certificate side by side, --transcript sequence diagram, --json contract), ``budget``, ``list``, help
text with examples, and every error path (exit 2, one line naming the argument, JSON with ``error``)."""
from __future__ import annotations

import json

import pytest
from cli_helpers import invoke, run_main

from commsim.cli import cli
from commsim.certify.view import certificate_view
from commsim.cli.common import (
    bit_breakdown,
    progress_bar,
    sequence_lines,
)
from commsim.core.bits import Bits
from commsim.core.channel import Transcript
from commsim.plugins import load_plugins

RUN_KEYS = {"reduction", "problem", "task", "protocol", "model", "n", "seq_len", "instances_run", "bits_used",
            "bits_by_direction", "rounds", "bits_formula", "lower_bound_bits", "lower_bound_source",
            "bound_applies", "bound_note", "budget_ok", "model_accuracy", "model_correct", "protocol_matches_model",
            "certificate"}
CERT_KEYS = {"kind", "alice_input", "bob_input", "expected", "model_output", "explanation"}
BUDGET_KEYS = {"arch", "task", "width", "precision", "heads", "bits_formula", "lower_bound_bits", "max_n", "verdict"}


# ---- run --json: the contract ------------------------------------------------------------------
def test_run_json_collision_certificate():
    d = invoke("run", "index-idxl", "--model", "memorize:capacity=7", "--n", "8", "--json")
    assert RUN_KEYS <= set(d)
    assert (d["reduction"], d["problem"], d["protocol"], d["n"], d["seq_len"]) == \
        ("index-idxl", "index", "rnn-handoff", 8, 9)
    assert d["bits_used"] == 7 and d["lower_bound_bits"] == 8 and d["budget_ok"] is False
    assert d["bits_by_direction"] == {"alice_to_bob": 7, "bob_to_alice": 0} and d["rounds"] == 1
    assert d["protocol_matches_model"] is True and d["model_correct"] is False
    cert = d["certificate"]
    assert CERT_KEYS <= set(cert) and cert["kind"] == "collision" and cert["verified"] is True
    assert cert["expected"] != cert["model_output"]


def test_run_json_attention_details_itemize_the_bits():
    d = invoke("run", "disj-match3", "--n", "4", "--json")
    assert RUN_KEYS <= set(d) and d["protocol"] == "attention-exchange"
    det = d["details"]
    assert sum(det["bits_by_step"].values()) == det["total_bits"] == d["bits_used"]
    assert sum(h["total"] for h in det["bits_by_head"]) == d["bits_used"]
    assert d["bits_by_direction"]["alice_to_bob"] + d["bits_by_direction"]["bob_to_alice"] == d["bits_used"]


def test_run_json_rectangle_certificate():
    """A two-way exchange below the bound: the engine's rectangle argument, transcripts checked by the runner."""
    d = invoke("run", "disj-match3", "--model", "attention:probe:at=0/n,reject=1", "--n", "19", "--instances", "300",
               "--json")
    cert = d["certificate"]
    assert cert["kind"] == "rectangle" and cert["verified"] is True and d["budget_ok"] is False
    assert cert["details"]["transcripts_equal"] is True


def test_run_json_one_way_exchange_gets_a_pigeonhole_collision():
    """Alice holds only the query (disj-qsa): the plan is one-way, so the engine's pigeonhole search runs."""
    d = invoke("run", "disj-qsa", "--model", "attention:probe:at=0,accept=2", "--n", "8", "--json")
    cert = d["certificate"]
    assert cert["kind"] == "collision" and cert["verified"] is True and d["budget_ok"] is False
    assert d["bits_by_direction"]["bob_to_alice"] == 0 and cert["details"]["search"] == "exhaustive"
    assert "send" in cert["explanation"] or "hand off" in cert["explanation"]


def test_run_reports_the_bound_of_the_direction_that_really_spoke():
    # Theorem 1's layer: only Bob (the index and the query) speaks, so INDEX one-way from Bob binds: ceil(log2 4)
    d = invoke("run", "index-idxl", "--model", "construct:idxl", "--n", "4", "--json")
    assert d["bits_by_direction"]["alice_to_bob"] == 0 and d["bound_applies"] is True
    assert d["lower_bound_bits"] == 2 and d["budget_ok"] is True and d["model_correct"] is True


def test_budget_says_when_no_proof_gives_a_bound():
    # Appendix C of [BHBK24]: the one-layer technique gives no bound for recall with many queries
    d = invoke("budget", "--arch", "attention", "--width", "2", "--precision", "8", "--task", "disj-mqar",
               "--json")
    assert d["bound_applies"] is False and d["bound_note"] and d["max_n"] is None


# ---- run: the panel, the certificate, the transcript ---------------------------------------------
def test_run_panel_and_certificate_side_by_side():
    out = invoke("run", "index-idxl", "--model", "memorize:capacity=5", "--n", "6")
    for needle in ("commsim run", "bits used", "5 used / 6 needed", "lower bound", "model correct",
                   "protocol = model", "Alice holds", "Bob holds", "fails on", "same message as", "highlighted:",
                   "index"):
        assert needle in out, needle


def test_run_dyck_panel_never_says_correct_beside_a_certificate_proving_it_wrong():
    """Dyck-(2,2) membership is a function of every string: a layer right on all fooling-set members but below
    Lemma 1's N - 1 bits is wrong on a crossing, and the panel says so in the same words as the JSON."""
    out = invoke("run", "dyck22-fooling", "--n", "18")
    assert "certificate: rectangle (verified" in out
    line = next(row for row in out.splitlines() if "model correct" in row)
    assert "model correct     no: correct on the 131,072 fooling-set members; wrong on" in line
    assert "yes" not in line
    d = invoke("run", "dyck22-fooling", "--n", "18", "--json")
    assert d["model_correct"] is False and d["accuracy_by_set"]["members"] == 1.0
    assert set(d["accuracy_by_set"]) == {"members", "crossings", "random_non_members"}


def test_run_dyck_constant_one_layer_is_not_correct():
    d = invoke("run", "dyck22-fooling", "--model", "attention:probe:at=0,accept=0/1/2/3", "--n", "12", "--json")
    assert d["model_correct"] is False and d["certificate"]["verified"] is True
    assert d["certificate"]["expected"] == 0 and d["certificate"]["model_output"] == 1
    assert d["accuracy_by_set"]["members"] == 1.0 and d["accuracy_by_set"]["random_non_members"] == 0.0


def test_run_transcript_draws_the_exchange_with_per_head_bits():
    out = invoke("run", "dyck22-fooling", "--n", "8", "--transcript")
    assert "Alice" in out and "Bob" in out and "▶┤" in out and "├◀" in out
    assert "query/head 0" in out and "Z/head 0" in out and "U/head 0" in out
    assert "bits per step and per head" in out and "head 0" in out and "theorem's count" in out
    assert "round 1" in out and "round 2" in out


def test_run_transcript_for_the_handoff():
    out = invoke("run", "eq-ineq", "--model", "memorize", "--n", "4", "--transcript")
    assert "hidden state, 4 bits" in out and "bits per step" in out


def test_run_rectangle_certificate_rows():
    out = invoke("run", "disj-match3", "--model", "attention:probe:at=0/n,reject=1", "--n", "19", "--instances", "300")
    assert "member" in out and "crossing" in out and "same transcript" in out


def test_run_reports_progress(monkeypatch):
    seen = []

    class Recorder:
        def __init__(self, description, enabled=True):
            seen.append(("start", description, enabled))

        def __enter__(self):
            return lambda done, total, description=None: seen.append((done, total, description))

        def __exit__(self, *exc):
            return False

    import commsim.cli.run as run_module
    monkeypatch.setattr(run_module, "progress_bar", Recorder)
    invoke("run", "index-idxl", "--n", "6")
    assert seen[0] == ("start", "index-idxl", True)
    stages = {d for _, _, d in seen[1:]}
    assert any("batch" in str(d) for d in stages) and any("runner check" in str(d) for d in stages)
    assert all(done <= total for done, total, _ in seen[1:])


def test_progress_bar_is_silent_without_a_terminal():
    with progress_bar("x", enabled=True) as update:
        update(1, 2, "stage")  # no terminal under pytest: nothing is drawn, nothing fails


# ---- the rendering helpers ------------------------------------------------------------------------
def _transcript():
    return Transcript.build([("alice", "query/head 0", Bits.from_str("0101")),
                             ("bob", "max/head 0", Bits.from_str("11")), ("bob", "Z/head 0", Bits.from_str("1"))])


def test_sequence_lines():
    lines = sequence_lines(_transcript())
    assert lines[0].startswith("Alice") and lines[0].endswith("Bob")
    arrows = [line for line in lines if "─" in line]
    assert "query/head 0, 4 bits: 0101" in arrows[0] and arrows[0].rstrip().endswith("round 1")
    assert "▶┤" in arrows[0] and "├◀" in arrows[1] and "round 2" in arrows[1] and "round" not in arrows[2]
    assert lines[-1].startswith("total 7 bits: Alice→Bob 4, Bob→Alice 3, 2 round(s)")


def test_bit_breakdown_from_details_and_from_labels():
    t = _transcript()
    assert bit_breakdown(t)["bits_by_step"] == {"query/head 0": 4, "max/head 0": 2, "Z/head 0": 1}
    det = {"bits_by_step": {"query": 4, "max": 2, "Z": 1},
           "bits_by_head": [{"query": 4, "max": 2, "Z": 1, "total": 7}], "theorem_bits": 9, "theorem_text": "x"}
    b = bit_breakdown(t, det)
    assert b["total_bits"] == 7 and b["bits_by_head"][0]["total"] == 7 and b["theorem_bits"] == 9


def test_certificate_view_collision_index_marks_bobs_index():
    cert = {"kind": "collision", "alice_input": [0, 0, 1, 0], "bob_input": 2, "expected": 1, "model_output": 0,
            "explanation": "", "details": {"colliding_alice_input": [0, 0, 0, 0], "message_bits": 3,
                                           "other_expected": 0, "other_model_output": 0}}
    v = certificate_view(cert, "index")
    assert v.alice_marks == [2] and v.bob_marks == [] and len(v.rows) == 2
    assert "position 3" in v.caption
    assert v.rows[0].bob_index == 2 and v.rows[0].alice_symbols == ("0", "0", "1", "0")


def test_certificate_view_collision_eq_marks_the_differences():
    cert = {"kind": "collision", "alice_input": [0, 1, 1], "bob_input": [0, 1, 0], "expected": 0, "model_output": 1,
            "explanation": "", "details": {"colliding_alice_input": [0, 1, 0]}}
    v = certificate_view(cert, "eq")
    assert v.alice_marks == v.bob_marks == [2]


def test_certificate_view_rectangle_marks_the_crossed_positions():
    cert = {"kind": "rectangle", "alice_input": [0, 1, 1], "bob_input": [0, 0, 1], "expected": 0,
            "model_output": 1, "explanation": "",
            "details": {"member_1": {"index": 0, "alice": [0, 1, 1], "bob": [0, 0, 0]},
                        "member_2": {"index": 1, "alice": [0, 1, 0], "bob": [0, 0, 1]},
                        "protocol_answer_on_crossing": 1}}
    v = certificate_view(cert, "dyck22")
    assert [r.label for r in v.rows] == ["member 1", "member 2", "crossing"]     # counted from 1, as a reader does
    assert v.alice_marks == [2] and v.bob_marks == [2]
    assert v.rows[0].answer == 1 and v.rows[2].answer == 0
    assert v.rows[2].alice_symbols == ("(", ")", ")") and v.rows[2].bob_symbols == ("(", "(", ")")


def test_certificate_view_error_disj_marks_the_common_elements():
    cert = {"kind": "error", "alice_input": [1, 0, 1], "bob_input": [0, 0, 1], "expected": 1, "model_output": 0,
            "explanation": "", "details": {}}
    v = certificate_view(cert, "disj")
    assert v.alice_marks == [2] and v.to_dict()["rows"][0]["label"] == "wrong on"


# ---- budget ------------------------------------------------------------------------------------------
def _tasks_with_length_bounds():
    from commsim.budget.compute import simulator_for_arch
    out = []
    for entry in load_plugins().entries("reduction"):
        try:
            entry.obj.length_bound(simulator_for_arch("rnn"), 16)
            out.append(entry.name)
        except NotImplementedError:
            pass
    return out


@pytest.mark.parametrize("task", _tasks_with_length_bounds())
def test_budget_json_contract(task):
    for arch in ("rnn", "attention"):
        d = invoke("budget", "--arch", arch, "--width", "4", "--precision", "8", "--task", task, "--n", "64", "--json")
        assert BUDGET_KEYS <= set(d)
        assert (d["arch"], d["task"], d["width"], d["precision"], d["heads"]) == (arch, task, 4, 8, 1)
        assert d["max_n"] is None or isinstance(d["max_n"], int)
        if d["bound_applies"]:
            assert isinstance(d["lower_bound_bits"], int)


def test_budget_index_idxl_numbers():
    d = invoke("budget", "--arch", "rnn", "--width", "128", "--precision", "64", "--task", "index-idxl", "--json")
    # Section 6 of [BHBK24]: m*p = 128*64 = 8192 bits store strings of N = 8192 symbols; with the index
    # token the sequence is 8193 tokens long, and one symbol more is ruled out
    assert d["max_n"] == 8193 and d["first_ruled_out"] == 8194 and d["bits_formula"] == 8192


def test_budget_table():
    out = invoke("budget", "--arch", "attention", "--width", "2", "--precision", "8", "--task", "dyck22-fooling",
                 "--n-range", "16:256")
    assert "max N" in out and "over N" in out


# ---- list, help, version -------------------------------------------------------------------------------
def test_list_shows_everything_registered():
    d = invoke("list", "--json")
    for key in ("problems", "reductions", "models", "simulators", "model_protocols", "topics"):
        assert d[key], key
    reductions = {r["name"] for r in d["reductions"]}
    assert {"index-idxl", "eq-ineq", "disj-mqar", "dyck22-fooling", "disj-match3", "disj-qsa"} <= reductions
    topics = {t["name"] for t in d["topics"]}
    assert {"rnn-index", "attention-protocol", "two-layers"} <= topics
    text = invoke("list")
    assert "reductions" in text and "topics" in text and "attention-dyck" in text


def test_every_command_has_help_with_an_example():
    assert "Example" in invoke("--help")
    for name in cli.commands:
        out = invoke(name, "--help")
        assert "Example" in out and f"commsim {name}" in out, name


def test_version():
    assert invoke("--version").startswith("commsim")


# ---- error paths: exit 2, one line naming the argument, JSON when asked ---------------------------------
ERRORS = [
    (["run", "nope"], "reduction"),
    (["run", "index-idxl", "--model", "nope:width=2"], "model"),
    (["run", "index-idxl", "--model", "lstm:width=zero"], "width"),
    (["run", "index-idxl", "--n", "0"], "--n"),
    (["run", "index-idxl", "--instances", "many"], "--instances"),
    (["run", "index-idxl", "--instances", "0"], "--instances"),
    (["run", "index-idxl", "--seed", "x"], "--seed"),
    (["run", "dyck22-fooling", "--n", "7"], "--n"),
    (["run", "dyck22-fooling", "--model", "lstm:width=2"], "recurrent"),
    (["run", "eq-ineq", "--model", "construct:eq2", "--n", "4"], "two-layer"),
    (["run", "index-idxl", "--bogus"], "--bogus"),
    (["run", "index-idxl", "--n", "30"], ""),
    (["teach", "nope"], "topic"),
    (["teach", "rnn-index", "--n", "0"], "--n"),
    (["teach", "attention-dyck", "--n", "9"], "--n"),
    (["teach", "rnn-index", "--format", "pdf"], "--format"),
    (["budget", "--arch", "gpu", "--width", "4", "--precision", "8", "--task", "eq-ineq"], "--arch"),
    (["budget", "--arch", "rnn", "--width", "0", "--precision", "8", "--task", "eq-ineq"], "--width"),
    (["budget", "--arch", "rnn", "--width", "4", "--precision", "8", "--task", "nope"], "nope"),
    (["budget", "--arch", "rnn", "--width", "4", "--precision", "8"], "--task"),
    (["budget", "--arch", "rnn", "--width", "4", "--precision", "8", "--task", "eq-ineq", "--n-range", "x"],
     "--n-range"),
    (["list", "--bogus"], "--bogus"),
    (["nonsense"], "nonsense"),
]


@pytest.mark.parametrize("args,needle", ERRORS, ids=[" ".join(a) for a, _ in ERRORS])
def test_bad_argument_exits_2_with_one_line(capsys, args, needle):
    code, out, err = run_main(capsys, *args)
    assert code == 2, (code, err)
    assert out == ""
    assert err.startswith("Error: ") and err.count("\n") == 1
    assert needle.lower() in err.lower()


@pytest.mark.parametrize("args,needle", [e for e in ERRORS if e[0][0] in ("run", "teach", "budget", "list")],
                         ids=[" ".join(a) for a, _ in ERRORS if a[0] in ("run", "teach", "budget", "list")])
def test_json_error_is_valid_json(capsys, args, needle):
    code, out, err = run_main(capsys, *args, "--json")
    assert code == 2
    d = json.loads(out)
    assert d["exit_code"] == 2 and needle.lower() in d["error"].lower()


# ---- user-facing text cites the papers or the project's own docs, never the developers' notes --------------
DANGLING = ("REFERENCE", "DESIGN section")


def _no_dangling(text: str, where: str) -> None:
    for needle in DANGLING:
        assert needle not in text, f"{where} cites {needle!r}, a file users never get: {text[:300]}"


def test_lessons_cite_the_papers_not_internal_notes():
    """Every lesson's full content (claims, instances, inequalities, references) cites the papers or the
    project's docs.  ``teach TOPIC --json`` prints the JSON of the lesson its topic builds at its default size:
    one topic (a quick one to build) goes through the command, the others are the builds the lesson tests of this
    process share (tests/built_lessons.py), in the same JSON."""
    from built_lessons import lesson

    from commsim.core.jsonable import to_json
    topics = [e["name"] for e in invoke("teach", "--list", "--json")["topics"]]
    assert "rnn-eq" in topics
    printed = invoke("teach", "rnn-eq", "--json")
    assert printed == json.loads(to_json(lesson("rnn-eq")))
    _no_dangling(json.dumps(printed), "lesson rnn-eq")
    for topic in topics:
        _no_dangling(to_json(lesson(topic)), f"lesson {topic}")


def test_listings_bound_notes_and_refusals_cite_the_papers_not_internal_notes():
    """`commsim list --json`, every reduction's source and description, its bound as a function of N for
    every simulator (or the reason it does not apply), and what `run` says with a recurrent and an attention
    model (bound note, or the refusal)."""
    from commsim.core.errors import InputError
    from commsim.runs.run import run_reduction

    _no_dangling(json.dumps(invoke("list", "--json")), "commsim list --json")
    reg = load_plugins()
    simulators = [e.obj for e in reg.entries("simulator")]
    checked = 0
    for entry in reg.entries("reduction"):
        red = entry.obj
        _no_dangling(f"{red.source} {red.description} {entry.description}", f"{red.id} source/description")
        N = red.seq_len(red.default_n)
        for sim in simulators:
            try:
                bound = red.length_bound(sim, N)
            except (NotImplementedError, ValueError):
                continue
            _no_dangling(json.dumps(bound.to_dict()) + str(bound.note), f"{red.id} length bound ({sim.name})")
            checked += 1
        for spec in ("lstm:width=2,precision=4", "attention:width=2,precision=6,seed=0"):
            try:
                text = run_reduction(red, spec, red.default_n, instances=4, certify=False).to_json()
            except InputError as exc:
                text = str(exc)
            _no_dangling(text, f"run {red.id} --model {spec}")
            checked += 1
    assert checked >= 2 * len(reg.entries("reduction"))
