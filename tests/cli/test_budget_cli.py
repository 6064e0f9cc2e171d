"""commsim budget is sound: real protocol bits (equal to run's), valid lengths, every (arch, task) pair answered."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from commsim.cli import cli
from commsim.contract import Shape, Split
from commsim.budget.compute import architectures, budget
from commsim.runs.run import run_reduction
from commsim.plugins import load_plugins
from commsim.theory.bounds import ceil_log2

#: the reductions with a protocol to budget (one judged directly, by a bound on the model's width, has none)
TASKS = sorted(e.name for e in load_plugins().entries("reduction") if not e.obj.judged_directly)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("arch", ["rnn", "attention"])
def test_every_pair_gives_a_bound_with_its_source_or_says_why_not(arch, task):
    out = CliRunner().invoke(cli, ["budget", "--arch", arch, "--width", "3", "--precision", "8", "--task", task,
                                   "--json"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    red = load_plugins().get("reduction", task)
    if d["bound_applies"]:
        assert isinstance(d["lower_bound_bits"], int) and d["lower_bound_source"]
        assert isinstance(d["protocol_bits"], int)
        for key in ("max_n", "first_ruled_out"):
            assert d[key] is None or red.is_valid_length(d[key])
    else:
        assert d["bound_note"] and d["verdict"].startswith("the bound does not apply")
    assert d["n_meaning"].startswith("N = ")


def test_attention_mqar_does_not_apply_appendix_c():
    d = budget("attention", 4, 8, "disj-mqar").to_dict()
    assert d["bound_applies"] is False and "Appendix C" in d["bound_note"]


@pytest.mark.parametrize("task", ["index-idxl", "index-assoc", "index-qsa"])
def test_attention_on_index_is_one_way_from_bob_with_the_log_n_bound(task):
    """Bob (the index holder) owns only the query: only he speaks, and INDEX_n costs ceil(log2 n) that way."""
    red = load_plugins().get("reduction", task)
    N = red.length_for_size(9)
    d = budget("attention", 4, 8, task, n=N).to_dict()
    assert d["bits_by_direction"]["alice_to_bob"] == 0 and d["bits_by_direction"]["bob_to_alice"] > 0
    assert d["bound_applies"] and d["lower_bound_bits"] == ceil_log2(9) == 4
    assert d["bound_direction"] == "one-way" and "Bob" in d["bound_note"]


def test_run_index_idxl_with_attention_reports_the_one_way_bound_from_bob():
    d = run_reduction("index-idxl", "attention:heads=1,width=4,precision=8,seed=0", 8, certify=False).to_dict()
    assert d["bits_by_direction"]["alice_to_bob"] == 0
    assert d["bound_applies"] and d["lower_bound_bits"] == ceil_log2(8) == 3
    assert "one-way from Bob" in d["bound_note"]


CASES = [("dyck22-fooling", 4), ("dyck22-fooling", 10), ("eq-ineq", 2), ("eq-ineq", 5), ("index-idxl", 6),
         ("disj-match3", 3), ("disj-qsa", 3), ("index-assoc", 3)]


@pytest.mark.parametrize("seed", range(4))
def test_budget_protocol_bits_equal_run_bits_used(seed):
    """For random (m, p, H): budget's protocol_bits, computed without running, are run's bits_used exactly."""
    rng = np.random.default_rng(seed)
    m, p, H = int(rng.integers(1, 6)), int(rng.integers(2, 20)), int(rng.integers(1, 4))
    for task, n in CASES:
        red = load_plugins().get("reduction", task)
        N = red.length_for_size(n) if task != "dyck22-fooling" else n
        ran = run_reduction(task, f"attention:heads={H},width={m},precision={p},seed=0", n if task != "dyck22-fooling"
                            else N, instances=4, certify=False).to_dict()
        assert ran["seq_len"] == N
        got = budget("attention", m, p, task, heads=H, n=N).to_dict()
        assert got["protocol_bits"] == ran["bits_used"], (task, m, p, H, N)
        assert got["bits_by_direction"] == ran["bits_by_direction"]
    for task, n in [("eq-ineq", 5), ("index-idxl", 6), ("disj-mqar", 3), ("index-qsa", 4)]:
        red = load_plugins().get("reduction", task)
        ran = run_reduction(task, f"elman:width={m},precision={max(p, 8)}", n, instances=4, certify=False).to_dict()
        got = budget("rnn", m, max(p, 8), task, n=red.length_for_size(n)).to_dict()
        assert got["protocol_bits"] == ran["bits_used"] == m * max(p, 8)


def test_architectures_are_rnn_and_attention():
    assert {"rnn", "attention"} <= set(architectures())


# ---- issue 24: the paper's max N, architectures by name, --solve, one meaning of N per flag ----------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from commsim.budget.compute import paper_fits, simulator_for_arch  # noqa: E402
from commsim.budget.solve import solve  # noqa: E402
from cli_helpers import invoke, run_main  # noqa: E402


def test_paper_max_n_beside_max_n_is_theorem_5_with_ceil_log2():
    """m = 64, p = 16, H = 2 on dyck22-fooling: the exact exchange allows 5736, Theorem 5's inequality
    3m(p + ceil(log2 N))H >= N - 1 allows 11520 (checked here from the formula, not from the code under test)."""
    d = budget("attention", 64, 16, "dyck22-fooling", heads=2).to_dict()
    assert d["max_n"] == 5736

    def theorem5(N):
        return 3 * 64 * (16 + ceil_log2(N)) * 2 >= N - 1
    assert theorem5(11520) and not theorem5(11522)
    assert all(theorem5(N) for N in range(2, 11521, 2))
    assert (d["paper_max_n"], d["paper_first_ruled_out"]) == (11520, 11522)
    assert "paper_max_n" in d["paper_note"] and "fewer than" in d["paper_note"]
    out = CliRunner().invoke(cli, ["budget", "--arch", "attention", "--width", "64", "--precision", "16", "--heads",
                                   "2", "--task", "dyck22-fooling"])
    assert out.exit_code == 0 and "paper's max N" in out.output and "11520" in out.output


def test_paper_max_n_agrees_with_max_n_when_the_protocol_sends_the_papers_count():
    d = budget("rnn", 128, 64, "index-idxl").to_dict()
    assert d["max_n"] == d["paper_max_n"] == 8193 and "agree" in d["paper_note"]


def test_dyck_budget_curve_is_labelled_as_lemma_1_not_theorem_5():
    """The lower-bound curve is N - 1 bits: Lemma 1's bound; Theorem 5 is the width inequality derived from it."""
    pytest.importorskip("matplotlib")
    from commsim.render.plots import budget_figure
    report = budget("attention", 4, 8, "dyck22-fooling", n_range=[8, 16, 32])
    assert report.bound.source == "Lemma 1 of [BHBK24]" and "Theorem 5" in report.bound.note
    fig = budget_figure(report)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("Lemma 1 of [BHBK24]" in label for label in labels)
    assert not any("Theorem 5" in label for label in labels)


