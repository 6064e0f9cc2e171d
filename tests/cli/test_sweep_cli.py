"""commsim sweep on the command line: the issue's command on an embedded Dask cluster, a second identical
command that does no work, Ctrl-C in the middle of a sweep and the resume, the table, --plot, --json and
refusals of bad input (exit 2, one line naming the flag)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import run_main
from interrupts import LOADS, ctrl_c, start_commsim, under, wait_for

pytest.importorskip("distributed")

from commsim.batch.sweep import read_table  # noqa: E402

ISSUE_COMMAND = ["sweep", "--reduction", "index-idxl", "--model", "elman:width=2..8:x2,precision=4..8:+4",
                 "--n", "8..16:x2", "--executor", "dask", "--out", "r.parquet"]


def _commsim(args, cwd, timeout=600):
    """The console script in a child process: (exit status, stdout, stderr)."""
    proc = subprocess.run([sys.executable, "-m", "commsim", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def _twice(args, cwd):
    """Run a sweep, then the identical command: both JSON reports and the file's state between them."""
    code, out, err = _commsim(args + ["--json"], cwd)
    assert code == 0, err
    first = json.loads(out)
    path = Path(cwd) / args[args.index("--out") + 1]
    stamp, content = os.stat(path).st_mtime_ns, path.read_bytes()
    code, out, err = _commsim(args + ["--json"], cwd)
    assert code == 0, err
    second = json.loads(out)
    assert os.stat(path).st_mtime_ns == stamp and path.read_bytes() == content     # not even rewritten
    return first, second


def test_a_small_dask_sweep_runs_then_a_second_identical_command_does_no_work(tmp_path):
    args = ["sweep", "--reduction", "index-idxl", "--model", "elman:width=1..2,precision=2..4:+2", "--n", "4..8:x2",
            "--executor", "dask", "--workers", "1", "--out", "r.parquet"]
    first, second = _twice(args, tmp_path)      # one worker (not the default, one per core): the flag is heeded
    assert (first["cells"], first["run"], first["skipped"]) == (8, 8, 0)
    assert first["executor"] == "dask (1 worker, embedded LocalCluster)"
    assert (second["cells"], second["run"], second["skipped"], second["executor"]) == (8, 0, 8, "none")
    assert second["rows"] == first["rows"]
    assert len(read_table(tmp_path / "r.parquet")) == 8


@pytest.mark.slow
def test_the_issue_command_runs_on_an_embedded_cluster_and_a_second_run_does_no_work(tmp_path):
    first, second = _twice(ISSUE_COMMAND, tmp_path)
    assert (first["cells"], first["run"]) == (12, 12) and first["executor"].endswith("embedded LocalCluster)")
    assert (second["run"], second["skipped"]) == (0, 12)
    rows = {(r["model"], r["n"]): r for r in first["rows"]}
    assert rows[("elman:width=2,precision=4", 16)]["budget_ok"] is False          # 8 bits < 16 needed
    assert rows[("elman:width=2,precision=4", 16)]["certificate_kind"] == "collision"
    assert all(r["protocol_matches_model"] for r in first["rows"])


GATE_FACTORY = """
import os, time
from commsim import make_model

def gated(vocab_size, width=1):
    # every cell but the first waits for the file 'gate' (the test makes it once Ctrl-C is sent)
    while width > 1 and not os.path.exists("gate"):
        time.sleep(0.01)
    return make_model(f"elman:width={width},precision=4", vocab_size=vocab_size)
"""


