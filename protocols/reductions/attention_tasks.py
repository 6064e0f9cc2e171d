"""DISJ into the [SHT23] tasks that one-layer attention finds hard: Match3 and q-sparse averaging.

``disj-match3`` ([SHT23]).  Match3 at position i: 1 iff there are distinct j, k, both
different from i, with z_i + z_j + z_k = 0 (mod M).  With N = 2n + 1 tokens and M = 2n + 3 > 2n + 2:
Alice's z_i = 1 if a_i = 0 else i + 1 (i = 1..n), Bob's z_(n+i) = 1 if b_i = 0 else M - (i + 1), and
a public z_N = 0 (Bob's).  At position N the only triples summing to 0 mod M are (0, i + 1, M - (i + 1))
with a_i = b_i = 1, so Match3 there is DISJ(a, b) (1 when the sets intersect).  A one-layer attention
computing Match3 thus gives a protocol for DISJ_n: its bits, about 3m(p + log N)H, are at least n.

``disj-qsa``.  q-sparse averaging: output_i = mean of z_j over j in the set y_i.  With N = 2q + 1,
Alice owns only the query position N, whose set y holds 2i - 1 if a_i = 1 and 2i otherwise; Bob owns
the values z_j = e_1 if j is odd and b_((j+1)/2) = 1, else -e_1.  The average is -e_1 exactly when the
sets are disjoint, and otherwise at least 2/q above, so any 1/(2q)-approximation decides DISJ_q.  Alice
holds only the query, so the attention protocol is one-way, and her one message is the cheaper of x_N
(d·p bits: Bob computes everything about her position from it) and each head's q_N (m·p·H), plus, when
the query attends to itself as the papers' layer does, her own logit and value ((m + 1)·p·H): so
min(d·p, (2m + 1)·p·H) >= q for a self-attending layer, min(d·p, m·p·H) >= q without self-attention
([SHT23]; with a residual path add the r coordinates of x_N psi reads to the q_N side).

Tokens: Match3 uses z itself (vocabulary 0..M-1); qSA uses 0 = "+e1", 1 = "-e1" and 2 + code(a) for
the query's set (code(a) = a read as a binary number, a_1 most significant; vocabulary 2 + 2^q).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from commsim.contract import CONTIGUOUS_PREFIX, QUERY_ONLY, Encoded, InputError, Reduction, Split
from commsim.theory.bounds import Conditions, LowerBound, randomness
from commsim.theory.problems import make_problem
from protocols.theorems import disjointness_bits, one_way_attention_bits

__all__ = ["DisjMatch3", "DisjQSA", "match3", "match3_modulus", "qsa_first_coordinate", "REDUCTIONS",
           "QSA_MAX_Q"]

#: the qSA query token ranges over 2^q sets
QSA_MAX_Q = 16


def match3_modulus(n: int) -> int:
    """M = 2n + 3, the smallest modulus above 2n + 2."""
    return 2 * n + 3


def match3(tokens: np.ndarray, modulus: int, position: int) -> np.ndarray:
    """Match3 at ``position`` for each row: 1 iff distinct j, k != position have
    z_position + z_j + z_k = 0 (mod M).  Vectorized over rows (residue counts)."""
    T = np.atleast_2d(np.asarray(tokens, dtype=np.int64)) % modulus
    B, N = T.shape
    others = np.delete(T, position, axis=1)
    counts = np.zeros((B, modulus), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(B), N - 1), others.reshape(-1)), 1)
    target = (-T[:, position]) % modulus
    found = np.zeros(B, dtype=bool)
    rows = np.arange(B)
    for r in range(modulus):
        partner = (target - r) % modulus
        have = (counts[:, r] > 0) & (counts[rows, partner] > 0)
        found |= have & ((partner != r) | (counts[:, r] >= 2))
    return found.astype(np.uint8)


def qsa_first_coordinate(tokens: np.ndarray, q: int) -> list[Fraction]:
    """The exact first coordinate of the qSA output at the query position (N = 2q + 1) per row."""
    T = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
    out = []
    for row in T:
        code = int(row[2 * q]) - 2
        a = [(code >> (q - 1 - i)) & 1 for i in range(q)]
        members = [2 * i if a[i] else 2 * i + 1 for i in range(q)]  # 0-based positions of y
        values = [1 if row[j] == 0 else -1 for j in members]
        out.append(Fraction(sum(values), q))
    return out


class DisjMatch3(Reduction):
    """DISJ_n into Match3 at the last of N = 2n + 1 positions ([SHT23]): one-layer attention needs n bits."""

    id = "disj-match3"
    problem_name = "disj"
    task = "Match3 (mod M = 2n + 3), read at the last position"
    source = "[SHT23] (Match3 lower bound for one-layer attention)"
    description = "DISJ_n into Match3 on 2n + 1 tokens: a one-layer attention needs n bits, Hm(p + log N) = Omega(N)"
    default_model = "attention:heads=1,width=2,dim=8,precision=8,seed=0"
    default_n = 8
    split_kind = CONTIGUOUS_PREFIX   # Alice z_1..z_n; Bob z_(n+1)..z_(2n) and the query z_N
    length_scale, length_offset = 2, 1
    n_meaning = "N = 2n + 1 tokens: Alice's z_1..z_n and Bob's z_(n+1)..z_(2n) of DISJ_n, then the public z_N = 0"

    def problem(self, n: int):
        """DISJ_n."""
        return make_problem("disj", n)

    def vocabulary(self, n: int) -> list[str]:
        """The residues 0..M-1."""
        return [str(z) for z in range(match3_modulus(n))]

    def encode(self, problem, A, B) -> Encoded:
        """Alice's z_1..z_n, Bob's z_(n+1)..z_(2n), the public z_N = 0; the decision at N."""
        A, B = np.atleast_2d(A), np.atleast_2d(B)
        n = problem.n
        M = match3_modulus(n)
        idx = np.arange(n)
        tokens = np.zeros((A.shape[0], 2 * n + 1), dtype=np.int64)
        tokens[:, :n] = np.where(A == 1, idx + 2, 1)
        tokens[:, n:2 * n] = np.where(B == 1, M - (idx + 2), 1)
        return Encoded(tokens, np.arange(n), (2 * n,))

    def decode(self, labels, B) -> np.ndarray:
        """Match3 at N is 1 exactly when the sets intersect: the DISJ answer itself."""
        return (np.asarray(labels)[:, 0] == 1).astype(np.uint8)

    def lower_bound(self, model, plan, problem, encoded) -> LowerBound:
        """Fact 1 of [BHBK24]: DISJ_n needs n bits, so a model computing Match3 carries them ([SHT23])."""
        n = problem.n
        extra = ""
        if hasattr(model, "heads") and hasattr(model, "width"):
            extra = f"; for this one-layer attention that asks 3·m·(p + log N)·H >= n, with m = {model.width}, " \
                    f"H = {model.heads}, p = {model.precision}"
        return LowerBound(disjointness_bits(n), "DISJ_n fooling set (Facts 1 and 4 of [BHBK24]), as used for Match3 in [SHT23]",
                          Conditions("two-way", "Alice z_1..z_n, Bob z_(n+1)..z_(2n) and the query"),
                          f"every deterministic protocol for DISJ_{n} sends >= n = {n} bits, so a model computing "
                          f"Match3 on N = {2 * n + 1} tokens carries >= {n} bits{extra}",
                          **randomness("disj"))

    def split(self, seq_len: int) -> Split:
        """Alice: z_1..z_n; the decision at N."""
        n = (int(seq_len) - 1) // 2
        return Split(seq_len, range(n), (2 * n,))

    def length_bound(self, simulator, seq_len: int, senders: frozenset | None = None) -> LowerBound:
        """DISJ_n at N = 2n + 1, one-way or two-way as the simulator declares its protocol on this split
        (DISJ_n needs n bits in either direction, so the parties that speak do not change it)."""
        n = max((seq_len - 1) // 2, 0)
        direction = simulator.split_direction(self.split_kind)
        bound = LowerBound(disjointness_bits(n), "[SHT23] via DISJ_n (Fact 1 of [BHBK24])",
                           Conditions(direction or "two-way", "halves: Alice z_1..z_n, Bob the rest"),
                           "Match3 on N = 2n + 1 tokens decides DISJ_n: n bits", **randomness("disj"))
        if direction is None:
            return bound.not_applicable(f"{simulator.name} has no protocol for a {self.split_kind} split")
        return bound


class DisjQSA(Reduction):
    """DISJ_q into q-sparse averaging ([SHT23]): Alice holds only the query, one-way; her message (the
    cheaper of x_N and q_N with her own term) has min(d·p, (2m + 1)·p·H) >= q bits (m·p·H without self)."""

    id = "disj-qsa"
    problem_name = "disj"
    task = "q-sparse averaging (qSA), read at the query position 2q + 1"
    source = "[SHT23] (qSA lower bound), via DISJ_q (Fact 1 of [BHBK24])"
    description = ("DISJ_q into qSA: Alice owns only the query, so one-way; a one-layer attention needs "
                   "min(d·p, (2m + 1)·p·H) >= q (min(d·p, m·p·H) >= q when the query does not attend to itself)")
    default_model = "attention:heads=1,width=2,dim=8,precision=4,self=0,seed=0"
    default_n = 8
    split_kind = QUERY_ONLY
    length_scale, length_offset = 2, 1
    n_meaning = (f"N = 2q + 1 tokens: Bob's 2q values, then Alice's query (its set encodes her DISJ_q input); "
                 f"`commsim run` takes q <= {QSA_MAX_Q} (the query token ranges over 2^q sets)")

    def problem(self, n: int):
        """DISJ_q (q at most QSA_MAX_Q: the query token ranges over 2^q sets)."""
        if n > QSA_MAX_Q:
            raise InputError(f"n is q for disj-qsa; the query token ranges over 2^q sets, so q <= {QSA_MAX_Q}, "
                             f"got {n}", "n")
        return make_problem("disj", n)

    def vocabulary(self, n: int) -> list[str]:
        """+e1, -e1 and the 2^q query sets."""
        return ["+e1", "-e1"] + [f"y={code:0{n}b}" for code in range(1 << n)]

    def encode(self, problem, A, B) -> Encoded:
        """Bob's values at positions 1..2q, Alice's query set at 2q + 1; the decision at the query."""
        A, B = np.atleast_2d(A), np.atleast_2d(B)
        q = problem.n
        tokens = np.ones((A.shape[0], 2 * q + 1), dtype=np.int64)       # "-e1" everywhere ...
        tokens[:, 0:2 * q:2] = np.where(B == 1, 0, 1)                    # ... but "+e1" at odd j with b = 1
        weights = 1 << np.arange(q - 1, -1, -1, dtype=np.int64)
        tokens[:, 2 * q] = 2 + (A.astype(np.int64) * weights).sum(axis=1)
        return Encoded(tokens, np.array([2 * q]), (2 * q,))

    def decode(self, labels, B) -> np.ndarray:
        """Class 1 (the average is above -e1) means the sets intersect."""
        return (np.asarray(labels)[:, 0] == 1).astype(np.uint8)

    def lower_bound(self, model, plan, problem, encoded) -> LowerBound:
        """DISJ_q needs q bits; one-way (Alice's message: the cheaper of x_N and q_N with her own term)
        when the protocol is."""
        q = problem.n
        direction = plan.direction
        if direction == "one-way":
            statement = (f"a one-way protocol for DISJ_{q} sends >= q = {q} bits; " + _qsa_message(model, q) +
                         " ([SHT23])")
        else:
            statement = f"every deterministic protocol for DISJ_{q} sends >= q = {q} bits (fooling set {{(x, ~x)}})"
        return LowerBound(disjointness_bits(q), "[SHT23] (qSA lower bound) via DISJ_q",
                          Conditions(direction, "Alice: the query position only"), statement,
                          **randomness("disj"))

    def split(self, seq_len: int) -> Split:
        """Alice: only the query position N; the decision there."""
        return Split(seq_len, range(int(seq_len) - 1, int(seq_len)), (int(seq_len) - 1,))

    def length_bound(self, simulator, seq_len: int, senders: frozenset | None = None) -> LowerBound:
        """DISJ_q at N = 2q + 1; not applicable to a simulator without a protocol for this split."""
        q = max((seq_len - 1) // 2, 0)
        direction = simulator.split_direction(self.split_kind)
        bound = LowerBound(disjointness_bits(q), "[SHT23] (qSA) via DISJ_q",
                           Conditions(direction or "one-way", "Alice: the query position only"),
                           "qSA with N >= 2q + 1 decides DISJ_q: q bits", **randomness("disj"))
        if direction is None:
            return bound.not_applicable("in this reduction Alice owns only the last (query) position, which is not a "
                                        "prefix, so the hidden-state handoff does not apply; index-qsa gives the "
                                        "recurrent bound for qSA")
        return bound


def _qsa_message(model, q: int) -> str:
    """What Alice's one-way message is for this layer, and the inequality it must satisfy."""
    m, p, H = (getattr(model, k, None) for k in ("width", "precision", "heads"))
    if None in (m, p, H):
        return f"Alice's one message must carry >= {q} bits"
    config = getattr(model, "config", None)
    attend_self, r = getattr(model, "attend_self", True), getattr(model, "residual_width", 0)
    d = getattr(config, "message_dim", getattr(model, "dim", None))     # x_N as sent: no public coordinate
    query = one_way_attention_bits(m, p, H, residual=r, attend_self=attend_self)
    side = ("(2m + 1)·p·H" if attend_self else "m·p·H") + (" + r·p" if r else "")
    if d is None:
        return f"Alice's message is each head's q_N and what it needs, {side} = {query} >= q"
    bits = min(d * p, query)
    return (f"Alice's message is the cheaper of x_N (d·p = {d * p}, from which Bob computes q_N, her key, value "
            f"and logit) and each head's q_N with " + ("her own logit and value" if attend_self else "nothing else")
            + (" and x_N's coordinates psi reads" if r else "") + f" ({side} = {query}): min(d·p, {side}) = "
            f"{bits} bits, which deciding DISJ_q needs to be >= q = {q}")


REDUCTIONS = [DisjMatch3, DisjQSA]
