"""Benchmark: the exhaustive ``index-idxl`` sweep at n = 28 (7,516,192,768 instances) on one machine, sharded.

``commsim run --instances all`` stops at 2^32 instances in one process; past that, the sweep is cut into shards
by instance rank and mapped over an executor (:func:`commsim.runs.shards.run_sharded`).  Here the executor is
commsim's embedded Dask cluster (:func:`commsim.core.executors.make_executor` ``("dask")``: one worker process
per usable core, one thread each), so the whole machine sweeps every instance of INDEX_28 reduced to index
lookup through the hidden-state handoff of ``elman:width=16,precision=16``, each protocol run checked against
the direct forward.  Reported: wall time (goal: at most 15 minutes on 2 cores), the workers' CPU seconds, the
peak resident memory of each worker and of this process and their sum (goal: under 1 GB), the merged result
(instances, mismatches -- must be 0 --, wrong answers, bits) and the load average before and after.

    python benchmarks/exhaustive_n28.py --json            # n = 28: more than 24 minutes on 2 cores
    python benchmarks/exhaustive_n28.py --quick --json    # n = 20: a smoke run
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

MODEL = "elman:width=16,precision=16"
WALL_GOAL_SECONDS = 15 * 60
MEMORY_GOAL_MB = 1024


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 20 instead of 28")
    parser.add_argument("--n", type=int, default=None, help="another n (default 28, or 20 with --quick)")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: one per usable core)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (headline key: ratio)")
    args = parser.parse_args(argv)
    n = args.n if args.n is not None else (20 if args.quick else 28)
    workers = args.workers or len(os.sched_getaffinity(0))

    from commsim.core.executors import make_executor
    from commsim.runs.shards import run_sharded

    load_before = os.getloadavg()
    with make_executor("dask", workers=workers) as executor:
        executor.map(int, ["1"] * workers)                   # the workers answer before the clock starts
        cpu_before = executor.client.run(_cpu_seconds)
        start = time.perf_counter()
        merged = run_sharded("index-idxl", MODEL, n, map_fn=executor.map)
        wall = time.perf_counter() - start
        cpu_after = executor.client.run(_cpu_seconds)
        peaks = executor.client.run(_peak_mb)
    worker_cpu = {w: round(cpu_after[w] - cpu_before.get(w, 0.0), 1) for w in cpu_after}
    worker_peaks = sorted(round(v, 1) for v in peaks.values())
    total_mb = round(sum(worker_peaks) + _peak_mb(), 1)
    out = {
        "benchmark": "exhaustive_n28", "quick": args.quick, "model": MODEL, "n": n, "workers": workers,
        "instances": merged.instances, "mismatches": merged.mismatches, "wrong": merged.wrong,
        "bits_used": merged.bits_used,
        "ratio": round(wall / WALL_GOAL_SECONDS, 4), "wall_s": round(wall, 1),
        "worker_cpu_s": worker_cpu, "instances_per_s": round(merged.instances / wall),
        "peak_worker_rss_mb": worker_peaks, "peak_parent_rss_mb": round(_peak_mb(), 1), "peak_total_mb": total_mb,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(),
        "goals": {"wall_s_max": WALL_GOAL_SECONDS, "memory_mb_max": MEMORY_GOAL_MB},
        "ok": bool(wall <= WALL_GOAL_SECONDS and total_mb < MEMORY_GOAL_MB and merged.mismatches == 0),
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"exhaustive index-idxl, n = {n}: {merged.instances:,} instances on {workers} workers in {wall:.1f} s "
              f"(goal <= {WALL_GOAL_SECONDS} s); mismatches {merged.mismatches}; peak memory {worker_peaks} MB per "
              f"worker + {out['peak_parent_rss_mb']} MB here = {total_mb} MB (goal < {MEMORY_GOAL_MB} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
