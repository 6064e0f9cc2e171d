"""The registry reads the installed packages' ``commsim.plugins`` entry points again only when the path changed: a
folder added to ``sys.path``, or a package installed into (or removed from) a folder already on it."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import commsim.plugins as plugins

TOY = Path(__file__).resolve().parents[1] / "plugin_example" / "toy_commsim-0.1.dist-info"


def _counting(monkeypatch) -> list:
    """Count the metadata scans from here on."""
    calls, real = [], plugins.entry_points

    def counted(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)
    monkeypatch.setattr(plugins, "entry_points", counted)
    return calls


def _names() -> set[str]:
    return {ep.name for ep in plugins._plugin_entry_points()}


def test_a_second_look_reads_no_metadata(monkeypatch):
    monkeypatch.setattr(plugins, "_RECENT_NS", 0)          # every folder on the path counts as settled
    first = _names()
    calls = _counting(monkeypatch)
    assert _names() == first and calls == []
    assert {"baseline", "simulators"} <= first             # the project's own (pyproject.toml)


def test_a_folder_added_to_the_path_and_a_package_installed_into_it_are_seen(monkeypatch, tmp_path):
    before = _names()
    assert "toy" not in before
    calls = _counting(monkeypatch)
    monkeypatch.syspath_prepend(str(tmp_path))             # a new folder on the path: read again, nothing new
    assert _names() == before and len(calls) == 1
    shutil.copytree(TOY, tmp_path / TOY.name)              # a package installed into it: its entry point appears
    assert _names() == before | {"toy"} and len(calls) == 2
    shutil.rmtree(tmp_path / TOY.name)                     # and uninstalled: gone
    assert _names() == before and len(calls) == 3


def test_a_file_written_into_a_folder_on_the_path_reads_no_metadata(monkeypatch, tmp_path):
    """A sweep writes its table into the current directory (on the path) after every cell: no package changed,
    so the points read before stay."""
    monkeypatch.setattr(plugins, "_RECENT_NS", 0)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = _names()
    calls = _counting(monkeypatch)
    (tmp_path / "r.csv").write_text("cell\n")
    (tmp_path / "r.csv").rename(tmp_path / "s.csv")
    assert _names() == before and calls == []


def test_a_package_installed_within_the_same_tick_is_looked_for(monkeypatch, tmp_path):
    """A package installed within the same tick of the folder's clock as the last read leaves the folder's time
    as it was: the folder, changed moments before that read, is listed again, and the metadata read again."""
    monkeypatch.setattr(plugins, "_RECENT_NS", 10 ** 18)   # "moments" made long, so that no clock decides it
    monkeypatch.syspath_prepend(str(tmp_path))
    stamp = tmp_path.stat().st_mtime_ns
    before = _names()
    shutil.copytree(TOY, tmp_path / TOY.name)
    os.utime(tmp_path, ns=(stamp, stamp))                  # the folder's time as it was at the read
    calls = _counting(monkeypatch)
    _names()                                               # (importlib.metadata's own cache, keyed by that
    assert len(calls) == 1                                 # time, is what a real same-tick install meets)
    assert _names() >= before


def test_a_read_while_a_package_is_still_changing_is_not_reused(monkeypatch, tmp_path):
    """A package's metadata written within the same tick as the last read leaves the package's time as it was:
    a read made while a package on the path changed moments before is not kept."""
    monkeypatch.setattr(plugins, "_RECENT_NS", 10 ** 18)
    monkeypatch.syspath_prepend(str(tmp_path))
    shutil.copytree(TOY, tmp_path / TOY.name)
    before = _names()
    assert "toy" in before
    calls = _counting(monkeypatch)
    assert _names() == before and len(calls) == 1          # read again, though nothing seems to have changed
