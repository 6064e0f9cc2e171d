"""Lesson ``fooling-sets``: the rectangle property and the fooling sets of EQ, DISJ, INDEX, Dyck-(2,2)."""
from __future__ import annotations

from commsim import Lesson, Step
from protocols.lessons.common import bits_text as _bits
from protocols.lessons.common import size_arg as _size
from protocols.theorems import index_two_way_protocol_bits


# ---- fooling sets --------------------------------------------------------------------
def fooling_sets(n: int | None = None) -> Lesson:
    from commsim.theory.comm_matrix import analyze_matrix
    from commsim.theory.fooling import cross, fooling_set

    n = _size(n, "fooling-sets")
    N = 2 * n
    steps = [Step(
        "The rectangle property",
        "If inputs (x1, y1) and (x2, y2) get the same transcript, so do (x1, y2) and (x2, y1): at every message "
        "the speaker sees only its own input and the transcript so far, so it cannot tell the crossed inputs apart.",
        reference="Definition 1 and Fact 4 of [BHBK24] (Appendix E)")]
    for name, desc in (("eq", "EQ"), ("disj", "DISJ")):
        fs = fooling_set(name, n)
        ver = fs.verify()
        x, y = fs.member(1)
        x2, y2 = fs.member(2)
        crossings = cross(fs, 1, 2)
        steps.append(Step(
            f"A fooling set for {desc}_{n}",
            f"S = {fs.construction}. Every member has f = {fs.value}; for two members, at least one crossing "
            f"has f != {fs.value}, so no two members can share a transcript.",
            instance=f"members #1 = ({_bits(x)}, {_bits(y)}) and #2 = ({_bits(x2)}, {_bits(y2)}); crossings: "
                     + ", ".join(f"f({_bits(c.alice)}, {_bits(c.bob)}) = {c.value}" for c in crossings),
            holdings={"alice": f"x in {{0,1}}^{n}", "bob": f"y in {{0,1}}^{n}"},
            inequality=rf"\mathrm{{CC}}(\mathrm{{{desc}}}_{{{n}}}) \ge \log_2 |S| = \log_2 2^{{{n}}} = {n}",
            notes=f"verified: {ver.ok} ({ver.method})",
            reference=fs.source))
    fs = fooling_set("index", n)
    ver = fs.verify()
    steps.append(Step(
        f"One-way: INDEX_{n} needs {n} bits from Alice",
        "In a one-way protocol Bob's answer depends only on Alice's message and b. Two Alice inputs a != a' "
        "differ at some index b, so they must get different messages: 2^n inputs, 2^n distinct messages.",
        instance=f"all {fs.size} Alice inputs; e.g. {_bits(fs.member(1)[0])} vs {_bits(fs.member(2)[0])}",
        inequality=rf"\text{{one-way }}\mathrm{{CC}}(\mathrm{{INDEX}}_{{{n}}}) \ge \log_2 2^{{{n}}} = {n}"
                   rf"\quad\text{{but two-way}} \le \lceil\log_2 {n}\rceil + 1 = {index_two_way_protocol_bits(n)}",
        notes=f"verified: {ver.ok} ({ver.method})",
        reference=fs.source))
    dy = fooling_set("dyck22", N)
    dver = dy.verify()
    shown = 3                                   # 0-based in the set's order; the text counts from 1
    s = dy.strings(shown, shown + 1)[0]
    lang = dy.language
    steps.append(Step(
        f"Dyck-(2,2) at N = {N}: every member is in the fooling set",
        f"There are exactly {dy.size} = 2^(N-1) members of length {N}. Split odd positions to Alice and even to "
        "Bob: the odd half of a member has exactly one even half completing it, so crossing two members gives a "
        "non-member.",
        instance=f"member #{shown + 1} of {dy.size}: {lang.decode(s)}  (Alice: {lang.decode(s[0::2])}, Bob: {lang.decode(s[1::2])})",
        holdings={"alice": "symbols at positions 1, 3, 5, ...", "bob": "symbols at positions 2, 4, 6, ..."},
        inequality=rf"\mathrm{{CC}}_{{\text{{odd/even}}}}(\text{{Dyck-(2,2)}}_{{{N}}}) \ge \log_2 2^{{{N}-1}} = {N - 1}",
        notes=f"verified: {dver.ok} ({dver.method})",
        reference=dy.source))
    for name, label in (("eq", "EQ"), ("disj", "DISJ"), ("index", "INDEX")):
        rep = analyze_matrix(name, n)
        steps.append(Step(
            f"The communication matrix of {label}_{n}",
            "Other lower-bound methods agree: log2 of the rank (a protocol of c bits splits the matrix into at "
            "most 2^c monochromatic rectangles), and for one-way protocols log2 of the number of distinct rows.",
            instance="\n".join(rep.matrix.render()[:16]) + ("\n..." if rep.matrix.matrix.shape[0] > 16 else ""),
            inequality=rf"\text{{rank}}_\mathbb{{R}} = {rep.rank_real},\ \text{{rank}}_{{GF(2)}} = {rep.rank_gf2},"
                       rf"\ \lceil\log_2 \#\text{{rows}}\rceil = {rep.one_way_bits},"
                       rf"\ \text{{fooling set found}}: {rep.fooling.size}",
            reference="the rectangle property, log-rank and distinct rows: standard (Kushilevitz and Nisan, ch. 1-2, cited in Appendix B.1 of [BHBK24])"))
    steps.append(_randomness_step(n))
    return Lesson("fooling-sets", "Fooling sets and the rectangle argument",
                  "Why a protocol that uses too few bits must confuse two inputs, shown on EQ, DISJ, INDEX and "
                  "Dyck-(2,2) with exhaustive checks.", steps, n)


