"""Benchmark: the exhaustive index-idxl sweep on a real Dask cluster -- scheduler and workers as separate processes.

Starts ``dask scheduler`` and ``dask worker`` (distributed's command line, ``python -m distributed.cli.*``) as
operating-system processes of their own -- one worker process per ``dask worker``, one thread, no nanny (the
worker is the process started, so its pid is the one reported), no dashboard, on 127.0.0.1 -- and connects
commsim to the scheduler's address through its public path, ``make_executor("dask", scheduler=ADDRESS)``.
Every instance of INDEX_n reduced to index lookup (n * 2^n of them) runs through the hidden-state handoff of
``elman:width=16,precision=16``, cut into shards by instance rank (:func:`commsim.runs.shards.run_sharded`
with the executor's ``map``), the shard results merged.  The sweep runs on the cluster with one worker, then a
second worker process is started (and retired again after the run), ``--repeats`` times interleaved, so a
busy spell on a shared machine hits both alike.  Every worker imports commsim and builds the model before the
timing starts (``Client.run``); the address comes from the scheduler's own log line, the workers are awaited
with ``Client.wait_for_workers`` -- no fixed sleeps.

Headline ``ratio`` = wall time with 2 workers / with 1 (best of the repeats; speedup = 1 / ratio).  Also
reported: every worker's CPU seconds per run (``getrusage`` through ``Client.run``) and pid, the peak resident
memory of each worker process, instances per worker CPU-second, that 1 and 2 workers give the same merged
result with no protocol/model mismatch, and the load average before and after.  From this run's measured
per-worker throughput and measured 1 -> 2 scaling, a *projection* (not a measurement) of the exhaustive sweep
at n = 28 and n = 32: instances, shards (commsim's default plan) and wall time on W = 2, 64, 512 workers with
one core each (whole shards per worker; the slowest round decides; divided by the measured scaling
efficiency, speedup / 2, at most 1; and never less than the CPU time the scheduler and the client -- one
process each, however many workers -- would spend on that many shards at the CPU seconds per task measured
here on ``--tasks`` empty tasks through the same map).

Every process started is in its own process group and is stopped in ``finally``; on Linux each also gets
SIGKILL from the kernel if this process dies first (``PR_SET_PDEATHSIG``), and the workers leave on their
own if the scheduler goes (``--death-timeout``).

    python benchmarks/dask_cluster.py --quick --json     # n = 18: well under a minute
    python benchmarks/dask_cluster.py --json             # n = 24, 32 shards, 2 repeats: several minutes
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import queue
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time

REDUCTION = "index-idxl"
#: how long a process of the cluster is given to start (or to stop) before the benchmark gives up on it
START_SECONDS = 120
STOP_SECONDS = 30

#: the first act of every process started: ask the kernel (Linux) for SIGKILL when this benchmark's process
#: ends, leave at once if it already has, then become the dask command line (the request survives exec)
_LAUNCH = ("import ctypes, os, signal, sys\n"
           "try:\n"
           "    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG\n"
           "except (OSError, AttributeError):\n"
           "    pass\n"
           "if os.getppid() != int(sys.argv[1]):\n"
           "    os._exit(70)\n"
           "os.execv(sys.executable, [sys.executable] + sys.argv[2:])\n")


# ---- run on the workers, through Client.run ----------------------------------------------------------------
def _worker_cpu_seconds() -> float:
    """CPU seconds (user + system) of the calling process."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _worker_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _worker_pid() -> int:
    return os.getpid()


def _worker_warm(model: str, n: int) -> None:
    """Import commsim and build the sweep's setup in this worker (as its first shard would), before timing."""
    from commsim.runs.shards import _setup, plan_shards
    _setup(plan_shards(REDUCTION, model, n, shards=1)[0])


