"""Lessons ``attention-protocol``, ``attention-dyck`` and ``attention-disj``: one attention layer as a protocol.

``attention-protocol`` opens Theorem 4 of [BHBK24] up: a real layer, a real partition, every logit,
the maximum, the rounded weights e_i, the exact partial sums Z_A, Z_B, U_A, U_B (integers in units
of the grid), the division, the output — and the transcript the runner recorded, decoded back to
those numbers.  ``attention-dyck`` runs the fooling-set argument of Lemma 1 / Theorem 5 on a layer
(transcript collision, crossing, verified failure); ``attention-disj`` the [SHT23] reductions from
DISJ to Match3 and q-sparse averaging.
"""
from __future__ import annotations

import numpy as np

from commsim.teach import Lesson, Step
from commsim.theory.bounds import ceil_log2
from protocols.lessons.common import bits_text as _bits
from protocols.lessons.common import size_arg as _size
from protocols.lessons.rnn import engine, messages_of, run_one, tokens_text
from protocols.theorems import dyck_min_width, exchange_bits, query_bits

__all__ = ["attention_protocol", "attention_dyck", "attention_disj"]

PROTOCOL_SPEC = "attention:heads=1,width=2,dim=8,precision=10,seed=0"
PROTOCOL_VOCAB = "abcd"


def _vec(values, digits: int = 5) -> str:
    return "(" + ", ".join(f"{float(v):.{digits}g}" for v in np.asarray(values).reshape(-1)) + ")"


def _codes(values) -> str:
    return "(" + ", ".join(str(int(v)) for v in np.asarray(values).reshape(-1)) + ")"


def _positions(pos) -> str:
    return "{" + ", ".join(str(int(p) + 1) for p in pos) + "}"


