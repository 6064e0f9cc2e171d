"""The issue-16 separations row by row: both sides measured and verified, the package layout."""
from __future__ import annotations

import pytest

from commsim.core.errors import InputError
from commsim.plugins import load_plugins
from protocols.separations import SEPARATIONS
from protocols.separations.base import crossing, lengths
from protocols.separations.two_layers import parse_partition


def test_one_file_per_separation_all_registered():
    registry = load_plugins()
    names = [s.name for s in SEPARATIONS]
    assert names == ["idxl", "dyck22", "eq", "nstnb", "disj", "qsa", "two-layers", "3cycle", "match3"]
    for s in SEPARATIONS:
        assert registry.get("separation", s.name) is s
        assert type(s).__module__.startswith("protocols.separations.")


def test_crossing_is_the_first_n_from_which_it_stays_below():
    rows = [{"N": 4, "a": 5, "b": 4}, {"N": 8, "a": 3, "b": 4}, {"N": 16, "a": 5, "b": 6}]
    assert crossing(rows, "a", "b") == 8
    assert crossing(rows[:1], "a", "b") is None
    assert lengths(16, 4, even=True) == [4, 8, 16]


def test_nstnb_rows_recall_every_bit_and_meet_theorem_8():
    result = load_plugins().get("separation", "nstnb").run(8, instances=50)
    assert result.all_verified
    for row in result.rows:
        assert row["recall_exact"] and row["mqar_accuracy"] == 1.0 and row["nn_accuracy"] == 1.0
        assert row["rnn_bound_bits"] == row["memorize_bits"] == row["N"] // 2
        assert row["width_bits"] == row["embedding_dim"] * row["precision"]
    assert result.rows[0]["instances"] == "all"


def test_disj_rows_are_exact_and_set_against_both_bounds():
    result = load_plugins().get("separation", "disj").run(8, instances=200)
    assert result.all_verified and [r["N"] for r in result.rows] == [4, 8]
    for row in result.rows:
        assert row["accuracy"] == 1.0 and row["heads"] == 2
        assert row["rnn_bound_bits"] == row["one_layer_bound_bits"] == row["N"] // 2 == row["memorize_bits"]


def test_qsa_rows_measure_the_error_and_the_disj_layout_runs_through_the_protocol():
    sep = load_plugins().get("separation", "qsa")
    result = sep.run(8, instances=100, q=1)
    assert result.all_verified
    for row in result.rows:
        assert row["max_error"] < row["epsilon"] == 0.25
        assert row["rnn_bound_bits"] == row["N"] - 1 and row["memorize_accuracy"] == 1.0
        assert row["disj_protocol_exact"] and row["disj_accuracy"] == 1.0
    with pytest.raises(InputError, match="^q must"):
        sep.run(8, q=9)


def test_two_layers_rows_compute_full_rank_on_the_users_partition():
    sep = load_plugins().get("separation", "two-layers")
    result = sep.run(8, partition="1,4,6,7")
    assert [r["N"] for r in result.rows] == [2, 4, 6, 8]
    assert result.all_verified
    last = result.rows[-1]
    assert last["user_partition"] == [1, 4, 6, 7] and last["partitions"] == 4
    assert last["min_rank"] == last["full_rank"] == last["min_fooling"] == 16 and last["needed_bits"] == 4
    assert last["factor_lower"] == pytest.approx(4 / (last["qk_width"] * last["precision"]))
    with pytest.raises(InputError, match="^partition "):
        parse_partition("1,1")
    with pytest.raises(InputError, match="^partition "):
        sep.run(4, partition="1,2,3,8")


def test_issue16_formulas():
    from fractions import Fraction

    from protocols.theorems import (
        nearest_neighbour_bits,
        qsa_one_layer_bits,
        qsa_recurrent_bits,
        two_layer_protocol_factor,
    )
    assert nearest_neighbour_bits(16) == 8 and nearest_neighbour_bits(17) == 8
    assert qsa_recurrent_bits(10, 1) == 9 and qsa_recurrent_bits(10, 3) == 7 and qsa_recurrent_bits(2, 3) == 0
    assert qsa_one_layer_bits(5) == 5
    assert two_layer_protocol_factor(64, 4, 8, 2) == Fraction(32, 64)
