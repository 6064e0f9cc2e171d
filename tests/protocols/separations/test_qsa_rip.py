"""``separate qsa`` with the searched keys beside the explicit ones: every q-set verified, m far below lemma2's,
the same error bound, and the recurrent bound N - q beside both."""
from __future__ import annotations

import math

from commsim.plugins import load_plugins
from protocols.separations.qsa import RIP_SEPARATE_SETS


def test_qsa_rows_show_the_rip_construction_beside_the_explicit_one():
    result = load_plugins().get("separation", "qsa").run(9, instances=64, q=2)
    assert result.all_verified
    for row in result.rows:
        assert row["rip_sets_verified"] == math.comb(row["N"], 2)
        assert row["rip_m"] < row["qk_width"] and row["rip_width_bits"] < row["width_bits"]
        assert row["rip_max_error"] < row["epsilon"] == 1 / 8
        assert row["rnn_bound_bits"] == row["N"] - 2
    assert result.to_dict()["verdict"].count("keys=rip") >= 2
    assert any("keys=rip's width·p" in note for note in result.notes)
    assert result.rows[-1]["disj_rip_protocol_bits"] < result.rows[-1]["disj_protocol_bits"]


def test_rip_is_left_out_past_the_set_limit():
    from protocols.separations.qsa import QsaSeparation
    N = next(N for N in range(8, 4096) if math.comb(N, 2) > RIP_SEPARATE_SETS)
    row = QsaSeparation._rip_row(N, 2, 0, None)
    assert row["rip_m"] is None and "not built" in row["rip_text"]
