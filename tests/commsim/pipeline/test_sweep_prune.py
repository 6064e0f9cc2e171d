"""Issue 26.5: every sweep row carries a hash of the files its model spec names (``spec_files_hash``), so rows made
before and after a factory edit can be told apart, and ``prune=True`` drops the rows of the table whose cell is no
longer in the grid -- those made from files since edited (stale) and those of other grids -- counting and naming
them."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import commsim
from commsim.core.errors import InputError
from commsim.batch import grid
from commsim.batch.grid import build_grid, spec_files
from commsim.batch.sweep import read_table

pytest.importorskip("pandas")

FACTORY = '''from commsim import make_model


def elman(vocab_size, seq_len, width=1):
    return make_model(f"elman:width={{width}},precision=2,seed={seed}", vocab_size=vocab_size, seq_len=seq_len)
'''


@pytest.fixture
def factory(tmp_path, monkeypatch):
    """A python: factory file in the current directory (no torch: it returns a commsim model); write(seed) edits it."""
    monkeypatch.chdir(tmp_path)

    def write(seed: int) -> None:
        (tmp_path / "mine.py").write_text(FACTORY.format(seed=seed), encoding="utf-8")
    write(0)
    return write


def test_the_files_a_spec_names_are_hashed(tmp_path, monkeypatch, factory):
    (tmp_path / "hf").mkdir()
    for name, content in (("config.json", "{}"), ("model.safetensors", "w"), ("zz.bin", "z")):
        (tmp_path / "hf" / name).write_text(content)
    (tmp_path / "hf" / "sub").mkdir()                          # a directory inside: not walked
    (tmp_path / "w.npz").write_bytes(b"npz")
    (tmp_path / "c.json").write_text("{}")
    assert set(spec_files("python:mine.py:elman:width=1")) == {"mine.py"}
    assert set(spec_files("python:mine:elman:width=1")) == {"mine"}        # a module, found without importing it
    assert spec_files("python:mine:elman")["mine"] == spec_files("python:mine.py:elman")["mine.py"]
    assert spec_files("python:no_such_module:f") == {}
    assert set(spec_files("hf-gpt2:hf")) == {os.path.join("hf", n) for n in ("config.json", "model.safetensors", "zz.bin")}
    assert set(spec_files("elman:width=2,weights=w.npz")) == {"w.npz"}
    assert set(spec_files("hf-gpt2:config=c.json")) == {"c.json"}
    monkeypatch.setattr(grid, "MAX_DIRECTORY_FILES", 2)
    assert set(spec_files("hf-gpt2:hf")) == {os.path.join("hf", n) for n in ("config.json", "model.safetensors")}
    monkeypatch.setattr(grid, "MAX_HASHED_BYTES", 2)                          # a file over the cap: size and time
    stat = os.stat("w.npz")
    assert spec_files("elman:weights=w.npz") == {"w.npz": f"size=3,mtime_ns={stat.st_mtime_ns}"}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_pipe_named_by_a_spec_is_never_opened(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkfifo("pipe.pt")
    assert spec_files("torch:pipe.pt") == {}                 # opening it would block


def test_a_factory_edit_is_a_new_row_told_apart_by_its_files_hash(factory):
    first = commsim.sweep("index-idxl", "python:mine.py:elman:width=1..2", 3, out="r.json")
    assert first["spec_files_hash"].nunique() == 1 and first["spec_files_hash"].notna().all()
    cell = build_grid("index-idxl", "python:mine.py:elman:width=1", 3)[0]
    assert first["spec_files_hash"][0] == cell.files_hash()
    assert commsim.sweep("index-idxl", "elman:width=1,precision=2", 3)["spec_files_hash"].isna().all()   # no files
    factory(1)                                                 # the factory edited: other weights
    second = commsim.sweep("index-idxl", "python:mine.py:elman:width=1..2", 3, out="r.json")
    assert (second.attrs["run"], second.attrs["skipped"]) == (2, 0)
    rows = read_table("r.json")
    assert len(rows) == 4                                      # kept beside the new rows, and told apart
    assert len({row["spec_files_hash"] for row in rows}) == 2
    assert {row["model"] for row in rows[:2]} == {row["model"] for row in rows[2:]}


def test_prune_drops_stale_rows_and_rows_of_other_grids(factory):
    commsim.sweep("index-idxl", "python:mine.py:elman:width=1..2", 3, out="r.json")
    commsim.sweep("index-idxl", "elman:width=1,precision=2", "3..4", out="r.json")         # another grid
    factory(1)
    messages = []
    frame = commsim.sweep("index-idxl", "python:mine.py:elman:width=1..2", 3, out="r.json", prune=True,
                          notify=messages.append)
    assert (frame.attrs["run"], frame.attrs["pruned"], frame.attrs["pruned_stale"]) == (2, 4, 2)
    assert frame.attrs["pruned_rows"] == ["index-idxl python:mine.py:elman:width=1 n = 3 seed 0",
                                          "index-idxl python:mine.py:elman:width=2 n = 3 seed 0",
                                          "index-idxl elman:width=1,precision=2 n = 3 seed 0",
                                          "index-idxl elman:width=1,precision=2 n = 4 seed 0"]
    rows = read_table("r.json")
    assert [row["cell"] for row in rows] == list(frame["cell"]) and messages == []
    current = build_grid("index-idxl", "python:mine.py:elman:width=1", 3)[0].files_hash()
    assert {row["spec_files_hash"] for row in rows} == {current}


def test_prune_with_nothing_to_drop_writes_nothing_and_prune_alone_rewrites(factory):
    commsim.sweep("index-idxl", "python:mine.py:elman:width=1..2", 3, out="r.csv")
    stamp = os.stat("r.csv").st_mtime_ns
    again = commsim.sweep("index-idxl", "python:mine.py:elman:width=1..2", 3, out="r.csv", prune=True)
    assert (again.attrs["run"], again.attrs["pruned"], again.attrs["pruned_rows"]) == (0, 0, [])
    assert os.stat("r.csv").st_mtime_ns == stamp
    narrower = commsim.sweep("index-idxl", "python:mine.py:elman:width=1", 3, out="r.csv", prune=True)
    assert (narrower.attrs["run"], narrower.attrs["pruned"], narrower.attrs["pruned_stale"]) == (0, 1, 0)
    assert [row["model"] for row in read_table("r.csv")] == ["python:mine.py:elman:width=1"]


def test_prune_needs_an_out_table_and_a_flag(tmp_path):
    with pytest.raises(InputError) as caught:
        commsim.sweep("index-idxl", "elman:width=1,precision=2", 3, prune=True)
    assert caught.value.param == "prune"
    with pytest.raises(InputError) as caught:
        commsim.sweep("index-idxl", "elman:width=1,precision=2", 3, out=tmp_path / "r.json", prune="yes")
    assert caught.value.param == "prune" and not (tmp_path / "r.json").exists()


def test_a_row_without_the_files_hash_column_still_resumes(factory):
    commsim.sweep("index-idxl", "python:mine.py:elman:width=1", 3, out="r.json")
    rows = json.loads(Path("r.json").read_text())
    Path("r.json").write_text(json.dumps([{k: v for k, v in row.items() if k != "spec_files_hash"} for row in rows]))
    again = commsim.sweep("index-idxl", "python:mine.py:elman:width=1", 3, out="r.json")
    assert (again.attrs["run"], again.attrs["skipped"], again.attrs["invalid"]) == (0, 1, 0)
