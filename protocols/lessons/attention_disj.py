"""Lesson ``attention-disj``: the [SHT23] reductions from DISJ to Match3 and q-sparse averaging."""
from __future__ import annotations

import numpy as np

from commsim import Lesson, Step
from protocols.lessons.common import bits_text as _bits
from protocols.lessons.common import (
    certificate_of,
    engine,
    human_label,
    messages_of,
    reduction_default,
    run_one,
    setup_of,
    tokens_text,
    value_text,
)
from protocols.lessons.common import size_arg as _size
from protocols.lessons.drawings import match3_drawing
from protocols.theorems import exchange_bits, query_bits

QSA_PROBE = "attention:probe:at=0,accept=2"


def attention_disj(n: int | None = None) -> Lesson:
    from fractions import Fraction

    from commsim import bit_budget as budget
    from commsim import run_reduction
    from commsim.theory.fooling import fooling_set
    from protocols.reductions.attention_tasks import (
        match3,
        match3_modulus,
        qsa_first_coordinate,
    )
    n = _size(n, "attention-disj")
    rid = "disj-match3"
    reduction, problem, model, simulator = engine(rid, reduction_default(rid), n)
    Mod = match3_modulus(n)
    N = 2 * n + 1
    rng = np.random.default_rng(20 + n)
    a = rng.integers(0, 2, n).astype(np.uint8)
    b = rng.integers(0, 2, n).astype(np.uint8)
    b[0] = a[0] = 1  # intersect at 1
    encoded, result, answer, direct = run_one(reduction, problem, model, simulator, a, b)
    z = encoded.tokens[0]
    hits = [i + 1 for i in range(n) if a[i] and b[i]]
    A_all, B_all = problem.all_pairs()
    enc_all = reduction.encode(problem, A_all, B_all)
    agree = bool(np.array_equal(match3(enc_all.tokens, Mod, N - 1), problem.evaluate_batch(A_all, B_all)))
    steps = [Step(
        f"Match3 decides DISJ_{n}",
        "Match3 at position i: is there a pair j, k with z_i + z_j + z_k ≡ 0 mod M? [SHT23] let j and k range over "
        "all of [N]; commsim's Match3 takes them distinct and both ≠ i (its own restriction). Encode "
        "Alice's set as z_i = i + 1 (if a_i = 1, else 1), Bob's as z_(n+i) = M − (i + 1) (if b_i = 1, else 1), "
        "and put z_N = 0 last (as [SHT23] do: x_(2n+1) = enc(0)). With M = 2n + 3 the only zero-sum triples "
        "through position N are (0, i + 1, M − i − 1) with a_i = b_i = 1. [SHT23]'s Match3 reduction reads "
        "DISJ(a, b) = 0 when the sets meet (1 = disjoint); commsim uses [BHBK24]'s convention, DISJ(a, b) = 1 when the sets meet, so Match3 at N is "
        "DISJ (1 = the sets meet).",
        instance=f"a = {_bits(a)}, b = {_bits(b)}, M = {Mod}, N = {N}\nz = {' '.join(str(int(t)) for t in z)}\n"
                 f"common elements (1-based): {{{', '.join(map(str, hits))}}}; "
                 f"Match3 at N = {int(match3(z[None], Mod, N - 1)[0])}; "
                 f"DISJ(a, b) = {int(problem.evaluate(a, b))}\nchecked on all {len(A_all)} pairs (a, b): "
                 f"Match3 = DISJ on every one: {agree}",
        holdings={"alice": f"z_1..z_{n} = {' '.join(str(int(t)) for t in z[:n])}",
                  "bob": f"z_{n + 1}..z_{N} = {' '.join(str(int(t)) for t in z[n:])}"},
        reference="[SHT23] (Match3 lower bound; its reduction); Fact 1 of [BHBK24] (the DISJ convention); the "
                  "distinct j, k are commsim's own")]
    steps[0].figures.append(match3_drawing(z, a, b))
    m, p, H = model.width, model.precision, model.heads
    steps.append(Step(
        "Any layer computing Match3 is a DISJ protocol",
        f"Run a one-layer model on the Match3 input with Theorem 4's exchange: whatever the weights, Alice and Bob "
        f"then decide DISJ with the exchange's bits. Here {model.spec}:",
        instance=f"protocol's DISJ answer {answer}, direct forward {direct}, true {int(problem.evaluate(a, b))}",
        holdings={"alice": f"a = {_bits(a)} as z_1..z_{n}", "bob": f"b = {_bits(b)} as z_{n + 1}..z_{2 * n}, and z_N"},
        messages=messages_of(result.transcript),
        inequality=rf"\text{{bits}} = {result.transcript.total_bits} \le 3m(p + \lceil\log_2 N\rceil)H + mpH"
                   rf" = {exchange_bits(m, p, H, N) + query_bits(m, p, H)}",
        reference="Theorem 4 of [BHBK24]; [SHT23]"))
    fs = fooling_set("disj", n)
    ver = fs.verify()
    steps.append(Step(
        f"DISJ_{n} needs {n} bits: so does Match3",
        "DISJ has the fooling set {(x, complement of x)} of size 2^n, so every protocol uses n bits on some input. "
        "A layer computing Match3 on N = 2n + 1 positions therefore carries n bits: Hm(p + log N) = Ω(N).",
        instance=f"fooling set: {fs.construction}",
        inequality=rf"3 m (p + \lceil\log_2 N\rceil) H + m p H \ge n = \frac{{N - 1}}{{2}} = {n}",
        notes=f"verified: {ver.ok} ({ver.method})",
        reference="[SHT23]; Fact 1 of [BHBK24] (DISJ)"))
    rep = run_reduction(rid, model.spec, n)
    size = budget("attention", m, p, rid, heads=H)
    steps.append(Step(
        "A real layer on every instance",
        f"commsim runs the layer on all {rep.instances_run} instances. The bound {rep.lower_bound.bits} does not "
        f"bite at this n (the protocol has {rep.bits_used} bits), and this random layer is simply wrong on many "
        f"instances. The bound caps how far ANY layer of its size can go:",
        instance=f"commsim run {rid} --model {model.spec} --n {n}: bits used {rep.bits_used}, bound "
                 f"{rep.lower_bound.bits}, accuracy {rep.model_accuracy:.4f}, protocol = direct forward: "
                 f"{rep.protocol_matches_model}\ncertificate: {rep.certificate.explanation if rep.certificate else '—'}\n"
                 f"commsim budget --arch attention --width {m} --precision {p} --heads {H} --reduction {rid}: max N = "
                 f"{size.max_n} ({size.verdict})",
        inequality=rf"N \le {size.max_n}\ \text{{for}}\ m = {m}, p = {p}, H = {H}",
        reference="[SHT23]; Theorem 4 of [BHBK24]"))

    # q-sparse averaging
    qid = "disj-qsa"
    red_q, prob_q, model_q, wrap_q = engine(qid, reduction_default(qid), n)
    enc_q, res_q, ans_q, dir_q = run_one(red_q, prob_q, model_q, wrap_q, a, b)
    avg = qsa_first_coordinate(enc_q.tokens, n)[0]
    A_q, B_q = prob_q.all_pairs()
    if len(A_q) > 4096:
        pick = np.random.default_rng(0).choice(len(A_q), 4096, replace=False)
        A_q, B_q = A_q[pick], B_q[pick]
    coords = qsa_first_coordinate(red_q.encode(prob_q, A_q, B_q).tokens, n)
    exact = all((c == -1) == (v == 0) for c, v in zip(coords, prob_q.evaluate_batch(A_q, B_q)))
    gap = min((c for c, v in zip(coords, prob_q.evaluate_batch(A_q, B_q)) if v == 1), default=Fraction(1))
    names = red_q.vocabulary(n)
    steps.append(Step(
        f"q-sparse averaging with q = {n}: Alice holds only the query",
        "qSA outputs the average of the values z_j over a set y of q positions. Alice's set y picks position 2i − 1 "
        "if a_i = 1, else 2i; Bob's values are +e1 at odd j = 2i − 1 with b_i = 1, else −e1. The average is −e1 "
        "exactly when the sets are disjoint, and at least 2/q higher otherwise.",
        instance=f"model input: {tokens_text(red_q, n, enc_q.tokens[0])}\nfirst coordinate of the average: {avg} "
                 f"(DISJ = {int(prob_q.evaluate(a, b))})\nchecked on {len(A_q)} pairs: average = −1 exactly "
                 f"when disjoint: {exact}; smallest value when they meet: {gap}",
        holdings={"alice": f"the query token {names[int(enc_q.tokens[0, -1])]} (position {2 * n + 1})",
                  "bob": f"the {2 * n} values"},
        reference="[SHT23] (qSA)"))
    mq, pq, Hq, dq = model_q.width, model_q.precision, model_q.heads, model_q.dim
    plan_q = wrap_q.exchange_plan(model_q, enc_q)
    side = r"(2m + 1) p H" if model_q.attend_self else r"m p H"
    query_side = (2 * mq + 1) * pq * Hq if model_q.attend_self else mq * pq * Hq
    sent = plan_q.total_bits
    steps.append(Step(
        "One-way: Alice's only message is about the query",
        "Alice owns a single position, so the exchange degenerates to one message. Either she sends x_N, her "
        "position's embedding (d·p bits), from which Bob computes her query q_N, her key, value and logit himself; "
        "or she sends each head's q_N (m·p·H bits) and, when the query attends to its own position (as the "
        "papers' layer does), her own logit and value ((m + 1)·p·H bits). She sends the cheaper one. [SHT23]'s "
        "proof has Alice send her query (O(m·p) bits); the choice of the cheaper message, and with it the min with "
        "d·p and the (2m + 1) term, is commsim's own refinement. A one-way "
        "DISJ protocol needs q bits, hence min(d·p, (2m + 1)·p·H) ≥ q for a self-attending layer "
        f"(min(d·p, m·p·H) ≥ q without self-attention; this layer attends to itself: "
        f"{'yes' if model_q.attend_self else 'no'}).",
        instance=f"{model_q.spec}: protocol answer {ans_q}, direct {dir_q}, true {int(prob_q.evaluate(a, b))}\n"
                 f"message sent: {plan_q.one_way_message} ({plan_q.one_way_reason})",
        holdings={"alice": f"the query token (a = {_bits(a)})", "bob": f"the values (b = {_bits(b)})"},
        messages=messages_of(res_q.transcript),
        inequality=rf"\min(d p, {side}) = \min({dq * pq}, {query_side}) = {sent} "
                   + (r"\ge" if sent >= n else r"\lt") + f" q = {n}",
        notes=(f"This model's {sent} bits allow q ≤ {sent}; beyond that every layer of its size "
               f"must fail on some input." if sent >= n else
               f"{sent} < q = {n}: this model must fail on some input."),
        reference="[SHT23] (qSA lower bound: Alice sends her query); the min(d·p, (2m + 1)·p·H) form is commsim's "
                  "own"))
    steps += _qsa_upper_and_fnn_steps(n)
    probe = run_reduction(qid, QSA_PROBE, n)
    r_p, p_p, m_p, w_p = engine(qid, QSA_PROBE, n)
    A_pr, B_pr = p_p.all_pairs()
    said = sorted(set(int(v) for v in setup_of(r_p, p_p, m_p, w_p).direct_answers(A_pr, B_pr)))
    cert, searched = certificate_of(r_p, p_p, m_p, w_p, seed=0)
    # One-way: a member's transcript is Alice's message. Count them on the members themselves, part by part.
    members = list(zip(*fs.member_arrays()))
    transcripts = [run_one(r_p, p_p, m_p, w_p, x, y)[1].transcript.messages for x, y in members]
    distinct = len({tuple(str(mm.bits) for mm in t) for t in transcripts})
    parts = {human_label(mm.label): len({str(t[i].bits) for t in transcripts}) for i, mm in enumerate(transcripts[0])}
    constant = [lab for lab, k in parts.items() if k == 1]
    counting = (f"counting alone would force a repeat ({len(members)} members outnumber the "
                f"2^{probe.bits_used} possible messages), but the message carries far less than its bits"
                if len(members) > 2 ** probe.bits_used else
                f"that is not counting ({len(members)} members do not outnumber the 2^{probe.bits_used} possible "
                f"messages)")
    why = (f"{counting}: the probe ignores almost all of Alice's input — "
           + (f"its {', '.join(constant)} part is the same on every member, and " if constant else "")
           + "only " + ", ".join(f"{k} value(s) of {lab}" for lab, k in parts.items() if k > 1) + " ever occur.")
    if cert is not None:
        msgs = []
        d = cert.details
        for lab, x in (("member " + str(_member_number(cert.alice_input)), cert.alice_input),
                       ("member " + str(_member_number(d.get("colliding_alice_input"))),
                        d.get("colliding_alice_input"))):
            if x is not None:
                x = np.asarray(x, dtype=np.uint8)
                _, r_m, _, _ = run_one(r_p, p_p, m_p, w_p, x, 1 - x)
                msgs += [(s, f"{lb} ({lab})", bt) for s, lb, bt in messages_of(r_m.transcript)]
        crossing = f"crossing: a = {value_text(cert.alice_input)}, b = {value_text(cert.bob_input)}: DISJ = {cert.expected}, " \
                   f"model says {cert.model_output}"
    else:
        msgs, crossing = [], "no certificate"
    steps.append(Step(
        "Right on the fooling set is not enough",
        f"{QSA_PROBE} probes position 1 for a query token, which never appears there: on all {len(A_pr)} "
        f"instances its DISJ answer is {' or '.join(map(str, said))} — 'disjoint' — so it is right on every "
        f"fooling-set member (x, ~x). "
        f"Its {probe.bits_used}-bit messages give the {len(members)} members only {distinct} distinct "
        f"transcript(s), and {why} Two members that collide have a crossing — two sets that meet — which gets "
        f"the same answer.",
        instance=f"commsim run {qid} --model {QSA_PROBE} --n {n}: bits used {probe.bits_used}, bound "
                 f"{probe.lower_bound.bits}, accuracy {probe.model_accuracy:.4f}\n{searched}\n{crossing}",
        messages=msgs,
        inequality=rf"\#\text{{transcripts}} = {distinct} < 2^{{{n}}} = |S|",
        notes=(f"certificate verified: {cert.verified}. {cert.explanation}" if cert else ""),
        reference="fooling sets (Fact 4 of [BHBK24]); [SHT23]"))
    return Lesson("attention-disj", f"DISJ against one attention layer: Match3 and q-sparse averaging (n = {n})",
                  "Two [SHT23] reductions: Match3 on 2n + 1 positions decides DISJ_n (two-way, n bits), and "
                  "q-sparse averaging decides DISJ_q with Alice holding only the query (one-way; in commsim's "
                  "refinement of the message, min(d·p, (2m + 1)·p·H) ≥ q for a self-attending layer).",
                  steps, n)


