"""A result table on disk (commsim.batch.table): one reader for sweep and replicate tables -- its size checked
before it is read, repeated cell keys counted, a list in a cell refused --, one writer at a time (a lock file
beside the table), the temporaries of a writer killed mid-save removed, rows waiting to run again kept until
their new rows replace them; and a grid counted before it is built."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

import commsim
from commsim.cli.files import write_bytes
from commsim.core.errors import InputError
from commsim.batch import grid as grid_module
from commsim.batch.grid import MAX_CELLS, build_grid
from commsim.batch.replicate import read_rows
from commsim.batch.sweep import read_table, sweep
from commsim.batch.table import MAX_TABLE_BYTES, lock_path, remove_stale_temporaries, table_lock

GRID = dict(reductions="index-idxl", models="elman:width=1..2,precision=2", n=3)
ROOT = Path(__file__).resolve().parents[3]


def _sweep(out, **options):
    return commsim.sweep(GRID["reductions"], GRID["models"], GRID["n"], out=out, **options)


def _dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# ---- one writer per table -----------------------------------------------------------------------
def test_a_second_writer_is_refused_naming_the_holder(tmp_path):
    """The lock is held by another process (a real one: flock is per process here): the sweep is refused
    before anything runs, naming that process, and the table is left as it was."""
    out = tmp_path / "r.csv"
    _sweep(out)
    before = out.read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys; from commsim.batch.table import table_lock\n"
        "with table_lock(sys.argv[1]):\n    print('held', flush=True); sys.stdin.read()\n"), str(out)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline() == "held\n"               # the lock is taken: an observable event
        with pytest.raises(InputError, match=rf"being written by another commsim run \(pid {holder.pid}") as err:
            commsim.sweep(GRID["reductions"], "elman:width=3,precision=2", GRID["n"], out=out)
        assert err.value.param == "out" and out.read_bytes() == before
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert not lock_path(out).exists()                             # the holder removed its lock on the way out
    assert len(commsim.sweep(GRID["reductions"], "elman:width=3,precision=2", GRID["n"], out=out)) == 1
    assert len(read_table(out)) == 3


def test_a_lock_file_left_by_a_dead_process_is_taken_over_and_removed(tmp_path):
    out = tmp_path / "r.json"
    lock_path(out).write_text(f"{_dead_pid()}\n")
    frame = _sweep(out)
    assert frame.attrs["run"] == 2 and len(read_table(out)) == 2 and not lock_path(out).exists()


def test_the_lock_names_its_holder_and_goes_when_released(tmp_path):
    out = tmp_path / "r.csv"
    with table_lock(out) as lock:
        assert lock.read_text() == f"{os.getpid()}\n" and lock.name == ".r.csv.commsim-lock"
    assert not lock.exists()


@pytest.mark.parametrize("plant", ["fifo", "symlink", "directory"])
def test_a_lock_name_that_is_not_a_regular_file_is_refused_and_left(tmp_path, plant):
    out, lock = tmp_path / "r.csv", lock_path(tmp_path / "r.csv")
    {"fifo": lambda: os.mkfifo(lock), "symlink": lambda: lock.symlink_to(tmp_path / "elsewhere"),
     "directory": lock.mkdir}[plant]()
    with pytest.raises(InputError, match="cannot lock") as err:
        _sweep(out)
    assert err.value.param == "out" and os.path.lexists(lock) and not out.exists()
    assert not (tmp_path / "elsewhere").exists()


# ---- temporaries of a writer killed mid-save ----------------------------------------------------
def test_temporaries_of_dead_writers_are_removed_and_a_live_ones_kept(tmp_path):
    out = tmp_path / "r.csv"
    dead = tmp_path / f".commsim-{_dead_pid()}-x1y2.csv"
    alive = tmp_path / f".commsim-{os.getppid()}-x1y2.csv"       # a process that is running (pytest's parent)
    other = tmp_path / f".commsim-{_dead_pid()}-x1y2.html"         # another kind of file: not this table's
    for path in (dead, alive, other):
        path.write_bytes(b"half a table" * 1000)
    _sweep(out)
    assert not dead.exists() and alive.exists() and other.exists() and len(read_table(out)) == 2


def test_the_temporaries_of_the_writer_carry_its_pid(tmp_path, monkeypatch):
    import commsim.cli.files as files
    seen = []
    real = os.replace

    def spy(src, dst):
        seen.append(Path(src).name)
        real(src, dst)
    monkeypatch.setattr(files.os, "replace", spy)
    write_bytes(tmp_path / "r.csv", b"a,b\n", option="out")
    monkeypatch.undo()
    assert seen and seen[0].startswith(f".commsim-{os.getpid()}-")
    assert remove_stale_temporaries(tmp_path / "r.csv") == []


# ---- rows of the grid waiting to run again ------------------------------------------------------
def test_an_invalid_row_stays_in_the_table_until_its_cell_has_run_again(tmp_path):
    """Cell 1 is not in the table, cell 2's row was edited: at the first save (after cell 1) the edited row of
    cell 2 is still there -- a run killed then loses nothing it had --, and the last save replaces it."""
    out = tmp_path / "r.json"
    _sweep(out)
    rows = json.loads(out.read_text())
    first, second = rows
    second["model_accuracy"] = "high"
    out.write_text(json.dumps([second]))
    saves = []

    def write(path, data):
        saves.append(json.loads(data))
        write_bytes(path, data, option="out")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = sweep(GRID["reductions"], GRID["models"], GRID["n"], out=str(out), write=write, save_every=0)
    assert frame.attrs["invalid"] == 1 and frame.attrs["run"] == 2
    assert [r["cell"] for r in saves[0]] == [first["cell"], second["cell"]]
    assert saves[0][1]["model_accuracy"] == "high"                 # kept, not yet replaced
    assert saves[-1][1]["model_accuracy"] != "high"


def test_a_replicate_table_keeps_its_edited_rows_until_their_cells_have_run_again(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "w.csv"
    commsim.replicate("bhbk24-width", "quick", out=str(out))
    frame = pd.read_csv(out, dtype={"cell": str})
    assert len(frame) == 2
    frame["accuracy"] = 1.7                                       # both rows edited: both cells run again
    frame.to_csv(out, index=False)
    saves = []

    def write(path, data):
        saves.append(data.decode())
        write_bytes(path, data, option="out")
    result = commsim.replicate("bhbk24-width", "quick", out=str(out), write=write, notify=lambda message: None)
    assert result.attrs["invalid"] == 2 and result.attrs["run"] == 2
    first = pd.read_csv(io.StringIO(saves[0]), dtype={"cell": str})
    assert list(first["cell"]) == list(frame["cell"]) and list(first["accuracy"] == 1.7) == [False, True]
    assert not (pd.read_csv(out)["accuracy"] == 1.7).any()


# ---- repeated keys, "nothing to write" ----------------------------------------------------------
def test_repeated_cell_keys_are_counted_reported_and_written_once(tmp_path):
    out = tmp_path / "r.csv"
    _sweep(out)
    frame = pd.read_csv(out, dtype={"cell": str})
    pd.concat([frame, frame.iloc[[0]], frame.iloc[[0]]]).to_csv(out, index=False)
    told = []
    again = _sweep(out, notify=told.append)
    assert again.attrs["duplicates"] == 2 and again.attrs["run"] == 0 and again.attrs["written"]
    assert any("2 rows repeat a cell key" in message for message in told)
    assert len(pd.read_csv(out)) == 2
    third = _sweep(out)
    assert third.attrs["duplicates"] == 0 and not third.attrs["written"]


# ---- what a table may be ------------------------------------------------------------------------
_READ_LIMITED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
import commsim
from commsim.batch.replicate import read_rows
from commsim.batch.sweep import read_table
try:
    {"sweep": read_table, "replicate": read_rows}[sys.argv[1]](sys.argv[2])
except commsim.InputError as exc:
    print(exc.param, exc)
"""