# (arch spec, the model spec commsim run builds for the same width 3 at 8 bits)
NAMED = [("elman", "elman:width=3,precision=8"), ("gru", "gru:width=3,precision=8"),
         ("lstm", "lstm:width=3,precision=8"), ("ssm", "ssm:width=3,precision=8"),
         ("ssm:complex=false", "ssm:width=3,complex=false,precision=8"),
         ("linear-attention", "linear-attention:dim=3,precision=8"),
         ("linear-attention:normalize=true", "linear-attention:dim=3,normalize=true,precision=8")]


@pytest.mark.parametrize("arch, spec", NAMED)
def test_arch_by_name_counts_the_state_as_the_model_does(arch, spec):
    """budget --arch NAME --width 3 plans exactly the bits commsim run's handoff sends for that model (LSTM 2m,
    complex SSM 2d, linear attention d·d (+ d))."""
    ran = run_reduction("eq-ineq", spec, 5, instances=4, certify=False).to_dict()
    d = budget(arch, 3, 8, "eq-ineq", n=10).to_dict()
    assert d["protocol_bits"] == ran["bits_used"] and d["state_units"] * 8 == ran["bits_used"]
    assert d["arch"] == arch.split(":")[0] and d["width_meaning"]


def test_arch_names_are_offered_and_rnn_still_works():
    assert {"rnn", "attention", "elman", "gru", "lstm", "ssm", "linear-attention"} <= set(architectures())
    assert budget("rnn", 6, 8, "eq-ineq", n=10).to_dict()["protocol_bits"] == 48
    help_text = CliRunner().invoke(cli, ["budget", "--help"]).output
    for word in ("lstm", "2m numbers", "ssm", "linear-attention", "d·d"):
        assert word in help_text


