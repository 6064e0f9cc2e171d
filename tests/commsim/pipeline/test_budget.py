"""commsim budget: protocol bits against the bound as a function of N, and max_n."""
import json

import pytest
from click.testing import CliRunner

from commsim.cli import cli
from commsim.contract import Shape, Split
from commsim.budget.compute import budget, simulator_for_arch
from commsim.budget.solve import solve as budget_solve
from commsim.plugins import load_plugins


def test_rnn_width_128_precision_64_index_lookup_max_n_is_8193_tokens():
    """Theorem 3: m·p >= n for IdxL on n bits; N = n + 1 tokens (the index token), so N = 8193."""
    report = budget("rnn", 128, 64, "index-idxl")
    assert report.max_n == 8193 and report.first_ruled_out == 8194
    assert report.bits == 8192 and report.bound.bits == 8192


# width 10, precision 8: m·p = 80 state bits (the issue's values, from the theorems' statements)
@pytest.mark.parametrize("task, expected", [
    ("eq-ineq", 2 * 80),          # Theorem 11: m·p >= n, N = 2n (INEQ has even lengths)
    ("disj-mqar", 3 * 80),        # Theorem 8: m·p >= n, N = 3n tokens (n labelled keys, n queries)
    ("index-assoc", 2 * 80 + 1),  # Proposition 9: 80 pairs = 161 tokens
    ("disj-match3", 2 * 80 + 1),  # DISJ_n, N = 2n + 1
    ("index-idxl", 80 + 1),       # Theorem 3: n bits and the index token
    ("index-qsa", 80 + 1)])       # [SHT23], q = 1: n data positions and the query
def test_rnn_max_n_is_the_largest_valid_length(task, expected):
    report = budget("rnn", 10, 8, task)
    red = load_plugins().get("reduction", task)
    assert report.max_n == expected and red.is_valid_length(expected)
    assert report.first_ruled_out == min(L for L in range(expected + 1, expected + 4) if red.is_valid_length(L))


def test_attention_dyck_max_n_is_even_and_agrees_with_the_verdicts():
    report = budget("attention", 10, 8, "dyck22-fooling")
    assert report.max_n % 2 == 0 and report.first_ruled_out == report.max_n + 2
    assert "not ruled out" in budget("attention", 10, 8, "dyck22-fooling", n=report.max_n).verdict
    assert budget("attention", 10, 8, "dyck22-fooling", n=report.first_ruled_out).verdict.startswith("ruled out")


def test_issue_example_is_not_ruled_out_by_the_real_protocol():
    """The exchange really sends 84 bits at N = 80 (m = 1, p = 16): >= 79; the paper's count 69 is shown beside."""
    d = budget("attention", 1, 16, "dyck22-fooling", n=80).to_dict()
    assert (d["protocol_bits"], d["bits_formula"], d["lower_bound_bits"]) == (84, 69, 79)
    assert d["verdict"].startswith("not ruled out") and any("lower than" in note for note in d["notes"])


def test_budget_bits_are_the_theorems_counts():
    """Theorem 2: m·p whatever N; Theorem 4: 3m(p + ceil(log2 N))H (144 at m = 4, p = 8, H = 1, N = 16)."""
    rnn, attention = simulator_for_arch("rnn"), simulator_for_arch("attention")
    at = {N: rnn.paper_count(Shape(128, 64), Split(N))[0] for N in (10, 10 ** 6)}
    assert at[10] == at[10 ** 6] == 128 * 64
    assert attention.paper_count(Shape(4, 8, 1), Split(16))[0] == 3 * 4 * (8 + 4) * 1 == 144
    assert attention.paper_count(Shape(4, 8, 2), Split(17))[0] == 3 * 4 * (8 + 5) * 2
    report = budget("attention", 4, 8, "dyck22-fooling", n=16)
    assert (report.bits, report.bound.bits) == (144, 15) and report.to_dict()["bits_formula"] == 144


def test_heads_is_refused_for_an_architecture_without_heads():
    from commsim.core.errors import InputError
    with pytest.raises(InputError, match=r"heads is only for the architecture\(s\) attention"):
        budget("rnn", 2, 8, "eq-ineq", heads=2)


def test_bounds_that_do_not_apply_leave_n_unbounded():
    assert budget("rnn", 1, 1, "dyck22-fooling").max_n is None          # a 7-state automaton suffices
    # one-way from Bob: q_N and the query's own term, 2 + 4 = 6 bits, tell at most 2^6 = 64 indices apart
    report = budget("attention", 1, 2, "index-idxl")
    assert (report.max_n, report.first_ruled_out) == (64 + 1, 65 + 1)


def test_budget_json_and_table_and_plot(tmp_path):
    runner = CliRunner()
    out = runner.invoke(cli, ["budget", "--arch", "rnn", "--width", "128", "--precision", "64",
                              "--task", "index-idxl", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    for key in ("arch", "task", "width", "precision", "heads", "bits_formula", "lower_bound_bits", "max_n", "verdict"):
        assert key in data
    assert data["max_n"] == 8193 and data["n_meaning"].startswith("N = n + 1 tokens")
    plot = tmp_path / "b.png"
    out = runner.invoke(cli, ["budget", "--arch", "attention", "--width", "4", "--precision", "8", "--heads", "2",
                              "--task", "eq-ineq", "--n-range", "8:1024", "--plot", str(plot)])
    assert out.exit_code == 0, out.output
    assert plot.stat().st_size > 1000
    assert "over N" in out.output


@pytest.mark.parametrize("args", [["--arch", "rnn", "--width", "0", "--precision", "8", "--task", "eq-ineq"],
                                  ["--arch", "rnn", "--width", "2", "--precision", "8", "--task", "nope"],
                                  ["--arch", "rnn", "--width", "2", "--precision", "8", "--task", "eq-ineq",
                                   "--n-range", "x:y"],
                                  ["--arch", "rnn", "--width", "2", "--precision", "8", "--heads", "2",
                                   "--task", "eq-ineq"],
                                  ["--arch", "mamba2", "--width", "2", "--precision", "8", "--task", "eq-ineq"]])
def test_budget_bad_arguments_exit_2(args, capsys):
    from commsim.cli import main
    with pytest.raises(SystemExit) as exc:
        main(["budget", *args])
    assert exc.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.parametrize("precision", [54, 63, 65, 100])
@pytest.mark.parametrize("arch", ["elman", "lstm", "rnn"])
def test_a_precision_run_cannot_build_is_refused_for_every_arch(arch, precision):
    """One limit: budget takes the number widths run builds (fixed point up to 53 bits, float64's 64); run
    refuses the same widths for the recurrent model."""
    from commsim.core.errors import InputError
    from commsim.plugins import make_model
    with pytest.raises(InputError) as exc:
        budget(arch, 4, precision, "index-idxl")
    assert exc.value.param == "precision"
    with pytest.raises(InputError):
        make_model(f"elman:width=4,precision={precision}", **load_plugins().get("reduction", "index-idxl")
                   .model_context(4))


def test_solve_precision_steps_from_53_to_float64():
    """The precisions searched are the widths run builds: past 53 bits the next is float64's 64."""
    s = budget_solve("rnn", "index-idxl", "precision", 62, width=1).solve
    assert (s["value"], s["one_smaller"]["value"], s["one_smaller"]["ruled_out"]) == (64, 53, True)


def test_budget_cli_refuses_precision_100_with_exit_2(capsys):
    from commsim.cli import main
    with pytest.raises(SystemExit) as exc:
        main(["budget", "--arch", "elman", "--width", "4", "--precision", "100", "--reduction", "index-idxl"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "precision" in err[0]
