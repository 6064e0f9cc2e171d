"""The ``attention-protocol`` lesson's last step: where the partial-softmax exchange stops -- third-order attention.

On ``construct:match3-third-order`` (commsim's weights for [SHT23]'s claim) and a split of the positions like
the lesson's: the pair logits of one query, grouped by who holds j and k; the one matching pair is mixed (j
Alice's, k Bob's), its logit the trilinear form of one feature of each token; the softmax's denominator Z split
into Alice's pairs, Bob's pairs, the mixed pairs and the blank's; the logit is not a sum of an Alice term and a
Bob term (the unit's own logits on four inputs).
"""
from __future__ import annotations

import math

import numpy as np

from commsim import Step
from protocols.lessons.common import positions_text, vector_text

#: the unit's modulus and its longest input in the step (N^3 logits; the tables stay readable)
MODULUS, MAX_LENGTH = 7, 6


def _input(length: int, alice: list[int], bob: list[int], seed: int) -> np.ndarray:
    """Residues whose only Match3 pairs (j, k) for query 1 are mixed: z_3 (Alice's) and z_2 (Bob's) complete z_1."""
    M = MODULUS
    rng = np.random.default_rng(seed)
    for _ in range(1000):
        z = rng.integers(0, M, length)
        z[1] = (-z[0] - z[2]) % M
        match = [(j, k) for j in range(1, length) for k in range(1, length) if j != k and (z[0] + z[j] + z[k]) % M == 0]
        if all((j in alice) != (k in alice) for j, k in match):
            return z
    raise AssertionError("no input with only mixed matches")  # pragma: no cover - found within a few draws


