"""Exercises of ``attention-disj``, ``compose`` and ``graph-transformers``: DISJ and its encodings.

attention-disj: a zero-sum triple of the Match3 input (checked by the arithmetic on the reduction's own
encoding), DISJ in the two papers' conventions (checked by evaluating the problem), and whether a q-sparse
averaging layer must fail (decided by the one-way bound).  compose: g(f(x)) of a prompt (evaluated), two
functions g with one message (checked by running the protocol on both), and "must it fail" (the counting bound).
graph-transformers: a directed triangle (checked on the reduction's graph), the bits of the node-partition
exchange (checked by the engine's message plan) and the first n the bound rules out (decided by the bound).
"""
from __future__ import annotations

import numpy as np

from commsim import (
    Exercise,
    ExerciseSet,
    answer_bool,
    answer_int,
    answer_ints,
    answer_keys,
    answer_list,
)
from protocols.lessons.common import bits_text, engine, reduction_default, run_one, size_arg
from protocols.lessons.exercises_common import field, rng_for


def _intersecting(rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    a = rng.integers(0, 2, n).astype(np.uint8)
    b = rng.integers(0, 2, n).astype(np.uint8)
    k = int(rng.integers(n))
    a[k] = b[k] = 1
    return a, b


# ---- attention-disj ----------------------------------------------------------------------------------------------
def match3_exercises(n: int | None, seed: int) -> ExerciseSet:
    from protocols.reductions.attention_tasks import match3_modulus
    from protocols.theorems import one_way_message_bits
    n = size_arg(n, "attention-disj")
    rid = "disj-match3"
    reduction, problem, _, _ = engine(rid, reduction_default(rid), n)
    Mod, N = match3_modulus(n), 2 * n + 1
    a, b = _intersecting(rng_for("attention-disj", seed, 1), n)
    z = [int(t) for t in reduction.encode(problem, a[None], b[None]).tokens[0]]

    def check_triple(answer):
        j, k = answer_ints(answer, field("e1"), 2, 1, N)
        if len({j, k, N}) < 3:
            return False, "j, k and N must be three different positions"
        total = z[N - 1] + z[j - 1] + z[k - 1]
        return total % Mod == 0, (f"z_N + z_j + z_k = {z[N - 1]} + {z[j - 1]} + {z[k - 1]} = {total} ≡ "
                                  f"{total % Mod} mod {Mod}")
    common = [i for i in range(n) if a[i] and b[i]]
    triple = [common[0] + 1, n + common[0] + 1]
    a2, b2 = (lambda r: (r.integers(0, 2, n).astype(np.uint8), r.integers(0, 2, n).astype(np.uint8)))(
        rng_for("attention-disj", seed, 2))

    def check_conventions(answer):
        value = answer_keys(answer, field("e2"), ("BHBK24", "SHT23"))
        got = (answer_int(value["BHBK24"], field("e2") + ".BHBK24", 0, 1),
               answer_int(value["SHT23"], field("e2") + ".SHT23", 0, 1))
        meet = int(problem.evaluate(a2, b2))           # commsim's DISJ: [BHBK24]'s convention, 1 = the sets meet
        return got == (meet, 1 - meet), (f"evaluated DISJ({bits_text(a2)}, {bits_text(b2)}): the sets "
                                         f"{'meet' if meet else 'are disjoint'}, so [BHBK24] {meet}, "
                                         f"[SHT23] {1 - meet}")
    meet2 = int(problem.evaluate(a2, b2))
    rng3 = rng_for("attention-disj", seed, 3)
    d, m, p, H = int(rng3.choice([8, 16, 32, 64])), int(rng3.integers(1, 5)), int(rng3.choice([2, 4, 8])), \
        int(rng3.choice([1, 2]))
    q = max(2, one_way_message_bits(m, p, H, d) + int(rng3.integers(-4, 5)))

    def check_qsa(answer):
        claim = answer_bool(answer, field("e3"))
        sent = one_way_message_bits(m, p, H, d)
        return claim == (sent < q), (f"Alice's cheaper message has min(d·p, (2m + 1)·p·H) = min({d * p}, "
                                     f"{(2 * m + 1) * p * H}) = {sent} bits; one-way DISJ_q needs q = {q}: "
                                     + ("too few, it must fail" if sent < q else "enough, nothing is forced"))
    sent = one_way_message_bits(m, p, H, d)
    return ExerciseSet("attention-disj", "attention-disj: DISJ into Match3 and q-sparse averaging", n, seed, [
        Exercise("e1", "A zero-sum triple of Match3",
                 f"Alice's a = {bits_text(a)} and Bob's b = {bits_text(b)} are encoded as the Match3 input z = "
                 f"{' '.join(map(str, z))} (N = {N}, M = {Mod}). Give two positions j, k (1-based, different, "
                 f"neither N) with z_N + z_j + z_k ≡ 0 mod M.", "[j, k] — two integers",
                 f"z_N = 0, so z_j + z_k ≡ 0: a common element i (here {common[0] + 1}) puts i + 1 at position i and "
                 f"M − (i + 1) at position n + i: j = {triple[0]}, k = {triple[1]}.", triple, check_triple),
        Exercise("e2", "DISJ in two conventions",
                 f"a = {bits_text(a2)}, b = {bits_text(b2)}. Give DISJ(a, b) as [BHBK24] define it (1 = the sets "
                 "meet, commsim's convention) and as [SHT23]'s Match3 reduction reads it (1 = the sets are disjoint).",
                 "{\"BHBK24\": 0 or 1, \"SHT23\": 0 or 1}",
                 f"The sets {'meet' if meet2 else 'are disjoint'}: [BHBK24] {meet2}, [SHT23] {1 - meet2}.",
                 {"BHBK24": meet2, "SHT23": 1 - meet2}, check_conventions),
        Exercise("e3", "Must the qSA layer fail?",
                 f"A self-attending one-layer model with embedding dimension d = {d}, width m = {m}, H = {H} "
                 f"head(s) at p = {p} bits computes q-sparse averaging on the DISJ layout with q = {q} (Alice holds "
                 "only the query). Must it be wrong on some input?", "true or false",
                 f"Alice's one message has min(d·p, (2m + 1)·p·H) = {sent} bits; one-way DISJ_q needs q = {q}: "
                 + ("it must fail." if sent < q else "nothing is forced."), sent < q, check_qsa)])


# ---- compose -----------------------------------------------------------------------------------------------------
def compose_exercises(n: int | None, seed: int) -> ExerciseSet:
    from protocols.lessons.compose import LESSON_MODEL, RID
    from protocols.theorems import composition_message_bits, composition_one_way_bits
    n = size_arg(n, "compose")
    spec = LESSON_MODEL.format(n=n)
    reduction, problem, model, simulator = engine(RID, spec, n)
    rng = rng_for("compose", seed, 1)
    g = rng.integers(0, n, n)
    bob = np.concatenate([rng.integers(0, n, n), [rng.integers(0, n)]])
    x = int(bob[n])

    def check_value(answer):
        got = answer_int(answer, field("e1"), 0, n - 1)
        truth = int(problem.evaluate(g, bob))
        return got == truth, f"evaluated: f({x}) = {int(bob[x])}, g({int(bob[x])}) = {truth}"

    def alice_message(gg) -> str:
        _, result, _, _ = run_one(reduction, problem, model, simulator, np.asarray(gg), bob)
        return "|".join(str(m.bits) for m in result.transcript.messages if m.sender == "alice")
    seen: dict[str, np.ndarray] = {}
    pair = None
    search = rng_for("compose", seed, 2)
    while pair is None:
        h = search.integers(0, n, n)
        msg = alice_message(h)
        if msg in seen and not np.array_equal(seen[msg], h):
            pair = (seen[msg], h)
        seen.setdefault(msg, h)

    def check_collision(answer):
        items = answer_list(answer, field("e2"), 2)
        g1 = answer_ints(items[0], field("e2") + "[1]", n, 0, n - 1)
        g2 = answer_ints(items[1], field("e2") + "[2]", n, 0, n - 1)
        if g1 == g2:
            return False, "the two functions are the same: a collision needs g ≠ g'"
        m1, m2 = alice_message(g1), alice_message(g2)
        return m1 == m2, f"ran the protocol on both: Alice sends {m1} and {m2}" + (" — the same" if m1 == m2 else "")
    rng3 = rng_for("compose", seed, 3)
    size = int(rng3.choice([16, 32, 64, 100, 256]))
    H, d, p = int(rng3.integers(1, 5)), int(rng3.choice([4, 8, 16, 32])), int(rng3.choice([4, 8, 16]))

    def check_fail(answer):
        claim = answer_bool(answer, field("e3"))
        c, need = composition_message_bits(H, d, p), composition_one_way_bits(size)
        return claim == (c < need), (f"H(d + 1)p = {c} bits against ⌈log2 n^n⌉ = {need}: "
                                     + ("fewer, so two functions g share a message: it must fail" if c < need else
                                        "enough: the count forces nothing"))
    c, need = composition_message_bits(H, d, p), composition_one_way_bits(size)
    held = f"Bob holds f = {bob[:n].tolist()} and the query x = {x}"
    return ExerciseSet("compose", "compose: function composition against one attention layer", n, seed, [
        Exercise("e1", "Read the prompt",
                 f"The prompt writes g = {g.tolist()} and f = {bob[:n].tolist()} (values 0..{n - 1}) and asks for "
                 f"g(f(x)) at x = {x}. What is the answer?", f"an integer 0..{n - 1}",
                 f"f({x}) = {int(bob[x])} and g({int(bob[x])}) = {int(g[int(bob[x])])}.", int(g[int(bob[x])]),
                 check_value),
        Exercise("e2", "Two functions, one message",
                 f"The layer {spec} runs as a one-way protocol: Alice holds g, {held}. Find two different "
                 f"functions g, g' (lists of {n} values in 0..{n - 1}) for which Alice sends the same message.",
                 f"[g, g'] — two lists of {n} integers",
                 "Her message is a few numbers of 4 bits, far fewer than the n^n functions need: sampling functions "
                 f"until two messages repeat finds g = {pair[0].tolist()}, g' = {pair[1].tolist()}.",
                 [pair[0].tolist(), pair[1].tolist()], check_collision),
        Exercise("e3", "Must it fail?",
                 f"An attention layer with H = {H} heads, embedding dimension d = {d}, p = {p} bits composes two "
                 f"functions on a domain of size n = {size}. Counting [PNP24]'s message H(d + 1)p, must some "
                 f"input fool it?", "true or false",
                 f"H(d + 1)p = {c} bits, ⌈log2 n^n⌉ = {need}: " + ("it must fail." if c < need else
                                                                    "nothing is forced."), c < need, check_fail)])


# ---- graph-transformers ------------------------------------------------------------------------------------------
def graph_exercises(n: int | None, seed: int) -> ExerciseSet:
    from commsim import prepare
    from protocols.reductions.graph import cycle3_graphs
    from protocols.theorems import graph_exchange_bits
    n = size_arg(n, "graph-transformers")
    rng = rng_for("graph-transformers", seed, 1)
    a = rng.integers(0, 2, n * n).astype(np.uint8)
    b = (1 - a).astype(np.uint8)
    common = int(rng.integers(n * n))
    a[common] = b[common] = 1
    X = cycle3_graphs(a[None], b[None])[0]

    def check_triangle(answer):
        x, y = answer_ints(answer, field("e1"), 2, 1, n)
        u, v, w = x - 1, n + y - 1, 2 * n + x - 1
        edges = (int(X[u, v]), int(X[v, w]), int(X[w, u]))
        return all(edges), (f"in the reduction's graph: u{x}→v{y} {edges[0]}, v{y}→w{x} {edges[1]}, "
                            f"w{x}→u{x} {edges[2]}")
    x0, y0 = (k + 1 for k in divmod(common, n))
    rng2 = rng_for("graph-transformers", seed, 2)
    L, H, m, p = int(rng2.integers(1, 4)), int(rng2.integers(1, 3)), int(rng2.integers(1, 3)), int(rng2.choice([2, 4]))
    spec = f"graph-attention:layers={L},heads={H},width={m},dim=3,precision={p},seed=0"

    def planned_bits() -> int:
        setup = prepare("disj-3cycle", spec, n)
        return int(setup.plan(setup.run_instance(a, b).encoded).bits)

    def check_bits(answer):
        got = answer_int(answer, field("e2"), 0)
        bits = planned_bits()
        return got == bits, f"the engine's message plan for {spec} at n = {n}: {bits} bits"
    rng3 = rng_for("graph-transformers", seed, 3)
    L3, H3, m3, p3 = int(rng3.integers(1, 3)), int(rng3.integers(1, 3)), int(rng3.integers(1, 3)), \
        int(rng3.choice([2, 4]))

    def ruled_out(size: int) -> bool:
        return size >= 1 and graph_exchange_bits(L3, H3, m3, p3, 2 * size) < size * size

    def check_first(answer):
        k = answer_int(answer, field("e3"), 1, 10 ** 6)
        return ruled_out(k) and not ruled_out(k - 1), (
            f"at n = {k}: {graph_exchange_bits(L3, H3, m3, p3, 2 * k)} bits vs n² = {k * k}"
            + (f"; at n = {k - 1}: {graph_exchange_bits(L3, H3, m3, p3, 2 * (k - 1))} vs {(k - 1) ** 2}" if k > 1
               else ""))
    first = next(k for k in range(1, 10 ** 6) if ruled_out(k))
    bits = planned_bits()
    return ExerciseSet("graph-transformers", "graph-transformers: Directed 3-Cycle", n, seed, [
        Exercise("e1", "Find the triangle",
                 f"DISJ on n² = {n * n} bits: a = {bits_text(a)}, b = {bits_text(b)}, laid out as the digraph on "
                 f"U, V, W (n = {n} nodes each): a_((x−1)n+y) is the edge u_x → v_y, b_((x−1)n+y) the edge "
                 "v_y → w_x, and w_x → u_x is public. Give x, y (1-based) such that u_x → v_y → w_x → u_x is a "
                 "directed triangle.", "[x, y] — two integers 1..n",
                 f"The sets share element {common + 1} = (x − 1)·{n} + y with x = {x0}, y = {y0}.", [x0, y0],
                 check_triangle),
        Exercise("e2", "The bits of the node-partition exchange",
                 f"The graph transformer {spec} (L = {L}, H = {H}, m = {m}, p = {p}) runs on this reduction at "
                 f"n = {n}: Alice owns U, Bob owns V, W is public. How many bits does the exchange send?",
                 "an integer (bits)",
                 f"Per layer and head each party sends key and value (2m numbers of p bits) of each owned node, then "
                 f"one bit each: L·H·2n·2mp + 2 = {bits}.", bits, check_bits),
        Exercise("e3", "The first n the bound rules out",
                 f"A graph transformer has L = {L3}, H = {H3}, m = {m3}, p = {p3}. Its exchange on the Directed "
                 "3-Cycle reduction sends L·H·2n·2mp + 2 bits, and DISJ on n² bits needs n². What is the smallest "
                 "n at which it must fail?", "an integer n",
                 f"L·H·2n·2mp + 2 = {4 * L3 * H3 * m3 * p3}n + 2 < n² first at n = {first}.", first, check_first)])


def disj_exercises(topic: str):
    return {"attention-disj": match3_exercises, "compose": compose_exercises,
            "graph-transformers": graph_exercises}[topic]
