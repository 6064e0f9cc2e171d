"""Exercises of ``rnn-index``, ``rnn-eq`` and ``rnn-disj``: collisions of a small recurrence (checked by running
the model on both inputs and comparing the handed-off states), the input on which a colliding model must be wrong
(checked through the runner), "must it fail" and "the first N ruled out" (decided by the reduction's own bound),
and, for INEQ, a distinguishing suffix (checked by evaluating INEQ)."""
from __future__ import annotations

import numpy as np

from commsim import (
    Exercise,
    ExerciseSet,
    answer_bits,
    answer_bool,
    answer_int,
    answer_list,
)
from protocols.lessons.common import bits_text, size_arg
from protocols.lessons.exercises_common import (
    bob_text,
    field,
    first_collision,
    handoff_state,
    model_setup,
    rng_for,
    run_pair,
)
from protocols.theorems import handoff_bits

#: topic -> (reduction, the recurrence e1 runs, a description of the task, what Alice's input is)
TASKS = {
    "rnn-index": ("index-idxl", "elman", "index lookup on n symbols (INDEX_n)", "her n symbols"),
    "rnn-eq": ("eq-ineq", "elman", "INEQ on N = 2n bits (EQ_n across the middle)", "the first half"),
    "rnn-disj": ("disj-mqar", "gru", "multi-query recall of n labelled keys (DISJ_n)", "the n labels"),
}


