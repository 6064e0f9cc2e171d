"""commsim's higher-order graph unit for Directed 3-Cycle: exact on every loopless digraph at small N, its pair
kernels against a plain integer reference, the refusal of the node-partition protocol, and `separate 3cycle`."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from commsim.contract.arithmetic import FixedArithmetic
from commsim.core.precision import FixedPoint
from protocols.constructions.cycle3 import build_cycle3_pair
from protocols.models.pair_attention import khatri_rao_values, trilinear_logits
from protocols.reductions.graph import cycle3_graphs, directed_3cycle, loopless_digraphs
from protocols.theorems import cycle3_min_lhmp


@pytest.mark.parametrize("N", [1, 2, 3, 4])
def test_the_unit_decides_directed_3cycle_on_every_loopless_digraph(N):
    """All 2^(N(N-1)) loopless digraphs (4096 at N = 4; N = 5's 2^20 were checked once, see docs/RESULTS.md)."""
    X = loopless_digraphs(N)
    assert len(X) == 1 << (N * (N - 1))
    unit = build_cycle3_pair(N)
    assert np.array_equal(unit.node_outputs(X), directed_3cycle(X))
    assert (unit.width, unit.precision) == (1, 8)


def test_the_unit_is_exact_on_random_larger_digraphs_and_the_reductions_graphs():
    rng = np.random.default_rng(0)
    for N in (9, 16):
        X = (rng.random((100, N, N)) < 2.0 / N).astype(np.int64) * (1 - np.eye(N, dtype=np.int64))
        assert np.array_equal(build_cycle3_pair(N).node_outputs(X), directed_3cycle(X))
    A, B = rng.integers(0, 2, (64, 16)), rng.integers(0, 2, (64, 16))
    assert np.array_equal(build_cycle3_pair(12).graph_labels(cycle3_graphs(A, B)), (A & B).max(axis=1))


def test_pair_kernels_are_the_rounded_integer_sums():
    """a_ijk = floor(sum_c q k1 k2 / 2^(2F)) and v_jk = floor(v1 v2 / 2^F), saturated, against Python integers."""
    fmt = FixedPoint(6, 2)
    ar = FixedArithmetic(fmt)
    rng = np.random.default_rng(1)
    q, k1, k2 = (rng.integers(fmt.min_code, fmt.max_code + 1, (2, 3, 2)) for _ in range(3))
    got = trilinear_logits(ar, q, k1, k2)
    kr = khatri_rao_values(ar, k1, k2)
    for b in range(2):
        for i in range(3):
            for j in range(3):
                for k in range(3):
                    exact = sum(int(q[b, i, c]) * int(k1[b, j, c]) * int(k2[b, k, c]) for c in range(2))
                    assert got[b, i, 3 * j + k] == min(max(exact >> 4, fmt.min_code), fmt.max_code)
                    for c in range(2):
                        prod = (int(k1[b, j, c]) * int(k2[b, k, c])) >> 2
                        assert kr[b, 3 * j + k, c] == min(max(prod, fmt.min_code), fmt.max_code)


def test_a_format_that_breaks_the_hard_attention_is_refused():
    from protocols.constructions.common import ConstructionError
    with pytest.raises(ConstructionError, match="frac=2"):
        build_cycle3_pair(4, fmt=FixedPoint(8, 3))


def _commsim(*args):
    return subprocess.run([sys.executable, "-m", "commsim", *args], capture_output=True, text=True, timeout=300)


def test_run_refuses_the_node_partition_protocol_with_the_reason():
    out = _commsim("run", "disj-3cycle", "--n", "3", "--model", "construct:3cycle-pair")
    assert out.returncode == 2
    assert "does not factor" in out.stderr and out.stderr.count("\n") == 1


def test_separate_3cycle_shows_both_sides(tmp_path):
    out = _commsim("separate", "3cycle", "--n", "12", "--json", "--plot", str(tmp_path / "c.svg"),
                   "--html", str(tmp_path / "c.html"))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["all_verified"] and [r["N"] for r in report["rows"]] == [3, 6, 12]
    for row in report["rows"]:
        n = row["n"]
        assert row["unit_bits"] == 8 and row["accuracy"] == 1.0 and row["reduction_accuracy"] == 1.0
        assert row["exchange_bits"] == 1 * 1 * 2 * n * 2 * 1 * 2 + 2 and row["exchange_exact"]
        assert row["min_lhmp"] == max(0.0, float(cycle3_min_lhmp(n)))
    assert report["rows"][0]["instances"] == "all" and report["rows"][0]["inputs"] == 64
    assert (tmp_path / "c.svg").stat().st_size > 0 and "3-Cycle" in (tmp_path / "c.html").read_text()
