"""Tables and output files on the command line, with real processes: two writers on one --out table (the second
is refused naming the first's pid; nothing of the first is lost), workers of a killed sweep end with it, a hostile
table is exit 2 with its reason, and an output option never replaces a file commsim did not write (or wrote as
another kind of file) unless --force.  Every wait is on an observable event (a line printed, a file appearing, a
process ending), never on a sleep."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import run_main

pytest.importorskip("pandas")
psutil = pytest.importorskip("psutil")

ROOT = Path(__file__).resolve().parents[2]
#: the longest any wait here may take before the test fails (a bound, not a pause: waits end at their event)
DEADLINE = 240

#: a python: factory whose model is built only once the file ``go`` exists: a cell that runs until the test says
#: so; it first writes ``started-WIDTH`` with its process id (the event the test waits for)
FACTORY = '''import os
import time

from commsim import make_model


def elman(vocab_size, seq_len, width=1):
    with open(f"started-{width}.tmp", "w") as fh:
        fh.write(str(os.getpid()))
    os.replace(f"started-{width}.tmp", f"started-{width}")
    while not os.path.exists("go"):
        time.sleep(0.02)
    return make_model(f"elman:width={width},precision=2", vocab_size=vocab_size, seq_len=seq_len)
'''


def _commsim(folder: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "commsim", *args], cwd=folder, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"})


def _wait_for(condition, what: str) -> None:
    """Until ``condition()`` holds (checked as it changes, at most :data:`DEADLINE` seconds)."""
    end = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < end, f"never happened: {what}"
        time.sleep(0.02)


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "slow.py").write_text(FACTORY, encoding="utf-8")
    return tmp_path


def test_two_writers_on_one_table_the_second_is_refused_and_nothing_is_lost(folder):
    first = _commsim(folder, "sweep", "--reduction", "index-idxl", "--model", "python:slow.py:elman:width=1..2",
                     "--n", "3", "--out", "c.csv", "--json")
    try:
        _wait_for(lambda: (folder / "started-1").exists(), "the first sweep's first cell started")
        for second in (["sweep", "--reduction", "eq-ineq", "--n", "4", "--out", "c.csv", "--json"],
                       ["replicate", "bhbk24-index", "--out", "c.csv", "--json"]):
            refused = _commsim(folder, *second)
            out, err = refused.communicate(timeout=DEADLINE)
            assert refused.returncode == 2, err
            assert f"being written by another commsim run (pid {first.pid}" in err and err.count("\n") == 1
            assert json.loads(out)["exit_code"] == 2
        (folder / "go").touch()
        out, err = first.communicate(timeout=DEADLINE)
    finally:
        (folder / "go").touch()
        first.kill() if first.poll() is None else None
    assert first.returncode == 0, err
    assert json.loads(out)["run"] == 2 and not (folder / ".c.csv.commsim-lock").exists()
    second = _commsim(folder, "sweep", "--reduction", "eq-ineq", "--n", "4", "--out", "c.csv", "--json")
    out, err = second.communicate(timeout=DEADLINE)
    assert second.returncode == 0, err
    import pandas as pd
    table = pd.read_csv(folder / "c.csv")
    assert sorted(table["reduction"]) == ["eq-ineq", "index-idxl", "index-idxl"]     # every writer's rows kept


@pytest.mark.parametrize("executor", ["processes", "dask"])
def test_the_workers_of_a_killed_sweep_end_with_it(folder, executor):
    """kill -9 of a sweep on local processes or on its embedded Dask cluster: its worker (in the middle of a cell)
    ends too."""
    if executor == "dask":
        pytest.importorskip("distributed")
    sweep = _commsim(folder, "sweep", "--reduction", "index-idxl", "--model", "python:slow.py:elman:width=1",
                     "--n", "3", "--executor", executor, "--workers", "1", "--out", "c.csv")
    worker = None
    try:
        _wait_for(lambda: (folder / "started-1").exists(), "the worker started its cell")
        worker = psutil.Process(int((folder / "started-1").read_text()))
        assert worker.ppid() == sweep.pid
        sweep.send_signal(signal.SIGKILL)
        sweep.wait(timeout=DEADLINE)
        _wait_for(lambda: not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE, "the worker ended")
    finally:
        (folder / "go").touch()
        if worker is not None and worker.is_running():
            worker.kill()


def test_a_list_in_a_parquet_table_is_exit_2_with_its_reason(tmp_path, capsys):
    import pandas as pd
    out = tmp_path / "r.parquet"
    code, _, err = run_main(capsys, "sweep", "--reduction", "index-idxl", "--n", "3", "--out", str(out))
    assert code == 0, err
    frame = pd.read_parquet(out)
    frame["note"] = pd.Series([[1, 2]], dtype=object)
    frame["experiment"], frame["scale"], frame["layers"], frame["width"], frame["N"] = "x", "quick", 1, 1, 4
    frame.to_parquet(out, index=False)
    before = out.read_bytes()
    for args in (["sweep", "--reduction", "index-idxl", "--n", "3"], ["replicate", "bhbk24-index"]):
        code, _, err = run_main(capsys, *args, "--out", str(out))
        assert code == 2 and "row 1's 'note' holds a list, not a single value" in err and err.count("\n") == 1
    assert out.read_bytes() == before


def test_a_sparse_huge_table_is_refused_before_it_is_read(tmp_path):
    """A 6 GB sparse CSV as --out: refused by its size, in a process limited to 1 GB of address space (reading it
    would take several times that)."""
    out = tmp_path / "r.csv"
    with open(out, "wb") as fh:
        fh.truncate(6 << 30)                                      # 6 GB of nothing: sparse
    import resource

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    done = subprocess.run([sys.executable, "-m", "commsim", "sweep", "--reduction", "index-idxl", "--n", "3", "--out",
                           str(out)], capture_output=True, text=True, timeout=DEADLINE, preexec_fn=limited,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    err = done.stderr
    assert done.returncode == 2 and "--out" in err and "6.0 GiB" in err and err.count("\n") == 1, err[-500:]
    assert os.path.getsize(out) == 6 << 30


# ---- output options that would replace a file -------------------------------------------------------------
@pytest.mark.parametrize("args,option,name,kind", [
    (["teach", "rnn-eq", "--format", "html"], "--out", "results.csv", "an HTML page"),
    (["teach", "rnn-eq", "--json"], "--out", "results.csv", "a JSON file"),
    (["teach", "rnn-eq"], "--out", "results.csv", "a text file"),
    (["teach", "rnn-eq", "--format", "markdown"], "--out", "results.csv", "Markdown notes"),
    (["automaton", "dyck22", "--n", "4"], "--dot", "results.csv", "a Graphviz DOT file"),
])
def test_a_name_that_is_not_the_formats_is_refused_unless_forced(tmp_path, capsys, args, option, name, kind):
    target = tmp_path / name
    target.write_text("cell,reduction\n0123456789abcdef,index-idxl\n")
    before = target.read_bytes()
    code, out, err = run_main(capsys, *args, option, str(target))
    assert code == 2 and err.startswith(f"Error: {option}") and f"would be {kind}" in err and "--force" in err
    assert err.count("\n") == 1 and target.read_bytes() == before
    code, out, err = run_main(capsys, *args, option, str(target), "--force")
    assert code == 0, err
    assert target.read_bytes() != before


@pytest.mark.parametrize("args,option,name", [
    (["teach", "rnn-eq", "--format", "html"], "--out", "notes.html"),
    (["teach", "rnn-eq", "--json"], "--out", "notes.json"),
    (["teach", "rnn-eq"], "--out", "notes.txt"),
    (["teach", "rnn-eq", "--format", "markdown"], "--out", "notes.md"),
    (["automaton", "dyck22", "--n", "4"], "--dot", "dfa.dot"),
    (["automaton", "dyck22", "--n", "4"], "--html", "dfa.html"),
])
def test_a_file_commsim_did_not_write_is_kept_and_its_own_is_replaced(tmp_path, capsys, args, option, name):
    target = tmp_path / name
    target.write_text("the user's own file\n")
    code, _, err = run_main(capsys, *args, option, str(target))
    assert code == 2 and "exists and is not" in err and "commsim wrote" in err and err.count("\n") == 1
    assert target.read_text() == "the user's own file\n"
    target.unlink()
    for _ in range(2):                                           # its own file: written, then replaced
        code, _, err = run_main(capsys, *args, option, str(target))
        assert code == 0, err
    assert "the user's own file" not in target.read_text()


def test_a_file_commsim_wrote_as_another_kind_is_refused(tmp_path, capsys):
    """A page commsim wrote is not a DOT file to replace, and a sweep table is not lecture notes."""
    page = tmp_path / "p.html"
    assert run_main(capsys, "teach", "rnn-index", "--format", "html", "--out", str(page))[0] == 0
    code, _, err = run_main(capsys, "automaton", "dyck22", "--n", "4", "--dot", str(tmp_path / "p.dot"))
    assert code == 0, err
    (tmp_path / "p.dot").unlink()
    os.link(page, tmp_path / "p.dot")                           # the page under a DOT name
    code, _, err = run_main(capsys, "automaton", "dyck22", "--n", "4", "--dot", str(tmp_path / "p.dot"))
    assert code == 2 and "is not a Graphviz DOT file commsim wrote" in err
    table = tmp_path / "r.json"
    assert run_main(capsys, "sweep", "--reduction", "index-idxl", "--n", "3", "--out", str(table))[0] == 0
    before = table.read_bytes()
    code, _, err = run_main(capsys, "teach", "rnn-index", "--json", "--out", str(table))
    assert code == 2 and "is not a JSON file commsim wrote" in err and table.read_bytes() == before