def _member_number(x) -> int:
    """The 1-based number of the DISJ fooling-set member (x, ~x) in the set's own order (x read as a binary
    number, first bit most significant, as :meth:`DisjointComplements.member_arrays` lists them)."""
    return int("".join(str(int(v)) for v in np.asarray(x).reshape(-1)), 2) + 1


#: the q-sets the key search verifies one by one stay few up to this q (C(2q + 1, q) = 126 at q = 4)
RIP_LESSON_MAX_Q = 4


def _qsa_upper_and_fnn_steps(n: int) -> list[Step]:
    """The layer with searched O(q log N) keys beside the explicit one (q = n, while n <= RIP_LESSON_MAX_Q), and a
    fully-connected network below [SHT23]'s width bound with its kernel certificate."""
    from commsim import run_reduction
    from protocols.constructions.qsa import build_qsa
    steps = []
    if n <= RIP_LESSON_MAX_Q:
        N = 2 * n + 1
        rip = build_qsa(N, n, layout="disj", keys="rip")
        lemma2 = build_qsa(N, n, layout="disj")
        rip_run = run_reduction("disj-qsa", f"construct:qsa:q={n},keys=rip", n)
        lemma2_run = run_reduction("disj-qsa", f"construct:qsa:q={n}", n)
        steps.append(Step(
            "The layer with q log N keys, found and checked",
            "The layer that computes qSA gives position j a key u_j and gives the query of a set S the vector "
            "α·w_S; the logit of position j is α⟨w_S, u_j⟩. If ⟨w_S, u_j⟩ = 1 on S and at most 1/2 in absolute value "
            "elsewhere, the softmax puts almost all its weight, evenly, on S once α is large (α = 2 ln(16qN)), and "
            "‖w_S‖ ≤ 2√q keeps the rounding of those logits small in fixed point. [SHT23] show such keys exist with "
            "k = O(q log N) coordinates of ±1/√k, by a probabilistic argument. commsim finds them: it draws seeded "
            "random signs at a width k and checks every one of the C(N, q) sets, each in exact integer arithmetic, "
            "growing k until all pass. The explicit nearly orthogonal keys need k = O(q² log N).",
            instance=f"keys=rip: {rip.info['keys_description']}; explicit keys: k = {lemma2.width}\n"
                     f"commsim run disj-qsa --model construct:qsa:q={n},keys=rip --n {n}: bits used "
                     f"{rip_run.bits_used} (explicit keys: {lemma2_run.bits_used}), model correct "
                     f"{rip_run.model_correct}, protocol = model {rip_run.protocol_matches_model}",
            inequality=rf"k_{{\text{{rip}}}} = {rip.width} \lt k_{{\text{{lemma2}}}} = {lemma2.width},\ "
                       rf"\text{{bits}} = {rip_run.bits_used} \ge q = {n}",
            notes="The one-way bound min(d·p, (2m + 1)·p·H) ≥ q holds for the narrower layer too: it sends "
                  f"{rip_run.bits_used} bits.",
            reference="[SHT23] (qSA upper bound, O(q log N) keys); the key search and its exact check are "
                      "commsim's own"))
    fnn_spec, rows = "fnn:width=3,precision=16,seed=0", 8
    fnn_run = run_reduction("qsa-approx", fnn_spec, rows, q=1, instances=8)
    cert = fnn_run.certificate
    shown = cert.details if cert is not None else {}
    steps.append(Step(
        "A fully-connected network needs width N·d′/2",
        "A fully-connected network reads the whole N × d input through its first layer, a linear map to width w. "
        "Fix the sets so that row i averages z_i (with q − 1 zero values): the targets then read every value "
        "coordinate. If w is smaller than the number of those coordinates, the first layer has a nonzero kernel "
        "vector v on them. The inputs with z = −v and z = +v (scaled into the unit ball) give the same first "
        "layer, hence the same output, while the correct answers differ by more than 2ε = 1/q in some row: the "
        "network is more than ε off on one of them. commsim finds v exactly (rational arithmetic on the weight "
        "codes) and checks both inputs by a direct forward.",
        instance=f"commsim run qsa-approx --model {fnn_spec} --n {rows} --q 1: {fnn_run.verdict()}\n"
                 + (f"kernel of a {shown['matrix_shape'][0]} x {shown['matrix_shape'][1]} integer matrix "
                    f"(dimension {shown['kernel_dimension']}); row {shown['row']}: ||gap||^2 = "
                    f"{shown['target_gap_squared']} > (2ε)^2 = {shown['two_eps_squared']}; first layers identical: "
                    f"{shown['first_layers_identical']}; certificate verified: {cert.verified}"
                    if cert is not None else "no kernel pair found"),
        inequality=rf"w = {fnn_run.lower_bound.measured} \lt N d'/2 = {fnn_run.lower_bound.bits}",
        notes="The paper's bound is N·d′/2. The same argument, reading N − q + 1 positions, gives commsim's own "
              "(N − q + 1)·d′; between the two a kernel pair is a wrong answer shown, not a failure the paper's "
              "bound forces.",
        reference="[SHT23] (qSA lower bound (FNN): width N·d′/2); the executed kernel certificate is commsim's own"))
    return steps

