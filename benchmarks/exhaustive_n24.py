"""Benchmark: the exhaustive ``index-idxl`` run at n = 24, streamed in bounded memory on every core.

Runs ``commsim run index-idxl --model elman:width=16,precision=16 --n 24 --instances all --json`` (n = 20 with
``--quick``; ``--workers N`` is passed on, default: commsim's, one worker process per usable core) as a child
process and reports its wall time (goal at n = 24: at most 120 s on 2 cores), its CPU time (the child's and its
workers' user + system time) and the peak resident memory of the largest of its processes (``ru_maxrss`` of
the children; the whole run holds at most workers + 1 such processes), against the goal of less than 1 GB; also the sweep's throughput (instances per second of
shard work, from the report's ``details.streamed``), the input of the cluster projection in docs/guide/sweeps.md.
The exhaustive sweep covers n * 2^n instances (402,653,184 at n = 24), each a full model run, a handoff
protocol run and a direct forward; its memory is one chunk's (:mod:`commsim.runs.shards`), whatever n.

Usage::

    python benchmarks/exhaustive_n24.py            # readable summary
    python benchmarks/exhaustive_n24.py --json     # one JSON object; "ratio" = peak memory / 1 GB
    python benchmarks/exhaustive_n24.py --quick    # n = 20 (21M instances)
    python benchmarks/exhaustive_n24.py --project  # one shard's throughput at n = 24, 28, 32 -> cluster wall times
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

MODEL = "elman:width=16,precision=16"
MEMORY_GOAL_BYTES = 1 << 30
#: the wall-time goal of the n = 24 run on 2 cores (issue 30)
WALL_GOAL_SECONDS = 120


def run(quick: bool, n: int | None = None, workers: int | None = None) -> dict:
    n = n if n is not None else (20 if quick else 24)
    command = [sys.executable, "-m", "commsim", "run", "index-idxl", "--model", MODEL, "--n", str(n),
               "--instances", "all", "--json"] + ([] if workers is None else ["--workers", str(workers)])
    load = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 3):
        raise SystemExit(f"benchmark: {' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    streamed = report["details"].get("streamed") or {}
    if report["instances_run"] != n * (1 << n):
        raise SystemExit(f"benchmark: the run covered {report['instances_run']} instances, not n * 2^n")
    return {
        "benchmark": "exhaustive_n24", "quick": quick, "n": n, "model": MODEL, "command": " ".join(command[1:]),
        "instances": report["instances_run"], "seconds": seconds, "instances_per_second": report["instances_run"] / seconds,
        "cpu_seconds": round(cpu, 3), "workers": workers or "default (one per usable core)",
        "usable_cores": len(os.sched_getaffinity(0)), "wall_goal_seconds": WALL_GOAL_SECONDS if n == 24 else None,
        "wall_ok": seconds <= WALL_GOAL_SECONDS if n == 24 else None,
        "peak_memory_bytes": peak, "peak_memory_mib": peak / 2**20, "memory_goal_bytes": MEMORY_GOAL_BYTES,
        "ratio": peak / MEMORY_GOAL_BYTES, "ratio_ok": peak < MEMORY_GOAL_BYTES,
        "shards": streamed.get("shards"), "chunk": streamed.get("chunk"),
        "shard_seconds": streamed.get("shard_seconds"),
        "instances_per_shard_second": streamed.get("instances_per_shard_second"),
        "model_accuracy": report["model_accuracy"], "protocol_matches_model": report["protocol_matches_model"],
        "bits_used": report["bits_used"], "cpu_count": os.cpu_count(), "load_average_before": load,
        "load_average": os.getloadavg(),
    }


def projection(ns=(24, 28, 32), workers=(64, 512)) -> dict:
    """Per-shard throughput, measured: one middle shard of each n's plan, in this process (CPU time, which a
    shared machine disturbs less than wall time), and the wall time the whole plan would take on ``workers``
    workers with one core each (every worker runs whole shards; the slowest round decides)."""
    from commsim.runs.shards import _setup, plan_shards, run_shard
    out = {}
    for n in ns:
        planned = plan_shards("index-idxl", MODEL, n)
        shard = planned[len(planned) // 2]
        _setup(shard)  # the model is built once per worker, not per shard
        cpu, wall = time.process_time(), time.perf_counter()
        result = run_shard(shard)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        total = planned[-1].stop
        per_shard = cpu * max(s.size for s in planned) / shard.size
        out[n] = {"instances": total, "shards": len(planned), "shard_instances": shard.size,
                  "shard_cpu_seconds": round(cpu, 3), "shard_wall_seconds": round(wall, 3),
                  "instances_per_cpu_second": round(shard.size / cpu), "shard_peak_rss_bytes": result.peak_rss_bytes,
                  "worker_seconds": round(total / (shard.size / cpu)),
                  "projected_seconds": {w: round(-(-len(planned) // w) * per_shard) for w in workers}}
    return out


def summary(r: dict) -> str:
    return "\n".join([
        f"exhaustive index-idxl sweep, {r['model']}, n = {r['n']}{' (quick)' if r['quick'] else ''}",
        f"  instances            {r['instances']:,}" + (f" in {r['shards']} shards of chunks of {r['chunk']:,}"
                                                       if r["shards"] else " (in memory: not streamed)"),
        f"  wall time            {r['seconds']:.1f} s ({r['instances_per_second']:,.0f} instances/s; CPU "
        f"{r['cpu_seconds']:.1f} s, workers: {r['workers']})"
        + (f"; goal <= {r['wall_goal_seconds']} s: {'met' if r['wall_ok'] else 'MISSED'}" if r["wall_goal_seconds"] else ""),
        f"  shard throughput     {r['instances_per_shard_second'] or 0:,} instances per second of shard work",
        f"  peak memory          {r['peak_memory_mib']:.0f} MiB (goal < 1 GB: {'met' if r['ratio_ok'] else 'MISSED'})",
        f"  protocol == model    {r['protocol_matches_model']}, accuracy {r['model_accuracy']:.4f}",
        f"  machine              {r['cpu_count']} cores, load average {', '.join(f'{x:.1f}' for x in r['load_average'])} "
        f"(before: {', '.join(f'{x:.1f}' for x in r['load_average_before'])})",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 20 instead of 24")
    parser.add_argument("--n", type=int, default=None, help="another n (default 24, or 20 with --quick)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (headline key: ratio)")
    parser.add_argument("--workers", type=int, default=None, help="commsim's --workers (default: its own choice)")
    parser.add_argument("--project", action="store_true",
                        help="instead: time one shard at n = 24, 28, 32 and project the whole sweep on 64 and 512 workers")
    args = parser.parse_args(argv)
    if args.project:
        result = {"benchmark": "exhaustive_projection", "model": MODEL, "load_average": os.getloadavg(),
                  "cpu_count": os.cpu_count(), "by_n": projection()}
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            for n, row in result["by_n"].items():
                print(f"n = {n}: {row['instances']:,} instances, {row['shards']:,} shards; one shard "
                      f"{row['instances_per_cpu_second']:,} instances per CPU second; projected "
                      + ", ".join(f"{s:,} s on {w} workers" for w, s in row["projected_seconds"].items()))
        return 0
    result = run(args.quick, args.n, args.workers)
    print(json.dumps(result, indent=2) if args.json else summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
