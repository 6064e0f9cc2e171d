"""Benchmark: commsim's exhaustive, checked run against the PyTorch loop a researcher would write instead.

Two jobs, hidden size 16.  ``index-idxl``: every instance of INDEX_n as index lookup (Alice's n bits, then Bob's
index token; all 2^n * n instances).  ``eq-ineq``: every instance of EQ_n as INEQ (Alice's n bits, then Bob's n
bits; all 4^n instances).  The peer is the batched torch loop -- ``nn.Embedding`` into ``nn.RNN`` (tanh), ``nn.LSTM``
or ``nn.GRU``, float32, a head ``nn.Linear(16, 2)`` -- that runs each of Alice's 2^n strings once (in batches) and
then Bob's tokens from her final state (index-idxl: one step per index; eq-ineq: Bob's n steps for each of his
2^n strings), taking the argmax.  It computes the model's answers and nothing else: no exactness check, no bits,
no certificate.  commsim's side is the command line ``commsim run TASK --model KIND:width=16,precision=16 --n N
--instances all --json`` (fixed point, every instance's protocol checked against the direct forward, the
runner's spot checks, the bound).

Each side is timed as a whole child process (its start-up and imports included), one after the other in this
run: the peer with one torch thread and with two; commsim with ``--workers 1`` and with its default (one worker
per usable core).  The CPU ratio is commsim's one-process CPU time over the one-thread peer's (the children's
user + system time: robust on a shared machine); the wall ratio is commsim's default over the two-thread peer's
(meaningful only on a quiet machine: the load average is printed beside every figure).  Needs torch (an
optional extra: ``pip install torch``).  ``benchmarks/goals.py`` runs both tasks and prints every ratio.

    python benchmarks/torch_peer.py --json                   # index-idxl, n = 20: elman, lstm, gru (minutes)
    python benchmarks/torch_peer.py --task eq-ineq --n 11    # eq-ineq, n = 11
    python benchmarks/torch_peer.py --quick --json           # n = 10
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

KINDS = ("elman", "lstm", "gru")
TASKS = ("index-idxl", "eq-ineq")
HIDDEN = 16
#: Alice strings per batch of the peer
PEER_BATCH = 1 << 16


def peer(kind: str, n: int, threads: int, hidden: int = HIDDEN, task: str = "index-idxl") -> dict:
    """The torch loop (run in a child): every Alice string's prefix once, then Bob's tokens from her state."""
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    core_class = {"elman": torch.nn.RNN, "lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[kind]
    vocab = n + 2 if task == "index-idxl" else 2
    embed, core, head = torch.nn.Embedding(vocab, hidden), core_class(hidden, hidden, batch_first=True), \
        torch.nn.Linear(hidden, 2)
    ones = 0
    shifts = torch.arange(n - 1, -1, -1)
    with torch.inference_mode():
        if task == "index-idxl":
            index_inputs = embed(torch.arange(2, n + 2))                     # Bob's tokens #1..#n
            batch = PEER_BATCH
        else:
            bob_inputs = embed((torch.arange(1 << n)[:, None] >> shifts) & 1)   # Bob's 2^n strings (2^n, n, hidden)
            batch = max(1, PEER_BATCH >> n)                                    # Alice strings per batch
        for lo in range(0, 1 << n, batch):
            alice = torch.arange(lo, min(lo + batch, 1 << n))
            bits = (alice[:, None] >> shifts) & 1                              # s_1..s_n, s_1 first
            _, state = core(embed(bits))                                       # each prefix once
            if task == "index-idxl":
                for i in range(n):                                             # one step per index
                    out, _ = core(index_inputs[i].expand(len(alice), 1, hidden), state)
                    ones += int(head(out[:, 0]).argmax(-1).sum())
            else:                                                              # Bob's n steps per string
                rows = len(alice) << n
                start = tuple(s.repeat_interleave(1 << n, dim=1) for s in state) if kind == "lstm" else \
                    state.repeat_interleave(1 << n, dim=1)
                out, _ = core(bob_inputs.repeat(len(alice), 1, 1), start)
                ones += int(head(out[:, -1]).argmax(-1).sum())
                assert out.shape[0] == rows
    instances = n << n if task == "index-idxl" else 1 << (2 * n)
    return {"instances": instances, "label_ones": ones}


def _timed(command: list[str]) -> dict:
    """Run a child process; its wall time, its CPU time (user + system of it and its children) and output."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": round(cpu, 3), "wall_s": round(wall, 3), "load_average_before": round(load, 2),
            "stdout": done.stdout}