@pytest.mark.parametrize("reader", ["sweep", "replicate"])
def test_a_table_too_large_is_refused_before_it_is_read(tmp_path, reader):
    """A sparse table just over the limit (no disk used), read in a process limited to 1 GB: refused by its size
    (reading it would take several times that)."""
    out = tmp_path / "big.csv"
    with open(out, "wb") as fh:
        fh.truncate(MAX_TABLE_BYTES + 1)
    done = subprocess.run([sys.executable, "-c", _READ_LIMITED, reader, str(out)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.startswith("out out: ") and f"more than a {reader} table read back may be" in done.stdout


@pytest.mark.parametrize("reader", [read_table, read_rows])
def test_a_list_in_a_parquet_cell_is_refused_naming_row_and_column(tmp_path, reader):
    out = tmp_path / "r.parquet"
    _sweep(tmp_path / "ok.parquet")
    frame = pd.read_parquet(tmp_path / "ok.parquet")
    frame["experiment"], frame["scale"], frame["layers"], frame["width"], frame["N"] = "x", "quick", 1, 1, 4
    frame["seconds"] = pd.Series([[1, 2], None], dtype=object)
    frame.to_parquet(out, index=False)
    with pytest.raises(InputError, match=r"row 1's 'seconds' holds a list, not a single value") as err:
        reader(out)
    assert err.value.param == "out"


# ---- a grid counted before it is built ----------------------------------------------------------
def test_a_grid_too_large_is_refused_before_any_spec_is_built(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("a spec pattern was expanded before the grid was counted")
    monkeypatch.setattr(grid_module, "expand_model", never)
    models = [f"elman:width=1..10000,seed={seed}" for seed in range(300)]
    with pytest.raises(InputError, match=r"the first 2 of 300 model specs already make 20000 cells") as err:
        build_grid("index-idxl", models, 4)
    assert err.value.param == "grid"
    with pytest.raises(InputError, match="number of cells"):
        build_grid("index-idxl", ["elman:width=1..5000", "elman:width=1..5001"], 4)


_LIMITED = """
import itertools, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
import commsim
n = {"range": range(4, 10**9), "count": itertools.count(4), "generator": (i for i in range(4, 10**9))}[sys.argv[1]]
try:
    commsim.sweep("index-idxl", "elman:width=2", n=n)
except commsim.InputError as exc:
    print(exc.param, exc)
"""


@pytest.mark.parametrize("kind", ["range", "count", "generator"])
def test_n_as_a_huge_range_or_an_endless_generator_is_refused_by_its_size(kind):
    """Under a 1 GB address-space limit (a listed range of 10^9 ints would need 8 GB): refused, naming n."""
    done = subprocess.run([sys.executable, "-c", _LIMITED, kind], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.startswith("n n: ") and f"{MAX_CELLS}" in done.stdout
