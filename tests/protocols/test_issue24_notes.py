"""Issue 24, defect 5 (f), (g): the printed notes say what the maths gives -- the Dyck odd/even matrix holds a 1 in
only half its rows and columns, and the composition bound's randomized version is smaller than the bits shown."""
from __future__ import annotations

from pathlib import Path

from commsim.theory.comm_matrix import communication_matrix

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "RESULTS.md"


def test_results_md_describes_the_dyck_matrix_as_computed():
    text = RESULTS.read_text(encoding="utf-8")
    assert "the matrix has one 1 per row and column" not in text
    assert "at most one 1 per row and column" in text and "only the 2^(N-1) rows and 2^(N-1) columns" in text
    for N in (4, 6, 8):
        M = communication_matrix("dyck22", N).matrix
        assert M.shape == (2 ** N, 2 ** N)
        assert int((M.sum(axis=1) > 0).sum()) == int((M.sum(axis=0) > 0).sum()) == 2 ** (N - 1)
        assert int(M.sum(axis=1).max()) == int(M.sum(axis=0).max()) == 1


def test_composition_randomized_note_says_the_randomized_bound_is_smaller():
    from commsim.runs.run import run_reduction
    d = run_reduction("compose-index", None, 3, certify=False).to_dict()
    assert d["bound_randomized"] is True
    note = d["bound_randomized_note"]
    assert "smaller than the ceil(log2 n^n) bits shown" in note and "(1 - 3 eps)" in note