def commsim_run(kind: str, n: int, workers: int | None, task: str = "index-idxl") -> dict:
    """``commsim run TASK`` exhaustively as a child process, timed; with its exactness flag."""
    command = [sys.executable, "-m", "commsim", "run", task, "--model", f"{kind}:width={HIDDEN},precision=16",
               "--n", str(n), "--instances", "all", "--json"] + ([] if workers is None else ["--workers", str(workers)])
    row = _timed(command)
    report = json.loads(row.pop("stdout"))
    row.update({"workers": workers or "default", "instances": report["instances_run"],
                "protocol_matches_model": report["protocol_matches_model"], "bits_used": report["bits_used"],
                "checked": report["details"].get("checked")})
    return row


def peer_run(kind: str, n: int, threads: int, task: str = "index-idxl") -> dict:
    """The torch loop as a child process (this script with ``--peer``), timed."""
    row = _timed([sys.executable, __file__, "--peer", kind, "--n", str(n), "--threads", str(threads), "--task", task])
    row.update(json.loads(row.pop("stdout")), threads=threads)
    return row


def best(runs: list[dict], key: str) -> dict:
    """The run with the least ``key`` (CPU or wall seconds), with every run's figure beside it."""
    chosen = dict(min(runs, key=lambda r: r[key]))
    chosen[f"{key}_runs"] = [r[key] for r in runs]
    return chosen


def compare(kind: str, n: int, task: str = "index-idxl", repeats: int = 1, cores: int | None = None) -> dict:
    """The four children for one kind (each ``repeats`` times, the best kept), and the ratios.  ``cores``: the
    peer's threads and commsim's workers in the wall comparison (default: two threads, commsim's default)."""
    threads = cores or 2
    one_thread = best([peer_run(kind, n, 1, task) for _ in range(repeats)], "cpu_s")
    two_threads = best([peer_run(kind, n, threads, task) for _ in range(repeats)], "wall_s")
    one_process = best([commsim_run(kind, n, 1, task) for _ in range(repeats)], "cpu_s")
    default = best([commsim_run(kind, n, cores, task) for _ in range(repeats)], "wall_s")
    if one_process["instances"] != one_thread["instances"]:
        raise SystemExit(f"commsim ran {one_process['instances']} instances, the peer {one_thread['instances']}")
    return {"kind": kind, "task": task, "n": n, "instances": one_thread["instances"],
            "cpu_ratio": round(one_process["cpu_s"] / one_thread["cpu_s"], 3),
            "wall_ratio": round(default["wall_s"] / two_threads["wall_s"], 3),
            "exact": bool(one_process["protocol_matches_model"] and default["protocol_matches_model"]),
            "torch_one_thread": one_thread, "torch_two_threads": two_threads,
            "commsim_one_process": one_process, "commsim_default": default}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 10")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--n", type=int, default=None, help="INDEX size (default 20)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated: elman, lstm, gru")
    parser.add_argument("--task", choices=TASKS, default="index-idxl", help="the exhaustive job (default index-idxl)")
    parser.add_argument("--peer", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    n = args.n or (10 if args.quick else 20)
    if args.peer:
        print(json.dumps(peer(args.peer, n, args.threads, task=args.task)))
        return 0
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        parser.error(f"--kinds: unknown kind {unknown[0]!r} (use {', '.join(KINDS)})")
    rows = [compare(kind, n, args.task) for kind in kinds]
    out = {"benchmark": "torch_peer", "task": args.task, "quick": args.quick, "n": n,
           "cores": len(os.sched_getaffinity(0)), "targets": {"cpu_ratio_max": 0.5, "wall_ratio_max": 1.0},
           "results": rows}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for row in rows:
            t1, t2, c1, cd = (row[k] for k in ("torch_one_thread", "torch_two_threads", "commsim_one_process",
                                                 "commsim_default"))
            print(f"{row['kind']}, n = {n}, {row['instances']} instances: torch {t1['cpu_s']} s CPU (1 thread), "
                  f"{t2['wall_s']} s wall (2 threads); commsim {c1['cpu_s']} s CPU (1 process), {cd['wall_s']} s wall "
                  f"(default workers); CPU ratio {row['cpu_ratio']}, wall ratio {row['wall_ratio']}; exact: "
                  f"{row['exact']}; load averages {t1['load_average_before']}, {t2['load_average_before']}, "
                  f"{c1['load_average_before']}, {cd['load_average_before']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
