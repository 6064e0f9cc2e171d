"""Benchmark: the attention-side goals in one JSON object -- the bit codec at every width, the attention exchange
against the direct forward, and a GPT-2-sized layer run sampled at a real length.

1. Codec.  :func:`~commsim.core.bits.pack_uints` + ``unpack_uints`` of 2^20 values (2^14 with ``--quick``) at
   every width 1..64 against ``numpy.packbits`` + ``unpackbits`` of the same bits, CPU time per call, best of 5
   samples of at least 25 ms (a call takes about a millisecond)
   (``benchmarks/bits.py``'s width sweep, every round trip checked exact): the ratio per width and the worst
   (goal: at most 2 at every width).
2. Exchange.  The attention exchange through the runner against the direct forward at N = 2^18 (2^12 with
   ``--quick``), H = 4, m = 32, d = 64, fixed16, CPU time, best of 5, outputs bit-identical
   (``benchmarks/attention_exchange.py``) (goal: at most 1.05).
3. Real size.  ``commsim run index-idxl --model hf-gpt2:dim=768,heads=12,vocab=50257 --n 1024 --instances 64``
   (a one-layer GPT-2 of GPT-2's width and vocabulary, 1025 positions, 64 sampled instances; ``--quick``: width
   32 and n = 64) as a child process: its wall and CPU seconds and its peak resident memory (``/usr/bin/time
   -v`` where it exists, else the child's ``getrusage``), and whether the protocol's output equals the direct
   forward on every instance (goal: under 60 s and 2 GB, exact).

Usage::

    python benchmarks/goals_attention.py            # one JSON object
    python benchmarks/goals_attention.py --quick    # small sizes, for a smoke run
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CODEC_GOAL, EXCHANGE_GOAL, SECONDS_GOAL, MEMORY_GOAL_MB = 2.0, 1.05, 60.0, 2048.0
REAL_MODEL = "hf-gpt2:dim=768,heads=12,vocab=50257"
QUICK_MODEL = "hf-gpt2:dim=32,heads=2,vocab=1000"


def _sibling(name: str):
    """Another benchmark script of this folder, as a module (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location(f"goals_attention_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def codec(quick: bool) -> dict:
    bits = _sibling("bits")
    rows = bits.width_sweep(1 << 14 if quick else 1 << 20, 1 if quick else 5, np.random.default_rng(0),
                            min_seconds=0.0 if quick else bits.SAMPLE_SECONDS)
    worst = max(rows, key=lambda w: rows[w]["ratio"])
    return {"ratio_by_width": {w: rows[w]["ratio"] for w in rows}, "worst_width": worst,
            "worst_ratio": rows[worst]["ratio"], "goal": CODEC_GOAL, "ok": rows[worst]["ratio"] <= CODEC_GOAL,
            "values": 1 << 14 if quick else 1 << 20}


def exchange(quick: bool) -> dict:
    row = _sibling("attention_exchange").protocol_vs_direct(1 << (12 if quick else 18), 4, 32, 64, "fixed16",
                                                           1 if quick else 5)
    if not row["bit_identical"]:
        raise SystemExit("benchmark: the attention exchange is not bit-identical to the direct forward")
    return {"N": row["N"], "ratio": row["ratio"], "ratio_wall": row["ratio_wall"], "goal": EXCHANGE_GOAL,
            "ok": row["ratio"] <= EXCHANGE_GOAL, "direct_seconds": row["direct_seconds"],
            "protocol_seconds": row["protocol_seconds"]}


def real_size(quick: bool) -> dict:
    model, n = (QUICK_MODEL, 64) if quick else (REAL_MODEL, 1024)
    command = [sys.executable, "-m", "commsim", "run", "index-idxl", "--model", model, "--n", str(n),
               "--instances", "64", "--json"]
    timer = os.access("/usr/bin/time", os.X_OK)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(HERE.parent) + os.pathsep + env.get("PYTHONPATH", "")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run((["/usr/bin/time", "-v"] if timer else []) + command, capture_output=True, text=True,
                          env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"benchmark: {' '.join(command[1:])} exited {done.returncode}: {done.stderr[-1500:]}")
    report = json.loads(done.stdout)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr) if timer else None
    peak_mb = int(peak.group(1)) / 1024 if peak else after.ru_maxrss / 1024
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    exact = bool(report["protocol_matches_model"])
    return {"command": "commsim " + " ".join(command[3:]), "wall_seconds": wall, "cpu_seconds": cpu,
            "peak_rss_mb": peak_mb, "peak_rss_source": "/usr/bin/time -v" if peak else "getrusage (children)",
            "protocol_matches_model": exact, "instances_run": report["instances_run"],
            "bits_used": report["bits_used"], "seconds_goal": SECONDS_GOAL, "memory_goal_mb": MEMORY_GOAL_MB,
            "ok": exact and wall < SECONDS_GOAL and peak_mb < MEMORY_GOAL_MB}


def measure(quick: bool) -> dict:
    """Every figure of the attention-side goals (module docstring), with the machine's load beside them."""
    load_before = os.getloadavg()
    result = {"benchmark": "goals_attention", "quick": quick, "codec": codec(quick), "exchange": exchange(quick),
              "real_size": real_size(quick)}
    result["load_average_before_after"] = [list(load_before), list(os.getloadavg())]
    result["cpus"] = os.cpu_count()
    result["numpy_version"] = np.__version__
    result["python_version"] = sys.version.split()[0]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.quick), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