# ---- the cluster's processes ---------------------------------------------------------------------------------
class Cluster:
    """A ``dask scheduler`` and ``dask worker`` processes, each started in a process group of its own, their
    output in log files of ``folder``; :meth:`close` stops every one still running."""

    def __init__(self, folder: str):
        self.folder = folder
        self.scheduler: subprocess.Popen | None = None
        self.address = ""
        self.workers: dict[str, subprocess.Popen] = {}     # the running workers, by name
        self.started: list[subprocess.Popen] = []          # every process ever started

    def _start(self, module: str, args: list[str], log: str, pipe: bool = False) -> subprocess.Popen:
        command = [sys.executable, "-c", _LAUNCH, str(os.getpid()), "-m", module, *args]
        out = open(os.path.join(self.folder, log), "w")
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=subprocess.PIPE if pipe else subprocess.STDOUT,
                                       text=True, start_new_session=True)
        finally:
            out.close()
        self.started.append(process)
        return process

    def start_scheduler(self) -> str:
        """Start the scheduler on a free local port; its address, read from its log line ``Scheduler at:``.
        ``--no-dashboard`` leaves the scheduler's small HTTP server (health, metrics) on port 8787 unless told
        otherwise: it gets a free local port too, so that two runs on one machine do not compete for it."""
        self.scheduler = self._start("distributed.cli.dask_scheduler",
                                     ["--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                      "--dashboard-address", "127.0.0.1:0"], "scheduler.log",
                                     pipe=True)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_drain, args=(self.scheduler.stderr, os.path.join(self.folder, "scheduler.log"), lines),
                         daemon=True, name="scheduler-log").start()
        seen = []
        while True:
            try:
                line = lines.get(timeout=START_SECONDS)
            except queue.Empty:
                raise SystemExit(f"benchmark: the scheduler did not start in {START_SECONDS} s: {''.join(seen)[-2000:]}")
            if line is None:
                raise SystemExit(f"benchmark: the scheduler exited ({self.scheduler.wait()}): {''.join(seen)[-2000:]}")
            seen.append(line)
            found = re.search(r"Scheduler at:\s*(\S+)", line)
            if found:
                self.address = found.group(1)
                return self.address

    def start_worker(self, name: str) -> subprocess.Popen:
        """One worker process (one thread, no nanny) for the scheduler at :attr:`address`."""
        process = self._start("distributed.cli.dask_worker",
                              [self.address, "--name", name, "--nworkers", "1", "--nthreads", "1", "--no-nanny",
                               "--no-dashboard", "--host", "127.0.0.1", "--death-timeout", "60",
                               "--local-directory", os.path.join(self.folder, name)], f"{name}.log")
        self.workers[name] = process
        return process

    def log(self, name: str) -> str:
        try:
            with open(os.path.join(self.folder, f"{name}.log")) as fh:
                return fh.read()[-2000:]
        except OSError:
            return ""

    def retire(self, client, name: str) -> None:
        """Retire worker ``name`` through the scheduler (it closes, its process exits) and reap its process."""
        address = next(a for a, w in client.scheduler_info(n_workers=-1)["workers"].items() if w["name"] == name)
        client.retire_workers(workers=[address], close_workers=True)
        _stop(self.workers.pop(name), None)      # it exits by itself; killed only if it does not

    def close(self) -> None:
        """Stop every process still running: the workers, then the scheduler."""
        for process in self.started[::-1]:
            if process is not self.scheduler:
                _stop(process, signal.SIGTERM)
        if self.scheduler is not None:
            _stop(self.scheduler, signal.SIGTERM)
        self.workers.clear()


def _drain(stream, path: str, lines: queue.Queue) -> None:
    """Copy a process's output to ``path`` line by line, each line also to ``lines`` (None at its end)."""
    with open(path, "a") as log:
        for line in stream:
            log.write(line)
            log.flush()
            lines.put(line)
    lines.put(None)


def _stop(process: subprocess.Popen, sig) -> None:
    """Wait for ``process`` to exit (after ``sig`` to its process group, if given), SIGKILL it if it does not."""
    if sig is not None and process.poll() is None:
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
    try:
        process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


# ---- the measurement -----------------------------------------------------------------------------------------
def join(cluster: Cluster, client, name: str, model: str, n: int, count: int) -> float:
    """Start worker ``name``, wait until the scheduler has ``count`` workers, warm it; the seconds it took."""
    began = time.perf_counter()
    process = cluster.start_worker(name)
    try:
        client.wait_for_workers(count, timeout=START_SECONDS)
    except Exception as exc:
        state = f"exited {process.poll()}" if process.poll() is not None else "running"
        raise SystemExit(f"benchmark: worker {name} ({state}) did not join in time ({exc}): {cluster.log(name)}")
    client.run(_worker_warm, model, n)
    return time.perf_counter() - began


