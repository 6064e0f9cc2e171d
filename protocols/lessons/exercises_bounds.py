"""Exercises of ``fooling-sets``, ``two-layers`` and ``randomized``.

fooling-sets: the rank of a communication matrix (computed), a fooling set of a given size (verified by
evaluating the problem on every member and every crossing), and whether a given set is one (the same check).
two-layers: a Bob position that one of Alice's bits moves in layer 1 (checked by running layer 1 twice), the rank
of the two-layer model's communication matrix on a balanced split (computed from the model's outputs), and
whether the construction must carry more than its m·p bits (decided by the built model and the bound).
randomized: an x at which the fingerprint test errs (checked with the protocol's own fingerprint), the INDEX
bound at an error (computed), and the public-coin k for an error (checked by 2^-k).
"""
from __future__ import annotations

import math

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
from protocols.lessons.exercises_common import field, rng_for

NAMES = {"eq": "EQ", "disj": "DISJ", "index": "INDEX"}


# ---- fooling-sets ------------------------------------------------------------------------------------------------
def _fooling_failure(problem, pairs) -> str | None:
    """Why ``pairs`` is not a fooling set of ``problem`` (None when it is), by evaluating every member and crossing."""
    values = {int(problem.evaluate(np.asarray(x), np.asarray(y))) for x, y in pairs}
    if len(values) > 1:
        return "the members do not all have the same value"
    if len({bits_text(x) + "|" + bits_text(y) for x, y in pairs}) < len(pairs):
        return "two members are the same pair"
    z = values.pop()
    for i, (x1, y1) in enumerate(pairs):
        for x2, y2 in pairs[i + 1:]:
            if int(problem.evaluate(np.asarray(x1), np.asarray(y2))) == z and \
                    int(problem.evaluate(np.asarray(x2), np.asarray(y1))) == z:
                return (f"crossing ({bits_text(x1)}, {bits_text(y1)}) with ({bits_text(x2)}, {bits_text(y2)}) keeps "
                        f"the value {z} both ways")
    return None


def fooling_exercises(n: int | None, seed: int) -> ExerciseSet:
    from commsim.theory.comm_matrix import communication_matrix, rank_real
    from commsim.theory.problems import make_problem
    n = size_arg(n, "fooling-sets")
    rng = rng_for("fooling-sets", seed, 1)
    name = str(rng.choice(["eq", "disj", "index"]))
    size = n if name != "index" else n

    def check_rank(answer):
        r = answer_int(answer, field("e1"), 0)
        got = rank_real(communication_matrix(name, size).matrix)
        return r == got, f"computed the rank over the reals of the {NAMES[name]}_{size} matrix: {got}"
    rank = rank_real(communication_matrix(name, size).matrix)
    disj = make_problem("disj", n)
    k = int(rng_for("fooling-sets", seed, 2).integers(3, min(2 ** n, 8) + 1))

    def check_set(answer):
        items = answer_list(answer, field("e2"))
        if len(items) > 2 ** n:          # no fooling set of DISJ_n is larger (and a longer list is no answer)
            from commsim.contract import InputError
            raise InputError(f"{field('e2')}: at most 2^{n} = {2 ** n} pairs, got {len(items)}", field("e2"))
        pairs = []
        for j, item in enumerate(items, 1):
            pair = answer_list(item, f"{field('e2')}[{j}]", 2)
            pairs.append((answer_bits(pair[0], f"{field('e2')}[{j}][1]", n),
                          answer_bits(pair[1], f"{field('e2')}[{j}][2]", n)))
        if len(pairs) < k:
            return False, f"{len(pairs)} pairs: the exercise asks for {k}"
        why = _fooling_failure(disj, pairs)
        return why is None, (f"evaluated DISJ on all {len(pairs)} members and every crossing: "
                             + ("a fooling set" if why is None else why))
    example = [[bits_text(x), bits_text(1 - x)] for x in
               (np.array([(v >> (n - 1 - i)) & 1 for i in range(n)], dtype=np.uint8) for v in range(k))]
    rng3 = rng_for("fooling-sets", seed, 3)
    eq = make_problem("eq", n)
    xs = [np.array(list(map(int, format(int(v), f"0{n}b"))), dtype=np.uint8)
          for v in rng3.choice(2 ** n, 3, replace=False)]
    offered = [(x, x) for x in xs]
    if rng3.integers(2):                         # half the time a pair off the diagonal spoils it
        offered[1] = (xs[1], xs[2])
    shown = ", ".join(f"({bits_text(x)}, {bits_text(y)})" for x, y in offered)

    def check_is(answer):
        claim = answer_bool(answer, field("e3"))
        why = _fooling_failure(eq, offered)
        return claim == (why is None), ("evaluated EQ on the members and their crossings: "
                                        + ("a fooling set" if why is None else f"not a fooling set: {why}"))
    truth = _fooling_failure(eq, offered)
    return ExerciseSet("fooling-sets", "fooling-sets: fooling sets and the rectangle argument", n, seed, [
        Exercise("e1", "The rank of a communication matrix",
                 f"Write the communication matrix of {NAMES[name]}_{size} (rows: Alice's inputs, columns: Bob's; "
                 f"`commsim matrix {name} --n {size}` prints it). What is its rank over the reals? What lower "
                 "bound does it give?", "an integer",
                 f"rank {rank}: the log-rank bound is ⌈log2 {rank}⌉ = {math.ceil(math.log2(max(rank, 1)))} bits.",
                 rank, check_rank),
        Exercise("e2", "Build a fooling set",
                 f"Give a fooling set of at least {k} pairs (x, y) for DISJ_{n} ([BHBK24]'s convention: DISJ = 1 "
                 "when the sets meet): all pairs have the same value, and crossing any two changes it in at least one "
                 "direction.", f"a list of [x, y] pairs, each two strings of {n} bits",
                 "The pairs (x, complement of x) are disjoint, and crossing two different ones gives a pair that "
                 f"meets in at least one direction: e.g. the first {k} of them.", example, check_set),
        Exercise("e3", "Is it a fooling set?",
                 f"Is {{{shown}}} a fooling set for EQ_{n}?", "true or false",
                 ("Yes: distinct pairs (x, x) all have EQ = 1 and every crossing (x, x') has EQ = 0." if truth is None
                  else f"No: {truth}."), truth is None, check_is)])


