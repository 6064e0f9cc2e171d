"""Every core by default (issue 30): the worker processes a streamed exhaustive run picks, and that the report does
not depend on them."""
from __future__ import annotations

import multiprocessing
import sys
import types

import pytest

import commsim.core.executors as executors_mod
import commsim.runs.shards as shards_mod
from commsim.core.errors import InputError
from commsim.core.executors import spawn_is_safe
from commsim.runs.run import run_reduction
from commsim.runs.shards import PARALLEL_INSTANCES, run_streamed, sweep_workers

MODEL = "elman:width=3,precision=4"


def test_a_large_run_uses_every_usable_core_and_a_small_one_this_process(monkeypatch):
    monkeypatch.setattr(shards_mod, "usable_cores", lambda: 2)
    assert sweep_workers(PARALLEL_INSTANCES) == 2
    assert sweep_workers(PARALLEL_INSTANCES - 1) == 1
    assert sweep_workers(PARALLEL_INSTANCES, workers=1) == 1
    assert sweep_workers(10, workers=3) == 3
    monkeypatch.setattr(shards_mod, "usable_cores", lambda: 1)
    assert sweep_workers(PARALLEL_INSTANCES) == 1


@pytest.mark.parametrize("workers", [0, -1, 10 ** 6])
def test_bad_worker_counts_name_the_argument(workers):
    with pytest.raises(InputError) as info:
        sweep_workers(PARALLEL_INSTANCES, workers)
    assert info.value.param == "workers"


def test_the_report_is_the_same_on_two_processes_as_in_one(monkeypatch):
    monkeypatch.setattr(shards_mod, "PARALLEL_INSTANCES", 100)      # small enough for the default to pick processes
    monkeypatch.setattr(shards_mod, "usable_cores", lambda: 2)
    started = []
    make_executor = executors_mod.make_executor
    monkeypatch.setattr(executors_mod, "make_executor", lambda *a, **k: started.append(k) or make_executor(*a, **k))
    one = run_streamed("index-idxl", MODEL, 6, shard_size=96, chunk=48, workers=1).to_dict()
    assert started == []
    default = run_streamed("index-idxl", MODEL, 6, shard_size=96, chunk=48).to_dict()
    assert started == [{"workers": 2}]
    for report in (one, default):
        streamed = report["details"].pop("streamed")
        assert streamed["shards"] == 4
        assert streamed.pop("shard_seconds") >= 0 and streamed.pop("instances_per_shard_second") > 0
        streamed.pop("peak_rss_bytes"), streamed.pop("peak_memory")
    assert default == one


def test_workers_and_a_map_together_are_refused():
    with pytest.raises(InputError, match="workers"):
        run_streamed("index-idxl", MODEL, 6, shard_size=96, chunk=48, workers=2, map_fn=map)


def test_a_default_spawns_workers_only_when_the_main_script_is_guarded(monkeypatch, tmp_path):
    for text, safe in (("run()\n", False), ("if __name__ == '__main__':\n    run()\n", True), ("def (", False)):
        script = tmp_path / "script.py"
        script.write_text(text)
        main = types.ModuleType("__main__")
        main.__file__ = str(script)
        monkeypatch.setitem(sys.modules, "__main__", main)
        assert spawn_is_safe() is safe
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))     # python -c, a notebook
    assert spawn_is_safe()


def test_a_worker_process_sweeps_its_cell_itself(monkeypatch):
    monkeypatch.setattr(shards_mod, "usable_cores", lambda: 2)
    monkeypatch.setattr(multiprocessing, "parent_process", lambda: object())
    assert sweep_workers(PARALLEL_INSTANCES) == 1
    assert sweep_workers(PARALLEL_INSTANCES, workers=2) == 2


def test_run_reduction_checks_workers_even_when_the_run_does_not_stream():
    with pytest.raises(InputError) as info:
        run_reduction("index-idxl", MODEL, 4, workers=0)
    assert info.value.param == "workers"
    assert run_reduction("index-idxl", MODEL, 4, workers=2).instances_run == 4 * 16   # in memory: one process
