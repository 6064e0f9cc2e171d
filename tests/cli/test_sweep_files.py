"""commsim sweep and the files it is given (issue 29): a --out that is not a sweep table is refused and left
alone (item 4), a resume file with an invalid row runs that cell again and says so on stderr (item 5),
--workers beyond the memory budget or the cores is refused before anything starts (item 7), and --help
states the trust boundaries of --scheduler and the embedded cluster (item 2)."""
from __future__ import annotations

import json
import os

import pytest
from cli_helpers import run_main

pytest.importorskip("pandas")

from commsim.core import executors  # noqa: E402
from commsim.batch.sweep import read_table  # noqa: E402

SMALL = ["sweep", "--reduction", "index-idxl", "--model", "elman:width=1..2,precision=2", "--n", "3"]


@pytest.mark.parametrize("name, content", [("contacts.csv", "name,email\n"),
                                           ("contacts.json", '[{"name": "Ada", "email": "ada@example.org"}]\n')])
def test_an_out_file_that_is_not_a_sweep_table_is_refused_and_kept(capsys, tmp_path, name, content):
    out = tmp_path / name
    out.write_text(content)
    code, stdout, err = run_main(capsys, SMALL + ["--out", str(out)])
    assert code == 2 and stdout == "" and err.count("\n") == 1
    assert err.startswith("Error: --out") and "is not a commsim sweep table" in err
    assert out.read_text() == content and os.listdir(tmp_path) == [name]


def test_a_resume_file_with_an_invalid_row_runs_that_cell_again_and_says_so(capsys, tmp_path):
    """The issue's row: "model_accuracy": "high" (exit 1, a ValueError, before)."""
    out = tmp_path / "r.json"
    code, stdout, err = run_main(capsys, SMALL + ["--out", str(out), "--json"])
    assert code == 0, err
    first = json.loads(stdout)
    rows = json.loads(out.read_text())
    rows[0]["model_accuracy"] = "high"
    out.write_text(json.dumps(rows))
    code, stdout, err = run_main(capsys, SMALL + ["--out", str(out)])
    assert code == 0, err
    assert err.startswith("Warning: ") and err.count("\n") == 1 and "model_accuracy" in err and "again" in err
    assert "2 cells: 1 run on inprocess (1 worker), 1 already in" in " ".join(stdout.split())
    assert [r["model_accuracy"] for r in read_table(out)] == [r["model_accuracy"] for r in first["rows"]]
    code, stdout, err = run_main(capsys, SMALL + ["--out", str(out), "--json"])
    assert code == 0 and err == "" and (json.loads(stdout)["run"], json.loads(stdout)["invalid"]) == (0, 0)


@pytest.mark.parametrize("args", [["--executor", "dask", "--workers", "1024"],
                                  ["--executor", "processes", "--workers", "100"]])
def test_workers_beyond_the_memory_budget_are_refused_before_anything_starts(capsys, tmp_path, monkeypatch, args):
    def started(*_, **__):                   # were the check missing, fail here rather than start 1024 workers
        raise AssertionError("an executor was started")
    monkeypatch.setattr(executors.Dask, "__init__", started)
    monkeypatch.setattr(executors.Processes, "__init__", started)
    code, stdout, err = run_main(capsys, SMALL + args + ["--out", str(tmp_path / "r.csv"), "--json"])
    assert code == 2 and err.count("\n") == 1 and err.startswith("Error: --workers") and "GiB" in err, err
    assert "error" in json.loads(stdout) and os.listdir(tmp_path) == []


def test_help_states_the_trust_boundaries_and_the_resume_rule(capsys):
    code, stdout, _ = run_main(capsys, "sweep", "--help")
    text = " ".join(stdout.split())
    assert code == 0
    assert "whoever controls the cluster can run code in commsim's process" in text
    assert "listens on 127.0.0.1 without authentication" in text and "another user can connect" in text
    assert "its cell runs again" in text and "not a commsim sweep table is refused" in text


def test_the_readme_safety_paragraph_states_the_trust_boundaries():
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    safety = " ".join(readme.split("**Safety**", 1)[1].split("\n\n", 1)[0].split())
    assert "`sweep --scheduler ADDR` trusts that cluster" in safety and "unpickles" in safety
    assert "can run code in commsim's process" in safety
    assert "127.0.0.1 without authentication" in safety and "other user can connect" in safety
