"""Exercises of ``attention-protocol`` and ``attention-dyck``.

attention-protocol: on the lesson's layer, a seeded input and split -- the maximum logit M, the partial
denominators Z_A and Z_B, Bob's weighted sums U_B (each checked by computing it with the layer's own stage
functions) and the length of Bob's Z_B message (checked by running the exchange).
attention-dyck: complete Alice's odd half to a member (checked by the Dyck automaton), two members with one
transcript (checked by running the protocol on both and comparing the transcripts), a string on which the
layer is wrong (checked by a direct forward against membership), and the width Theorem 5 asks for (checked by
the bound).
"""
from __future__ import annotations

import numpy as np

from commsim import (
    Exercise,
    ExerciseSet,
    answer_int,
    answer_ints,
    answer_keys,
    answer_list,
)
from protocols.lessons.common import engine, human_label, positions_text, run_one, size_arg
from protocols.lessons.exercises_common import field, rng_for
from protocols.theorems import exchange_bits

#: the layer the attention-dyck exercises run (the lesson's own)
DYCK_SPEC = "construct:lookup:width=4"
#: members swept for a transcript collision (the first ones in the fooling set's order)
SWEEP = 256


# ---- attention-protocol ----------------------------------------------------------------------------------------
def _protocol_instance(N: int, seed: int):
    from commsim import load_plugins, make_model
    from protocols.lessons.attention_protocol import PROTOCOL_SPEC, PROTOCOL_VOCAB
    load_plugins()
    model = make_model(PROTOCOL_SPEC, vocab_size=len(PROTOCOL_VOCAB), seq_len=N)
    rng = rng_for("attention-protocol", seed, 0)
    tokens = rng.integers(0, len(PROTOCOL_VOCAB), N)
    others = rng.permutation(N - 1)[:int(rng.integers(1, N - 1))]
    alice = sorted(set(int(i) for i in others) | {N - 1})
    bob = [i for i in range(N) if i not in alice]
    return model, tokens, alice, bob, PROTOCOL_SPEC, "".join(PROTOCOL_VOCAB[t] for t in tokens)


def _stages(model, tokens, alice, bob):
    """(M, Z_A, Z_B, U_A, U_B) of head 1, in grid units, from the layer's own stage functions."""
    q = model.query_vectors(tokens[[len(tokens) - 1]], len(tokens) - 1)
    A_a, V_a = model.scan(tokens[None, alice], np.array(alice), q)
    A_b, V_b = model.scan(tokens[None, bob], np.array(bob), q)
    M = np.maximum(A_a.max(axis=-1), A_b.max(axis=-1))
    Z_a, U_a = model.aggregate(A_a, V_a, M)
    Z_b, U_b = model.aggregate(A_b, V_b, M)
    return (int(M[0, 0]), int(Z_a[0, 0]), int(Z_b[0, 0]), [int(v) for v in np.asarray(U_a[0, 0]).reshape(-1)],
            [int(v) for v in np.asarray(U_b[0, 0]).reshape(-1)])


