"""Lesson ``randomized``: coins break the EQ bound, not the INDEX and DISJ bounds.

Every number comes from the engine: the fingerprint and inner-product protocols run through the real
runner with recorded coins (``protocols.baseline.randomized``), their error is measured by ``run_cc``
over seeded instances and coins, the INDEX bound (1 - H2(eps))·n is ``commsim.theory.bounds``' formula,
and the Dyck-(2,2) remark is checked on the exhaustive communication matrix.
"""
from __future__ import annotations

import numpy as np

from commsim import Lesson, Step
from protocols.lessons.common import bits_text as _bits
from protocols.lessons.common import messages_of
from protocols.lessons.common import size_arg as _size

__all__ = ["randomized"]

#: seeded instances per measurement (each also draws fresh coins)
MEASURED = 4000
SEED = 0


def _interval(m: dict) -> str:
    return (f"{m['rate']:.4f} ({m['events']} of {m['trials']}), 95% {m['method']} interval "
            f"[{m['low']:.4f}, {m['high']:.4f}]")


def _coins_text(transcript) -> str:
    return "; ".join(f"{c.stream} coins '{c.label}' (drawn by {c.party}): {c.bits}" for c in transcript.coins)


def _near_miss(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded a and b = a with one bit flipped."""
    a = np.random.default_rng(SEED).integers(0, 2, size=n, dtype=np.uint8)
    b = a.copy()
    b[n // 2] ^= 1
    return a, b


def _unequal_error(report) -> dict:
    return report.randomized["measured_error_by_answer"]["0"]


def randomized(n: int | None = None) -> Lesson:
    from commsim.contract import CoinSource
    from commsim.contract import run_protocol
    from commsim import run_cc
    from commsim.theory.bounds import (
        RANDOMIZED,
        binary_entropy,
        index_one_way_randomized_bits,
    )
    from commsim.theory.problems import make_problem
    from protocols.baseline.randomized import (
        FingerprintEquality,
        InnerProductEquality,
        SampledIndex,
    )
    from protocols.reductions.eq import Inequality

    n = _size(n, "randomized")
    eq = make_problem("eq", n)
    steps = [Step(
        f"Deterministically, EQ_{n} takes {n} bits",
        "The pairs (x, x) form a fooling set of size 2^n: a deterministic protocol that gives two of them the "
        "same transcript also accepts a crossed pair (x, y) with x != y. So every deterministic protocol, and "
        "every model simulated by one, must carry n bits.",
        inequality=rf"D(\mathrm{{EQ}}_{{{n}}}) \ge \log_2 2^{{{n}}} = {n}",
        reference="Fact 2 of [BHBK24]; Theorems 11 and 12 use it for INEQ")]

    # ---- fingerprints (private coins) -------------------------------------------------------------
    eps = 0.1
    fp = FingerprintEquality(eq, eps)
    a, b = _near_miss(n)
    runs = [run_protocol(fp, a, a, coins=CoinSource(SEED, 0)), run_protocol(fp, a, b, coins=CoinSource(SEED, 1))]
    steps.append(Step(
        "With private coins: a polynomial fingerprint",
        f"Read a as the polynomial A(x) = sum_i a_i x^i over the field F_q, q = {fp.prime} (the least prime >= "
        f"(n - 1)/eps with eps = {eps}; q, not p, which names a model's precision elsewhere). Alice draws x "
        f"uniformly from F_q with her own coins and sends x and "
        f"A(x) mod q: {fp.width} + {fp.width} = {2 * fp.width} bits instead of {n}. Bob answers 'equal' iff "
        f"B(x) = A(x). On an equal pair the test always passes; below, the second pair differs in one bit.",
        instance=f"a = {_bits(a)}\nb = {_bits(b)} (a with bit {n // 2 + 1} flipped)\n"
                 f"run on (a, a): coins {_coins_text(runs[0].transcript)}; answer {runs[0].output}\n"
                 f"run on (a, b): coins {_coins_text(runs[1].transcript)}; answer {runs[1].output}",
        holdings={"alice": f"a in {{0,1}}^{n}, her private coins", "bob": f"b in {{0,1}}^{n}, his private coins"},
        messages=messages_of(runs[1].transcript),
        inequality=rf"a \ne b:\ \Pr_x[A(x) = B(x)] \le \frac{{n - 1}}{{q}} = \frac{{{n - 1}}}{{{fp.prime}}} = "
                   rf"{fp.promised_error:.4f}\quad\text{{with }} 2\lceil\log_2 q\rceil = {2 * fp.width} "
                   rf"\text{{ bits}}",
        notes="A - B is a non-zero polynomial of degree at most n - 1, so it has at most n - 1 roots in F_q. "
              "The coins are recorded in the transcript: the seed reproduces the run exactly.",
        reference="polynomial fingerprints, standard (Kushilevitz and Nisan, ch. 3); section 9 of the reference"))
    rep = run_cc("eq", n, FingerprintEquality, instances=MEASURED, seed=SEED, error=eps)
    steps.append(Step(
        "Measured: the fingerprint's error",
        f"{MEASURED} seeded instances, {rep.randomized['input_distribution']}; each run draws fresh coins. The "
        f"protocol never errs on equal pairs; on unequal pairs the measured error must not be significantly "
        f"above the promise.",
        instance=f"bits used: {rep.bits_used} (n = {n})\nerror over all instances: "
                 f"{_interval(rep.randomized['measured_error_detail'])}\nerror on unequal pairs: "
                 f"{_interval(_unequal_error(rep))}\nconsistent with the promise: "
                 f"{'yes' if rep.randomized['consistent_with_promise'] else 'NO'}",
        inequality=rf"\text{{measured error}} \le {fp.promised_error:.4f}\ \text{{(promised, on every input)}}",
        reference="commsim cc eq --protocol fingerprint --error 0.1"))

    # ---- inner products (public coins) ------------------------------------------------------------
    ip = InnerProductEquality(eq, 1 / 8)
    run = run_protocol(ip, a, b, coins=CoinSource(SEED, 2))
    rep_ip = run_cc("eq", n, InnerProductEquality, instances=MEASURED, seed=SEED, error=1 / 8)
    public = run.transcript.coins[0]
    steps.append(Step(
        "With public coins: random parities, k bits for error 2^-k",
        f"Both parties read the same random string: k = {ip.k} vectors r_1..r_k in {{0,1}}^{n} "
        f"({len(public.bits)} public coins). Alice sends the k parities <r_j, a> mod 2; Bob compares them with "
        f"his own. If a != b, each parity of a - b is 1 with probability exactly 1/2, so the error on every "
        f"unequal pair is exactly 2^-k = {ip.promised_error:g}: the cost does not grow with n at all.",
        instance=f"run on the near-miss pair: public coins (recorded once, read by both) start "
                 f"{str(public.bits)[:48]}...; answer {run.output}\nmeasured on unequal pairs: "
                 f"{_interval(_unequal_error(rep_ip))}",
        messages=messages_of(run.transcript),
        inequality=rf"\Pr[\text{{error}}\ |\ a \ne b] = 2^{{-{ip.k}}} = {ip.promised_error:g}"
                   rf"\quad\text{{with }} {ip.k} \text{{ bits}}",
        notes="Newman's theorem turns a public-coin protocol into a private-coin one at an extra O(log n) bits: "
              "an upper bound, so the private-coin cost of EQ is O(log n) (the fingerprints above meet it). That it "
              "is also Ω(log n) is a separate lower bound (a private-coin protocol of c bits gives a "
              "deterministic one of 2^O(c) bits), not Newman's. The public-coin cost is O(log 1/eps).",
        reference="random inner products, standard (Kushilevitz and Nisan, ch. 3); Newman 1991"))

    # ---- what this means for the models ------------------------------------------------------------
    eq_bound = Inequality().one_way_bound(n)
    steps.append(Step(
        "So an EQ-based bound binds exact models only",
        "The recurrent bound m*p >= N/2 for INEQ comes from EQ's deterministic n bits. A protocol with coins "
        "and a small error needs only O(log n) bits, so the bound says nothing about a model that may err on "
        "a few inputs: it forbids exact computation, not approximate computation.",
        instance=f"eq-ineq at n = {n}: bound {eq_bound.bits} bits for deterministic protocols; "
                 + ("it also holds with coins" if eq_bound.randomized else "it does not hold with coins")
                 + f": {eq_bound.randomized_reason}",
        inequality=rf"R^{{\text{{priv}}}}_{{\epsilon}}(\mathrm{{EQ}}_{{{n}}}) \le {2 * fp.width} \lt "
                   rf"D(\mathrm{{EQ}}_{{{n}}}) = {n}",
        reference="Fact 2 of [BHBK24] (EQ, deterministic) and Theorem 11 (recurrent models); fingerprints: "
                  "Kushilevitz and Nisan, ch. 3"))

    # ---- INDEX survives ----------------------------------------------------------------------------
    index = make_problem("index", n)
    rep_ix = run_cc("index", n, SampledIndex, instances=MEASURED, seed=SEED, error=0.1)
    sampler = SampledIndex(index, 0.1)
    table = "\n".join(f"eps = {e:<5}: (1 - H2(eps))·n = {(1 - binary_entropy(e)) * n:7.2f} -> "
                      f"{_bits_word(index_one_way_randomized_bits(n, e))}" for e in (0.01, 0.05, 0.1, 0.25, 0.4))
    bound = rep_ix.randomized["randomized_bound"]
    steps.append(Step(
        "INDEX one-way keeps its bound: (1 - H2(eps))·n",
        "Bob, shown Alice's one message, recovers each bit a_b with error eps, so the message still carries "
        "about (1 - H2(eps)) bits of information per bit of a: coins only shave the bound by the factor "
        f"1 - H2(eps). A simple protocol shows the bound is of the right order without meeting it: Alice sends a "
        f"random window of s = {sampler.s} of her bits (public coins), Bob guesses outside it, error exactly "
        f"(1 - s/n)/2 = {sampler.promised_error:g}; it sends {rep_ix.bits_used} bits where the bound at that error "
        f"asks for {bound['bits']}"
        + (", so it stays above the bound, as every protocol must." if rep_ix.bits_used > bound["bits"] else
           ", exactly the bound." if rep_ix.bits_used == bound["bits"] else
           ": below the bound, which is impossible; look."),
        instance=f"{table}\nsample protocol: {rep_ix.bits_used} bits against the bound {bound['bits']} at its error "
                 f"{sampler.promised_error:g}; measured error {_interval(rep_ix.randomized['measured_error_detail'])}",
        inequality=rf"R^{{\text{{one-way}}}}_{{\epsilon}}(\mathrm{{INDEX}}_{{{n}}}) \ge (1 - H_2(\epsilon)) \cdot {n}",
        notes=RANDOMIZED["index"][1],
        reference="Ablayev 1996; Kremer, Nisan, Ron 1999 (section 9 of the reference)"))
    steps.append(Step(
        "DISJ keeps its bound too: Ω(n)",
        "Disjointness needs a linear number of bits even for two-way protocols with coins and error 1/3. The "
        "constant is smaller than the deterministic n, and commsim states none: the DISJ-based model bounds "
        "(MQAR, Match3, q-sparse averaging) hold for models that are right with high probability, up to that "
        "constant factor.",
        inequality=r"R_{1/3}(\mathrm{DISJ}_n) = \Omega(n)",
        notes=RANDOMIZED["disj"][1],
        reference="Kalyanasundaram and Schnitger 1992; Razborov 1992"))

    # ---- Dyck-(2,2): the fooling set does not survive ----------------------------------------------
    from commsim.theory.comm_matrix import communication_matrix
    N = 8
    M = communication_matrix("dyck22", N).matrix
    steps.append(Step(
        "Dyck-(2,2) with the odd/even split: a fooling set, but EQ in disguise",
        "A fooling-set bound is a deterministic bound. For Dyck-(2,2) the odd/even split makes each member's "
        "odd half determined by its even half, so membership is 'Alice's half equals the half Bob's determines' "
        "(plus a check on Bob's half alone): an equality test, which fingerprints decide with O(log N) bits.",
        instance=f"N = {N}: the {M.shape[0]} x {M.shape[1]} communication matrix has {int(M.sum())} ones, at most "
                 f"{int(M.sum(axis=1).max())} per row and {int(M.sum(axis=0).max())} per column",
        inequality=rf"D \ge N - 1 = {N - 1}\ \text{{(Lemma 1: a lower bound)}}\ \text{{but}}\ "
                   rf"R_\epsilon = O(\log_2 N)",
        notes=RANDOMIZED["dyck22"][1],
        reference="Lemma 1 of [BHBK24] (the deterministic bound); the matrix from commsim matrix dyck22"))
    return Lesson("randomized", "Randomized protocols: which lower bounds survive coins",
                  "EQ falls to fingerprints and random parities; INDEX and DISJ keep their bounds; every coin is "
                  "seeded and recorded.", steps, n)


def _bits_word(k: int) -> str:
    """"1 bit", "5 bits"."""
    return f"{k} bit{'' if k == 1 else 's'}"
