"""q-sparse averaging in one attention layer ([SHT23]; the Hsu slides, "Construction using q-neighborly
0/1 polytopes").

qSA: at the query position, the output is (1/q) sum_(j in S) v_j for the query's q-subset S.  The layer
(one head, an :class:`~protocols.models.attention.AttentionLayer`, so the attention protocol of Theorem 4
simulates it exactly):

* keys u_j = s(j)/sqrt(k) from the position embedding, nearly orthogonal sign vectors (Lemma 2 of [BHBK24])
  with |<u_i, u_j>| <= gamma = 1/(3q);
* the query token of S embeds alpha w_S with w_S = U_S (U_S^T U_S)^(-1) 1 (the least-norm vector with
  <w_S, u_j> = 1 for j in S); for j not in S, |<w_S, u_j>| <= q gamma/(1 - (q - 1) gamma) <= 1/2, the
  slides' condition -- by analysis, for every S (the slides get k = O(q log N) from the Candes-Tao
  neighbourly vectors, whose existence proof is not constructive; these explicit vectors take
  k = O(q^2 log N), the same for the q = 1, 2 of the reductions);
* values v_j (+1, -1, or 0 at the query), W_O reads them: the output is the attention average.

``keys=rip`` swaps in the slides' keys: k = O(q log N) random signs, found and verified by the search of
:mod:`protocols.constructions.qsa_keys` -- every q-set S of the N positions has a w_S with
||w_S|| <= 2 sqrt(q), <w_S, u_j> = 1 on S and |<w_S, u_j>| <= 1/2 off S, each checked in exact integer
arithmetic.  Those are the only two facts about the keys the argument below uses (lemma2's w_S has norm
sqrt(1^T G^-1 1) <= sqrt(q / (1 - (q - 1) gamma)) <= 2 sqrt(q) and the offset bound above), so the same alpha
and the same format make the rip layer exact in the same sense.

With alpha = 2 ln(16 q N) the weight off S is below 1/(8q) in all, and the fixed-point format (frac
bits from :func:`qsa_format`) keeps the rounding of the logits on S below the same, so the output is a
1/(4q)-approximation of qSA -- inside the 1/(2q) that decides DISJ in ``disj-qsa``.  The inequality that
makes it exact under the fixed-point semantics: every parameter is rounded down to the grid Delta = 2^-frac,
so a logit is within Delta (sqrt(k) + ||alpha w_S||_1 + 1) <= Delta (sqrt(k) + 2 alpha sqrt(qk) + 1) <= 1/(16q)
of alpha <w_S, u_j> (||w_S|| <= 2 sqrt(q) and Cauchy-Schwarz); the logits on S are then alpha +- 1/(16q), those
off S at most alpha/2 + 1/(16q), and N e^(-alpha/2) = 1/(16q) bounds the weight off S.  The tests and
``commsim separate qsa`` measure the error on every input (small N) or seeded samples.

Layouts: ``disj`` reads the ``disj-qsa`` tokens (N = 2q + 1: 0 = +e1, 1 = -e1, 2 + code(a) the query set
{2i - 1 if a_i = 1 else 2i}) and decides "the average is above -1 + 1/q" (the sets intersect);
``generic`` reads N positions: tokens 0 = +1, 1 = -1, 2 = 0 for the values, 3 + rank(S) for the query
(S a q-subset of the first N - 1 positions, ranked in the combinatorial number system), and outputs the
average itself.
"""
from __future__ import annotations

import math
from functools import lru_cache
from itertools import combinations

import numpy as np

from commsim.core.precision import FixedPoint
from protocols.constructions.common import ConstructionError, fixed_format, grid_ceil
from protocols.constructions.orthogonal import find
from protocols.constructions.qsa_keys import find_rip_keys
from protocols.models.attention import AttentionLayer

__all__ = ["QsaConstruction", "build_qsa", "qsa_format", "set_query", "rank_subset", "unrank_subset", "sample_qsa",
           "all_qsa", "qsa_average", "LAYOUTS", "KEYS", "MAX_Q"]

