"""Benchmark: the exhaustive index-idxl sweep, sharded, on a Dask LocalCluster of 1 and of 2 workers.

Every instance of INDEX_n reduced to index lookup (2^n * n of them: 92,274,688 at n = 22) runs through the
hidden-state handoff of ``elman:width=16,precision=16``, cut into shards by instance rank
(:func:`commsim.runs.shards.run_sharded`), each shard streamed chunk by chunk in its worker, the shard
results merged.  The map is the sweep executor's (:func:`commsim.core.executors.make_executor`,
``dask``: an embedded LocalCluster, one thread per worker process, no dashboard).

Headline ``ratio`` = wall time with 2 workers / wall time with 1 worker (goal <= 0.6, a speedup >= 1.7),
best of ``--repeats`` interleaved runs; both clusters are started before timing (their start-up is
reported apart).  On a machine shared with other jobs the wall times measure the other jobs as much as
the sweep, so ``cpu_ratio`` is reported beside it: the busiest worker's CPU seconds with 2 workers over
the one worker's -- the wall-time ratio the run would have with a free core per worker (it shows the
split's balance and the per-shard overhead, not contention).  Also reported: per worker, the peak resident memory (``ru_maxrss`` of each worker process,
asked through ``Client.run``; goal < 500 MB) and the largest peak any shard saw; the workers' CPU seconds
(so a speedup lost to other jobs on a shared machine shows as wall >> CPU); the load average before and
after; that 1 and 2 workers give the same merged result.

    python benchmarks/sweep_scaling.py --quick --json     # n = 18
    python benchmarks/sweep_scaling.py --json             # n = 22: several minutes
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time


def _worker_cpu_seconds() -> float:
    """CPU seconds (user + system) of the calling process: run on each worker through Client.run."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _worker_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_by_worker(client) -> dict:
    return client.run(_worker_cpu_seconds)


def timed_sweep(executor, model: str, n: int, shards: int) -> dict:
    """One sharded exhaustive sweep on ``executor``: wall time, worker CPU time, the merged result."""
    from commsim.runs.shards import run_sharded
    before = _cpu_by_worker(executor.client)
    start = time.perf_counter()
    merged = run_sharded("index-idxl", model, n, map_fn=executor.map, shards=shards)
    wall = time.perf_counter() - start
    after = _cpu_by_worker(executor.client)
    spent = [after[w] - before.get(w, 0.0) for w in after]
    return {"wall_s": wall, "worker_cpu_s": sum(spent), "critical_cpu_s": max(spent), "merged": merged}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 18")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--model", default="elman:width=16,precision=16", help="model spec")
    parser.add_argument("--n", type=int, default=None, help="INDEX size (default 22; quick 18)")
    parser.add_argument("--shards", type=int, default=None, help="shards (default 16; quick 8)")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved repeats, best of (default 2; quick 2)")
    args = parser.parse_args(argv)
    n = args.n or (18 if args.quick else 22)
    shards = args.shards or (8 if args.quick else 16)
    repeats = args.repeats or 2

    from commsim.core.executors import make_executor

    load_before = os.getloadavg()
    executors, startup = {}, {}
    try:
        for workers in (1, 2):
            began = time.perf_counter()
            executors[workers] = make_executor("dask", workers=workers).__enter__()
            startup[workers] = round(time.perf_counter() - began, 2)
            executors[workers].map(int, ["1"] * workers)   # the workers answer before timing starts
        runs: dict[int, list[dict]] = {1: [], 2: []}
        for _ in range(repeats):                             # interleaved: a busy spell hits both alike
            for workers in (1, 2):
                runs[workers].append(timed_sweep(executors[workers], args.model, n, shards))
        peaks = {w: sorted(round(v, 1) for v in executors[w].client.run(_worker_peak_mb).values()) for w in (1, 2)}
    finally:
        for ex in executors.values():
            ex.close()
    load_after = os.getloadavg()
    best = {w: min(runs[w], key=lambda r: r["wall_s"]) for w in (1, 2)}
    merged = best[1]["merged"]
    same = all(r["merged"] == merged for w in (1, 2) for r in runs[w])
    shard_peak_mb = round(max(r["merged"].peak_rss_bytes for w in (1, 2) for r in runs[w]) / 2**20, 1)
    ratio = best[2]["wall_s"] / best[1]["wall_s"]
    # the busiest worker's CPU seconds: the wall time each run would take with a free core per worker
    critical = {w: min(r["critical_cpu_s"] for r in runs[w]) for w in (1, 2)}
    cpu_ratio = critical[2] / critical[1]
    worst_peak = max(max(p) for p in peaks.values())
    out = {
        "benchmark": "sweep_scaling", "quick": args.quick, "model": args.model, "n": n,
        "instances": merged.instances, "shards": shards,
        "ratio": round(ratio, 4), "speedup": round(1 / ratio, 3),
        "wall_s": {w: [round(r["wall_s"], 2) for r in runs[w]] for w in (1, 2)},
        "worker_cpu_s": {w: [round(r["worker_cpu_s"], 2) for r in runs[w]] for w in (1, 2)},
        "busiest_worker_cpu_s": {w: round(critical[w], 2) for w in (1, 2)}, "cpu_ratio": round(cpu_ratio, 4),
        "instances_per_s": {w: round(merged.instances / best[w]["wall_s"]) for w in (1, 2)},
        "instances_per_cpu_s": round(merged.instances / best[1]["worker_cpu_s"]) if best[1]["worker_cpu_s"] else None,
        "peak_worker_rss_mb": peaks, "peak_shard_rss_mb": shard_peak_mb,
        "cluster_startup_s": startup, "same_result_1_and_2_workers": same,
        "wrong": merged.wrong, "mismatches": merged.mismatches, "bits_used": merged.bits_used,
        "load_average_before": [round(x, 2) for x in load_before], "load_average_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
        "targets": {"ratio_max": 0.6, "peak_worker_rss_mb_max": 500},
        "ok": bool(ratio <= 0.6 and worst_peak < 500 and same and merged.mismatches == 0),
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"exhaustive index-idxl sweep, n = {n}: {merged.instances:,} instances in {shards} shards, {args.model}")
        for w in (1, 2):
            print(f"  {w} worker{'s' if w > 1 else ''}: wall {out['wall_s'][w]} s, worker CPU {out['worker_cpu_s'][w]} s, "
                  f"peak RSS per worker {peaks[w]} MB (cluster start {startup[w]} s)")
        print(f"  ratio {out['ratio']} (speedup {out['speedup']}; goal ratio <= 0.6); busiest worker's CPU, 2 workers / 1: "
              f"{out['cpu_ratio']}; same result: {same}; "
              f"load average {out['load_average_before']} -> {out['load_average_after']} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