def _collision_exercise(topic: str, n: int, seed: int) -> Exercise:
    rid, kind, task, alice = TASKS[topic]
    rng = rng_for(topic, seed, 1)
    width = max(1, (n - 1) // 2)
    best = None       # of 8 seeded recurrences below the bound, the one reaching the most states (a collision exists)
    for s in rng.permutation(32)[:8]:
        spec = f"{kind}:width={width},precision=2,seed={int(s)}"
        reduction, problem, model, _ = model_setup(rid, spec, n)
        pair = first_collision(reduction, problem, model)
        states = len(set(handoff_state(reduction, problem, model, problem.alice_inputs())))
        if pair is not None and (best is None or states > best[0]):
            best = (states, spec, reduction, problem, model, pair)
    if best is None or best[0] == 1:   # the smallest sizes: the smallest recurrence reaches the bound; store n - 1 bits
        spec = f"memorize:capacity={n - 1}"
        reduction, problem, model, _ = model_setup(rid, spec, n)
        best = (len(set(handoff_state(reduction, problem, model, problem.alice_inputs()))), spec, reduction, problem,
                model, first_collision(reduction, problem, model))
    states, spec, reduction, problem, model, pair = best
    ident = "e1"

    def check(answer):
        x = answer_bits(answer_list(answer, field(ident), 2)[0], f"{field(ident)}[1]", n)
        y = answer_bits(answer[1], f"{field(ident)}[2]", n)
        if x == y:
            return False, "the two inputs are the same string: a collision needs x ≠ x'"
        s1, s2 = handoff_state(reduction, problem, model, [x, y])
        return s1 == s2, (f"ran {spec} on both: h(x) = {s1}, h(x') = {s2} — "
                          + ("the same state" if s1 == s2 else "different states"))
    return Exercise(
        ident, "Find the collision",
        f"The recurrence {spec} (m = {model.state_units} unit{'s' if model.state_units != 1 else ''} of "
        f"p = {model.precision} bits: m·p = "
        f"{model.state_bits} bits of state) is run on {task}. Find two different Alice inputs ({alice}, {n} bits) "
        f"after which it hands Bob the same state. Why must such a pair exist?",
        f"[x, x'] — two strings of {n} bits, e.g. [\"{'0' * n}\", \"{'1' * n}\"]",
        f"There are 2^{n} = {2 ** n} Alice inputs but at most 2^{model.state_bits} = {2 ** model.state_bits} states, "
        f"so by pigeonhole two share one (here {states} states are reached). Running every input in order, the "
        f"first repeat is x = {bits_text(pair[0])}, x' = {bits_text(pair[1])}.",
        [bits_text(pair[0]), bits_text(pair[1])], check)


def _wrong_answer_exercise(topic: str, n: int, seed: int) -> Exercise:
    rid, _, task, _ = TASKS[topic]
    spec = f"memorize:capacity={n - 1}"
    reduction, problem, model, simulator = model_setup(rid, spec, n)
    A = problem.alice_inputs()
    states = handoff_state(reduction, problem, model, A)
    rng = rng_for(topic, seed, 2)
    groups: dict[str, list[int]] = {}
    for k, s in enumerate(states):
        groups.setdefault(s, []).append(k)
    pairs = [g for g in groups.values() if len(g) > 1]
    g = pairs[int(rng.integers(len(pairs)))]
    x1, x2 = np.asarray(A[g[0]]), np.asarray(A[g[1]])
    index = np.ndim(problem.sample(np.random.default_rng(0), 1)[1][0]) == 0
    ident = "e2"

    def bob_of(answer):
        if index:
            return answer_int(answer, field(ident), 1, n) - 1
        return np.asarray(answer_bits(answer, field(ident), n), dtype=np.uint8)

    def check(answer):
        y = bob_of(answer)
        (t1, a1, d1), (t2, a2, d2) = run_pair(reduction, problem, model, simulator, [x1, x2], y)
        text = (f"ran the protocol on (x, {bob_text(y)}): answer {a1}, truth {t1}; on (x', {bob_text(y)}): answer "
                f"{a2}, truth {t2}")
        return (a1 != t1) or (a2 != t2), text + ("; wrong on one of them" if (a1 != t1) or (a2 != t2) else
                                                   "; right on both")
    if index:
        diff = int(np.flatnonzero(x1 != x2)[0])
        example, how = diff + 1, f"they differ at position {diff + 1}, so b = {diff + 1}"
    else:
        from commsim.theory.problems import all_bit_strings
        example, how = None, ""
        for y in all_bit_strings(n).astype(np.uint8):          # the first of Bob's inputs that separates them
            if int(problem.evaluate(x1, y)) != int(problem.evaluate(x2, y)):
                example, how = bits_text(y), f"y = {bits_text(y)} separates them"
                break
    form = (f"Bob's index b, 1..{n}" if index else f"Bob's input y, a string of {n} bits")
    return Exercise(
        ident, "Where the colliding model is wrong",
        f"The model {spec} ({model.state_bits} bits of state, one short of the bound) hands Bob the same state after "
        f"x = {bits_text(x1)} and after x' = {bits_text(x2)}. Give Bob's input on which it must be wrong on x or x'.",
        form,
        f"Bob sees only the state, so he answers alike on (x, ·) and (x', ·); an input of Bob's on which the two "
        f"true answers differ makes one of those answers wrong: {how}.", example, check)


def _must_fail_exercise(topic: str, n: int, seed: int) -> Exercise:
    from commsim import load_plugins
    rid, _, task, _ = TASKS[topic]
    reduction = load_plugins().get("reduction", rid)
    rng = rng_for(topic, seed, 3)
    size = int(rng.integers(8, 65))
    need = reduction.one_way_bound(size).bits
    p = int(rng.choice([1, 2, 4, 8]))
    m = max(1, (need + int(rng.integers(-3, 3))) // p)
    ident = "e3"

    def check(answer):
        claim = answer_bool(answer, field(ident))
        bits = handoff_bits(m, p)
        bound = reduction.one_way_bound(size)
        must = bits < bound.bits
        return claim == must, (f"the handoff sends m·p = {bits} bits; {bound.source} asks for {bound.bits}: "
                               + ("fewer, so it must fail" if must else "enough, so the bound does not force a "
                                                                        "failure"))
    bits = handoff_bits(m, p)
    return Exercise(
        ident, "Must it fail?",
        f"A recurrent model with m = {m} units of p = {p} bits is run on {task} at n = {size}. Must it be wrong on "
        f"some instance, whatever its weights?",
        "true (it must fail) or false (the bound does not force a failure)",
        f"Theorem 2 makes it a one-way protocol of m·p = {bits} bits; the bound asks for {need}. "
        + ("m·p is below it: it must fail." if bits < need else "m·p reaches it: the bound forces nothing."),
        bits < need, check)


def _first_n_exercise(n: int, seed: int) -> Exercise:
    from commsim import load_plugins
    reduction = load_plugins().get("reduction", "index-idxl")
    rng = rng_for("rnn-index", seed, 4)
    m, p = int(rng.integers(2, 17)), int(rng.choice([2, 4, 8]))
    ident = "e4"

    def ruled_out(tokens: int) -> bool:
        return tokens >= 2 and reduction.one_way_bound(tokens - 1).bits > handoff_bits(m, p)

    def check(answer):
        N = answer_int(answer, field(ident), 2, 10 ** 7)
        here, before = ruled_out(N), ruled_out(N - 1)
        return here and not before, (f"N = {N} tokens is n = {N - 1} symbols: bound "
                                     f"{reduction.one_way_bound(N - 1).bits} vs m·p = {m * p} — "
                                     + ("ruled out" if here else "not ruled out")
                                     + (f"; but N = {N - 1} is already ruled out" if before else ""))
    first = m * p + 2
    return Exercise(
        ident, "The first N the bound rules out",
        f"A recurrent model has m = {m} units of p = {p} bits. Index lookup on n symbols reads N = n + 1 tokens "
        f"(the symbols, then the index). What is the smallest N at which Theorem 3 rules it out?",
        "an integer N (tokens)",
        f"m·p ≥ n must hold; m·p = {m * p}, so n = {m * p + 1} is the first size ruled out: N = n + 1 = {first}.",
        first, check)


def _suffix_exercise(n: int, seed: int) -> Exercise:
    from commsim.theory.automaton import ineq
    rng = rng_for("rnn-eq", seed, 4)
    x1 = rng.integers(0, 2, n).astype(np.uint8)
    x2 = x1.copy()
    flip = rng.choice(n, int(rng.integers(1, n + 1)), replace=False)
    x2[flip] ^= 1
    ident = "e4"

    def check(answer):
        s = np.asarray(answer_bits(answer, field(ident), n), dtype=np.uint8)
        v1 = int(ineq(np.concatenate([x1, s])[None])[0])
        v2 = int(ineq(np.concatenate([x2, s])[None])[0])
        return v1 != v2, f"INEQ(x1 s) = {v1}, INEQ(x2 s) = {v2}" + (" — distinguished" if v1 != v2 else
                                                                      " — not distinguished")
    return Exercise(
        ident, "Myhill–Nerode: a distinguishing suffix",
        f"x1 = {bits_text(x1)} and x2 = {bits_text(x2)} are two first halves of an INEQ input of length {2 * n}. "
        f"Give a second half s on which INEQ(x1 s) ≠ INEQ(x2 s) — so every automaton for INEQ must be in different "
        f"states after x1 and after x2.",
        f"s, a string of {n} bits",
        "s = x1: INEQ(x1 x1) = 0 while INEQ(x2 x1) = 1 (s = x2 works as well).", bits_text(x1), check)


def rnn_exercises(topic: str):
    def build(n: int | None = None, seed: int = 0) -> ExerciseSet:
        n = size_arg(n, topic)
        items = [_collision_exercise(topic, n, seed), _wrong_answer_exercise(topic, n, seed),
                 _must_fail_exercise(topic, n, seed)]
        if topic == "rnn-index":
            items.append(_first_n_exercise(n, seed))
        elif topic == "rnn-eq":
            items.append(_suffix_exercise(n, seed))
        return ExerciseSet(topic, f"{topic}: recurrent models against one-way bounds", n, seed, items)
    build.__name__ = f"exercises_{topic.replace('-', '_')}"
    return build