LAYOUTS = ("disj", "generic")
#: lemma2: explicit nearly orthogonal keys, k = O(q^2 log N); rip: searched and verified keys, k = O(q log N)
KEYS = ("lemma2", "rip")
MAX_Q = 16


def rank_subset(S) -> int:
    """The combinatorial-number-system rank of a set of 0-based positions."""
    return sum(math.comb(int(c), i + 1) for i, c in enumerate(sorted(S)))


def unrank_subset(r: int, q: int) -> tuple:
    """The q-subset of rank r (inverse of :func:`rank_subset`)."""
    out = []
    for i in range(q, 0, -1):
        c = i - 1
        while math.comb(c + 1, i) <= r:
            c += 1
        out.append(c)
        r -= math.comb(c, i)
    return tuple(sorted(out))


def _disj_set(code: int, q: int) -> tuple:
    """The disj-qsa query set of DISJ input code(a): 2i - 1 if a_i = 1 else 2i (0-based 2i-2, 2i-1)."""
    return tuple(2 * i if (code >> (q - 1 - i)) & 1 else 2 * i + 1 for i in range(q))


def qsa_average(tokens: np.ndarray, q: int, layout: str) -> np.ndarray:
    """The exact qSA output at the query (last) position of each row, as float64 (q is a small integer)."""
    T = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
    out = np.zeros(T.shape[0])
    val = np.where(T == 0, 1.0, np.where(T == 1, -1.0, 0.0))
    for b, row in enumerate(T):
        S = _disj_set(int(row[-1]) - 2, q) if layout == "disj" else unrank_subset(int(row[-1]) - 3, q)
        out[b] = val[b, list(S)].sum() / q
    return out


def qsa_format(q: int, N: int, k: int) -> FixedPoint:
    """Fraction bits so that the logits on S (alpha times a rounded inner product) are within 1/(16q) of
    each other, and integer bits for the largest logit."""
    alpha = 2 * math.log(16 * q * N)
    # a logit on S is off by at most Delta (sqrt(k) + |alpha w_S|_1 + 1) <= Delta (sqrt(k) + 2 alpha sqrt(qk) + 1)
    spread = math.sqrt(k) + 2 * alpha * math.sqrt(q * k) + 1
    frac = max(4, math.ceil(math.log2(16 * q * spread)))
    return fixed_format(frac, alpha * 2 * math.sqrt(q) + 2)   # |alpha w_S| entries and every logit


def set_query(U: np.ndarray, S) -> np.ndarray:
    """w_S = U_S (U_S^T U_S)^(-1) 1 (k,): the least-norm vector with <w_S, u_j> = 1 for the rows j in S of U (N, k)."""
    US = U[list(S)].T                                            # (k, |S|)
    return US @ np.linalg.solve(US.T @ US, np.ones(US.shape[1]))


class QsaConstruction(AttentionLayer):
    """The [SHT23] qSA layer."""

    construction = "qsa"


