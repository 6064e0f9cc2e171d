"""Every benchmark script runs end to end at a tiny size, its own exactness checks included.

Timings are never asserted (performance is measured by running the scripts, see docs/guide/benchmarks.md); these
tests only keep the scripts working as the library under them changes -- the Dyck sweep of
``attention_exchange.py`` once called a renamed method and nothing noticed.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load(name: str):
    """A benchmark script as a module (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_script_has_a_smoke_test():
    scripts = {p.stem for p in BENCHMARKS.glob("*.py")}
    tested = {"bits", "attention_exchange", "rnn_handoff", "exhaustive_n24", "orthogonal", "sweep_scaling",
              "torch_peer", "goals", "goals_attention", "dask_cluster", "exhaustive_n28"}
    assert scripts == tested, f"add a smoke test for: {sorted(scripts - tested)}"


def test_bits_codec_comparisons_round_trip():
    bits = load("bits")
    rng = np.random.default_rng(0)
    widths = bits.width_sweep(300, 1, rng, widths=[2, 3, 12, 40, 63])     # raises unless every width round-trips
    assert set(widths) == {2, 3, 12, 40, 63} and all(r["ratio"] > 0 for r in widths.values())
    ours, numpy_side = bits.compare(5000, 12, 1, rng)
    assert ours["total_bits"] == numpy_side["total_bits"] == 60_000
    assert bits.runner_overhead(10, 1)["messages"] == 10


def test_goals_attention_measures_the_codec_the_exchange_and_a_gpt2_run():
    pytest.importorskip("transformers")
    out = load("goals_attention").measure(quick=True)       # raises unless every round trip and output is exact
    assert sorted(out["codec"]["ratio_by_width"]) == list(range(1, 65)) and out["codec"]["worst_ratio"] > 0
    assert out["exchange"]["N"] == 1 << 12 and out["exchange"]["ratio"] > 0
    real = out["real_size"]
    assert real["protocol_matches_model"] and real["instances_run"] == 64 and real["peak_rss_mb"] > 0
    assert json.loads(json.dumps(out))["benchmark"] == "goals_attention"     # the object __main__ prints


def test_attention_exchange_is_bit_identical_and_the_dyck_sweep_runs():
    bench = load("attention_exchange")
    row = bench.protocol_vs_direct(64, 2, 4, 8, "fixed16", 1)
    assert row["bit_identical"] and row["bits"] > 0
    sweep = bench.dyck_sweep_child(6)
    assert sweep["swept"] == sweep["members"] > 0 and sweep["distinct_transcripts"] <= sweep["members"]


def test_rnn_handoff_sweep_and_runner_are_exact():
    bench = load("rnn_handoff")
    sweep = bench.sweep_vs_forward("elman:width=4,precision=8", 5, 1)
    assert sweep["all_exact"] and sweep["labels_equal_plain_forward"] and sweep["instances"] == 5 * 2 ** 5
    runner = bench.runner_vs_forward("elman:width=4,precision=8", 40, 1)
    assert runner["bit_identical"] and runner["bits_sent"] == runner["state_bits"]


def test_torch_peer_runs_the_loop_and_the_checked_cli_on_the_same_instances():
    pytest.importorskip("torch")
    bench = load("torch_peer")
    for kind in bench.KINDS:
        assert bench.peer(kind, 4, 1)["instances"] == 4 * 2 ** 4
    for kind in bench.KINDS:
        assert bench.peer(kind, 3, 1, task="eq-ineq")["instances"] == 4 ** 3
    row = bench.commsim_run("lstm", 4, 1)
    assert row["instances"] == 4 * 2 ** 4 and row["protocol_matches_model"] and row["cpu_s"] > 0
    row = bench.commsim_run("gru", 3, 1, task="eq-ineq")
    assert row["instances"] == 4 ** 3 and row["protocol_matches_model"]


def test_goals_quick_prints_every_ratio_of_both_tasks():
    pytest.importorskip("torch")
    bench = load("goals")
    out = bench.measure(4, quick=True, kinds=("elman",))
    assert set(out["ratios"]) == {f"{task}/elman/{what}" for task in ("index-idxl", "eq-ineq")
                                  for what in ("cpu", "wall")}
    assert all(value > 0 for value in out["ratios"].values()) and out["all_exact"]
    assert [row["instances"] for row in out["runs"]] == [4 * 2 ** 4, 4 ** 3]


def test_exhaustive_n24_runs_the_cli_and_projects(capsys):
    bench = load("exhaustive_n24")
    row = bench.run(quick=False, n=6)
    assert row["instances"] == 6 * 2 ** 6 and row["protocol_matches_model"] and row["peak_memory_bytes"] > 0
    projected = bench.projection(ns=(8,), workers=(2,))
    assert projected[8]["instances"] == 8 * 2 ** 8 and projected[8]["projected_seconds"][2] >= 0


def test_exhaustive_n28_sweeps_every_instance_on_the_embedded_cluster():
    # as a script: the workers receive its helper functions by value, as they do when a user runs it
    done = subprocess.run([sys.executable, str(BENCHMARKS / "exhaustive_n28.py"), "--json", "--n", "6",
                           "--workers", "2"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["instances"] == 6 * 2 ** 6 and out["mismatches"] == 0 and out["workers"] == 2
    assert len(out["peak_worker_rss_mb"]) == 2 and out["peak_total_mb"] > max(out["peak_worker_rss_mb"])


def test_orthogonal_quick_finds_verified_sets(capsys):
    bench = load("orthogonal")
    assert bench.main(["--quick"]) == 0                       # N = 2^8 .. 2^12, every set re-verified exactly
    out = json.loads(capsys.readouterr().out)
    assert sorted(int(n) for n in out["k_by_n"]) == [2 ** e for e in range(8, 13)]
    assert all(row["verified"] for row in out["results"]) and 0 < out["ratio"] < 1


def test_sweep_scaling_merges_the_same_result_on_one_and_two_dask_workers():
    # as a script: the workers receive its helper functions by value, as they do when a user runs it
    done = subprocess.run([sys.executable, str(BENCHMARKS / "sweep_scaling.py"), "--json", "--n", "6", "--shards", "2",
                           "--repeats", "1"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["same_result_1_and_2_workers"] is True


def _running(pid: int) -> bool:
    """Whether ``pid`` is still a running Dask process (not gone, not a zombie, not a reused pid)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            command = fh.read()
    except OSError:
        return False
    return state != "Z" and b"distributed.cli" in command


def test_dask_cluster_runs_on_separate_scheduler_and_worker_processes_and_stops_them():
    # as a script, the way a user runs it: the dask command line's scheduler and workers, one process each
    done = subprocess.run([sys.executable, str(BENCHMARKS / "dask_cluster.py"), "--quick", "--json", "--n", "8",
                           "--shards", "2", "--repeats", "1", "--tasks", "20"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["same_result_1_and_2_workers"] is True and out["mismatches"] == 0 and out["ok"] is True
    assert [r["instances"] for w in ("1", "2") for r in out["results"][w]] == [8 * 2 ** 8] * 2
    # the workers that ran the shards are the processes the script started, distinct from each other, from
    # the scheduler and from the script itself
    one, two = out["worker_pids"]["1"][0], out["worker_pids"]["2"][0]
    assert set(one) == {"worker-1"} and set(two) == {"worker-1", "worker-2"} and one["worker-1"] == two["worker-1"]
    processes = out["processes"]
    started = set(processes["started"])
    assert len(started) == 3 and {two["worker-1"], two["worker-2"], processes["scheduler"]} == started
    assert processes["benchmark"] not in started
    assert set(out["peak_worker_rss_mb"]) == {"worker-1", "worker-2"}
    projection = out["projection"]
    assert 0 < projection["scaling_efficiency"] <= 1 and projection["instances_per_worker_cpu_s"] > 0
    for n in ("28", "32"):
        row = projection["by_n"][n]
        assert row["instances"] == int(n) * 2 ** int(n) and row["shards"] * row["largest_shard"] >= row["instances"]
        seconds = [row["projected_seconds"][w] for w in ("2", "64", "512")]
        assert seconds == sorted(seconds, reverse=True) and seconds[-1] > 0
        floor = max(row["scheduler_seconds"], row["client_seconds"])    # the scheduler or the client alone
        assert all(row["projected_seconds"][w] >= max(row["ideal_seconds"][w], floor) for w in ("2", "64", "512"))
    assert not [pid for pid in started if _running(pid)], "a process of the cluster outlived the benchmark"


@pytest.mark.slow
def test_goals_carries_the_attention_side_goals_in_the_same_object():
    pytest.importorskip("torch")
    out = load("goals").measure(4, quick=True, kinds=("elman",), tasks=("index-idxl",), attention=True)
    assert {"codec/worst_width", "exchange/direct", "index-idxl/elman/cpu"} <= set(out["ratios"])
    assert {"codec/worst_width", "exchange/direct", "real_size/gpt2"} <= set(out["goals_met"])
    assert out["attention"]["benchmark"] == "goals_attention" and out["all_exact"]