# ---- attention-protocol ------------------------------------------------------------------------------
def attention_protocol(n: int | None = None) -> Lesson:
    from commsim.core.sums import unpack_count, unpack_signed
    from commsim.plugins import load_plugins, make_model
    from protocols.simulators.exchange_parties import run_exchange
    from protocols.simulators.exchange_plan import make_plan, theorem_count
    N = _size(n, 6, 3, 16, "attention-protocol")
    load_plugins()
    model = make_model(PROTOCOL_SPEC, vocab_size=len(PROTOCOL_VOCAB), seq_len=N)
    ar, fmt = model.ar, model.fmt
    F, p, m = fmt.frac, model.precision, model.width
    unit = 2.0 ** -F
    tokens = np.random.default_rng(N).integers(0, len(PROTOCOL_VOCAB), N)
    qpos = N - 1
    alice = sorted(set(range(0, N, 2)) | {qpos})
    plan = make_plan(model, N, alice)
    bob = list(plan.bob_positions)
    result = run_exchange(model, tokens, alice)
    msgs = list(result.transcript.messages)
    word = "".join(PROTOCOL_VOCAB[t] for t in tokens)
    held = {"alice": "positions " + _positions(alice) + ": " + " ".join(f"{i + 1}:{PROTOCOL_VOCAB[tokens[i]]}" for i in alice),
            "bob": "positions " + _positions(bob) + ": " + " ".join(f"{i + 1}:{PROTOCOL_VOCAB[tokens[i]]}" for i in bob)}

    # every stage, computed by the layer's own stage functions, for each party's positions
    q = model.query_vectors(tokens[[qpos]], qpos)
    A_a, V_a = model.scan(tokens[None, alice], np.array(alice), q)
    A_b, V_b = model.scan(tokens[None, bob], np.array(bob), q)
    M_a, M_b = A_a.max(axis=-1), A_b.max(axis=-1)
    M = np.maximum(M_a, M_b)
    Z_a, U_a = model.aggregate(A_a, V_a, M)
    Z_b, U_b = model.aggregate(A_b, V_b, M)
    Z, U = Z_a + Z_b, U_a + U_b
    raw = model.finish(U, Z)
    direct = model.forward_rep(tokens[None])
    label = int(model.labels(raw)[0])

    steps = [Step(
        "The layer and an arbitrary split",
        f"Theorem 4: for ANY partition of the positions, one attention layer is computed exactly by a protocol "
        f"of about 3m(p + log N)H bits. Here is a real layer — {model.heads} head, width m = {m}, embedding "
        f"dimension {model.dim}, p = {p}-bit fixed point with F = {F} fraction bits (grid step 2^-{F}, values "
        f"rounded down) — and a split that is not contiguous. The query (the last position) is Alice's.",
        instance=f"model: {model.spec}\ninput (N = {N}): {word}\nAlice: {_positions(alice)}; Bob: {_positions(bob)}; "
                 f"query position {qpos + 1}",
        holdings=held,
        inequality=r"A_i = q_N \cdot k_i,\quad e_i = [\exp(A_i - M)],\quad Z = \sum_i e_i = Z_A + Z_B,\quad "
                   r"o = \frac{U_A + U_B}{Z},\quad U = \sum_i [e_i v_i]",
        reference="Theorem 4 of [BHBK24] (Theorem 7 of [SHT23]); REFERENCE section 5")]

    q_msg = next(x for x in msgs if x.label.startswith("query"))
    q_dec = ar.decode(q_msg.bits, m)
    steps.append(Step(
        "Exchange (1): Alice sends the query",
        "Only Alice knows the query token, so she sends q_N = [W_Q x_N]: m numbers of p bits (per head).",
        instance=f"q_N = {_vec(ar.to_values(q[0, 0]))} (grid codes {_codes(q[0, 0])}); Bob decodes "
                 f"{_codes(q_dec)} — {'the same' if np.array_equal(q_dec, q[0, 0]) else 'DIFFERENT'}",
        holdings=held,
        messages=[(q_msg.sender, q_msg.label, str(q_msg.bits))],
        inequality=rf"m \cdot p = {m} \cdot {p} = {len(q_msg.bits)}\text{{ bits}}",
        reference="Theorem 4 of [BHBK24], proof step 1"))

    owner = {i: "Alice" for i in alice} | {i: "Bob" for i in bob}
    order = sorted(alice + bob)
    A_all = {i: int(v) for i, v in zip(alice, A_a[0, 0])} | {i: int(v) for i, v in zip(bob, A_b[0, 0])}
    V_all = {i: V_a[0, k, 0] for k, i in enumerate(alice)} | {i: V_b[0, k, 0] for k, i in enumerate(bob)}
    rows = [f"{'i':>3} {'owner':6} {'token':5} {'A_i (units)':>11} {'A_i':>10}"]
    for i in order:
        rows.append(f"{i + 1:>3} {owner[i]:6} {PROTOCOL_VOCAB[tokens[i]]:5} {A_all[i]:>11} {A_all[i] * unit:>10.5f}")
    max_msgs = [x for x in msgs if x.label.startswith("max")]
    dec = {x.sender: int(ar.decode(x.bits, 1)[0]) for x in max_msgs}
    steps.append(Step(
        "Exchange (2): the logits and their maximum",
        "Each party computes the logits A_i = [<q_N, k_i>] of its own positions (k_i depends only on position i "
        "and its token). They swap their local maxima, p bits each way, so both know M = max_i A_i.",
        instance="\n".join(rows) + f"\nAlice's max {int(M_a[0, 0])} units = {int(M_a[0, 0]) * unit:g}; Bob's max "
                 f"{int(M_b[0, 0])} units = {int(M_b[0, 0]) * unit:g}; M = {int(M[0, 0])} units = "
                 f"{int(M[0, 0]) * unit:g}\ndecoded from the messages: Alice's {dec.get('alice')}, Bob's "
                 f"{dec.get('bob')}",
        holdings=held,
        messages=[(x.sender, x.label, str(x.bits)) for x in max_msgs],
        inequality=rf"M = \max(M_A, M_B) = \max({int(M_a[0, 0]) * unit:g}, {int(M_b[0, 0]) * unit:g}) = "
                   rf"{int(M[0, 0]) * unit:g}\quad (2p = {2 * p}\text{{ bits}})",
        reference="Theorem 4 of [BHBK24], proof step 2"))

    e_rows = [f"{'i':>3} {'owner':6} {'A_i - M':>9} {'exp(A_i - M)':>13} {'e_i = [exp] (units)':>20} {'e_i':>9}"]
    e_all = {}
    for i in order:
        delta = (A_all[i] - int(M[0, 0])) * unit
        e = int(ar.exp_weights(np.array([[[A_all[i]]]]), M)[0, 0, 0])
        e_all[i] = e
        e_rows.append(f"{i + 1:>3} {owner[i]:6} {delta:>9.5f} {np.exp(delta):>13.6f} {e:>20} {e * unit:>9.5f}")
    z_msg = next(x for x in msgs if x.label.startswith("Z"))
    z_dec = unpack_count(z_msg.bits, plan.z_width)
    steps.append(Step(
        "Exchange (3): the partial softmax denominators Z_A and Z_B",
        f"With M known, e_i = [exp(A_i − M)] lies in [0, 1] and is rounded DOWN to the grid (a whole number of "
        f"units 2^-{F}). Each party sums its own e_i exactly — an integer number of units, no rounding — and Bob "
        f"sends his sum Z_B. Because the sums are exact, Z = Z_A + Z_B does not depend on the split.",
        instance="\n".join(e_rows) + f"\nZ_A = {int(Z_a[0, 0])} units = {int(Z_a[0, 0]) * unit:g}; Z_B = "
                 f"{int(Z_b[0, 0])} units = {int(Z_b[0, 0]) * unit:g}; Z = {int(Z[0, 0])} units = "
                 f"{int(Z[0, 0]) * unit:g}\nZ_B decoded from the message: {z_dec} units",
        holdings=held,
        messages=[(z_msg.sender, z_msg.label, str(z_msg.bits))],
        inequality=rf"Z_B \le |S_B| \cdot 2^{{{F}}} = {len(bob)} \cdot {2 ** F}\text{{ units}}"
                   rf" \implies {plan.z_width}\text{{ bits}} \le p + \lceil\log_2 N\rceil",
        notes=f"e_i at the maximum is [exp(0)] = {ar.one_units} units = 1; a logit far below M rounds to 0 and "
              "drops out entirely — this is the finite-precision softmax the paper analyses.",
        reference="Theorem 4 of [BHBK24], proof step 3; Appendix B.2 and D (rounding)"))

    u_msg = next(x for x in msgs if x.label.startswith("U"))
    u_dec = unpack_signed(u_msg.bits, plan.u_width, m)
    u_rows = [f"{'i':>3} {'owner':6} {'e_i (units)':>11} {'v_i':>22} {'[e_i v_i] (units)':>22}"]
    for i in order:
        v = V_all[i]
        prod = (np.int64(e_all[i]) * v.astype(np.int64)) >> F
        u_rows.append(f"{i + 1:>3} {owner[i]:6} {e_all[i]:>11} {_vec(ar.to_values(v)):>22} {_codes(prod):>22}")
    steps.append(Step(
        "Exchange (4): the weighted value sums U_A and U_B",
        "Each party also sums [e_i v_i] over its positions (each product rounded down once, the sum exact) and Bob "
        "sends his m sums U_B. Nobody divides yet: dividing once at the end is what keeps the result "
        "independent of the split.",
        instance="\n".join(u_rows) + f"\nU_A = {_codes(U_a[0, 0])} units = {_vec(U_a[0, 0] * unit)}\nU_B = "
                 f"{_codes(U_b[0, 0])} units = {_vec(U_b[0, 0] * unit)}\nU_B decoded from the message: "
                 f"{_codes(u_dec)}",
        holdings=held,
        messages=[(u_msg.sender, u_msg.label, str(u_msg.bits))],
        inequality=rf"m \cdot w_U = {m} \cdot {plan.u_width} = {len(u_msg.bits)}\text{{ bits}},\quad "
                   rf"w_U = {plan.u_width} \le p + \lceil\log_2 |S_B|\rceil + 1 = {p + ceil_log2(len(bob)) + 1}",
        reference="Theorem 4 of [BHBK24], proof step 4"))

    o = ar.divide(U, Z)
    y = ar.linear(o.reshape(1, -1), model.W_O)
    floats = model.float_forward(tokens[None])[0]
    same = bool(np.array_equal(raw, direct))
    steps.append(Step(
        "Exchange (5): Alice finishes — and matches the direct forward bit for bit",
        "Alice adds the partial sums, divides once, o = [U / Z] (rounded down), applies W_O and the output MLP "
        "psi. The protocol's output is the same bit string as the model's own forward pass on the whole input.",
        instance=f"U = U_A + U_B = {_codes(U[0, 0])} units, Z = {int(Z[0, 0])} units\n"
                 f"o = [U / Z] = {_codes(o[0, 0])} units = {_vec(ar.to_values(o[0, 0]))}\n"
                 f"y = [W_O o] = {_vec(ar.to_values(y[0]))}\n"
                 f"psi(y) = {_vec(ar.to_values(raw[0]))}  →  class {label}\n"
                 f"runner's output: {_vec(result.output[1])}; direct forward: {_vec(ar.to_values(direct[0]))} — "
                 f"{'identical' if same else 'DIFFERENT'}\n"
                 f"plain float64 forward (no rounding at all): {_vec(floats)}",
        holdings=held,
        inequality=r"\text{protocol}(x_{S_A}, x_{S_B}) = f(x)\ \text{exactly}",
        notes="The float64 line shows what rounding costs: a little, but the protocol reproduces the rounded model "
              "exactly, which is what the argument needs.",
        reference="Theorem 4 of [BHBK24]; REFERENCE section 3 (exact sums)"))

    rng = np.random.default_rng(100 + N)
    splits = [("Alice: the first half", list(range(N // 2)) + [qpos]),
              ("Alice: only the query (one-way)", [qpos]),
              ("Alice: everything but position 1", list(range(1, N))),
              ("Bob owns only the query (Bob speaks)", list(range(N - 1)))]
    for k in range(3):
        mask = rng.random(N) < 0.5
        splits.append((f"random split #{k + 1}", np.flatnonzero(mask).tolist()))
    split_rows, seen = [], set()
    for name, part in splits:
        part = sorted(set(int(i) for i in part))
        if tuple(part) in seen or len(part) in (0, N) and name.startswith("random"):
            continue
        seen.add(tuple(part))
        r = run_exchange(model, tokens, part)
        pl = make_plan(model, N, part)
        out = np.asarray(r.output[1])
        split_rows.append(f"{name:34} Alice {_positions(part):22} {pl.mode:8} {r.transcript.total_bits:>4} bits  "
                          f"output {_vec(out)}  {'= direct' if np.array_equal(out, ar.to_values(direct[0])) else '≠ direct'}")
    formula, text = theorem_count(plan)
    with_query = formula + query_bits(m, p, model.heads)
    steps.append(Step(
        "Every split gives the same output; the count",
        "Run the exchange for other partitions: the bits change with the split, the output never does. The "
        f"two-way count for this split is {result.transcript.total_bits} bits, within the theorem's "
        f"3m(p + ⌈log2 N⌉)H plus the query.",
        instance="\n".join(split_rows),
        inequality=rf"{result.transcript.total_bits} \le 3 m (p + \lceil\log_2 N\rceil) H + m p H = {with_query}",
        notes=f"{text}. Consequence: any f a layer computes has communication complexity at most this, for every "
              f"split — so a problem needing more bits (Dyck-(2,2), EQ, DISJ) is out of reach of a small layer.",
        reference="Theorem 4 of [BHBK24]"))
    return Lesson("attention-protocol", f"One attention layer is a cheap protocol (Theorem 4, N = {N})",
                  "The max-logit / partial-softmax exchange run on a real layer: every logit, the maximum, the "
                  "rounded weights, Z_A and Z_B, the exact sums, and an output identical to the direct forward.",
                  steps, N)


# ---- attention-dyck --------------------------------------------------------------------------------------
DYCK_SPEC = "attention:probe:at=0,accept=0/2"


def attention_dyck(n: int | None = None) -> Lesson:
    from commsim.core.errors import InputError
    from commsim.pipeline.budget import budget
    from commsim.pipeline.run import run_reduction
    from commsim.theory.dyck import DyckLanguage
    from commsim.theory.fooling import fooling_set
    N = _size(n, 8, 4, 16, "attention-dyck", even=True)
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
        reference="Lemma 1 and Appendix E of [BHBK24]; REFERENCE section 2")]
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
    reduction, problem, model, wrapper = engine(rid, DYCK_SPEC, N)
    A0, B0 = problem.split(x[None])
    encoded, result, answer, direct = run_one(reduction, problem, model, wrapper, A0[0], B0[0])
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
    bound = reduction.lower_bound(model, wrapper, problem, encoded)
    cert, searched = wrapper.certificate(model, reduction, problem, bound, seed=0)
    if cert is None or cert.kind != "rectangle":
        steps.append(Step("The fooling-set sweep", f"no transcript collision: {searched}", reference="Lemma 1"))
    else:
        d = cert.details
        m1, m2 = d["member_1"], d["member_2"]
        runs = []
        for mem in (m1, m2):
            _, r, ans, dirr = run_one(reduction, problem, model, wrapper, mem["alice"], mem["bob"])
            runs.append((mem, r, ans))
        t1, t2 = runs[0][1].transcript, runs[1][1].transcript
        s1 = problem.interleave(np.asarray([m1["alice"]]), np.asarray([m1["bob"]]))[0]
        s2 = problem.interleave(np.asarray([m2["alice"]]), np.asarray([m2["bob"]]))[0]
        msgs = [(s, f"{lab} (member {m1['index']})", b) for s, lab, b in messages_of(t1)] + \
               [(s, f"{lab} (member {m2['index']})", b) for s, lab, b in messages_of(t2)]
        steps.append(Step(
            "The sweep: two members with the same transcript",
            f"Run every member of the fooling set through the protocol and compare transcripts. Distinct "
            f"transcripts found: {d['distinct_transcripts']} for {d['members']} members. Whenever that is fewer "
            f"than the members, two of them collide; with fewer than N − 1 = {N - 1} bits a collision is forced "
            f"by pigeonhole (2^bits transcripts < 2^(N−1) members).",
            instance=f"member {m1['index']}: {lang.decode(s1)}\nmember {m2['index']}: {lang.decode(s2)}\n"
                     f"transcripts equal (runner, bit for bit): {t1.digest() == t2.digest()}",
            holdings={"alice": f"{lang.decode(m1['alice'])} or {lang.decode(m2['alice'])}",
                      "bob": f"{lang.decode(m1['bob'])} or {lang.decode(m2['bob'])}"},
            messages=msgs,
            inequality=rf"\#\text{{transcripts}} = {d['distinct_transcripts']} < |S| = {d['members']}",
            notes=searched,
            reference="Lemma 1 of [BHBK24]; REFERENCE section 1 (fooling sets)"))
        a, b = np.asarray(cert.alice_input), np.asarray(cert.bob_input)
        crossing = problem.interleave(a[None], b[None])[0]
        _, rc, ans_c, dir_c = run_one(reduction, problem, model, wrapper, a, b)
        steps.append(Step(
            "The crossing: the rectangle property forces a wrong answer",
            f"Give Alice member {m1['index']}'s half and Bob member {m2['index']}'s half. At every message each "
            f"party sees only its own half and the transcript so far — the same as in one of the two member runs — "
            f"so the crossing gets the same transcript and the same answer, 1. But by Lemma 1 it is not a member.",
            instance=f"crossing: {lang.decode(crossing)} (member? {int(lang.is_member(crossing[None])[0])})\n"
                     f"protocol answers {ans_c}; the model's direct forward answers {dir_c}; the truth is "
                     f"{cert.expected}\ntranscript equal to the members': {rc.transcript.digest() == t1.digest()}",
            holdings={"alice": f"{lang.decode(a)} (member {m1['index']})", "bob": f"{lang.decode(b)} (member {m2['index']})"},
            messages=messages_of(rc.transcript),
            inequality=r"T(x_1, y_1) = T(x_2, y_2) \implies T(x_1, y_2) = T(x_1, y_1)",
            notes=f"certificate verified: {cert.verified}. {cert.explanation}",
            reference="Lemma 1 of [BHBK24]; the rectangle property (REFERENCE section 1)"))
    L = ceil_log2(N)
    need = float(dyck_min_width(N, p))
    line = []
    for width, prec, heads in ((m, p, H), (64, 16, 8)):
        rep = budget("attention", width, prec, rid, heads=heads, n=N)
        line.append(f"commsim budget --arch attention --width {width} --precision {prec} --heads {heads} "
                    f"--task {rid}: max N = {rep.max_n}")
    steps.append(Step(
        "Theorem 5: the width a layer needs",
        "A layer computing Dyck-(2,2) gives a protocol of about 3m(p + log N)H bits for the odd/even split, "
        "which must be at least N − 1. Solving for the width:",
        instance=f"this model: mH = {m * H}, the bound asks mH ≥ {N - 1}/(3·({p} + {L})) = {need:.3f}\n"
                 + "\n".join(line),
        inequality=rf"m H \ge \frac{{N - 1}}{{3 (p + \log N)}} = \frac{{{N - 1}}}{{3({p} + {L})}} = {need:.3f}",
        notes="The bound is about budget, not correctness: the model above passes it at this N and is still "
              "wrong, because it collides anyway; a model below it must collide.",
        reference="Theorem 5 of [BHBK24]"))
    wide = run_reduction(rid, "construct:lookup", N)
    r_w, p_w, m_w, w_w = engine(rid, "construct:lookup", N)
    enc_w = r_w.encode(p_w, A0, B0)
    cert_w, searched_w = w_w.certificate(m_w, r_w, p_w, r_w.lower_bound(m_w, w_w, p_w, enc_w), seed=0)
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
                 f"{wide.lower_bound.bits}, correct on all {wide.instances_run} members: {wide.model_correct}\n"
                 f"fooling-set sweep: {searched_w}\ncommsim run {rid} --model dfa:dyck22: refused — {rnn_note}",
        inequality=rf"\text{{bits}} = {wide.bits_used} \ge N - 1 = {N - 1}",
        reference="Theorem 5 and Lemma 1 of [BHBK24]; REFERENCE section 2 (the 7-state automaton)"))
    return Lesson("attention-dyck", f"Dyck-(2,2) against one attention layer (Lemma 1, Theorem 5; N = {N})",
                  "The fooling set of all members, a real layer's transcripts on it, a collision, the crossing on "
                  "which the layer must be wrong, and the width bound mH ≥ (N − 1)/(3(p + log N)).", steps, N)


