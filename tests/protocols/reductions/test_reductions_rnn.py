"""The INDEX / EQ / DISJ reductions with recurrent models: encodings, bounds, memorize, certificates, CLI."""
from __future__ import annotations

import json

import numpy as np
import pytest

from commsim.cli import main
from commsim.core.errors import InputError, NotApplicable
from commsim.contract import ANY_PARTITION, CONTIGUOUS_PREFIX, MessagePlan, Simulator
from commsim.runs.run import run_reduction
from commsim.runs.stages import select_instances
from commsim.plugins import load_plugins, make_model
from commsim.theory.bounds import ceil_log2
from protocols.models.trainable import random_model

RNN_REDUCTIONS = ["index-idxl", "index-assoc", "index-qsa", "eq-ineq", "disj-mqar"]
CONTRACT_KEYS = {"reduction", "problem", "task", "protocol", "model", "n", "seq_len", "instances_run", "bits_used",
                 "bits_by_direction", "rounds", "bits_formula", "lower_bound_bits", "lower_bound_source",
                 "bound_applies", "bound_note", "budget_ok", "model_accuracy", "model_correct",
                 "protocol_matches_model", "certificate"}


def _reduction(rid):
    return load_plugins().get("reduction", rid)


def _ideal_labels(rid, problem, A, B):
    """The labels a perfect model outputs for the task (what decode must turn into the answer)."""
    if rid.startswith("index"):
        return problem.evaluate_batch(A, B)[:, None]
    if rid == "eq-ineq":
        return 1 - problem.evaluate_batch(A, B)[:, None]
    return np.asarray(A)  # MQAR: the label at query i is a_i


@pytest.mark.parametrize("rid", RNN_REDUCTIONS)
def test_encoding_split_and_decoding(rid):
    reduction = _reduction(rid)
    n = 5
    problem = reduction.problem(n)
    A, B, _ = select_instances(problem, None, 0)
    enc = reduction.encode(problem, A, B)
    vocab = reduction.vocabulary(n)
    assert enc.tokens.min() >= 0 and enc.tokens.max() < len(vocab)
    assert reduction.seq_len(n) == enc.seq_len
    t = len(enc.alice_positions)
    assert np.array_equal(enc.alice_positions, np.arange(t))  # a contiguous prefix
    assert all(p >= t for p in enc.output_positions)
    # Alice's tokens depend on a only, Bob's on b only (for MQAR not even on b)
    other = reduction.encode(problem, A, B[::-1])
    assert np.array_equal(other.tokens[:, :t], enc.tokens[:, :t])
    answers = reduction.decode(_ideal_labels(rid, problem, A, B), B)
    assert np.array_equal(answers, problem.evaluate_batch(A, B))


@pytest.mark.parametrize("rid", RNN_REDUCTIONS)
def test_memorize_at_capacity_n_is_correct_within_budget(rid):
    report = run_reduction(rid, "memorize", 6)
    d = report.to_dict()
    assert d["model_correct"] and d["protocol_matches_model"] and d["budget_ok"] is True
    assert d["bits_used"] == d["bits_formula"] == d["lower_bound_bits"] == 6
    assert d["bits_by_direction"] == {"alice_to_bob": 6, "bob_to_alice": 0} and d["rounds"] == 1
    assert d["certificate"] is None and d["instances"] == "all"
    assert d["lower_bound"]["direction"] == "one-way" and d["lower_bound"]["partition"] == "contiguous"


@pytest.mark.parametrize("rid", RNN_REDUCTIONS)
def test_memorize_below_capacity_gets_a_verified_collision_certificate(rid):
    report = run_reduction(rid, "memorize:capacity=5", 6)
    d = report.to_dict()
    assert d["budget_ok"] is False and not d["model_correct"] and d["protocol_matches_model"]
    cert = d["certificate"]
    assert cert["kind"] == "collision" and cert["verified"]
    assert cert["expected"] != cert["model_output"]
    other = cert["details"]["colliding_alice_input"]
    assert other != cert["alice_input"] and cert["details"]["message_bits"] == 5
    assert "exhaustive" in d["certificate_search"]
    # the certificate is a real failure: run the model directly on it
    reduction = _reduction(rid)
    problem = reduction.problem(6)
    A = np.array([cert["alice_input"]], dtype=np.uint8)
    B = np.array([cert["bob_input"]]) if np.ndim(cert["bob_input"]) == 0 else np.array([cert["bob_input"]], np.uint8)
    assert problem.evaluate_batch(A, B)[0] == cert["expected"]


def test_sampled_instances_and_the_sampled_certificate_search():
    report = run_reduction("index-idxl", "memorize:capacity=29", 30, instances=200, seed=4)
    d = report.to_dict()
    assert d["instances_run"] == 200 and d["instances"].startswith("200 sampled")
    assert d["certificate"]["kind"] == "collision" and d["certificate"]["verified"]
    assert d["certificate"]["details"]["search"] == "sampled"