def _randomness_step(n: int) -> Step:
    """The rectangle argument is about deterministic protocols: what survives coins, with EQ's fingerprint run."""
    from commsim.contract import CoinSource
    from commsim.contract import run_protocol
    from commsim.theory.bounds import RANDOMIZED, index_one_way_randomized_bits
    from commsim.theory.problems import make_problem
    from protocols.baseline.randomized import FingerprintEquality

    big = 1024   # coins pay off at large n: EQ_1024 takes 1024 bits deterministically
    fp = FingerprintEquality(make_problem("eq", big), 0.01)
    a = [1] * big
    run = run_protocol(fp, a, a, coins=CoinSource(0, 0))
    verdict = {True: "survives coins", False: "does not survive coins", None: "not stated"}
    lines = [f"{name}: the bound {verdict[RANDOMIZED[name][0]]}" for name in ("eq", "index", "disj", "dyck22")]
    return Step(
        "Fooling sets bound deterministic protocols only",
        "The rectangle property holds for every deterministic protocol, not for protocols with coins: a "
        "randomized protocol may give two fooling-set members the same transcript and still be right with high "
        f"probability. EQ shows it: for EQ_{big} the fingerprint protocol (a random x in F_p, p = {fp.prime}) "
        f"sends {run.transcript.total_bits} bits with error at most {fp.promised_error:.3g}, against {big} bits "
        "deterministically. INDEX one-way and DISJ "
        "keep their bounds by other arguments (information, discrepancy); see `commsim teach randomized`.",
        instance="\n".join(lines) + f"\nINDEX_{n} one-way at error 0.1: {index_one_way_randomized_bits(n, 0.1)} bits",
        messages=[(m.sender, m.label, str(m.bits)) for m in run.transcript.messages],
        inequality=rf"R_\epsilon(\mathrm{{EQ}}_{{{big}}}) \le {run.transcript.total_bits}\ \text{{(coins, error }}"
                   rf"{fp.promised_error:.3g}\text{{)}}\quad D(\mathrm{{EQ}}_{{{big}}}) = {big}",
        reference="Kalyanasundaram and Schnitger 1992, Razborov 1992 (DISJ); Kremer, Nisan, Ron 1999 (INDEX)")
