"""Lesson ``attention-dyck``: the fooling-set argument of Lemma 1 / Theorem 5 of [BHBK24] on a layer
(transcript collision, crossing, verified failure)."""
from __future__ import annotations

import math

import numpy as np

from commsim import Lesson, Step
from commsim.theory.bounds import ceil_log2
from protocols.lessons.common import certificate_of, engine, messages_of, run_one
from protocols.lessons.common import size_arg as _size
from protocols.lessons.drawings import odd_even_drawing
from protocols.theorems import dyck_min_width, exchange_bits, query_bits, theorem5_paper_lengths

#: the lesson's layer: the lookup construction cut down to width 4 -- right on every member, its transcripts
#: differ from member to member, yet below N - 1 bits two of them must collide
DYCK_SPEC = "construct:lookup:width=4"
#: the named contrast: a probe that reads one position, one transcript for every member
PROBE_SPEC = "attention:probe:at=0,accept=0/2"


def attention_dyck(n: int | None = None) -> Lesson:
    from commsim.contract import InputError
    from commsim import bit_budget as budget
    from commsim import run_reduction
    from commsim.theory.dyck import DyckLanguage
    from commsim.theory.fooling import fooling_set
    N = _size(n, "attention-dyck")
    rid = "dyck22-fooling"
    lang = DyckLanguage(2, 2)
    fs = fooling_set("dyck22", N)
    ver = fs.verify()
    show = fs.strings(0, min(fs.size, 6))
    steps = [Step(
        f"Dyck-(2,2) of length {N}, split odd/even",
        f"Dyck-(2,2): balanced strings over ( ) [ ] nested at most 2 deep. Alice holds the symbols at odd "
        f"positions, Bob those at even positions. There are exactly 2^(N−1) = {fs.size} members of length {N}.",
        instance="members: " + ", ".join(lang.decode(s) for s in show) + (", ..." if fs.size > len(show) else "")
                 + f"\nfor {lang.decode(show[0])}: Alice holds {lang.decode(show[0][0::2])}, Bob holds "
                   f"{lang.decode(show[0][1::2])}",
        holdings={"alice": "positions 1, 3, 5, ...", "bob": "positions 2, 4, 6, ..."},
        inequality=rf"\text{{members of length }} {N} = 2^{{{N}-1}} = {fs.size}",
        reference="Lemma 1 and Appendix E of [BHBK24]")]
    steps[0].figures.append(odd_even_drawing(lang.decode(show[0])))
    x = np.asarray(fs.strings(3 % fs.size, 3 % fs.size + 1)[0])
    odd = x[0::2]
    from itertools import product
    evens = np.array(list(product(range(4), repeat=N // 2)), dtype=np.uint8)
    full = np.empty((len(evens), N), dtype=np.uint8)
    full[:, 0::2] = odd
    full[:, 1::2] = evens
    completions = int(lang.is_member(full).sum())
    steps.append(Step(
        "Lemma 1: Alice's half pins down Bob's half",
        "Given the odd-position symbols of a member, exactly one choice of the even-position symbols completes it. "
        "So crossing two different members (Alice's half of one, Bob's half of the other) always gives a "
        "non-member: all the members form a fooling set.",
        instance=f"Alice's half {lang.decode(odd)} (of {lang.decode(x)}): of all 4^{N // 2} = {len(evens)} even "
                 f"halves, {completions} completes it to a member",
        holdings={"alice": lang.decode(odd), "bob": "one of 4^(N/2) strings"},
        inequality=rf"\mathrm{{CC}}_{{\text{{odd/even}}}}(\text{{Dyck-(2,2)}}_{{{N}}}) \ge \log_2 2^{{{N}-1}} = {N - 1}",
        notes=f"fooling set verified: {ver.ok} ({ver.method})",
        reference="Lemma 1 of [BHBK24]"))
    reduction, problem, model, simulator = engine(rid, DYCK_SPEC, N)
    A0, B0 = problem.split(x[None])
    encoded, result, answer, direct = run_one(reduction, problem, model, simulator, A0[0], B0[0])
    m, p, H = model.width, model.precision, model.heads
    formula = exchange_bits(m, p, H, N) + query_bits(m, p, H)
    steps.append(Step(
        "A one-layer model as a protocol on this split",
        f"Take a one-layer attention model, {model.spec} (m = {m}, H = {H}, p = {p}). Theorem 4 runs it as a "
        f"protocol on the odd/even split. The runner's transcript on the member {lang.decode(x)}:",
        instance=f"output: {answer} (member? {int(lang.is_member(x[None])[0])}); direct forward {direct}",
        holdings={"alice": lang.decode(A0[0]), "bob": lang.decode(B0[0])},
        messages=messages_of(result.transcript),
        inequality=rf"\text{{bits}} = {result.transcript.total_bits} \le 3m(p + \lceil\log_2 N\rceil)H + mpH = {formula}",
        reference="Theorem 4 of [BHBK24]"))
    cert, searched = certificate_of(reduction, problem, model, simulator, seed=0)
    if cert is None or cert.kind != "rectangle":
        steps.append(Step("The fooling-set sweep", f"no transcript collision: {searched}", reference="Lemma 1"))
    else:
        d = cert.details
        m1, m2 = d["member_1"], d["member_2"]      # "index": 0-based in the certificate's JSON; text counts from 1
        runs = []
        for mem in (m1, m2):
            _, r, ans, dirr = run_one(reduction, problem, model, simulator, mem["alice"], mem["bob"])
            runs.append((mem, r, ans))
        t1, t2 = runs[0][1].transcript, runs[1][1].transcript
        s1 = problem.interleave(np.asarray([m1["alice"]]), np.asarray([m1["bob"]]))[0]
        s2 = problem.interleave(np.asarray([m2["alice"]]), np.asarray([m2["bob"]]))[0]
        msgs = [(s, f"{lab} (member {m1['index'] + 1})", b) for s, lab, b in messages_of(t1)] + \
               [(s, f"{lab} (member {m2['index'] + 1})", b) for s, lab, b in messages_of(t2)]
        steps.append(Step(
            "The sweep: two members with the same transcript",
            f"Run every member of the fooling set through the protocol and compare transcripts. Distinct "
            f"transcripts found: {d['distinct_transcripts']} for {d['members']} members. Whenever that is fewer "
            f"than the members, two of them collide; with fewer than N − 1 = {N - 1} bits a collision is forced "
            f"by pigeonhole (2^bits transcripts < 2^(N−1) members).",
            instance=f"member {m1['index'] + 1}: {lang.decode(s1)}\nmember {m2['index'] + 1}: {lang.decode(s2)}\n"
                     f"transcripts equal (runner, bit for bit): {t1.digest() == t2.digest()}",
            holdings={"alice": f"{lang.decode(m1['alice'])} or {lang.decode(m2['alice'])}",
                      "bob": f"{lang.decode(m1['bob'])} or {lang.decode(m2['bob'])}"},
            messages=msgs,
            inequality=rf"\#\text{{transcripts}} = {d['distinct_transcripts']} < |S| = {d['members']}",
            notes=searched,
            reference="Lemma 1 of [BHBK24]; fooling sets: Definition 1 and Fact 4 of [BHBK24]"))
        a, b = np.asarray(cert.alice_input), np.asarray(cert.bob_input)
        crossing = problem.interleave(a[None], b[None])[0]
        _, rc, ans_c, dir_c = run_one(reduction, problem, model, simulator, a, b)
        steps.append(Step(
            "The crossing: the rectangle property forces a wrong answer",
            f"Give Alice member {m1['index'] + 1}'s half and Bob member {m2['index'] + 1}'s half. At every message each "
            f"party sees only its own half and the transcript so far — the same as in one of the two member runs — "
            f"so the crossing gets the same transcript and the same answer, 1. But by Lemma 1 it is not a member.",
            instance=f"crossing: {lang.decode(crossing)} (member? {int(lang.is_member(crossing[None])[0])})\n"
                     f"protocol answers {ans_c}; the model's direct forward answers {dir_c}; the truth is "
                     f"{cert.expected}\ntranscript equal to the members': {rc.transcript.digest() == t1.digest()}",
            holdings={"alice": f"{lang.decode(a)} (member {m1['index'] + 1})", "bob": f"{lang.decode(b)} (member {m2['index'] + 1})"},
            messages=messages_of(rc.transcript),
            inequality=r"T(x_1, y_1) = T(x_2, y_2) \implies T(x_1, y_2) = T(x_1, y_1)",
            notes=f"certificate verified: {cert.verified}. {cert.explanation}",
            reference="Lemma 1 of [BHBK24]; the rectangle property (behind Fact 4 of [BHBK24])",
            figures=[{"kind": "certificate", "certificate": cert.to_dict(), "problem": "dyck22",
                      "caption": f"members {m1['index'] + 1} and {m2['index'] + 1} and their crossing, each party's half "
                                 "(Alice: odd positions, Bob: even); highlighted: where the crossing differs "
                                 "from each member"}]))
        steps.append(_probe_contrast(N, x))
    L = ceil_log2(N)
    need = float(dyck_min_width(N, p))
    line = []
    for width, prec, heads in ((m, p, H), (64, 16, 8)):
        rep = budget("attention", width, prec, rid, heads=heads)
        sent = rep.judgement.protocol_bits
        own_max, own_out = theorem5_paper_lengths(width, prec, heads)
        line.append(f"commsim budget --arch attention --width {width} --precision {prec} --heads {heads} "
                    f"--reduction {rid}: Theorem 5's inequality in the paper's form 3m(p + log2 N)H >= N − 1 holds "
                    f"up to N = {own_max} (first ruled out {own_out}); commsim's whole-bit form "
                    f"3m(p + ceil(log2 N))H >= N − 1 up to N = {rep.paper_max_n}; the exact exchange, "
                    f"which sends {sent} bits at N = {rep.n} where the whole-bit count is {rep.bits}, up to "
                    f"N = {rep.max_n} (max N)")
    steps.append(Step(
        "Theorem 5: the width a layer needs",
        "A layer computing Dyck-(2,2) gives a protocol of 3m(p + log N)H bits for the odd/even split (Theorem 4), "
        "which must be at least N − 1 (Lemma 1). Theorem 5 solves for the width: mH ≥ (N − 1)/(3(p + log N)). "
        f"commsim computes it with ⌈log2 N⌉ = {L} in place of log N (the whole bits its exact messages use; "
        f"log2 {N} = {math.log2(N):.3f}, and where the two differ the ceiling asks a little less of the width):",
        instance=f"this model: mH = {m * H}, the bound asks mH ≥ {N - 1}/(3·({p} + {L})) = {need:.3f}\n"
                 + "\n".join(line),
        inequality=rf"m H \ge \frac{{N - 1}}{{3 (p + \lceil\log_2 N\rceil)}} = \frac{{{N - 1}}}{{3({p} + {L})}} = "
                   rf"{need:.3f}",
        notes="The bound is about budget, not correctness: the model above passes it at this N and is still "
              "wrong, because it collides anyway; a model below it must collide.",
        reference="Theorem 5 of [BHBK24]"))
    wide = run_reduction(rid, "construct:lookup", N)
    r_w, p_w, m_w, w_w = engine(rid, "construct:lookup", N)
    cert_w, searched_w = certificate_of(r_w, p_w, m_w, w_w, seed=0)
    try:
        run_reduction(rid, "dfa:dyck22", N)
        rnn_note = "(the reduction accepted a recurrent model)"
    except InputError as exc:
        rnn_note = str(exc)
    steps.append(Step(
        "The other side: a wide layer passes, a recurrence is not touched",
        "A layer of width N + 4 that reads the whole string at the query decides Dyck-(2,2): every member gets "
        "its own transcript, and it spends ≥ N − 1 bits. The bound does not touch recurrent models at all: the "
        "split is not contiguous, and a 3-bit automaton recognizes the language.",
        instance=f"commsim run {rid} --model construct:lookup --n {N}: bits used {wide.bits_used} ≥ "
                 f"{wide.lower_bound.bits}, correct on every string tested (members, crossings, non-members): {wide.model_correct}\n"
                 f"fooling-set sweep: {searched_w}\ncommsim run {rid} --model dfa:dyck22: refused — {rnn_note}",
        inequality=rf"\text{{bits}} = {wide.bits_used} \ge N - 1 = {N - 1}",
        reference="Theorem 5 and Lemma 1 of [BHBK24]; the 7-state automaton: Appendix E of [BHBK24]"))
    return Lesson("attention-dyck", f"Dyck-(2,2) against one attention layer (Lemma 1, Theorem 5; N = {N})",
                  "The fooling set of all members, a real layer's transcripts on it, a collision, the crossing on "
                  "which the layer must be wrong, and the width bound mH ≥ (N − 1)/(3(p + log N)).", steps, N)


def _probe_contrast(N: int, x) -> Step:
    """The contrast: a probe layer sends one transcript for every member, so it collides at once."""
    from commsim.theory.dyck import DyckLanguage
    lang = DyckLanguage(2, 2)
    reduction, problem, model, simulator = engine("dyck22-fooling", PROBE_SPEC, N)
    A0, B0 = problem.split(np.asarray(x)[None])
    encoded, result, answer, _ = run_one(reduction, problem, model, simulator, A0[0], B0[0])
    cert, searched = certificate_of(reduction, problem, model, simulator, seed=0)
    distinct = cert.details.get("distinct_transcripts") if cert is not None else None
    return Step(
        "Contrast: a probe that sends the same transcript for every member",
        f"{PROBE_SPEC} reads a single position and accepts by its token. Its exchange does not depend on the "
        f"rest of the string, so every member gets the same transcript: the fooling set collides at once, with no "
        f"pigeonhole needed. The layer above is the instructive case: its transcripts differ, and it still "
        f"cannot give {2 ** (N - 1)} members distinct ones.",
        instance=f"transcript on {lang.decode(np.asarray(x))}: {result.transcript.total_bits} bits, answer {answer}\n"
                 f"fooling-set sweep: {searched}",
        messages=messages_of(result.transcript),
        inequality=rf"\#\text{{transcripts}} = {distinct if distinct is not None else '?'} < 2^{{{N}-1}} = {2 ** (N - 1)}",
        reference="Lemma 1 of [BHBK24]")