@pytest.mark.parametrize("spec", ["elman:width=3,precision=2", "lstm:width=1,precision=2",
                                  "gru:width=2,dtype=float16"])
def test_random_models_below_the_bound(spec):
    d = run_reduction("eq-ineq", spec, 8, instances=300).to_dict()
    assert d["protocol_matches_model"] and d["bits_used"] == d["bits_formula"]
    if d["bits_used"] < 8:
        assert d["budget_ok"] is False and d["certificate"]["verified"]


def test_bits_formula_counts_the_state():
    lstm = random_model("lstm", 3, "5", vocab=2)
    d = run_reduction("eq-ineq", lstm, 4, instances=20).to_dict()
    assert d["bits_used"] == d["bits_formula"] == 30 and d["bits_formula_text"].startswith("2m*p")


#: the plans of a one-way handoff and of a protocol in which both parties speak
ONE_WAY_PLAN = MessagePlan(10, 0, 1, "Alice's state")
TWO_WAY_PLAN = MessagePlan(4, 4, 2, "both speak")


@pytest.mark.parametrize("rid,applies,bits,source", [
    ("index-idxl", False, ceil_log2(10) + 1, "Theorem 1"),
    ("index-assoc", False, ceil_log2(10) + 1, "Theorem 1"),
    ("eq-ineq", True, 10, "Theorem 12"),
    ("disj-mqar", True, 10, "DISJ"),
])
def test_bounds_for_one_way_and_two_way_protocols(rid, applies, bits, source):
    reduction = _reduction(rid)
    problem = reduction.problem(10)
    A, B = problem.sample(np.random.default_rng(0), 3)
    enc = reduction.encode(problem, A, B)
    one = reduction.lower_bound(None, ONE_WAY_PLAN, problem, enc)
    assert one.applies and one.bits == 10 and one.conditions.direction == "one-way"
    assert one.conditions.partition == "contiguous" and "[BHBK24]" in one.source + one.statement
    two = reduction.lower_bound(None, TWO_WAY_PLAN, problem, enc)
    assert two.applies is applies and two.bits == bits and source in two.source
    if not applies:
        assert "two-way" in two.reason and "Theorem 1" in two.reason
    else:
        assert two.conditions.direction == "two-way"


def test_bound_sources_name_the_theorems():
    sources = {rid: _reduction(rid).one_way_bound(8).source for rid in RNN_REDUCTIONS}
    assert "Theorem 3" in sources["index-idxl"] and "Proposition 9" in sources["index-assoc"]
    assert "[SHT23]" in sources["index-qsa"] and "Theorem 11" in sources["eq-ineq"]
    assert "Theorem 8" in sources["disj-mqar"]
    assert "N/2" in _reduction("eq-ineq").one_way_bound(8).statement


def test_reduction_refuses_a_model_with_too_few_tokens():
    with pytest.raises(NotApplicable, match="reads only 3"):
        run_reduction("index-idxl", random_model("elman", 2, "8", vocab=3), 4)


# ---- the command line ---------------------------------------------------------------------------------
def _cli(capsys, *argv):
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
        raise SystemExit(0)
    out = capsys.readouterr()
    return exc.value.code or 0, out.out, out.err


def test_default_run_shows_a_verified_certificate(capsys):
    code, out, _ = _cli(capsys, "run", "index-idxl", "--json")
    d = json.loads(out)
    assert code == 0 and CONTRACT_KEYS <= set(d)
    assert d["model"] == "memorize:capacity=7" and d["n"] == 8 and d["instances_run"] == 2048
    assert d["certificate"]["kind"] == "collision" and d["certificate"]["verified"]
    code, out, _ = _cli(capsys, "run", "index-idxl")
    assert code == 0 and "A direct forward of the model confirms this" in " ".join(out.split())


@pytest.mark.parametrize("argv,match", [
    (["run", "index-idxl", "--model", "dfa:dyck22", "--n", "8"], "reads 4 input tokens"),
    (["run", "eq-ineq", "--n", "0"], "--n must be at least 1"),
    (["run", "disj-mqar", "--model", "elman:width=2,colour=red"], "unknown key"),
    (["run", "index-qsa", "--model", "gru:vocab=3"], "reads 3 input tokens"),
    (["run", "eq-ineq", "--n", "30"], "too many"),
])
def test_mismatches_exit_2_with_one_line(capsys, argv, match):
    code, out, err = _cli(capsys, *argv)
    assert code == 2 and match in err and len(err.strip().splitlines()) == 1


def test_a_dyck_string_is_not_an_rnn_split():
    """The odd/even Dyck split is not contiguous: the handoff must refuse it (when the Dyck reduction exists)."""
    with pytest.raises(InputError, match="contiguous|prefix|odd"):
        run_reduction("dyck22-fooling", "dfa:dyck22", 4)


