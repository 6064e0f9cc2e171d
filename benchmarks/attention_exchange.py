"""Benchmark: the attention exchange (Theorem 4 of [BHBK24]) against the direct forward, and the
vectorized Dyck-(2,2) fooling-set sweep behind the rectangle certificate.

1. Protocol vs direct.  One random attention layer, N = 2^18 positions (2^14 with ``--quick``),
   H = 4 heads of width m = 32, embedding dimension d = 64, fixed point p = 16 (``--dtype`` for an
   IEEE format).  The protocol runs through the real runner (both party programs, every message
   encoded and decoded) for a seeded random balanced partition; the direct forward is the same
   layer under the same semantics.  Both are timed ``--repeats`` times (default 5), interleaved, and
   the best of each is kept (the partition is validated and the shares are cut once, before timing);
   the outputs are checked bit for bit.  Headline ``ratio`` = protocol / direct in CPU time of the
   process (robust on a shared machine; ``ratio_wall`` is the same in wall-clock time) (goal <= 1.5).

2. Fooling-set sweep.  Every member of the Dyck-(2,2) fooling set at N = 20 (524,288 members; N = 16
   with ``--quick``) through the vectorized protocol of a random layer (H = 2, m = 8, d = 16, p = 16):
   transcript keys, 128-bit digests, the collision search.  Run in a child process so that its
   peak resident memory is its own (goal: under 60 s and 2 GB).  Then the whole default
   ``commsim run dyck22-fooling`` (sweep, runner checks, rectangle certificate) is timed.

Usage::

    python benchmarks/attention_exchange.py            # readable summary
    python benchmarks/attention_exchange.py --json     # one JSON object, headline key "ratio"
    python benchmarks/attention_exchange.py --quick    # smaller sizes, for a smoke run
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

RATIO_GOAL = 1.5
SWEEP_SECONDS_GOAL = 60.0
SWEEP_MEMORY_GOAL_MB = 2048.0


def protocol_vs_direct(N: int, heads: int, width: int, dim: int, fmt_name: str, repeats: int) -> dict:
    from commsim.core.precision import parse_format
    from commsim.core.runner import run_protocol
    from commsim.contract import Share
    from protocols.models.attention import random_layer
    from protocols.simulators.attention import AttentionExchangeProtocol, make_plan

    fmt = parse_format(fmt_name)
    model = random_layer(fmt, vocab=16, positions=N, heads=heads, width=width, dim=dim, seed=0)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 16, size=N)
    alice = np.flatnonzero(rng.permutation(N) < N // 2)   # a random balanced partition
    plan = make_plan(model, N, alice)
    protocol = AttentionExchangeProtocol(model, plan)
    a, b = plan.positions("alice"), plan.positions("bob")
    shares = Share(a, tokens[a], N), Share(b, tokens[b], N)
    direct_s, protocol_s = float("inf"), float("inf")        # CPU time of this process (all its threads)
    direct_wall, protocol_wall = float("inf"), float("inf")
    identical = True
    for _ in range(repeats):
        start, wall = time.process_time(), time.perf_counter()
        direct = model.forward_rep(tokens[None])
        direct_s, direct_wall = min(direct_s, time.process_time() - start), min(direct_wall, time.perf_counter() - wall)
        start, wall = time.process_time(), time.perf_counter()
        result = run_protocol(protocol, *shares)
        protocol_s = min(protocol_s, time.process_time() - start)
        protocol_wall = min(protocol_wall, time.perf_counter() - wall)
        labels, raw = result.output
        want = model.arithmetic.to_values(direct[0])  # compare the float64 bit patterns: bit for bit
        identical &= bool(np.array_equal(np.asarray(raw, dtype=np.float64).view(np.uint64), want.view(np.uint64)))
    t = result.transcript
    return {"N": N, "heads": heads, "width": width, "dim": dim, "format": fmt.name, "mode": plan.mode,
            "direct_seconds": direct_s, "protocol_seconds": protocol_s, "ratio": protocol_s / direct_s,
            "direct_wall_seconds": direct_wall, "protocol_wall_seconds": protocol_wall,
            "ratio_wall": protocol_wall / direct_wall,
            "bit_identical": identical, "bits": t.total_bits, "rounds": t.rounds,
            "bits_by_step": plan.itemize()["bits_by_step"]}


def dyck_sweep_child(N: int) -> dict:
    """Runs in a child process: the full fooling-set sweep for one random layer."""
    from commsim.certify.rectangle import sweep_fooling_set
    from commsim.core.precision import FixedPoint
    from commsim.theory.fooling import fooling_set
    from protocols.models.attention import random_layer
    from protocols.reductions.dyck import DyckFooling
    from protocols.simulators.attention import ATTENTION_EXCHANGE

    start = time.perf_counter()
    reduction = DyckFooling()
    problem = reduction.problem(N)
    model = random_layer(FixedPoint.with_bits(16), vocab=4, positions=N, heads=2, width=8, dim=16, seed=0)
    fs = fooling_set("dyck22", N)

    def evaluate(A, B):
        """The simulator's transcript keys (the hook the engine's rectangle search reads), answers decoded."""
        labels, keys = ATTENTION_EXCHANGE.transcript_keys(model, reduction.encode(problem, A, B))
        return reduction.decode(labels, B), keys

    sweep = sweep_fooling_set(fs, evaluate, stop_at_error=False)
    clash = sweep.first_collision()
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"N": N, "members": int(fs.size), "swept": sweep.swept, "distinct_transcripts": sweep.distinct,
            "collision": None if clash is None else list(clash),
            "bits_per_member": ATTENTION_EXCHANGE.plan_model(model, reduction.encode(problem,
                                                                                 *fs.member_arrays(0, 1))).bits,
            "seconds": seconds, "peak_rss_mb": peak_mb, "model": "random, H=2, m=8, d=16, fixed16.8"}


def dyck_sweep(N: int) -> dict:
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--dyck-child", str(N)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def default_run(N: int) -> dict:
    from commsim.runs.run import run_reduction
    start = time.perf_counter()
    report = run_reduction("dyck22-fooling", n=N)
    seconds = time.perf_counter() - start
    cert = report.certificate
    return {"N": N, "seconds": seconds, "bits_used": report.bits_used, "lower_bound_bits": report.lower_bound.bits,
            "instances_run": report.instances_run, "certificate": None if cert is None else cert.kind,
            "certificate_verified": None if cert is None else cert.verified}


def run(quick: bool, fmt: str, repeats: int) -> dict:
    N = 1 << (14 if quick else 18)
    exchange = protocol_vs_direct(N, 4, 32, 64, fmt, repeats)
    dyck_N = 16 if quick else 20
    sweep = dyck_sweep(dyck_N)
    default = default_run(dyck_N)
    return {
        "benchmark": "attention_exchange", "quick": quick,
        "ratio": exchange["ratio"], "ratio_goal": RATIO_GOAL, "ratio_ok": exchange["ratio"] <= RATIO_GOAL,
        "exchange": exchange,
        "dyck_sweep": sweep,
        "dyck_sweep_ok": sweep["seconds"] < SWEEP_SECONDS_GOAL and sweep["peak_rss_mb"] < SWEEP_MEMORY_GOAL_MB,
        "dyck_default_run": default,
        "cpus": os.cpu_count(), "numpy_version": np.__version__, "python_version": sys.version.split()[0],
    }


def summary(r: dict) -> str:
    e, s, d = r["exchange"], r["dyck_sweep"], r["dyck_default_run"]
    return "\n".join([
        f"attention exchange benchmark{' (quick)' if r['quick'] else ''}",
        f"  layer                  N = {e['N']:,}, H = {e['heads']}, m = {e['width']}, d = {e['dim']}, {e['format']}",
        f"  direct forward         {e['direct_seconds']:8.3f} s CPU",
        f"  protocol (runner)      {e['protocol_seconds']:8.3f} s CPU   {e['bits']} bits, {e['rounds']} rounds, "
        f"bit-identical: {e['bit_identical']}",
        f"  ratio (headline)       {r['ratio']:8.2f}   goal <= {r['ratio_goal']:g}: {'met' if r['ratio_ok'] else 'MISSED'}",
        f"  Dyck-(2,2) sweep       N = {s['N']}: {s['swept']:,} members in {s['seconds']:.1f} s, peak "
        f"{s['peak_rss_mb']:.0f} MB, {s['distinct_transcripts']:,} distinct transcripts "
        f"({'met' if r['dyck_sweep_ok'] else 'MISSED'}: < {SWEEP_SECONDS_GOAL:g} s, < {SWEEP_MEMORY_GOAL_MB:g} MB)",
        f"  commsim run dyck22-fooling (default, N = {d['N']}): {d['seconds']:.1f} s, {d['bits_used']} bits vs "
        f"{d['lower_bound_bits']} needed, certificate {d['certificate']} (verified: {d['certificate_verified']})",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 2^14 and a Dyck sweep at N = 16")
    parser.add_argument("--json", action="store_true", help="print one JSON object (headline key: ratio)")
    parser.add_argument("--dtype", default="fixed16", help="number format of the layer (default fixed16)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repetitions (best is kept)")
    parser.add_argument("--dyck-child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.dyck_child is not None:
        print(json.dumps(dyck_sweep_child(args.dyck_child)))
        return 0
    result = run(args.quick, args.dtype, max(1, args.repeats))
    print(json.dumps(result, indent=2) if args.json else summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