@pytest.mark.parametrize("load", LOADS)
@pytest.mark.parametrize("executor", ["inprocess", "dask", pytest.param("processes", marks=pytest.mark.slow)])
def test_ctrl_c_keeps_the_finished_cells_and_the_rerun_does_only_the_rest(tmp_path, executor, load):
    """Ctrl-C to the whole session (what a terminal does: the workers get it too) once the first cells are
    saved: exit 130 and exactly one line on stderr -- no worker's traceback, no Dask warning per cancelled
    task -- the finished cells kept, and the same command then runs only the rest.  Every cell but the first
    waits for a gate file that the test makes only after the signal, so however slow or fast the machine, the
    signal arrives while cells are left: no race."""
    (tmp_path / "gate.py").write_text(GATE_FACTORY)
    args = ["sweep", "--reduction", "index-idxl", "--model", "python:gate.py:gated:width=1..16", "--n", "8",
            "--no-certificate", "--out", "r.csv", "--executor", executor]
    if executor != "inprocess":
        args += ["--workers", "2"]
    out = tmp_path / "r.csv"
    with under(load):
        proc = start_commsim(args, cwd=tmp_path)
        wait_for(out.exists, "the first saved cell", proc)
        _, err = ctrl_c(proc, then=(tmp_path / "gate").touch)
    assert (proc.returncode, err) == (130, "Error: interrupted\n"), (proc.returncode, err)
    done = len(read_table(out))
    assert 1 <= done < 16
    code, stdout, err = _commsim(args + ["--json"], tmp_path)
    assert code == 0, err
    report = json.loads(stdout)
    assert (report["run"], report["skipped"]) == (16 - done, done)
    if executor == "dask":
        assert report["executor"] == "dask (2 workers, embedded LocalCluster)"
    assert [r["model"] for r in report["rows"]] == [f"python:gate.py:gated:width={w}" for w in range(1, 17)]
    assert len(read_table(out)) == 16


def test_the_table_plot_and_csv(tmp_path, capsys):
    out, plot = tmp_path / "r.csv", tmp_path / "r.png"
    code, stdout, err = run_main(capsys, "sweep", "--reduction", "index-idxl,eq-ineq", "--model", "memorize:capacity=3..5",
                                 "--n", "4", "--out", str(out), "--plot", str(plot))
    assert code == 0, err
    assert "index-idxl" in stdout and "below" in stdout and "within" in stdout and "collision" in stdout
    assert "6 cells: 6 run on inprocess (1 worker), 0 already in" in " ".join(stdout.split())
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = read_table(out)
    assert [(r["reduction"], r["model.capacity"]) for r in rows] == \
        [(red, c) for red in ("index-idxl", "eq-ineq") for c in (3, 4, 5)]


def test_json_rows_and_the_added_precision_and_seeds(capsys):
    code, stdout, err = run_main(capsys, "sweep", "--reduction", "index-idxl", "--model", "elman:width=2", "--precision",
                                 "2..4:+2", "--seed", "0..1", "--instances", "20", "--n", "6", "--json")
    assert code == 0, err
    d = json.loads(stdout)
    assert (d["cells"], d["run"], d["skipped"], d["out"]) == (4, 4, 0, None)
    assert [(r["model"], r["seed"], r["instances"]) for r in d["rows"]] == \
        [(f"elman:width=2,precision={p}", s, 20) for p in (2, 4) for s in (0, 1)]
    assert [r["bits_used"] for r in d["rows"]] == [4, 4, 8, 8]


@pytest.mark.parametrize("args, flag", [
    (["--out", "r.xlsx"], "--out"),
    (["--n", "8..4"], "--n"),
    (["--n", "1..100000"], "--n"),
    (["--seed", "-1"], "--seed"),
    (["--model", "elman:width=1..100,precision=1..60", "--n", "1..2"], "cells"),
    (["--model", "nope:width=2"], "--model"),
    (["--model", "elman:widht=2"], "widht"),
    (["--reduction", "nope"], "--reduction"),
    (["--executor", "processes", "--scheduler", "tcp://127.0.0.1:1"], "--scheduler"),
    (["--workers", "0", "--executor", "processes"], "--workers"),
    (["--workers", "2"], "--workers"),
    (["--plot", "r.pdf"], "--plot"),
    (["--model", "elman:precision=4", "--precision", "8"], "--precision"),
])
def test_bad_input_exits_2_with_one_line_naming_it(args, flag, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = {"--reduction": "index-idxl", "--model": "elman:width=1,precision=2", "--n": "3"}
    for key, value in zip(args[::2], args[1::2]):
        base[key] = value
    argv = ["sweep", *[x for kv in base.items() for x in kv], "--json"]
    code, stdout, err = run_main(capsys, argv)
    assert code == 2, (argv, stdout, err)
    assert len(err.strip().splitlines()) == 1 and flag in err, err
    assert "error" in json.loads(stdout)
    assert os.listdir(tmp_path) == []                                     # nothing written