@pytest.mark.parametrize("args, param", [
    (["--arch", "lstm:complex=true", "--width", "2", "--precision", "8"], "arch"),
    (["--arch", "ssm:complex=maybe", "--width", "2", "--precision", "8"], "arch"),
    (["--arch", "lstm", "--precision", "8"], "--width"),
    (["--arch", "lstm", "--precision", "8", "--solve", "width"], "--n"),
    (["--arch", "lstm", "--width", "2", "--precision", "8", "--solve", "heads", "--n", "9"], "solve")])
def test_bad_arch_and_solve_arguments_exit_2(args, param, capsys):
    code, _, err = run_main(capsys, ["budget", *args, "--task", "index-idxl"])
    assert code == 2 and len(err.strip().splitlines()) == 1 and param in err, err


def test_solve_answers_the_lstm_question_and_one_smaller_is_ruled_out():
    """How wide must a 16-bit LSTM be for index lookup at N = 4096?  (h, c) = 2m numbers of 16 bits >= 4095."""
    out = CliRunner().invoke(cli, ["budget", "--arch", "lstm", "--precision", "16", "--task", "index-idxl",
                                   "--solve", "width", "--n", "4096", "--json"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    assert d["solve"]["value"] == d["width"] == 128 and d["n"] == 4096
    assert d["solve"]["one_smaller"] == {"value": 127, "protocol_bits": 2 * 127 * 16, "ruled_out": True}
    assert not budget("lstm", 127, 16, "index-idxl", n=4096).judgement.fits


SOLVE_CASES = st.one_of(
    st.tuples(st.sampled_from(["elman", "lstm", "ssm", "linear-attention", "rnn"]),
              st.sampled_from(["index-idxl", "eq-ineq", "disj-mqar", "index-assoc"]),
              st.sampled_from(["width", "precision"]), st.integers(3, 5000)),
    st.tuples(st.just("attention"), st.sampled_from(["dyck22-fooling", "eq-ineq", "index-idxl", "disj-match3"]),
              st.sampled_from(["width", "precision", "heads"]), st.integers(3, 400)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SOLVE_CASES)
def test_solved_size_is_not_ruled_out_and_one_smaller_is(case):
    """The solved size fits the plan run executes at N; one smaller does not (or the bound does not apply, or the
    size is the smallest there is)."""
    arch, task, parameter, N = case
    sizes = {"width": 2, "precision": 8, "heads": 1}
    try:
        report = solve(arch, task, parameter, N, **{k: v for k, v in sizes.items() if k != parameter})
    except Exception as exc:           # only the truthful "no size up to the cap is enough"
        assert "is enough" in str(exc), exc
        return
    s, L = report.solve, report.n
    value = s["value"]
    got = {**sizes, parameter: value}
    again = budget(arch, got["width"], got["precision"], task, heads=got["heads"], n=L)
    assert again.judgement.fits
    if not again.bound.applies:
        return
    if s["one_smaller"] is not None:
        lower = {**got, parameter: s["one_smaller"]["value"]}     # precision: 53 below float64's 64
        below = budget(arch, lower["width"], lower["precision"], task, heads=lower["heads"], n=L)
        assert not below.judgement.fits and s["one_smaller"]["ruled_out"]
    else:
        assert value == 1 or (parameter == "precision" and arch == "attention" and value == 2)


@pytest.mark.parametrize("task", TASKS)
def test_every_output_shows_the_run_size_beside_n(task):
    """budget --n is tokens; run_n is the run --n whose encoding has that many tokens (run's seq_len)."""
    red = load_plugins().get("reduction", task)
    N = red.length_for_size(3 if task != "dyck22-fooling" else 2)
    d = budget("rnn", 4, 8, task, n=N, n_range=[N]).to_dict()
    assert "tokens" in d["n_flag"] and "run --n" in d["n_flag"]
    assert red.seq_len(d["run_n"]) == d["n"] == N
    assert d["table"][0]["run_n"] == d["run_n"]
    out = CliRunner().invoke(cli, ["budget", "--arch", "rnn", "--width", "4", "--precision", "8", "--task", task,
                                   "--n", str(N)])
    assert f"run --n {d['run_n']}" in out.output
    assert "tokens" in CliRunner().invoke(cli, ["budget", "--help"]).output


def test_paper_fits_is_the_papers_inequality():
    sim = simulator_for_arch("attention")
    red = load_plugins().get("reduction", "dyck22-fooling")
    assert paper_fits(red, sim, 1, 16, 1, 80) == (3 * 1 * (16 + 7) * 1 >= 79)


def test_budget_plans_the_graph_exchange_with_its_public_nodes_as_run_sends_it():
    """disj-3cycle's W nodes are public (Reduction.public_positions): budget's plan leaves them out exactly as
    run's exchange does, so max N is the last n whose run is not below the bound (n = 8: 66 >= 64; n = 9: 74 < 81)."""
    d = invoke("budget", "--arch", "graph-attention", "--width", "1", "--precision", "2", "--reduction", "disj-3cycle",
               "--json")
    assert (d["max_n"], d["run_n"], d["protocol_bits"], d["lower_bound_bits"]) == (576, 8, 66, 64)
    ran = invoke("run", "disj-3cycle", "--model", "graph-attention:layers=1,heads=1,width=1,precision=2", "--n", "9",
                 "--instances", "64", "--no-certificate", "--json")
    assert (ran["bits_used"], ran["lower_bound_bits"], ran["budget_ok"]) == (74, 81, False)


# ---- fixes: the paper's count only for the protocol the paper counts; an undercount is not cited ----------------
from commsim.budget.compute import judge  # noqa: E402


def test_disj_qsa_has_no_papers_count_and_no_papers_max_n():
    """The one-way qSA protocol is not Theorem 4's two-way exchange: no paper's count, no paper's max N; the bound
    min(d·p, (2m + 1)·p·H) >= q gives max N = 2·64 + 1 = 129 (m = 4, p = 8, d = 8: min(64, 72) = 64)."""
    d = budget("attention", 4, 8, "disj-qsa").to_dict()
    assert d["bits_formula"] is None and d["bits_formula_text"].startswith("none")
    assert (d["paper_max_n"], d["paper_first_ruled_out"]) == (None, None) and d["paper_note"].startswith("none")
    assert (d["max_n"], d["first_ruled_out"]) == (129, 131) and d["lower_bound_bits"] == 64
    assert all(r["bits_formula"] is None for r in budget("attention", 4, 8, "disj-qsa", n_range=[9, 65]).table)
    out = CliRunner().invoke(cli, ["budget", "--arch", "attention", "--width", "4", "--precision", "8",
                                   "--reduction", "disj-qsa"])
    assert out.exit_code == 0, out.output
    assert "cite paper_max_n" not in out.output and "Theorem 4" in out.output and "409" not in out.output


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(width=st.integers(1, 6), precision=st.integers(2, 53), heads=st.integers(1, 3))
def test_papers_max_n_is_cited_only_when_the_count_covers_the_protocol(width, precision, heads):
    """"cite paper_max_n" only when the protocol sends no more than the paper's count at N and at paper_max_n;
    when it sends more, the note says the count undercounts and the paper's max N is not supported."""
    d = budget("attention", width, precision, "dyck22-fooling", heads=heads).to_dict()
    sim, red = simulator_for_arch("attention"), load_plugins().get("reduction", "dyck22-fooling")
    lengths = [L for L in (d["n"], d["paper_max_n"]) if L is not None and L <= sim.plan_limit]
    over = [L for L in lengths if judge(red, sim, width, precision, heads, L).protocol_bits
            > sim.paper_count(Shape(width, precision, heads), Split(L))[0]]
    assert all(red.is_valid_length(L) for L in lengths)
    if over:
        assert "undercounts" in d["paper_note"] and "not supported" in d["paper_note"]
        assert "cite paper_max_n" not in d["paper_note"]
    else:
        assert "undercounts" not in d["paper_note"]


def test_dyck_undercount_example_is_not_cited():
    """m = 1, p = 48, d = 8: the exchange sends 230 bits at N = 230, Theorem 4's count is 168."""
    d = budget("attention", 1, 48, "dyck22-fooling", dim=8).to_dict()
    assert (d["protocol_bits"], d["bits_formula"], d["max_n"]) == (230, 168, 230)
    assert "undercounts this protocol (230 > 168 bits" in d["paper_note"] and "max N is 230" in d["paper_note"]
    assert "cite paper_max_n" not in d["paper_note"]


def test_budget_page_says_none_for_the_papers_count_of_disj_qsa():
    from commsim.render.reports import budget_page
    text = budget_page(budget("attention", 4, 8, "disj-qsa"), "commsim budget")
    assert "none: Theorem 4 of [BHBK24] counts the two-way exchange" in text and "None" not in text


@pytest.mark.parametrize("arch, symbol", [("lstm", "2m"), ("ssm", "2d"), ("ssm:complex=false", "d"),
                                          ("linear-attention", "d·d"), ("elman", "m"), ("rnn", "m")])
def test_handoff_texts_use_the_architectures_letters_and_the_bound_names_the_index_size(arch, symbol):
    """An LSTM of hidden size m hands off 2m numbers: the panel says 2m·p, never m·p with m = 2·width; the
    bound's size is INDEX's n = N - 1 (N is the tokens, the index token included)."""
    d = budget(arch, 8, 16, "index-idxl", n=4096).to_dict()
    for text in (d["protocol_text"], d["bits_formula_text"]):
        assert f"{symbol}·p = {d['state_units'] if d['state_units'] else 8}·16" in text
        assert symbol == "m" or "m·p" not in text.replace(f"{symbol}·p", "")
    assert f"{symbol}*p >= n = 4095 (the index size" in d["bound_note"] and "N = 4095" not in d["bound_note"]
    assert d["n"] == 4096


@pytest.mark.parametrize("seed", range(3))
def test_budget_plans_the_public_query_message_run_sends_for_compose_index(seed):
    """budget plans what run runs for composition: the reduction's one-way public-query variant (Alice's partial
    softmax), so budget's protocol_bits and directions are run's, the [PNP24] one-way bound applies and the
    paper's count is [PNP24]'s H(d + 1)p."""
    rng = np.random.default_rng(seed)
    m, p, H, d, n = (int(rng.integers(1, 4)), int(rng.integers(2, 9)), int(rng.integers(1, 3)),
                     int(rng.integers(1, 5)), int(rng.integers(2, 6)))
    ran = run_reduction("compose-index", f"attention:heads={H},width={m},dim={d},precision={p},classes={n},seed=0",
                        n, instances=4, certify=False).to_dict()
    got = budget("attention", m, p, "compose-index", heads=H, n=2 * n + 1, dim=d).to_dict()
    assert got["protocol_bits"] == ran["bits_used"] and got["bits_by_direction"] == ran["bits_by_direction"]
    assert got["bits_by_direction"]["bob_to_alice"] == 0
    assert got["bound_applies"] and got["lower_bound_bits"] == ran["lower_bound_bits"]
    assert got["bits_formula"] == ran["bits_formula"] == H * (d + 1) * p


def test_tester_compose_index_example_is_one_way_and_bounded():
    d = budget("attention", 1, 4, "compose-index", n=9, dim=2).to_dict()
    assert d["bound_applies"] and d["lower_bound_bits"] == 8 and d["bound_direction"] == "one-way"
    assert d["max_n"] is not None and d["bits_by_direction"]["bob_to_alice"] == 0


@pytest.mark.parametrize("m, p", [(1, 2), (2, 3), (1, 8)])
def test_graph_count_owns_2n_nodes_as_the_3cycle_bound_does(m, p):
    """disj-3cycle: the count is L·H·(2n owned nodes)·2m·p + 2 (the public W rows are not sent), the form of the
    bound (n^2 - 2)/(4n); so the count's max N is the first n with 4nmp + 2 < n^2 (m = 1, p = 2: n = 9, 74 < 81, as
    `teach graph-transformers` shows), and the panel's N is only tokens (the nodes are 3n)."""
    d = budget("graph-attention", m, p, "disj-3cycle").to_dict()
    n_out = next(n for n in range(2, 10 ** 4) if 4 * n * m * p + 2 < n * n)
    assert (d["paper_max_n"], d["paper_first_ruled_out"]) == ((3 * (n_out - 1)) ** 2, (3 * n_out) ** 2)
    n = int(d["n"] ** 0.5) // 3
    assert d["bits_formula"] == 2 * n * 2 * m * p + 2 == d["protocol_bits"]
    assert "commsim's exact count" in d["bits_formula_text"] and "every node owned" not in d["bits_formula_text"]
    for text in (d["protocol_text"], d["bits_formula_text"], d["bound_note"]):
        assert f"N = {3 * n}" not in text
    if (m, p) == (1, 2):
        assert (d["paper_max_n"], d["paper_first_ruled_out"]) == (576, 729)