def timed_sweep(executor, model: str, n: int, shards: int) -> dict:
    """One sharded exhaustive sweep through ``executor.map``: wall time, each worker's CPU time, the result."""
    from commsim.runs.shards import run_sharded
    client = executor.client
    names = {a: w["name"] for a, w in client.scheduler_info(n_workers=-1)["workers"].items()}
    before = client.run(_worker_cpu_seconds)
    scheduler, here = client.run_on_scheduler(_worker_cpu_seconds), time.process_time()
    start = time.perf_counter()
    merged = run_sharded(REDUCTION, model, n, map_fn=executor.map, shards=shards)
    wall = time.perf_counter() - start
    scheduler, here = client.run_on_scheduler(_worker_cpu_seconds) - scheduler, time.process_time() - here
    after = client.run(_worker_cpu_seconds)
    if set(after) != set(before):
        raise SystemExit(f"benchmark: the workers changed during the run: {sorted(before)} -> {sorted(after)}")
    spent = {names[a]: after[a] - before[a] for a in after}
    pids = {names[a]: p for a, p in client.run(_worker_pid).items()}
    return {"wall_s": wall, "cpu_s": spent, "pids": pids, "merged": merged,
            "scheduler_cpu_s": scheduler, "client_cpu_s": here}


def task_costs(executor, tasks: int) -> dict:
    """The CPU seconds per task of the scheduler and of this process (the client), and the wall seconds per
    task, for ``tasks`` empty tasks through ``executor.map`` -- what each shard costs besides its work."""
    client = executor.client
    scheduler, here, start = client.run_on_scheduler(_worker_cpu_seconds), time.process_time(), time.perf_counter()
    if executor.map(int, range(tasks)) != list(range(tasks)):     # a builtin: nothing to import, nothing to do
        raise SystemExit("benchmark: the empty tasks came back wrong")
    wall = time.perf_counter() - start
    scheduler, here = client.run_on_scheduler(_worker_cpu_seconds) - scheduler, time.process_time() - here
    return {"tasks": tasks, "scheduler": scheduler / tasks, "client": here / tasks, "wall": wall / tasks}


