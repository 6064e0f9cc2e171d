"""Benchmark: commsim's exhaustive, checked run against the PyTorch loop a researcher would write instead.

The job: every instance of INDEX_n as index lookup (index-idxl: Alice's n bits, then Bob's index token; all
2^n * n instances), hidden size 16.  The peer is the batched torch loop -- ``nn.Embedding`` into ``nn.RNN`` (or
``nn.LSTM``, ``nn.GRU``), float32, a head ``nn.Linear(16, 2)`` -- that runs each of Alice's 2^n strings once
(in batches) and then one step per index from her final state, taking the argmax.  It computes the model's
answers and nothing else: no exactness check, no bits, no certificate.  commsim's side is the command line
``commsim run index-idxl --model KIND:width=16,precision=16 --n N --instances all --json`` (fixed point, every
instance's protocol checked bit for bit against the direct forward, the runner's spot checks, the bound).

Each side is timed as a whole child process (its start-up and imports included), one after the other in this
run: the peer with one torch thread and with two; commsim with ``--workers 1`` and with its default (one worker
per usable core).  The CPU ratio is commsim's one-process CPU time over the one-thread peer's (the children's
user + system time: robust on a shared machine); the wall ratio is commsim's default over the two-thread peer's
(meaningful only on a quiet machine: the load average is printed beside every figure).  Needs torch (an
optional extra: ``pip install torch``).

    python benchmarks/torch_peer.py --json             # n = 20: elman, lstm, gru (a few minutes)
    python benchmarks/torch_peer.py --quick --json     # n = 10
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
HIDDEN = 16
#: Alice strings per batch of the peer
PEER_BATCH = 1 << 16


def peer(kind: str, n: int, threads: int, hidden: int = HIDDEN) -> dict:
    """The torch loop (run in a child): every Alice string's prefix once, then one step per index."""
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    core_class = {"elman": torch.nn.RNN, "lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[kind]
    embed, core, head = torch.nn.Embedding(n + 2, hidden), core_class(hidden, hidden, batch_first=True), \
        torch.nn.Linear(hidden, 2)
    ones = 0
    with torch.inference_mode():
        index_inputs = embed(torch.arange(2, n + 2))                     # Bob's tokens #1..#n
        shifts = torch.arange(n - 1, -1, -1)
        for lo in range(0, 1 << n, PEER_BATCH):
            alice = torch.arange(lo, min(lo + PEER_BATCH, 1 << n))
            bits = (alice[:, None] >> shifts) & 1                          # s_1..s_n, s_1 first
            _, state = core(embed(bits))                                   # each prefix once
            for i in range(n):                                             # one step per index
                out, _ = core(index_inputs[i].expand(len(alice), 1, hidden), state)
                ones += int(head(out[:, 0]).argmax(-1).sum())
    return {"instances": n << n, "label_ones": ones}


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


def commsim_run(kind: str, n: int, workers: int | None) -> dict:
    """``commsim run index-idxl`` exhaustively as a child process, timed; with its exactness flag."""
    command = [sys.executable, "-m", "commsim", "run", "index-idxl", "--model", f"{kind}:width={HIDDEN},precision=16",
               "--n", str(n), "--instances", "all", "--json"] + ([] if workers is None else ["--workers", str(workers)])
    row = _timed(command)
    report = json.loads(row.pop("stdout"))
    row.update({"workers": workers or "default", "instances": report["instances_run"],
                "protocol_matches_model": report["protocol_matches_model"], "bits_used": report["bits_used"]})
    return row


def peer_run(kind: str, n: int, threads: int) -> dict:
    """The torch loop as a child process (this script with ``--peer``), timed."""
    row = _timed([sys.executable, __file__, "--peer", kind, "--n", str(n), "--threads", str(threads)])
    row.update(json.loads(row.pop("stdout")), threads=threads)
    return row


def compare(kind: str, n: int) -> dict:
    """The four children for one kind, and the ratios."""
    one_thread, two_threads = peer_run(kind, n, 1), peer_run(kind, n, 2)
    one_process, default = commsim_run(kind, n, 1), commsim_run(kind, n, None)
    if one_process["instances"] != one_thread["instances"]:
        raise SystemExit(f"commsim ran {one_process['instances']} instances, the peer {one_thread['instances']}")
    return {"kind": kind, "n": n, "instances": one_thread["instances"],
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
    parser.add_argument("--peer", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    n = args.n or (10 if args.quick else 20)
    if args.peer:
        print(json.dumps(peer(args.peer, n, args.threads)))
        return 0
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        parser.error(f"--kinds: unknown kind {unknown[0]!r} (use {', '.join(KINDS)})")
    rows = [compare(kind, n) for kind in kinds]
    out = {"benchmark": "torch_peer", "quick": args.quick, "n": n, "cores": len(os.sched_getaffinity(0)),
           "targets": {"elman_cpu_ratio_max": 1.0, "elman_wall_ratio_max": 1.0, "lstm_gru_ratio_max": 1.5},
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
