"""Issue 24, defect 5 (a)-(d): separations claim no more than they compute -- the qSA one-layer bound of a
self-attending layer, crossing advice that is computed, rows marked verified only when checked, one width."""
from __future__ import annotations

import pytest

from commsim.plugins import load_plugins
from protocols.separations.base import WEAKEST_GAMMA, WIDTH_NOTE


def sep(name):
    return load_plugins().get("separation", name)


def test_qsa_states_the_self_attending_bound_as_run_disj_qsa_does():
    from commsim.runs.run import run_reduction
    d = sep("qsa").run(6, instances=64).to_dict()
    assert "min(d*p, (2m + 1)*p*H) >= q" in d["claim"] and "needs m*p*H >= q" not in d["claim"]
    assert "min(d*p, (2m + 1)*p*H) >= q" in d["lower"]["formula"]
    for row in d["rows"]:      # the layer's own one-way message, from its sizes (H = 1)
        m, dim, p = row["qk_width"], row["dim"], row["precision"]
        assert row["one_layer_message_bits"] == min(dim * p, (2 * m + 1) * p) >= row["one_layer_bound_bits"]
    note = run_reduction("disj-qsa", "construct:qsa", 2, certify=False).to_dict()["bound_note"]
    assert "min(d·p, (2m + 1)·p·H)" in note


def _hint(name, rows, **options):
    s = sep(name)
    return s.crossing_hint(rows, *{"nstnb": ("width_bits", "rnn_bound_bits"), "disj": ("width_bits", "rnn_bound_bits"),
                                    "dyck22": ("dfa_state_bits", "attn_bound_bits")}[name], {"seed": 0, **options})


def test_no_crossing_advice_where_no_accepted_setting_gives_one():
    """nstnb at its largest n: neither a larger --n (there is none) nor --gamma 0.999 brings d·p below N/2."""
    s = sep("nstnb")
    L = s.largest
    weak = s.sizes(L, gamma=WEAKEST_GAMMA)
    assert weak["width_bits"] >= weak["rnn_bound_bits"] == L // 2
    text = _hint("nstnb", [s.sizes(L)])
    assert text.startswith("no accepted --n or --gamma") and f"{weak['width_bits']} vs {L // 2}" in text
    from protocols.separations.base import crossover_note
    full = crossover_note([s.sizes(L)], "width_bits", "rnn_bound_bits", "ours", "theirs", s)
    assert "moves the crossing into view" not in full and "no accepted" in full


def test_crossing_advice_names_a_setting_that_does_show_it():
    """disj at its largest n: --gamma 0.999 does bring width·p below N/2, and the hint says so with the numbers."""
    s = sep("disj")
    L = s.largest
    weak = s.sizes(L, gamma=WEAKEST_GAMMA)
    text = _hint("disj", [s.sizes(L)])
    assert weak["width_bits"] < weak["rnn_bound_bits"] == L // 2          # (seed 0: 1155 < 2048)
    assert text.endswith(f"--n {L} --gamma {WEAKEST_GAMMA} brings the crossing into view "
                         f"({weak['width_bits']} vs {L // 2}).")


def test_crossing_advice_for_a_separation_without_gamma_never_mentions_gamma():
    text = _hint("dyck22", [{"N": 4, "dfa_state_bits": 3, "attn_bound_bits": 3}])
    assert text == "--n 8 brings the crossing into view (3 vs 7 there)." and "gamma" not in text


def test_two_layers_marks_only_computed_rows_verified():
    d = sep("two-layers").run(64).to_dict()
    from protocols.separations.two_layers import MATRIX_N
    for row in d["rows"]:
        if row["N"] <= MATRIX_N:
            assert row["verified"] is True and row["min_rank"] == row["full_rank"]
        else:
            assert row["verified"] is None and row["min_rank"] is None and row["min_fooling"] is None
    assert d["unverified_rows"] == [16, 32, 64] and "not verified" in d["verdict"]
    assert {"key": "verified", "label": "verified"} in d["columns"]


# (separation, n, the key of m, the key of d)
WIDTHS = [("idxl", 4, "qk_width", "dim"), ("eq", 4, "qk_width", "embedding_dim"),
          ("nstnb", 4, "qk_width", "embedding_dim"), ("disj", 4, "qk_width", "embedding_dim"),
          ("qsa", 4, "qk_width", "dim"), ("two-layers", 4, "qk_width", "embedding_dim"),
          ("dyck22", 4, "lookup_qk_width", "lookup_dim")]


@pytest.mark.parametrize("name, n, m_key, d_key", WIDTHS)
def test_every_separation_uses_one_width_max_m_d_and_says_it(name, n, m_key, d_key):
    d = sep(name).run(n, instances=32).to_dict()
    width_key = "lookup_width" if name == "dyck22" else "width"
    for row in d["rows"]:
        assert row[width_key] == max(row[m_key], row[d_key])
        if name != "dyck22":
            assert row["width_bits"] == row["width"] * row["precision"]
    labels = {c["key"]: c["label"] for c in d["columns"]}
    assert "max(m,d)" in labels[width_key] and WIDTH_NOTE in d["notes"]