def protocol_exercises(n: int | None, seed: int) -> ExerciseSet:
    from protocols.simulators.attention import run_exchange
    N = size_arg(n, "attention-protocol")
    model, tokens, alice, bob, spec, word = _protocol_instance(N, seed)
    M, Za, Zb, Ua, Ub = _stages(model, tokens, alice, bob)
    F = model.format.frac
    setting = (f"The layer {spec} (one head, width m = {model.width}, p = {model.precision} bits, F = {F} fraction "
               f"bits: one grid unit is 2^-{F}) reads the input {word} (N = {N}). Alice holds the positions "
               f"{positions_text(alice)} (with the query, position {N}), Bob holds {positions_text(bob)}.")

    def recompute():
        return _stages(model, tokens, alice, bob)

    def check_m(answer):
        got = answer_int(answer, field("e1"))
        M_, *_ = recompute()
        return got == M_, f"the layer's logits of all {N} positions, computed: their maximum is {M_} units"

    def check_z(answer):
        value = answer_keys(answer, field("e2"), ("Z_A", "Z_B"))
        za = answer_int(value["Z_A"], field("e2") + ".Z_A")
        zb = answer_int(value["Z_B"], field("e2") + ".Z_B")
        _, Za_, Zb_, _, _ = recompute()
        return (za, zb) == (Za_, Zb_), (f"summed the rounded weights of each party's positions: Z_A = {Za_}, "
                                        f"Z_B = {Zb_} units")

    def check_u(answer):
        got = answer_ints(answer, field("e3"), len(Ub))
        *_, Ub_ = recompute()
        return got == Ub_, f"summed [e_i v_i] over Bob's positions: U_B = {Ub_} units"

    def check_bits(answer):
        got = answer_int(answer, field("e4"), 0)
        run = run_exchange(model, tokens, alice)
        z_msg = next(m for m in run.transcript.messages if m.label.startswith("Z"))
        return got == len(z_msg.bits), (f"ran the exchange: Bob's message '{human_label(z_msg.label)}' has "
                                        f"{len(z_msg.bits)} bits")

    z_bits = len(next(m for m in run_exchange(model, tokens, alice).transcript.messages
                      if m.label.startswith("Z")).bits)
    return ExerciseSet("attention-protocol", "attention-protocol: one layer as a protocol", N, seed, [
        Exercise("e1", "The maximum logit",
                 setting + " Compute the logits A_i = [q_N · k_i] of all positions and their maximum M, in units.",
                 "an integer (grid units)",
                 f"Each party takes the maximum of its own logits and they swap them: M = {M} units.", M, check_m),
        Exercise("e2", "Z_A and Z_B for this split",
                 setting + " With M known, each weight is e_i = [exp(A_i − M)], rounded down to the grid. Compute "
                 "each party's exact sum of its weights, Z_A and Z_B, in units.",
                 "{\"Z_A\": integer, \"Z_B\": integer} (grid units)",
                 f"Z_A = {Za}, Z_B = {Zb} units; Z = Z_A + Z_B = {Za + Zb} does not depend on the split.",
                 {"Z_A": Za, "Z_B": Zb}, check_z),
        Exercise("e3", "Bob's weighted value sums U_B",
                 setting + f" Compute Bob's U_B = Σ [e_i v_i] over his positions: {len(Ub)} numbers, in units "
                 "(each product rounded down once, the sum exact).",
                 f"a list of {len(Ub)} integers (grid units)",
                 f"U_B = {Ub} (and U_A = {Ua}); nobody divides before the sums are added.", Ub, check_u),
        Exercise("e4", "How long is Bob's Z_B message?",
                 setting + " Z_B is sent as a whole number of units. How many bits does Bob's Z_B message take in "
                 "commsim's exchange? (It must hold the largest Z_B any input could give Bob's positions.)",
                 "an integer (bits)",
                 f"Z_B ≤ |S_B| · 2^F units, so {z_bits} bits; the theorem's p + ⌈log2 N⌉ bounds it.", z_bits,
                 check_bits)])


# ---- attention-dyck ----------------------------------------------------------------------------------------------
def _string(answer, fieldname: str, lang, N: int) -> np.ndarray:
    from commsim.contract import InputError
    if not isinstance(answer, str) or len(answer) != N or set(answer) - set(lang.alphabet):
        raise InputError(f"{fieldname}: expected a string of {N} symbols from {lang.alphabet}, got "
                         f"{str(answer)[:40]!r}", fieldname)
    return lang.encode(answer)