def projection(per_cpu_second: float, efficiency: float, per_task: dict, model: str, ns=(28, 32),
               workers=(2, 64, 512)) -> dict:
    """The exhaustive sweep at each n of ``ns`` on W workers of one core each, from a worker's measured
    instances per CPU-second and the measured scaling efficiency: commsim's default shard plan, whole shards
    per worker, rounds of the largest shard, divided by the efficiency -- and never less than the CPU time
    the scheduler and the client (one process each, whatever W) spend on that many shards at ``per_task``
    seconds each (measured on empty tasks through the same map: :func:`task_costs`)."""
    from commsim.runs.shards import plan_shards
    out = {}
    for n in ns:
        planned = plan_shards(REDUCTION, model, n)
        total, largest = planned[-1].stop, max(s.size for s in planned)
        per_shard = largest / per_cpu_second
        rounds = {w: -(-len(planned) // w) for w in workers}
        floor = {who: len(planned) * seconds for who, seconds in per_task.items()}
        out[n] = {"instances": total, "shards": len(planned), "largest_shard": largest,
                  "worker_seconds": round(total / per_cpu_second),
                  "scheduler_seconds": round(floor["scheduler"], 1), "client_seconds": round(floor["client"], 1),
                  "ideal_seconds": {w: round(rounds[w] * per_shard, 1) for w in workers},
                  "projected_seconds": {w: round(max(rounds[w] * per_shard / efficiency, *floor.values()), 1)
                                        for w in workers}}
    return out


def measure(n: int, shards: int, repeats: int, model: str, quick: bool, tasks: int) -> dict:
    from commsim.core.executors import make_executor
    from commsim.runs.shards import plan_shards
    if __name__ != "__main__":      # imported (a test): the workers cannot import this file, so send it by value
        import cloudpickle
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    load_before = os.getloadavg()
    runs: dict[int, list[dict]] = {1: [], 2: []}
    peaks: dict[str, float] = {}
    startup: dict[str, list[float]] = {"scheduler": [], "worker-1": [], "worker-2": []}
    with tempfile.TemporaryDirectory(prefix="commsim-dask-cluster-") as folder:
        cluster = Cluster(folder)
        atexit.register(cluster.close)
        executor = None
        try:
            began = time.perf_counter()
            address = cluster.start_scheduler()
            startup["scheduler"].append(round(time.perf_counter() - began, 2))
            executor = make_executor("dask", scheduler=address)     # commsim's public path to a running cluster
            client = executor.client
            startup["worker-1"].append(round(join(cluster, client, "worker-1", model, n, 1), 2))
            plan_shards(REDUCTION, model, n, shards=shards)     # this process's imports, before timing too
            for _ in range(repeats):
                runs[1].append(timed_sweep(executor, model, n, shards))
                startup["worker-2"].append(round(join(cluster, client, "worker-2", model, n, 2), 2))
                runs[2].append(timed_sweep(executor, model, n, shards))
                for address_, mb in client.run(_worker_peak_mb).items():
                    name = client.scheduler_info(n_workers=-1)["workers"][address_]["name"]
                    peaks[name] = round(max(peaks.get(name, 0.0), mb), 1)
                cluster.retire(client, "worker-2")
                if len(client.scheduler_info(n_workers=-1)["workers"]) != 1:
                    raise SystemExit("benchmark: the second worker did not leave the cluster")
            costs = task_costs(executor, tasks)
            processes = {"benchmark": os.getpid(), "scheduler": cluster.scheduler.pid,
                         "started": [p.pid for p in cluster.started]}
        finally:
            try:
                if executor is not None:
                    executor.close()                         # the client only: the cluster is not its own
            finally:
                cluster.close()
                atexit.unregister(cluster.close)
    load_after = os.getloadavg()
    return summarize(n, shards, repeats, model, quick, runs, peaks, startup, processes, costs, load_before, load_after)


def summarize(n, shards, repeats, model, quick, runs, peaks, startup, processes, costs, load_before,
              load_after) -> dict:
    best = {w: min(runs[w], key=lambda r: r["wall_s"]) for w in (1, 2)}
    merged = best[1]["merged"]
    same = all(r["merged"] == merged for w in (1, 2) for r in runs[w])
    ratio = best[2]["wall_s"] / best[1]["wall_s"]
    speedup = 1 / ratio
    critical = {w: min(max(r["cpu_s"].values()) for r in runs[w]) for w in (1, 2)}
    per_cpu = {w: merged.instances / min(sum(r["cpu_s"].values()) for r in runs[w]) for w in (1, 2)}
    throughput = min(per_cpu.values())                 # the lower of the two: the conservative figure
    efficiency = min(1.0, speedup / 2)
    pids = {w: [r["pids"] for r in runs[w]] for w in (1, 2)}
    per_task = {who: costs[who] for who in ("scheduler", "client")}
    return {
        "benchmark": "dask_cluster", "quick": quick, "model": model, "reduction": REDUCTION, "n": n,
        "instances": merged.instances, "shards": shards, "repeats": repeats,
        "cluster": "dask scheduler + dask worker processes (--nthreads 1, --no-nanny) on 127.0.0.1",
        "ratio": round(ratio, 4), "speedup": round(speedup, 3),
        "wall_s": {w: [round(r["wall_s"], 2) for r in runs[w]] for w in (1, 2)},
        "worker_cpu_s": {w: [{k: round(v, 2) for k, v in r["cpu_s"].items()} for r in runs[w]] for w in (1, 2)},
        "busiest_worker_cpu_s": {w: round(critical[w], 2) for w in (1, 2)},
        "cpu_ratio": round(critical[2] / critical[1], 4),
        "scheduler_cpu_s": {w: [round(r["scheduler_cpu_s"], 3) for r in runs[w]] for w in (1, 2)},
        "client_cpu_s": {w: [round(r["client_cpu_s"], 3) for r in runs[w]] for w in (1, 2)},
        "instances_per_s": {w: round(merged.instances / best[w]["wall_s"]) for w in (1, 2)},
        "instances_per_worker_cpu_s": {w: round(per_cpu[w]) for w in (1, 2)},
        "peak_worker_rss_mb": peaks, "peak_shard_rss_mb": round(max(
            r["merged"].peak_rss_bytes for w in (1, 2) for r in runs[w]) / 2**20, 1),
        "startup_s": startup, "worker_pids": pids, "processes": processes,
        "results": {w: [{"instances": r["merged"].instances, "wrong": r["merged"].wrong,
                         "mismatches": r["merged"].mismatches, "bits_used": r["merged"].bits_used}
                        for r in runs[w]] for w in (1, 2)},
        "same_result_1_and_2_workers": same,
        "wrong": merged.wrong, "mismatches": merged.mismatches, "bits_used": merged.bits_used,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after], "cpus": os.cpu_count(),
        "projection": {
            "what": "a projection, not a measurement: this run's measured instances per worker CPU-second (the "
                    "lower of the 1- and 2-worker figures) and measured 1 -> 2 scaling efficiency (speedup / 2, "
                    "at most 1), one core per worker, commsim's default shard plan, whole shards per worker; "
                    "never less than the scheduler's or the client's CPU time for that many shards at this "
                    "run's CPU seconds per task (measured on empty tasks through the same map)",
            "instances_per_worker_cpu_s": round(throughput), "scaling_efficiency": round(efficiency, 4),
            "cpu_s_per_shard": {who: round(v, 6) for who, v in per_task.items()},
            "empty_tasks": costs["tasks"], "wall_s_per_empty_task": round(costs["wall"], 6),
            "by_n": projection(throughput, efficiency, per_task, model)},
        "ok": bool(same and merged.mismatches == 0 and merged.instances == n * 2 ** n),
    }


def report(out: dict) -> str:
    lines = [f"exhaustive {REDUCTION} sweep, n = {out['n']}: {out['instances']:,} instances in {out['shards']} "
             f"shards, {out['model']}, on {out['cluster']}"]
    for w in (1, 2):
        lines.append(f"  {w} worker{'s' if w == 2 else ''}: wall {out['wall_s'][w]} s, CPU per worker "
                     f"{out['worker_cpu_s'][w]}, {out['instances_per_worker_cpu_s'][w]:,} instances per worker CPU-s")
    lines.append(f"  ratio {out['ratio']} (speedup {out['speedup']}); busiest worker's CPU 2/1 {out['cpu_ratio']}; "
                 f"peak RSS {out['peak_worker_rss_mb']} MB; same result {out['same_result_1_and_2_workers']}, "
                 f"mismatches {out['mismatches']}; load {out['load_average_before']} -> {out['load_average_after']} "
                 f"on {out['cpus']} CPUs")
    p = out["projection"]
    lines.append(f"  PROJECTION from this run ({p['instances_per_worker_cpu_s']:,} instances per worker CPU-s, "
                 f"scaling efficiency {p['scaling_efficiency']}; CPU s per shard {p['cpu_s_per_shard']}), "
                 f"one core per worker:")
    for n, row in p["by_n"].items():
        lines.append(f"    n = {n}: {row['instances']:,} instances, {row['shards']:,} shards: "
                     + ", ".join(f"{s:,} s on {w} workers" for w, s in row["projected_seconds"].items()))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 18, 4 shards")
    parser.add_argument("--json", action="store_true", help="print one JSON object (headline key: ratio)")
    parser.add_argument("--model", default="elman:width=16,precision=16", help="model spec")
    parser.add_argument("--n", type=int, default=None, help="INDEX size (default 24; quick 18)")
    parser.add_argument("--shards", type=int, default=None, help="shards (default 32; quick 4)")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved repeats, best of (default 2)")
    parser.add_argument("--tasks", type=int, default=None,
                        help="empty tasks that measure the cost of a task (default 2000; quick 500)")
    args = parser.parse_args(argv)
    for name in ("n", "shards", "repeats", "tasks"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.exit(2, f"dask_cluster.py: --{name} must be at least 1, got {value}\n")
    n = args.n or (18 if args.quick else 24)
    shards = args.shards or (4 if args.quick else 32)
    # a SIGTERM ends the benchmark through its finally blocks, which stop the cluster
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    tasks = args.tasks or (500 if args.quick else 2000)
    from commsim.core.errors import InputError
    from commsim.runs.shards import _setup, plan_shards
    try:                                    # a bad model, n or shards: said here, before any process starts
        _setup(plan_shards(REDUCTION, args.model, n, shards=shards)[0])
    except InputError as exc:
        parser.exit(2, f"dask_cluster.py: {exc}\n")
    out = measure(n, shards, args.repeats or 2, args.model, args.quick, tasks)
    print(json.dumps(out, indent=2) if args.json else report(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
