"""commsim sweep --prune (issue 26.5): the rows of --out whose cells are no longer in the grid -- made from a factory
file edited since, or of another grid -- are dropped, counted and listed; --prune without --out is refused."""
from __future__ import annotations

import json

import pytest
from cli_helpers import run_main

pytest.importorskip("pandas")

from commsim.batch.sweep import read_table  # noqa: E402

FACTORY = '''from commsim import make_model


def elman(vocab_size, seq_len, width=1):
    return make_model(f"elman:width={{width}},precision=2,seed={seed}", vocab_size=vocab_size, seq_len=seq_len)
'''
SWEEP = ["sweep", "--reduction", "index-idxl", "--model", "python:mine.py:elman:width=1..2", "--n", "3",
         "--out", "r.csv"]


def test_prune_drops_and_lists_the_rows_of_an_edited_factory_and_of_other_grids(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text(FACTORY.format(seed=0))
    assert run_main(capsys, SWEEP)[0] == 0
    assert run_main(capsys, ["sweep", "--reduction", "index-idxl", "--model", "elman:width=1,precision=2", "--n", "3",
                             "--out", "r.csv"])[0] == 0
    (tmp_path / "mine.py").write_text(FACTORY.format(seed=1))
    code, out, err = run_main(capsys, SWEEP + ["--prune"])
    assert code == 0 and err == "", err
    lines = out.splitlines()
    start = lines.index("dropped 3 rows from r.csv: 2 of this grid's cells made from other spec files or settings, "
                        "1 outside this grid")
    assert lines[start + 1:] == ["  index-idxl python:mine.py:elman:width=1 n = 3 seed 0",
                                 "  index-idxl python:mine.py:elman:width=2 n = 3 seed 0",
                                 "  index-idxl elman:width=1,precision=2 n = 3 seed 0"]
    assert "2 cells: 2 run" in out
    assert len(read_table(tmp_path / "r.csv")) == 2
    code, out, err = run_main(capsys, SWEEP + ["--prune", "--json"])
    report = json.loads(out)
    assert (code, report["run"], report["pruned"], report["pruned_stale"], report["pruned_rows"]) == (0, 0, 0, 0, [])


def test_prune_without_out_is_refused(capsys):
    code, out, err = run_main(capsys, ["sweep", "--reduction", "index-idxl", "--model", "elman:width=1,precision=2",
                                       "--n", "3", "--prune"])
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("Error: --prune")
