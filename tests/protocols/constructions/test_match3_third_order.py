"""[SHT23]'s third-order attention and commsim's Match3 unit: exact on every input at small N and M, on random
inputs and disj-match3's instances beyond; the refusal of the attention exchange; `separate match3`."""
from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

from commsim.core.precision import FixedPoint
from protocols.constructions.match3 import (
    build_match3_third_order,
    match3_all_positions,
)
from protocols.models.third_order_spec import random_third_order
from protocols.reductions.attention_tasks import DisjMatch3


@pytest.mark.parametrize("N,M", [(3, 3), (4, 5), (5, 5), (5, 7), (6, 4), (4, 11)])
def test_the_unit_computes_match3_on_every_input(N, M):
    unit = build_match3_third_order(N, M)
    Z = np.array(list(itertools.product(range(M), repeat=N)), dtype=np.int64)
    assert np.array_equal(unit.decide(Z), match3_all_positions(Z, M))
    assert min(unit.info["margins"]) >= 0
    assert (unit.width, unit.value_width, unit.dim) == (5 + 3 * N, 1, 4 + N)     # one-hot codes at small N


@pytest.mark.parametrize("N,M,codes", [(9, 19, "auto"), (17, 35, "auto"), (8, 5, "lemma2")])
def test_the_unit_on_random_inputs_beyond(N, M, codes):
    unit = build_match3_third_order(N, M, codes=codes)
    Z = np.random.default_rng(N).integers(0, M, size=(200, N))
    assert np.array_equal(unit.decide(Z), match3_all_positions(Z, M))
    if codes == "lemma2":
        assert unit.info["codes"] == "lemma2" and 0 < unit.info["code_G"] < unit.info["code_D"]


def test_the_unit_decides_disj_on_the_reductions_instances():
    reduction = DisjMatch3()
    for n in (1, 2, 3):
        problem = reduction.problem(n)
        A, B = problem.all_pairs()
        tokens = reduction.encode(problem, A, B).tokens
        unit = build_match3_third_order(2 * n + 1, 2 * n + 3)
        assert np.array_equal(unit.decide(tokens)[:, -1], problem.evaluate_batch(A, B))


def test_third_order_logits_are_the_trilinear_form_of_the_embeddings():
    """a_ijk = floor(sum_c q_ic k1_jc k2_kc) on the codes, against a plain loop."""
    fmt = FixedPoint(10, 3)
    unit = random_third_order(fmt, vocab=4, positions=3, width=2, dim=3, seed=5)
    tokens = np.array([[0, 3, 1], [2, 2, 0]])
    got = unit.logits(tokens)
    x = unit.embed(tokens)
    ar = unit.arithmetic
    q, k1, k2 = (ar.matmul(x, unit._W[n]) for n in ("W_Q", "W_K1", "W_K2"))
    for b, i, j, k in itertools.product(range(2), range(3), range(3), range(3)):
        exact = sum(int(q[b, i, c]) * int(k1[b, j, c]) * int(k2[b, k, c]) for c in range(2))
        assert got[b, i, 3 * j + k] == min(max(exact >> 6, fmt.min_code), fmt.max_code)


def _commsim(*args):
    return subprocess.run([sys.executable, "-m", "commsim", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("model", ["construct:match3-third-order", "third-order-attention:width=2,seed=1"])
def test_run_refuses_the_attention_exchange_with_the_reason(model):
    out = _commsim("run", "disj-match3", "--model", model)
    assert out.returncode == 2
    assert "does not factor" in out.stderr and "mixes one of Alice's tokens with one of Bob's" in out.stderr
    assert out.stderr.count("\n") == 1


def test_separate_match3_shows_both_sides(tmp_path):
    out = _commsim("separate", "match3", "--n", "9", "--json", "--plot", str(tmp_path / "m.svg"),
                   "--html", str(tmp_path / "m.html"))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["all_verified"] and [r["N"] for r in report["rows"]] == [3, 5, 9]
    first = report["rows"][0]
    assert first["instances"] == "all" and first["inputs"] == 5 ** 3 and first["accuracy"] == 1.0
    for row in report["rows"]:
        assert row["exchange_exact"] and row["reduction_accuracy"] == 1.0 and row["disj_bits"] == row["n"]
    assert (tmp_path / "m.svg").stat().st_size > 0 and "Match3" in (tmp_path / "m.html").read_text()
