"""Lesson ``attention-protocol``: Theorem 4 of [BHBK24] opened up on a real layer and partition.

Every logit, the maximum, the rounded weights e_i, the exact partial sums Z_A, Z_B, U_A, U_B (integers
in units of the grid), the division and the output -- and the transcript the runner recorded, decoded
back to those numbers.  The last step (:mod:`protocols.lessons.third_order_step`): where the exchange stops,
third-order attention.
"""
from __future__ import annotations

import numpy as np

from commsim import Lesson, Step
from commsim.theory.bounds import ceil_log2
from protocols.lessons.common import codes_text, human_label, positions_text, vector_text
from protocols.lessons.common import size_arg as _size
from protocols.lessons.third_order_step import third_order_step
from protocols.theorems import query_bits

PROTOCOL_SPEC = "attention:heads=1,width=2,dim=8,precision=10,seed=0"
PROTOCOL_VOCAB = "abcd"


def attention_protocol(n: int | None = None) -> Lesson:
    from commsim.contract import unpack_count, unpack_signed
    from commsim import load_plugins, make_model
    from protocols.simulators.attention import make_plan, run_exchange, theorem_count
    N = _size(n, "attention-protocol")
    load_plugins()
    model = make_model(PROTOCOL_SPEC, vocab_size=len(PROTOCOL_VOCAB), seq_len=N)
    ar, fmt = model.arithmetic, model.format
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
    held = {"alice": "positions " + positions_text(alice) + ": " + " ".join(f"{i + 1}:{PROTOCOL_VOCAB[tokens[i]]}" for i in alice),
            "bob": "positions " + positions_text(bob) + ": " + " ".join(f"{i + 1}:{PROTOCOL_VOCAB[tokens[i]]}" for i in bob)}

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
        instance=f"model: {model.spec}\ninput (N = {N}): {word}\nAlice: {positions_text(alice)}; Bob: {positions_text(bob)}; "
                 f"query position {qpos + 1}",
        holdings=held,
        inequality=r"A_i = q_N \cdot k_i,\quad e_i = [\exp(A_i - M)],\quad Z = \sum_i e_i = Z_A + Z_B,\quad "
                   r"o = \frac{U_A + U_B}{Z},\quad U = \sum_i [e_i v_i]",
        reference="Theorem 4 and Appendix D of [BHBK24] (Theorem 7 of [SHT23])")]

    q_msg = next(x for x in msgs if x.label.startswith("query"))
    q_dec = ar.decode(q_msg.bits, m)
    steps.append(Step(
        "Exchange (1): Alice sends the query",
        "Only Alice knows the query token, so she sends q_N = [W_Q x_N]: m numbers of p bits (per head).",
        instance=f"q_N = {vector_text(ar.to_values(q[0, 0]))} (grid codes {codes_text(q[0, 0])}); Bob decodes "
                 f"{codes_text(q_dec)} — {'the same' if np.array_equal(q_dec, q[0, 0]) else 'DIFFERENT'}",
        holdings=held,
        messages=[(q_msg.sender, human_label(q_msg.label), str(q_msg.bits))],
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
        messages=[(x.sender, human_label(x.label), str(x.bits)) for x in max_msgs],
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
        messages=[(z_msg.sender, human_label(z_msg.label), str(z_msg.bits))],
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
        u_rows.append(f"{i + 1:>3} {owner[i]:6} {e_all[i]:>11} {vector_text(ar.to_values(v)):>22} {codes_text(prod):>22}")
    steps.append(Step(
        "Exchange (4): the weighted value sums U_A and U_B",
        "Each party also sums [e_i v_i] over its positions (each product rounded down once, the sum exact) and Bob "
        "sends his m sums U_B. Nobody divides yet: dividing once at the end is what keeps the result "
        "independent of the split.",
        instance="\n".join(u_rows) + f"\nU_A = {codes_text(U_a[0, 0])} units = {vector_text(U_a[0, 0] * unit)}\nU_B = "
                 f"{codes_text(U_b[0, 0])} units = {vector_text(U_b[0, 0] * unit)}\nU_B decoded from the message: "
                 f"{codes_text(u_dec)}",
        holdings=held,
        messages=[(u_msg.sender, human_label(u_msg.label), str(u_msg.bits))],
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
        instance=f"U = U_A + U_B = {codes_text(U[0, 0])} units, Z = {int(Z[0, 0])} units\n"
                 f"o = [U / Z] = {codes_text(o[0, 0])} units = {vector_text(ar.to_values(o[0, 0]))}\n"
                 f"y = [W_O o] = {vector_text(ar.to_values(y[0]))}\n"
                 f"psi(y) = {vector_text(ar.to_values(raw[0]))}  →  class {label}\n"
                 f"runner's output: {vector_text(result.output[1])}; direct forward: {vector_text(ar.to_values(direct[0]))} — "
                 f"{'identical' if same else 'DIFFERENT'}\n"
                 f"plain float64 forward (no rounding at all): {vector_text(floats)}",
        holdings=held,
        inequality=r"\text{protocol}(x_{S_A}, x_{S_B}) = f(x)\ \text{exactly}",
        notes="The float64 line shows what rounding costs: a little, but the protocol reproduces the rounded model "
              "exactly, which is what the argument needs.",
        reference="Theorem 4 of [BHBK24]; finite precision: Appendices B.2 and D of [BHBK24] (exact sums)"))

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
        split_rows.append(f"{name:34} Alice {positions_text(part):22} {pl.mode:8} {r.transcript.total_bits:>4} bits  "
                          f"output {vector_text(out)}  {'= direct' if np.array_equal(out, ar.to_values(direct[0])) else '≠ direct'}")
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
    steps.append(third_order_step(N))
    return Lesson("attention-protocol", f"One attention layer is a cheap protocol (Theorem 4, N = {N})",
                  "The max-logit / partial-softmax exchange run on a real layer: every logit, the maximum, the "
                  "rounded weights, Z_A and Z_B, the exact sums, and an output identical to the direct forward; then "
                  "where it stops: third-order attention, whose pair logits mix Alice's and Bob's tokens.",
                  steps, N)
