"""Benchmark: every ratio of the recurrent speed goals in one JSON object, commsim and its peer in the same run.

For each recurrent kind (``elman``, ``lstm``, ``gru``; hidden size 16, 16-bit fixed point) and each exhaustive job
(``index-idxl`` at n, ``eq-ineq`` at n // 2 + 1: 4^(n//2+1) instances, 2^22 at n = 20), commsim's command line
(``commsim run TASK --model KIND:width=16,precision=16 --n N --instances all --json``) and the PyTorch loop of
``benchmarks/torch_peer.py`` run as whole child processes, one after the other, each twice (the best kept):

* ``cpu_ratio``  -- commsim's CPU time in one process (``--workers 1``) / the one-thread peer's (the children's
  user + system time from ``resource.getrusage``: robust on a shared machine).  Goal: at most 0.5.
* ``wall_ratio`` -- commsim's wall time with one worker per core (``--workers CORES``) / the peer's with
  ``torch.set_num_threads(CORES)``.  Goal: at most 1.  Meaningful only on a quiet machine: the load average is
  recorded beside every figure.

Every commsim run must report ``protocol_matches_model`` (the handoff equals the direct forward on every
instance); ``checked`` says what each instance's check compares and what the runner re-runs on a sample.
:func:`measure` returns the object; from the command line it also holds the attention-side goals of
``goals_attention.py`` (the codec at every width, the exchange at N = 2^18, the GPT-2-sized run): every goal's
figure in one JSON object.

    python benchmarks/goals.py                # n = 20 (index-idxl) and 11 (eq-ineq): tens of minutes
    python benchmarks/goals.py --quick        # n = 8 and 5: a smoke test (ratios meaningless: start-up dominates)
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
from pathlib import Path

GOALS = {"cpu_ratio_max": 0.5, "wall_ratio_max": 1.0}


def _sibling(name: str):
    """The benchmark script ``NAME.py`` beside this one (the folder is not a package)."""
    path = Path(__file__).resolve().parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _peer_module():
    """``torch_peer.py``: the PyTorch loop commsim is measured against."""
    return _sibling("torch_peer")


def task_sizes(n: int) -> dict[str, int]:
    """The n of each job: index-idxl at n (n·2^n instances), eq-ineq at n // 2 + 1 (4^(n//2+1) instances)."""
    return {"index-idxl": n, "eq-ineq": n // 2 + 1}


def machine() -> dict:
    """What the figures ran on."""
    model = ""
    try:
        with open("/proc/cpuinfo") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        pass
    return {"cpu": model or platform.processor(), "cores": len(os.sched_getaffinity(0)),
            "python": platform.python_version(), "load_average": [round(x, 2) for x in os.getloadavg()]}


def measure(n: int = 20, quick: bool = False, kinds=("elman", "lstm", "gru"), repeats: int = 2,
            tasks=("index-idxl", "eq-ineq"), attention: bool = False) -> dict:
    """Every ratio (module docstring) as one dict: ``ratios`` maps ``"TASK/KIND/cpu"`` and ``".../wall"`` to its
    figure, ``runs`` holds every child's timings, ``all_exact`` is True when every commsim run matched its model.
    With ``attention``, the attention-side goals of ``goals_attention.py`` too (the codec's worst width, the
    exchange against the direct forward, the GPT-2-sized run), under ``attention`` and in ``goals_met``."""
    peer = _peer_module()
    if quick:
        n, repeats = min(n, 8), 1
    cores = len(os.sched_getaffinity(0))
    ratios, runs = {}, []
    for task, size in task_sizes(n).items():
        if task not in tasks:
            continue
        for kind in kinds:
            row = peer.compare(kind, size, task, repeats=repeats, cores=cores)
            ratios[f"{task}/{kind}/cpu"] = row["cpu_ratio"]
            ratios[f"{task}/{kind}/wall"] = row["wall_ratio"]
            runs.append(row)
            print(f"{task} n={size} {kind}: CPU {row['commsim_one_process']['cpu_s_runs']} s vs "
                  f"{row['torch_one_thread']['cpu_s_runs']} s (ratio {row['cpu_ratio']}); wall "
                  f"{row['commsim_default']['wall_s_runs']} s vs {row['torch_two_threads']['wall_s_runs']} s (ratio "
                  f"{row['wall_ratio']}); exact {row['exact']}; load {os.getloadavg()[0]:.1f}", file=sys.stderr,
                  flush=True)
    met = {key: value <= GOALS["cpu_ratio_max" if key.endswith("/cpu") else "wall_ratio_max"]
           for key, value in ratios.items()}
    out = {"benchmark": "goals", "quick": quick, "n": task_sizes(n), "repeats": repeats, "machine": machine(),
           "goals": GOALS, "ratios": ratios, "goals_met": met, "all_exact": all(r["exact"] for r in runs),
           "runs": runs}
    if attention:
        side = _sibling("goals_attention").measure(quick)
        out["attention"] = side
        ratios["codec/worst_width"] = side["codec"]["worst_ratio"]
        ratios["exchange/direct"] = side["exchange"]["ratio"]
        met.update({"codec/worst_width": side["codec"]["ok"], "exchange/direct": side["exchange"]["ok"],
                    "real_size/gpt2": side["real_size"]["ok"]})
        out["all_exact"] = out["all_exact"] and side["real_size"]["protocol_matches_model"]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20, help="index-idxl's n (eq-ineq runs at n // 2 + 1); default 20")
    parser.add_argument("--quick", action="store_true", help="n = 8 (eq-ineq 5), one run each: a smoke test")
    parser.add_argument("--kinds", default="elman,lstm,gru", help="comma-separated: elman, lstm, gru")
    parser.add_argument("--tasks", default="index-idxl,eq-ineq", help="comma-separated: index-idxl, eq-ineq")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each child, the best kept (default 2)")
    parser.add_argument("--no-attention", action="store_true",
                        help="leave out the attention-side goals (goals_attention.py: codec, exchange, GPT-2 size)")
    args = parser.parse_args(argv)
    tasks = tuple(t.strip() for t in args.tasks.split(",") if t.strip())
    if not tasks or any(t not in task_sizes(2) for t in tasks):
        parser.error(f"--tasks: use index-idxl and/or eq-ineq, got {args.tasks!r}")
    if args.repeats < 1:
        parser.error(f"--repeats: must be at least 1, got {args.repeats}")
    if args.n < 2:
        parser.error(f"--n: must be at least 2, got {args.n}")
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    unknown = [k for k in kinds if k not in ("elman", "lstm", "gru")]
    if unknown or not kinds:
        parser.error(f"--kinds: unknown kind {unknown[0] if unknown else ''!r} (use elman, lstm, gru)")
    print(json.dumps(measure(args.n, args.quick, kinds, args.repeats, tasks, not args.no_attention), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