# ---- attention-disj ---------------------------------------------------------------------------------------
QSA_PROBE = "attention:probe:at=0,accept=2"


def attention_disj(n: int | None = None) -> Lesson:
    from fractions import Fraction

    from commsim.pipeline.budget import budget
    from commsim.pipeline.run import run_reduction
    from commsim.theory.fooling import fooling_set
    from protocols.reductions.attention_tasks import (
        match3,
        match3_modulus,
        qsa_first_coordinate,
    )
    n = _size(n, 4, 2, 8, "attention-disj")
    rid = "disj-match3"
    reduction, problem, model, wrapper = engine(rid, reduction_default(rid), n)
    Mod = match3_modulus(n)
    N = 2 * n + 1
    rng = np.random.default_rng(20 + n)
    a = rng.integers(0, 2, n).astype(np.uint8)
    b = rng.integers(0, 2, n).astype(np.uint8)
    b[0] = a[0] = 1  # intersect at 1
    encoded, result, answer, direct = run_one(reduction, problem, model, wrapper, a, b)
    z = encoded.tokens[0]
    hits = [i + 1 for i in range(n) if a[i] and b[i]]
    A_all, B_all = problem.all_pairs()
    enc_all = reduction.encode(problem, A_all, B_all)
    agree = bool(np.array_equal(match3(enc_all.tokens, Mod, N - 1), problem.evaluate_batch(A_all, B_all)))
    steps = [Step(
        f"Match3 decides DISJ_{n}",
        "Match3 at position i: is there a pair j, k (distinct, both ≠ i) with z_i + z_j + z_k ≡ 0 mod M? Encode "
        "Alice's set as z_i = i + 1 (if a_i = 1, else 1), Bob's as z_(n+i) = M − (i + 1) (if b_i = 1, else 1), "
        "and put z_N = 0 last. With M = 2n + 3 the only zero-sum triples through position N are (0, i + 1, "
        "M − i − 1) with a_i = b_i = 1: Match3 at N is DISJ (1 = the sets meet).",
        instance=f"a = {_bits(a)}, b = {_bits(b)}, M = {Mod}, N = {N}\nz = {' '.join(str(int(t)) for t in z)}\n"
                 f"common elements (1-based): {hits}; Match3 at N = {int(match3(z[None], Mod, N - 1)[0])}; "
                 f"DISJ(a, b) = {int(problem.evaluate(a, b))}\nchecked on all {len(A_all)} pairs (a, b): "
                 f"Match3 = DISJ on every one: {agree}",
        holdings={"alice": f"z_1..z_{n} = {' '.join(str(int(t)) for t in z[:n])}",
                  "bob": f"z_{n + 1}..z_{N} = {' '.join(str(int(t)) for t in z[n:])}"},
        reference="[SHT23] (Match3 lower bound); REFERENCE section 6")]
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
        reference="[SHT23]; REFERENCE section 2 (DISJ)"))
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
                 f"commsim budget --arch attention --width {m} --precision {p} --heads {H} --task {rid}: max N = "
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
        reference="[SHT23] (qSA); REFERENCE section 6"))
    mq, pq, Hq = model_q.width, model_q.precision, model_q.heads
    steps.append(Step(
        "One-way: Alice's only message is the query",
        "Alice owns a single position, so the exchange degenerates: she sends each head's q_N (plus her own key "
        "and value when the query attends to itself) and Bob computes everything. A one-way DISJ protocol needs "
        "q bits, hence m·p·H ≥ q.",
        instance=f"{model_q.spec}: protocol answer {ans_q}, direct {dir_q}, true {int(prob_q.evaluate(a, b))}",
        holdings={"alice": f"the query token (a = {_bits(a)})", "bob": f"the values (b = {_bits(b)})"},
        messages=messages_of(res_q.transcript),
        inequality=rf"m p H = {mq} \cdot {pq} \cdot {Hq} = {mq * pq * Hq} "
                   + (r"\ge" if mq * pq * Hq >= n else r"\lt") + f" q = {n}",
        notes=(f"This model's {mq * pq * Hq} bits allow q ≤ {mq * pq * Hq}; beyond that every layer of its size "
               f"must fail on some input." if mq * pq * Hq >= n else
               f"{mq * pq * Hq} < q = {n}: this model must fail on some input."),
        reference="[SHT23] (qSA lower bound)"))
    probe = run_reduction(qid, QSA_PROBE, n)
    r_p, p_p, m_p, w_p = engine(qid, QSA_PROBE, n)
    A_pr, B_pr = p_p.all_pairs()
    said = sorted(set(int(v) for v in r_p.decode(w_p.direct_labels(m_p, r_p.encode(p_p, A_pr, B_pr)), B_pr)))
    e_p = r_p.encode(p_p, a[None], b[None])
    cert, searched = w_p.certificate(m_p, r_p, p_p, r_p.lower_bound(m_p, w_p, p_p, e_p), seed=0)
    if cert is not None:
        from protocols.lessons.rnn import _show
        msgs = []
        d = cert.details
        for lab, mem in (("member " + str(d.get("member_1", {}).get("index")), d.get("member_1")),
                         ("member " + str(d.get("member_2", {}).get("index")), d.get("member_2"))):
            if mem:
                _, r_m, _, _ = run_one(r_p, p_p, m_p, w_p, mem["alice"], mem["bob"])
                msgs += [(s, f"{lb} ({lab})", bt) for s, lb, bt in messages_of(r_m.transcript)]
        crossing = f"crossing: a = {_show(cert.alice_input)}, b = {_show(cert.bob_input)}: DISJ = {cert.expected}, " \
                   f"model says {cert.model_output}"
    else:
        msgs, crossing = [], "no certificate"
    steps.append(Step(
        "Right on the fooling set is not enough",
        f"{QSA_PROBE} probes position 1 for a query token, which never appears there: on all {len(A_pr)} "
        f"instances its DISJ answer is {said} — 'disjoint' — so it is right on every fooling-set member (x, ~x). "
        f"Its {probe.bits_used}-bit messages give the members only {cert.details.get('distinct_transcripts') if cert else '?'} "
        f"distinct transcripts; two members collide and their crossing — two sets that meet — gets the same "
        f"answer.",
        instance=f"commsim run {qid} --model {QSA_PROBE} --n {n}: bits used {probe.bits_used}, bound "
                 f"{probe.lower_bound.bits}, accuracy {probe.model_accuracy:.4f}\n{searched}\n{crossing}",
        messages=msgs,
        inequality=rf"\#\text{{transcripts}} < 2^{{{n}}} = |S|",
        notes=(f"certificate verified: {cert.verified}. {cert.explanation}" if cert else ""),
        reference="REFERENCE section 1 (fooling sets); [SHT23]"))
    return Lesson("attention-disj", f"DISJ against one attention layer: Match3 and q-sparse averaging (n = {n})",
                  "Two [SHT23] reductions: Match3 on 2n + 1 positions decides DISJ_n (two-way, n bits), and "
                  "q-sparse averaging decides DISJ_q with Alice holding only the query (one-way, m·p·H ≥ q).",
                  steps, n)


def reduction_default(rid: str) -> str:
    from commsim.plugins import load_plugins
    return load_plugins().get("reduction", rid).default_model
