"""commsim budget is sound: real protocol bits (equal to run's), valid lengths, every (arch, task) pair answered."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from commsim.cli import cli
from commsim.pipeline.budget import architectures, budget
from commsim.pipeline.run import run_reduction
from commsim.plugins import load_plugins
from commsim.theory.bounds import ceil_log2

TASKS = sorted(e.name for e in load_plugins().entries("reduction"))


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