def build_qsa(N: int, q: int, *, layout: str = "generic", seed: int = 0, fmt=None, keys: str = "lemma2",
              spec: str = "construct:qsa") -> QsaConstruction:
    """The layer for N positions (the query last) and q-subsets, with ``keys`` lemma2 or rip."""
    if keys not in KEYS:
        raise ConstructionError(f"keys must be one of {', '.join(KEYS)}, got {keys!r}", "model")
    if layout not in LAYOUTS:
        raise ConstructionError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}", "model")
    if not 1 <= q <= MAX_Q:
        raise ConstructionError(f"construct:qsa needs 1 <= q <= {MAX_Q}, got {q}", "model")
    if layout == "disj" and N != 2 * q + 1:
        raise ConstructionError(f"the disj layout has N = 2q + 1 = {2 * q + 1} positions, got {N}", "model")
    if N < q + 1:
        raise ConstructionError(f"qSA needs N >= q + 1 positions (q values and the query), got N = {N}", "model")
    if keys == "rip":
        found = find_rip_keys(N, q, seed)
        k, U, gamma, query_of = found.k, found.keys, None, found.query
    else:
        gamma = 1 / (3 * q)
        vectors = find(max(N, 2), gamma, seed)
        k = vectors.k
        U = vectors.signs[:N].astype(np.float64) / math.sqrt(k)

        def query_of(S) -> np.ndarray:
            return set_query(U, S)
    fmt = fmt or qsa_format(q, N, k)
    if not isinstance(fmt, FixedPoint):
        raise ConstructionError("construct:qsa is built in binary fixed point (precision=P[,frac=F])", "model")
    alpha = grid_ceil(2 * math.log(16 * q * N), fmt.frac)
    KEY, QRY, VAL = 0, k, 2 * k
    d = 2 * k + 1

    def set_of(token: int) -> tuple:
        return _disj_set(token - 2, q) if layout == "disj" else unrank_subset(token - 3, q)

    @lru_cache(maxsize=1 << 16)
    def query_row(token: int) -> tuple:
        return tuple(alpha * query_of(set_of(token)))

    first_set = 2 if layout == "disj" else 3

    def token_embedding(tokens: np.ndarray) -> np.ndarray:
        t = np.asarray(tokens, dtype=np.int64)
        out = np.zeros(t.shape + (d,))
        out[..., VAL] = np.where(t == 0, 1.0, np.where(t == 1, -1.0, 0.0))
        for tok in np.unique(t[t >= first_set]):
            out[t == tok, QRY:QRY + k] = query_row(int(tok))
        return out

    pos = np.zeros((N, d))
    pos[:, KEY:KEY + k] = U
    W_Q = np.zeros((1, k, d))
    W_Q[0, :, QRY:QRY + k] = np.eye(k)
    W_K = np.zeros((1, k, d))
    W_K[0, :, KEY:KEY + k] = np.eye(k)
    W_V = np.zeros((1, k, d))
    W_V[0, 0, VAL] = 1.0
    W_O = np.zeros((1, k))
    W_O[0, 0] = 1.0
    psi = [(np.array([[1.0]]), np.array([1.0 - 1.0 / q]))] if layout == "disj" else None
    if keys == "rip":
        spec = f"{spec} [k = {k} sign keys, seed {seed}, all C({N}, {q}) = {found.sets_verified} q-sets verified]"
    layer = QsaConstruction(fmt, token_embedding, pos, W_Q, W_K, W_V, W_O, psi, spec=spec)
    vocab = 2 + (1 << q) if layout == "disj" else 3 + math.comb(N - 1, q)
    layer.vocab_size = vocab
    layer.info = {"construction": "[SHT23] q-sparse averaging (one self-attention unit)", "layout": layout,
                  "seq_len": N, "q": q, "k": k, "gamma": gamma, "alpha": alpha, "embedding_dim": d,
                  "width": k, "heads": 1, "layers": 1, "precision": fmt.bits, "format": fmt.name,
                  "vocab_size": vocab, "epsilon": 1 / (4 * q), "keys": keys, "seed": seed,
                  "offset_bound": 0.5 if gamma is None else q * gamma / (1 - (q - 1) * gamma) if q > 1 else gamma}
    if keys == "rip":
        layer.info.update({"sets_verified": found.sets_verified, "active_set_sets": len(found.extra),
                           "widths_tried": [k_ for k_, _ in found.tried], "keys_description": found.describe()})
    return layer


def sample_qsa(rng, count: int, N: int, q: int) -> np.ndarray:
    """Seeded generic-layout inputs: values +-1 at the first N - 1 positions, a random q-subset query."""
    T = rng.integers(0, 2, size=(count, N)).astype(np.int64)
    for b in range(count):
        T[b, -1] = 3 + rank_subset(rng.choice(N - 1, size=q, replace=False))
    return T


def all_qsa(N: int, q: int) -> np.ndarray:
    """Every generic-layout input with values +-1 (2^(N-1) C(N-1, q) rows; small N only)."""
    vals = ((np.arange(1 << (N - 1))[:, None] >> np.arange(N - 1)) & 1).astype(np.int64)
    sets = [3 + rank_subset(S) for S in combinations(range(N - 1), q)]
    rows = [np.concatenate([vals, np.full((len(vals), 1), s)], axis=1) for s in sets]
    return np.concatenate(rows)
