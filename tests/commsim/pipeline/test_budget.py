"""commsim budget: protocol bits against the bound as a function of N, and max_n."""
import json

import pytest
from click.testing import CliRunner

from commsim.cli import cli
from commsim.pipeline.budget import budget, max_length, simulator_for_arch
from commsim.plugins import load_plugins


def test_rnn_width_128_precision_64_index_lookup_max_n_is_8192():
    """REFERENCE section 8: m p = 8192 bits, IdxL needs N bits, so N > 8192 is ruled out."""
    report = budget("rnn", 128, 64, "index-idxl")
    assert report.max_n == 8192
    assert report.bits == 8192
    assert report.bound.bits == 8192


@pytest.mark.parametrize("task, expected", [("eq-ineq", 2 * 64 + 1), ("disj-mqar", 2 * 64 + 1),
                                            ("index-assoc", 2 * 64 + 2), ("index-qsa", 65)])
def test_rnn_max_n_follows_each_theorem_form(task, expected):
    # width 8 at 8 bits = 64 state bits; eq/mqar bound N/2, assoc (N-1)/2, qsa N-1
    assert budget("rnn", 8, 8, task).max_n == expected


def test_max_n_is_the_exact_crossing_for_attention():
    red = load_plugins().get("reduction", "dyck22-fooling")
    attention = simulator_for_arch("attention")
    limit = max_length(red, attention, 8, 16, 2)
    bits = attention.budget_bits
    assert bits(8, 16, 2, limit)[0] >= red.length_bound(attention, limit).bits
    assert bits(8, 16, 2, limit + 1)[0] < red.length_bound(attention, limit + 1).bits


def test_budget_bits_are_the_theorems_counts():
    """Theorem 2: m·p whatever N; Theorem 4: 3m(p + ceil(log2 N))H (144 at m = 4, p = 8, H = 1, N = 16)."""
    rnn, attention = simulator_for_arch("rnn"), simulator_for_arch("attention")
    assert rnn.budget_bits(128, 64, 1, 10)[0] == rnn.budget_bits(128, 64, 1, 10 ** 6)[0] == 128 * 64
    assert attention.budget_bits(4, 8, 1, 16)[0] == 3 * 4 * (8 + 4) * 1 == 144
    assert attention.budget_bits(4, 8, 2, 17)[0] == 3 * 4 * (8 + 5) * 2
    report = budget("attention", 4, 8, "dyck22-fooling", n=16)
    assert (report.bits, report.bound.bits) == (144, 15) and report.to_dict()["bits_formula"] == 144


def test_heads_is_refused_for_an_architecture_without_heads():
    from commsim.core.errors import InputError
    with pytest.raises(InputError, match=r"heads is only for the architecture\(s\) attention"):
        budget("rnn", 2, 8, "eq-ineq", heads=2)


def test_bounds_that_do_not_apply_leave_n_unbounded():
    assert budget("rnn", 1, 1, "dyck22-fooling").max_n is None          # a 7-state automaton suffices
    assert budget("attention", 1, 1, "index-idxl").max_n is None        # two-way: only log n + 1


def test_budget_json_and_table_and_plot(tmp_path):
    runner = CliRunner()
    out = runner.invoke(cli, ["budget", "--arch", "rnn", "--width", "128", "--precision", "64",
                              "--task", "index-idxl", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    for key in ("arch", "task", "width", "precision", "heads", "bits_formula", "lower_bound_bits", "max_n", "verdict"):
        assert key in data
    assert data["max_n"] == 8192
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
                                  ["--arch", "gru", "--width", "2", "--precision", "8", "--task", "eq-ineq"]])
def test_budget_bad_arguments_exit_2(args, capsys):
    from commsim.cli import main
    with pytest.raises(SystemExit) as exc:
        main(["budget", *args])
    assert exc.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