@pytest.mark.slow
@pytest.mark.parametrize("rid", ["index-idxl", "eq-ineq", "disj-mqar"])
def test_exhaustive_certificate_search_at_n_20(rid):
    d = run_reduction(rid, "memorize:capacity=19", 20, instances=100).to_dict()
    assert d["certificate"]["kind"] == "collision" and d["certificate"]["verified"]
    assert "all 1048576 Alice inputs" in d["certificate_search"]


@pytest.mark.slow
def test_exhaustive_index_sweep_at_n_19():
    d = run_reduction("index-idxl", "elman:width=4,precision=8", 19, certify=False).to_dict()
    assert d["instances_run"] == 19 * 2 ** 19 and d["protocol_matches_model"] and d["bits_used"] == 32


# ---- bounds from what a simulator declares, never from its name ----------------------------------------
class _Declared(Simulator):
    """A simulator known only by what it declares; its name is misleading on purpose."""

    def __init__(self, name: str, partition_kind: str, one_way_splits: tuple):
        self.name, self.partition_kind, self.one_way_splits = name, partition_kind, one_way_splits


PREFIX_ONE_WAY = _Declared("attention-exchange", CONTIGUOUS_PREFIX, (CONTIGUOUS_PREFIX,))
ANY_TWO_WAY = _Declared("rnn-handoff", ANY_PARTITION, ())


def test_length_bounds_follow_the_declared_direction_not_the_name():
    eq = _reduction("eq-ineq")
    assert eq.length_bound(PREFIX_ONE_WAY, 64).conditions.direction == "one-way"
    two = eq.length_bound(ANY_TWO_WAY, 64)
    assert two.conditions.direction == "two-way" and "Theorem 12" in two.source and two.bits == 32
    idx = _reduction("index-idxl")
    # N = 64 tokens: Alice's 63 bits and Bob's index token, so Theorem 3 asks for 63 bits one-way
    assert idx.length_bound(PREFIX_ONE_WAY, 64).applies and idx.length_bound(PREFIX_ONE_WAY, 64).bits == 63
    assert not idx.length_bound(ANY_TWO_WAY, 64).applies          # INDEX two-way: only ceil(log2 n) + 1
    dyck = _reduction("dyck22-fooling")
    assert not dyck.length_bound(PREFIX_ONE_WAY, 64).applies       # no protocol for the odd/even split
    assert dyck.length_bound(ANY_TWO_WAY, 64).applies and dyck.length_bound(ANY_TWO_WAY, 64).bits == 63
    dyck.check(None, ANY_TWO_WAY, None)                             # accepted: it has an odd/even protocol
    with pytest.raises(NotApplicable, match="not contiguous"):
        dyck.check(None, PREFIX_ONE_WAY, None)
    qsa = _reduction("disj-qsa")
    assert not qsa.length_bound(PREFIX_ONE_WAY, 9).applies         # Alice's query alone is no prefix
    assert qsa.length_bound(ANY_TWO_WAY, 9).conditions.direction == "two-way"
    match3 = _reduction("disj-match3")
    assert match3.length_bound(PREFIX_ONE_WAY, 9).conditions.direction == "one-way"
    assert match3.length_bound(ANY_TWO_WAY, 9).bits == 4


# ---- memorize: the reduction hands its memory program over -------------------------------------------
@pytest.mark.parametrize("rid", RNN_REDUCTIONS)
def test_the_reduction_hands_its_memory_program_to_memorize(rid):
    context = _reduction(rid).model_context(5)
    assert context["memory_program"].slots == 5
    model = make_model("memorize:capacity=3", **context)
    assert model.program is context["memory_program"] and model.state_bits == 3


@pytest.mark.parametrize("rid", ["disj-match3", "disj-qsa", "dyck22-fooling"])
def test_memorize_is_refused_by_reductions_without_a_memory_layout(rid):
    with pytest.raises(NotApplicable, match=f"memorize has no memory layout for {rid}"):
        run_reduction(rid, "memorize", 4)


def test_memorize_and_reductions_do_not_import_each_other():
    import grimp
    graph = grimp.build_graph("protocols", "commsim", cache_dir=None)
    for module in graph.find_descendants("protocols.reductions") | {"protocols.reductions"}:
        assert not any(m.startswith("protocols.models") for m in graph.find_modules_directly_imported_by(module))
    for module in ("protocols.models.memorize", "protocols.models.recurrent_spec"):
        imported = graph.find_modules_directly_imported_by(module)
        assert not any(m.startswith("protocols.reductions") for m in imported) and "commsim.plugins" not in imported


def test_eq_decoding_keeps_a_label_that_is_not_a_bit():
    """INEQ 0/1 decodes to EQ 1/0; a label of a model with more classes is no EQ answer at all (never -2)."""
    red = load_plugins().get("reduction", "eq-ineq")
    labels = np.array([[0], [1], [3], [2]])
    assert red.decode(labels, np.zeros((4, 0))).tolist() == [1, 0, 3, 2]