def dyck_exercises(n: int | None, seed: int) -> ExerciseSet:
    from commsim.theory.dyck import DyckLanguage
    from commsim.theory.fooling import fooling_set
    N = size_arg(n, "attention-dyck")
    lang = DyckLanguage(2, 2)
    fs = fooling_set("dyck22", N)
    rng = rng_for("attention-dyck", seed, 1)
    k = int(rng.integers(fs.size))
    x = np.asarray(fs.strings(k, k + 1)[0])
    odd = lang.decode(x[0::2])

    def check_complete(answer):
        s = _string(answer, field("e1"), lang, N)
        member = bool(lang.is_member(s[None])[0])
        same = lang.decode(s[0::2]) == odd
        return member and same, (f"{answer}: odd half {lang.decode(s[0::2])} "
                                 + ("(Alice's)" if same else f"(not Alice's {odd})")
                                 + f", member of Dyck-(2,2): {member}")

    reduction, problem, model, simulator = engine("dyck22-fooling", DYCK_SPEC, N)

    def transcript(s):
        A, B = problem.split(s[None])
        _, result, answer, direct = run_one(reduction, problem, model, simulator, A[0], B[0])
        return result.transcript, answer, direct

    members = fs.strings(0, min(fs.size, SWEEP))
    groups: dict[str, list[int]] = {}
    for k, s in enumerate(members):
        groups.setdefault(transcript(np.asarray(s))[0].digest(), []).append(k)
    pairs = [g for g in groups.values() if len(g) > 1]
    g = pairs[int(rng_for("attention-dyck", seed, 2).integers(len(pairs)))]
    s1, s2 = np.asarray(members[g[0]]), np.asarray(members[g[1]])
    crossing = problem.interleave(s1[0::2][None], s2[1::2][None])[0]

    def check_pair(answer):
        items = answer_list(answer, field("e2"), 2)
        a = _string(items[0], field("e2") + "[1]", lang, N)
        b = _string(items[1], field("e2") + "[2]", lang, N)
        if np.array_equal(a, b):
            return False, "the two strings are the same: a collision needs two different members"
        member = lang.is_member(np.stack([a, b]))
        if not member.all():
            return False, (f"not both members of Dyck-(2,2): {items[0]}: {bool(member[0])}, "
                           f"{items[1]}: {bool(member[1])}")
        ta, tb = transcript(a)[0], transcript(b)[0]
        same = ta.digest() == tb.digest()
        return same, (f"ran the protocol on both: {ta.total_bits} and {tb.total_bits} bits, transcripts "
                      + ("equal, bit for bit" if same else "different"))

    def check_wrong(answer):
        s = _string(answer, field("e3"), lang, N)
        _, said, direct = transcript(s)
        truth = int(lang.is_member(s[None])[0])
        return int(direct) != truth, (f"the layer's direct forward on {answer} says {direct}, the protocol {said}; "
                                      f"member of Dyck-(2,2): {truth}")

    rng4 = rng_for("attention-dyck", seed, 4)
    p, H, length = int(rng4.choice([4, 8, 16])), int(rng4.choice([1, 2, 4])), int(rng4.choice([256, 1024, 4096]))

    def need(m: int) -> bool:
        return exchange_bits(m, p, H, length) >= length - 1

    def check_width(answer):
        m = answer_int(answer, field("e4"), 1)
        ok = need(m) and (m == 1 or not need(m - 1))
        return ok, (f"3m(p + ⌈log2 N⌉)H at m = {m}: {exchange_bits(m, p, H, length)} bits vs N − 1 = {length - 1}"
                    + ("" if m == 1 else f"; at m = {m - 1}: {exchange_bits(m - 1, p, H, length)}"))
    m_min = next(m for m in range(1, length) if need(m))
    return ExerciseSet("attention-dyck", "attention-dyck: Dyck-(2,2) against one attention layer", N, seed, [
        Exercise("e1", "Alice's half pins down Bob's",
                 f"Alice holds the odd positions of a Dyck-(2,2) member of length {N}: {odd} (positions 1, 3, ..., "
                 f"{N - 1}). Give the whole member.",
                 f"a string of {N} symbols from ( ) [ ]",
                 f"Lemma 1: exactly one even half completes it: {lang.decode(x)}.", lang.decode(x), check_complete),
        Exercise("e2", "Two members, one transcript",
                 f"Run the layer {DYCK_SPEC} as a protocol on the odd/even split. Find two different members of "
                 f"length {N} that get the same transcript (hint: the first {len(members)} members in the order "
                 f"of `commsim fooling dyck22 --n {N}` already contain such pairs).",
                 "[s1, s2] — two strings of ( ) [ ]",
                 f"Sweeping the members, {lang.decode(s1)} and {lang.decode(s2)} get the same transcript "
                 f"({len(groups)} distinct transcripts among {len(members)} members).",
                 [lang.decode(s1), lang.decode(s2)], check_pair),
        Exercise("e3", "Where the layer is wrong",
                 f"Give a string of length {N} over ( ) [ ] on which the layer {DYCK_SPEC} answers wrongly "
                 "(its direct forward disagrees with membership).",
                 f"a string of {N} symbols from ( ) [ ]",
                 f"Cross two members with one transcript: Alice's half of {lang.decode(s1)} with Bob's half of "
                 f"{lang.decode(s2)} gives {lang.decode(crossing)}, a non-member (Lemma 1) that gets their "
                 "transcript and their answer, 1.", lang.decode(crossing), check_wrong),
        Exercise("e4", "The width Theorem 5 asks for",
                 f"A one-layer model with H = {H} heads at p = {p} bits decides Dyck-(2,2) at N = {length}. What "
                 f"is the smallest width m that commsim's whole-bit form of Theorem 5, 3m(p + ⌈log2 N⌉)H ≥ N − 1, "
                 "allows?", "an integer m ≥ 1",
                 f"m ≥ (N − 1)/(3(p + ⌈log2 N⌉)H) = {length - 1}/(3·({p} + {int(np.ceil(np.log2(length)))})·{H}),"
                 f" so m = {m_min}.", m_min, check_width)])


def attention_exercises(topic: str):
    return {"attention-protocol": protocol_exercises, "attention-dyck": dyck_exercises}[topic]