def third_order_step(n: int) -> Step:
    """The step (module docstring), on a unit of min(n, 6) residues (at least 3)."""
    from protocols.constructions.match3 import build_match3_third_order
    L = max(3, min(n, MAX_LENGTH))
    M = MODULUS
    unit = build_match3_third_order(L, M)
    ar, fmt, info = unit.arithmetic, unit.format, unit.info
    alice = list(range(0, L, 2))
    bob = [i for i in range(L) if i not in alice]
    z = _input(L, alice, bob, n)
    tokens = unit.with_blank(z[None])
    P = L + 1                                                     # the blank is position L: the unit's own token
    A = unit.logits(tokens)[0, 0]                                 # query 1 (0-based 0, Alice's): (P^2,)
    Mx = int(A.max())
    e = ar.exp_weights(A[None], np.array([Mx]))[0]
    unit_step = 2.0 ** -fmt.frac

    def group(j: int, k: int) -> str:
        if L in (j, k):
            return "blank"
        if j in alice and k in alice:
            return "Alice's"
        if j in bob and k in bob:
            return "Bob's"
        return "mixed"

    groups = ("Alice's", "Bob's", "mixed", "blank")
    Z = {g: 0 for g in groups}
    top = {g: None for g in groups}
    count = {g: 0 for g in groups}
    for j in range(P):
        for k in range(P):
            g = group(j, k)
            Z[g] += int(e[j * P + k])
            count[g] += 1
            a = int(A[j * P + k])
            top[g] = a if top[g] is None else max(top[g], a)
    rows = [f"{'pairs (j, k)':14} {'how many':>8} {'largest a_1jk':>14} {'Z part (units)':>15}"]
    rows += [f"{g:14} {count[g]:>8} {top[g] * unit_step:>14.5g} {Z[g]:>15}" for g in groups]
    decided = int(unit.decide(z[None])[0, 0])

    # the matching mixed pair (3, 2) in the papers' 1-based positions: its logit from one feature of each token
    j, k = 2, 1
    theta = [2 * math.pi * int(z[t]) / M for t in (0, j, k)]
    cs = [(float(fmt.quantize(np.array([math.cos(t)]))[0]), float(fmt.quantize(np.array([math.sin(t)]))[0]))
          for t in theta]
    c = info["scale_c"]
    (ci, si), (cj, sj), (ck, sk) = cs
    terms = [c * ci * cj * ck, -c * ci * sj * sk, -c * si * cj * sk, -c * si * sj * ck]
    a_jk = int(A[j * P + k])
    # were a_1jk = f(z_j) + g(z_k), Z_mixed would be (Alice's sum of e^f) x (Bob's sum of e^g): one number each.
    # The unit's own logits for z_3 in {x, x + 1} (Alice's) and z_2 in {y, y + 1} (Bob's) show it is not.
    corner = {}
    for dx in (0, 1):
        for dy in (0, 1):
            w = z.copy()
            w[j], w[k] = (w[j] + dx) % M, (w[k] + dy) % M
            corner[dx, dy] = int(unit.logits(unit.with_blank(w[None]))[0, 0, j * P + k])
    interaction = (corner[0, 0] + corner[1, 1] - corner[0, 1] - corner[1, 0]) * unit_step
    p = unit.precision
    send = len(bob) * 2 * (unit.width + unit.value_width) * p
    return Step(
        "Where the exchange stops: third-order attention",
        "Theorem 4 works because every term of the softmax belongs to ONE position: e_i v_i needs only q_N and "
        "token i, so Z = Z_A + Z_B and U = U_A + U_B are sums each party computes alone. [SHT23]'s third-order "
        "attention softmaxes over PAIRS (j, k): the logit a_ijk = <q_i, k1_j ⊙ k2_k> is a trilinear form that "
        "multiplies a coordinate of token j's key by one of token k's. When j is Alice's and k is Bob's the term "
        "belongs to neither party, so the partial sums do not factor: no bound of one-layer attention applies, "
        "and `commsim run disj-match3 --model construct:match3-third-order` refuses the protocol with this reason. "
        f"Here is commsim's Match3 unit (N = {L} residues mod {M}, width m = {unit.width}, p = {p} bits) on a split "
        f"like the lesson's: the query is position 1 (Alice's), and its only matches are mixed pairs.",
        instance=(f"z = {' '.join(str(int(v)) for v in z)} (mod {M}); Alice: {positions_text(alice)}; Bob: "
                  f"{positions_text(bob)}; the blank (position {L + 1}, the unit's own token) is known to both\n"
                  f"the matching pair (3, 2): z_1 + z_3 + z_2 = {z[0]} + {z[j]} + {z[k]} = {z[0] + z[j] + z[k]} "
                  f"≡ 0 — z_3 is Alice's, z_2 is Bob's\n"
                  f"its logit's four trilinear columns, c = {c}, features (cos θ, sin θ) of z_1, z_3, z_2 = "
                  f"{vector_text(cs[0])}, {vector_text(cs[1])}, {vector_text(cs[2])}:\n"
                  f"  c cos1 cos3 cos2 = {terms[0]:.5g}; -c cos1 sin3 sin2 = {terms[1]:.5g}; -c sin1 cos3 sin2 = "
                  f"{terms[2]:.5g}; -c sin1 sin3 cos2 = {terms[3]:.5g}\n"
                  f"  sum {sum(terms):.5g} ≈ c cos(2π·0/{M}) = {c}; the unit's logit a_1,3,2 = {a_jk} units = "
                  f"{a_jk * unit_step:.5g}\n"
                  + "\n".join(rows) +
                  f"\nZ = {sum(Z.values())} units = Z_Alice + Z_Bob + Z_mixed + Z_blank; the unit decides "
                  f"{decided} at position 1 (a match exists), all of it from the mixed pairs\n"
                  f"not a sum f(z_3) + g(z_2): the unit's logit a_1,3,2 at (z_3, z_2) = ({z[j]}, {z[k]}), "
                  f"({z[j]}, {(z[k] + 1) % M}), ({(z[j] + 1) % M}, {z[k]}), ({(z[j] + 1) % M}, {(z[k] + 1) % M}) is "
                  f"{corner[0, 0] * unit_step:.5g}, {corner[0, 1] * unit_step:.5g}, {corner[1, 0] * unit_step:.5g}, "
                  f"{corner[1, 1] * unit_step:.5g}: a(x, y) + a(x', y') - a(x, y') - a(x', y) = "
                  f"{interaction:.5g}, not 0"),
        holdings={"alice": "positions " + positions_text(alice) + ": " + " ".join(f"{i + 1}:{z[i]}" for i in alice),
                  "bob": "positions " + positions_text(bob) + ": " + " ".join(f"{i + 1}:{z[i]}" for i in bob)},
        inequality=(r"Z_i = \sum_{j,k \in S_A} e_{ijk} + \sum_{j,k \in S_B} e_{ijk} + "
                    r"\sum_{j \in S_A,\ k \in S_B} (e_{ijk} + e_{ikj}) + Z_{blank},\quad "
                    r"a_{ijk} = \sum_c q_{ic} k^1_{jc} k^2_{kc}"),
        notes=(f"The plain way to sum the mixed terms: Bob sends his keys and values k1_k, k2_k, v1_k, v2_k -- for "
               f"his {len(bob)} positions {len(bob)} · 2(m + m_v) · p = {send} bits here, and "
               f"it grows with N, where Theorem 4's exchange costs 3m(p + log N) bits per head whatever the "
               f"split. Were the exponent a sum f(z_j) + g(z_k), the mixed part would factor into one number from "
               f"each party, (sum_j e^f(z_j)) (sum_k e^g(z_k)); the trilinear logit is not such a sum. So [SHT23]'s "
               f"third-order unit solves Match3 with m = O(d_in) while one-layer standard attention needs "
               f"mpH = Ω̃(N) (disj-match3): `commsim separate match3` sets the two side by side. "
               f"Refusal: {unit.no_protocol_reason}"),
        reference="[SHT23] third-order self-attention and Match3; Theorem 4 of [BHBK24]; the unit's weights are "
                  "commsim's")