# ---- two-layers --------------------------------------------------------------------------------------------------
def two_layer_exercises(n: int | None, seed: int) -> ExerciseSet:
    from commsim import load_plugins, make_model
    from commsim.theory.comm_matrix import rank_real
    from protocols.constructions.eq2 import build_eq2
    from protocols.constructions.lemma5 import communication_matrix
    from protocols.lessons.two_layers import XOR_SLOT
    from protocols.models.transformer import MultiLayerAttention
    n = size_arg(n, "two-layers")
    N = 2 * n
    reduction = load_plugins().get("reduction", "eq-ineq")
    model = make_model("construct:eq2", **reduction.model_context(n))
    first = MultiLayerAttention(model.token_embedding, model.position_embedding, [model.layers[0]], model.format,
                                model.readout)
    rng = rng_for("two-layers", seed, 1)
    x = rng.integers(0, 2, N).astype(np.int64)
    j = int(rng.integers(n))

    def check_moved(answer):
        i = answer_int(answer, field("e1"), n + 1, N) - 1
        y = x.copy()
        y[j] ^= 1
        before = float(first.hidden(x[None], query_position=i)[0, XOR_SLOT])
        after = float(first.hidden(y[None], query_position=i)[0, XOR_SLOT])
        return before != after, f"ran layer 1 at position {i + 1}: XOR slot {before:g} before the flip, {after:g} after"
    small = min(n, 4)
    model_s = make_model("construct:eq2", **reduction.model_context(small))
    rng2 = rng_for("two-layers", seed, 2)
    S_A = np.sort(rng2.choice(2 * small, small, replace=False))
    S_B = np.setdiff1d(np.arange(2 * small), S_A)
    pos = np.asarray(model_s.position_embedding)
    renumbered = np.empty_like(pos)
    renumbered[S_A], renumbered[S_B] = pos[:small], pos[small:]
    moved = MultiLayerAttention(model_s.token_embedding, renumbered, model_s.layers, model_s.format, model_s.readout)

    def split_rank() -> int:
        return rank_real(communication_matrix(moved, S_A, S_B)[0])

    def check_rank(answer):
        r = answer_int(answer, field("e2"), 0)
        got = split_rank()
        return r == got, f"the model's outputs on all {2 ** (2 * small)} inputs, as a matrix: rank {got}"
    rank = split_rank()
    length = int(rng_for("two-layers", seed, 3).choice([8, 32, 128, 512]))

    def mp(L: int) -> int:
        built = build_eq2(L // 2)
        return built.width * built.precision

    def check_more(answer):
        value = answer_int(answer, field("e3"), 0)
        bits = mp(length)
        return value == bits, (f"built construct:eq2 at N = {length}: m = {build_eq2(length // 2).width}, "
                               f"p = {build_eq2(length // 2).precision}, m·p = {bits}")
    bits = mp(length)
    positions = "{" + ", ".join(str(int(p) + 1) for p in S_A) + "}"
    return ExerciseSet("two-layers", "two-layers: why the method stops at one layer", n, seed, [
        Exercise("e1", "Layer 1 mixes the halves",
                 f"construct:eq2 reads x = {bits_text(x[:n])} | {bits_text(x[n:])} (N = {N}). Alice flips her bit "
                 f"x_{j + 1}. Give one of Bob's positions ({n + 1}..{N}) whose layer-1 output (the XOR slot) "
                 "changes.", f"an integer {n + 1}..{N}",
                 f"Layer 1 makes position i > N/2 attend to i − N/2 and write x_i XOR x_(i−N/2): position "
                 f"{j + n + 1}.", j + n + 1, check_moved),
        Exercise("e2", "Every balanced split: the rank",
                 f"Renumber construct:eq2 at N = {2 * small} for the split S_A = {positions} (Alice) as in Lemma 5. "
                 f"Its outputs on all inputs form a 2^{small} x 2^{small} matrix (rows: Alice's bits, columns: "
                 "Bob's). What is its rank over the reals?", "an integer",
                 f"The renumbered model computes INEQ of the two halves: the matrix is J − I, of rank {rank}, so "
                 f"the split needs about N/2 = {small} bits.", rank, check_rank),
        Exercise("e3", "How large is m·p?",
                 f"Build construct:eq2 at N = {length} (`commsim run eq-ineq --model construct:eq2 --n "
                 f"{length // 2}` builds it; its width m and precision p grow like log N). What is m·p? Compare it "
                 f"with the N/2 = {length // 2} bits any balanced split needs.", "an integer",
                 f"Built at N = {length}: m·p = {bits}, so N/2 {'>' if length // 2 > bits else '≤'} m·p here; m·p "
                 "grows like log² N and N/2 overtakes it only at much larger N.", bits, check_more)])


# ---- randomized --------------------------------------------------------------------------------------------------
def randomized_exercises(n: int | None, seed: int) -> ExerciseSet:
    from commsim.theory.bounds import index_one_way_randomized_bits
    from commsim.theory.problems import make_problem
    from protocols.baseline.randomized import FingerprintEquality
    n = size_arg(n, "randomized")
    fp = FingerprintEquality(make_problem("eq", n), 0.1)
    q = fp.prime
    rng = rng_for("randomized", seed, 1)
    while True:                                  # a seeded unequal pair whose fingerprints meet at some x >= 2
        a = rng.integers(0, 2, n).astype(np.uint8)
        b = a.copy()
        b[rng.choice(n, int(rng.integers(1, 4)), replace=False)] ^= 1
        roots = _common_roots(a, b, q)
        if roots:
            break

    def check_root(answer):
        x = answer_int(answer, field("e1"), 2, q - 1)
        fa, fb = fp._fingerprint(x, a), fp._fingerprint(x, b)
        return fa == fb, f"the protocol's fingerprints at x = {x}: A(x) mod {q} = {fa}, B(x) mod {q} = {fb}"
    rng2 = rng_for("randomized", seed, 2)
    eps = float(rng2.choice([0.01, 0.05, 0.1, 0.2, 0.3]))

    def check_index(answer):
        got = answer_int(answer, field("e2"), 0)
        want = index_one_way_randomized_bits(n, eps)
        return got == want, f"(1 − H2({eps}))·{n} rounded up: {want} bits"
    bound = index_one_way_randomized_bits(n, eps)
    target = float(rng_for("randomized", seed, 3).choice([0.3, 0.1, 0.01, 0.001, 1e-6]))

    def check_k(answer):
        k = answer_int(answer, field("e3"), 0, 1000)
        ok = 2.0 ** -k <= target and (k == 0 or 2.0 ** -(k - 1) > target)
        return ok, f"2^-{k} = {2.0 ** -k:.3g}" + (f", 2^-{k - 1} = {2.0 ** -(k - 1):.3g}" if k else "") + \
            f" against the error {target:g}"
    k_min = next(k for k in range(1001) if 2.0 ** -k <= target)
    return ExerciseSet("randomized", "randomized: which bounds survive coins", n, seed, [
        Exercise("e1", "Where the fingerprint errs",
                 f"The fingerprint protocol for EQ_{n} works over F_q, q = {q}. For a = {bits_text(a)} and b = "
                 f"{bits_text(b)} (unequal), give an x in 2..{q - 1} at which the test wrongly says 'equal', "
                 "A(x) = B(x) mod q.", f"an integer 2..{q - 1}",
                 f"A − B has at most n − 1 roots; searching F_q finds {len(roots)} at x ≥ 2: {roots[:5]}.",
                 roots[0], check_root),
        Exercise("e2", "INDEX with coins",
                 f"How many bits must every one-way INDEX_{n} protocol with error eps = {eps} send (public coins "
                 "allowed)? Use the bound (1 − H2(eps))·n, rounded up.", "an integer (bits)",
                 f"(1 − H2({eps}))·{n} rounds up to {bound}.", bound, check_index),
        Exercise("e3", "Random parities",
                 f"The public-coin EQ protocol sends k random parities and errs with probability exactly 2^-k on "
                 f"unequal pairs. What is the smallest k with error at most {target:g}?", "an integer k",
                 f"2^-k ≤ {target:g} first at k = {k_min}.", k_min, check_k)])


def _common_roots(a, b, q: int) -> list[int]:
    """The x in 2..q-1 with A(x) = B(x) mod q, all at once (Horner's scheme on every x; the check itself uses the
    protocol's own fingerprint)."""
    x = np.arange(q, dtype=np.int64)
    fa, fb = np.zeros(q, dtype=np.int64), np.zeros(q, dtype=np.int64)
    for i in range(len(a) - 1, -1, -1):
        fa = (fa * x + int(a[i])) % q
        fb = (fb * x + int(b[i])) % q
    return [int(v) for v in np.flatnonzero(fa == fb) if v >= 2]


def bounds_exercises(topic: str):
    return {"fooling-sets": fooling_exercises, "two-layers": two_layer_exercises,
            "randomized": randomized_exercises}[topic]
