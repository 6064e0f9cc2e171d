"""protocols.theorems: every formula against values computed by hand from the papers' statements,
and `commsim run` and `commsim budget` reporting the same theorem's count for the same model."""
from __future__ import annotations

import json
from fractions import Fraction

import pytest

from commsim.budget.compute import budget
from commsim.runs.run import run_reduction
from commsim.theory.fooling import fooling_set
from protocols.theorems import (
    attention_min_width,
    disjointness_bits,
    dyck_fooling_bits,
    dyck_min_width,
    equality_bits,
    exchange_bits,
    exchange_text,
    handoff_bits,
    index_one_way_bits,
    index_two_way_protocol_bits,
    one_way_attention_bits,
    query_bits,
)


# ---- Theorem 2 of [BHBK24]: the hidden-state handoff sends m·p bits ---------------------------------
def test_theorem_2_handoff_is_m_times_p():
    assert handoff_bits(4, 8) == 32
    assert handoff_bits(128, 64) == 8192          # [BHBK24] section 6: hidden state 128 at 64 bits
    assert handoff_bits(2 * 5, 7) == 70           # an LSTM's state (h, c): 2m units of p bits


def test_theorem_3_rules_out_index_lookup_beyond_m_times_p():
    """Theorem 3 = Theorem 2 + Fact 3: m·p >= N; with m = 128, p = 64 every N > 8192 is ruled out."""
    assert handoff_bits(128, 64) >= index_one_way_bits(8192)
    assert handoff_bits(128, 64) < index_one_way_bits(8193)


# ---- Theorem 4 of [BHBK24]: the one-layer attention exchange, 3m(p + log N)H bits -------------------
@pytest.mark.parametrize("m, p, H, N, expected", [
    (4, 8, 1, 16, 3 * 4 * (8 + 4) * 1),          # 144
    (2, 16, 8, 1024, 3 * 2 * (16 + 10) * 8),     # 1248
    (4, 8, 1, 17, 3 * 4 * (8 + 5) * 1),          # log N rounded up: ceil(log2 17) = 5
    (3, 5, 2, 1, 3 * 3 * (5 + 0) * 2),           # N = 1: no log term
])
def test_theorem_4_count(m, p, H, N, expected):
    assert exchange_bits(m, p, H, N) == expected
    assert exchange_text(m, p, H, N).endswith(f"= {expected}")


def test_the_query_and_the_one_way_sht23_message():
    assert query_bits(4, 8, 2) == 64                                          # m·p·H
    assert one_way_attention_bits(2, 4, 1) == 2 * 4                            # q_N only
    # the query attending to itself adds its logit and value: (2m + 1)·p·H in all (REFERENCE, disj-qsa)
    assert one_way_attention_bits(2, 4, 3, attend_self=True) == (2 * 2 + 1) * 4 * 3
    assert one_way_attention_bits(2, 4, 1, residual=8) == 2 * 4 + 8 * 4       # x_N's d coordinates: d·p


# ---- the source problems' bounds: Facts 1-3 and Lemma 1 of [BHBK24] ----------------------------------
def test_source_problem_bounds():
    assert index_one_way_bits(10) == 10 and equality_bits(10) == 10 and disjointness_bits(10) == 10
    assert [index_two_way_protocol_bits(n) for n in (1, 2, 8, 10)] == [1, 2, 4, 5]   # ceil(log2 n) + 1


@pytest.mark.parametrize("N", [2, 4, 8, 12])
def test_lemma_1_is_log2_of_the_fooling_set(N):
    """N - 1 bits: the fooling set is all 2^(N-1) members of length N."""
    assert dyck_fooling_bits(N) == N - 1
    assert fooling_set("dyck22", N).size == 2 ** dyck_fooling_bits(N)


# ---- Theorem 5 of [BHBK24]: mH >= (N - 1)/(3(p + log N)) -------------------------------------------------
def test_theorem_5_width_bound():
    assert dyck_min_width(16, 8) == Fraction(15, 3 * (8 + 4))
    assert dyck_min_width(1024, 16) == Fraction(1023, 3 * (16 + 10))
    assert attention_min_width(equality_bits(32), 8, 64) == Fraction(32, 3 * (8 + 6))   # Theorem 12's form


@pytest.mark.parametrize("N", [4, 16, 30, 64, 1000])
@pytest.mark.parametrize("p", [1, 8, 16])
def test_theorem_5_is_theorem_4_against_lemma_1(N, p):
    """Theorem 4's protocol meets Lemma 1's N - 1 bits exactly when mH reaches Theorem 5's bound."""
    for m in range(1, 9):
        for H in range(1, 5):
            meets = exchange_bits(m, p, H, N) >= dyck_fooling_bits(N)
            assert meets == (m * H >= dyck_min_width(N, p)), (m, H)


# ---- one count for run and budget --------------------------------------------------------------------
def test_run_and_budget_report_the_same_theorem_count_acceptance_example():
    """The issue's acceptance check, through the command line."""
    from click.testing import CliRunner

    from commsim.cli import cli

    def invoke(*argv) -> dict:
        out = CliRunner().invoke(cli, list(argv))
        assert out.exit_code == 0, out.output
        return json.loads(out.output)

    b = invoke("budget", "--arch", "attention", "--width", "4", "--precision", "8", "--task", "dyck22-fooling",
               "--n", "16", "--json")
    r = invoke("run", "dyck22-fooling", "--model", "attention:heads=1,width=4,precision=8", "--n", "16",
               "--instances", "64", "--json")
    assert b["bits_formula"] == r["bits_formula"] == 3 * 4 * (8 + 4) * 1 == 144
    assert exchange_text(4, 8, 1, 16) in b["bits_formula_text"] and exchange_text(4, 8, 1, 16) in r["bits_formula_text"]
    assert r["seq_len"] == 16 and r["details"]["mode"] == "two-way"


@pytest.mark.parametrize("heads, width, precision, n", [(2, 3, 6, 8), (1, 2, 10, 12), (3, 1, 4, 6)])
def test_run_and_budget_agree_on_the_attention_count(heads, width, precision, n):
    spec = f"attention:heads={heads},width={width},precision={precision},seed=1"
    report = run_reduction("dyck22-fooling", spec, n, instances=8, certify=False)
    assert report.bits_formula == budget("attention", width, precision, "dyck22-fooling", heads=heads, n=n).bits
    assert report.bits_formula == exchange_bits(width, precision, heads, n)


def test_run_and_budget_agree_on_the_recurrent_count():
    report = run_reduction("index-idxl", "elman:width=4,precision=8", 8, instances=16, certify=False)
    assert report.bits_formula == report.bits_used == handoff_bits(4, 8)
    assert budget("rnn", 4, 8, "index-idxl", n=report.seq_len).bits == report.bits_formula


def test_the_one_way_message_is_the_cheaper_of_the_embedding_and_the_query_terms():
    from protocols.theorems import one_way_message_bits
    # [SHT23] with the query attending to itself: q_N (m·p·H) and its own logit and value ((m + 1)·p·H)
    assert one_way_message_bits(4, 8, 1) == (2 * 4 + 1) * 8 * 1 == 72
    assert one_way_message_bits(4, 8, 1, dim=8) == min(8 * 8, 72) == 64          # x_N is cheaper
    assert one_way_message_bits(2, 4, 1, dim=8, attend_self=False) == 2 * 4 == 8   # q_N alone is cheaper
