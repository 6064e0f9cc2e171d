"""Thresholds of k-sparse features in two attention layers (Theorem 13, Appendix F.3 of [BHBK24]).

h in Thres_{k,N}: h(x) = 1[ sum_i g_i(x_(I_i)) > b ] for x in {0,1}^N, at most N features g_i, each a
Boolean function of the bits at a set I_i of at most k positions.  Feature i is computed at position i:

* embedding of (x_j, j): ``[x_j, RET_1..RET_k = 0, FEAT = 0, AVG = 0, s(j), s(t_1(j)), .., s(t_k(j)), 1,
  TT(j)]`` where s(.) are nearly orthogonal sign vectors (Lemma 2), t_h(j) the h-th member of I_j (the
  last member repeated when |I_j| < k; j itself when position j carries no feature) and TT(j) in {0,1}^(2^k)
  the truth table of g_j on the k retrieved bits (all zeros when j carries no feature);
* layer 1, k heads: head h queries ``c [s(t_h(j)), k]`` against keys ``[s(j'), -1/2]`` -- the logit is
  ``c k/2`` at j' = t_h(j) and at most ``c (g - k/2)`` elsewhere, so with ``c (k - g) > (frac + 1) ln 2``
  every other exp rounds down to 0 (the rounding argument of Theorem 6) and the head copies x_(t_h(j))
  into RET_h exactly; the MLP has one ReLU unit per a in {0,1}^k,
  ``relu(sum_h (2 a_h - 1) RET_h - |a| + TT_a(j))``, which is 1 iff the retrieved bits are a and
  g_j(a) = 1 and 0 otherwise: their sum in FEAT is g_j(x_(I_j));
* layer 2: zero query (uniform weights), value FEAT: the query position reads
  ``floor(2^frac #features / N) / 2^frac``, strictly increasing in the count once 2^frac >= N; the readout
  is 1 iff it is at least ``floor(2^frac (b + 1) / N) / 2^frac``, i.e. iff the count exceeds b.

EQ, INEQ and DISJ (1 when the halves intersect, the papers' convention) are the 2-sparse cases with
I_i = {i, i + N/2}: XNOR features with b = N/2 - 1, XOR with b = 0, AND with b = 0.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from protocols.constructions.common import ConstructionError, no_protocol_reason
from protocols.constructions.eq2 import _scale, default_format
from protocols.constructions.orthogonal import DEFAULT_GAMMA, find
from protocols.models.transformer import HeadsLayer, Layer, MultiHeadAttention

__all__ = ["ThresholdTransformer", "ThresholdFunction", "build_thres", "named_threshold", "FEATURES",
           "parse_sets", "MAX_SPARSITY"]

#: the largest k: the MLP has one unit per assignment of the k retrieved bits (2^k)
MAX_SPARSITY = 6

#: the feature functions a user may name (of the bits at I_i, in the order given)
FEATURES = {
    "and": lambda bits: int(all(bits)),
    "or": lambda bits: int(any(bits)),
    "xor": lambda bits: int(sum(bits) % 2),
    "xnor": lambda bits: int(sum(bits) % 2 == 0),
    "nand": lambda bits: int(not all(bits)),
    "nor": lambda bits: int(not any(bits)),
}


class ThresholdFunction:
    """h(x) = 1[sum_i g_i(x_(I_i)) > b] on {0,1}^N: ``sets`` (0-based positions), one feature name per set."""

    def __init__(self, length: int, sets: list, features: list, bias: int, name: str = "custom"):
        if length < 1:
            raise ConstructionError(f"construct:thres needs N >= 1, got {length}", "model")
        if not 1 <= len(sets) <= length:
            raise ConstructionError(f"Thres_(k,N) has 1..N features, got {len(sets)} for N = {length}", "model")
        self.length, self.name, self.bias = int(length), name, int(bias)
        self.sets = [tuple(int(i) for i in s) for s in sets]
        for s in self.sets:
            if not s or len(set(s)) != len(s) or min(s) < 0 or max(s) >= length:
                raise ConstructionError(f"each feature set must hold distinct positions in 1..{length}, got "
                                        f"{[i + 1 for i in s]}", "model")
        self.features = list(features)
        unknown = sorted(set(self.features) - set(FEATURES))
        if unknown:
            raise ConstructionError(f"unknown feature {unknown[0]!r}; choose from {', '.join(FEATURES)}", "model")
        self.k = max(len(s) for s in self.sets)
        if self.k > MAX_SPARSITY:
            raise ConstructionError(f"sparsity k = {self.k} is above {MAX_SPARSITY} (the MLP has 2^k units)", "model")

    def features_of(self, X: np.ndarray) -> np.ndarray:
        """(B, features) 0/1: every g_i(x_(I_i))."""
        X = np.atleast_2d(np.asarray(X, dtype=np.int64))
        out = np.zeros((X.shape[0], len(self.sets)), dtype=np.int64)
        for i, (s, f) in enumerate(zip(self.sets, self.features)):
            bits = X[:, list(s)]
            if f == "and":
                out[:, i] = bits.all(axis=1)
            elif f == "or":
                out[:, i] = bits.any(axis=1)
            elif f == "xor":
                out[:, i] = bits.sum(axis=1) % 2
            elif f == "xnor":
                out[:, i] = bits.sum(axis=1) % 2 == 0
            elif f == "nand":
                out[:, i] = ~bits.all(axis=1).astype(bool)
            else:
                out[:, i] = ~bits.any(axis=1).astype(bool)
        return out

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """h(x) for each row (B,)."""
        return (self.features_of(X).sum(axis=1) > self.bias).astype(np.int64)

    def describe(self) -> str:
        """One line: the features and the threshold."""
        sets = ", ".join(f"{f}({', '.join(f'x{i + 1}' for i in s)})" for s, f in
                         list(zip(self.sets, self.features))[:4])
        more = f", ... ({len(self.sets)} features)" if len(self.sets) > 4 else ""
        return f"1[{sets}{more} sum > {self.bias}]"


def named_threshold(name: str, half: int) -> ThresholdFunction:
    """EQ, INEQ or DISJ on N = 2 half bits as a threshold of 2-sparse features."""
    sets = [(i, i + half) for i in range(half)]
    table = {"eq": ("xnor", half - 1), "ineq": ("xor", 0), "disj": ("and", 0)}
    if name not in table:
        raise ConstructionError(f"h must be one of eq, ineq, disj or custom, got {name!r}", "model")
    feature, bias = table[name]
    return ThresholdFunction(2 * half, sets, [feature] * half, bias, name)


def parse_sets(text: str, length: int) -> list:
    """``1+5/2+6`` -> [(0, 4), (1, 5)] (1-based positions in the spec, 0-based inside)."""
    sets = []
    for part in text.split("/"):
        try:
            sets.append(tuple(int(i) - 1 for i in part.split("+")))
        except ValueError:
            raise ConstructionError(f"sets must look like 1+5/2+6 (positions joined by +, sets by /), got "
                                    f"{text!r}", "model") from None
    return sets


class ThresholdTransformer(MultiHeadAttention):
    """The Theorem 13 construction for one h in Thres_{k,N}."""

    def __post_init__(self):
        super().__post_init__()
        self.no_protocol_reason = no_protocol_reason("construct:thres", f"h = {self.info.get('h', '')}")


def build_thres(h: ThresholdFunction, *, gamma: float = DEFAULT_GAMMA, seed: int = 0, fmt=None,
                spec: str = "construct:thres") -> ThresholdTransformer:
    """Two layers, k heads in the first, width O(log N) (Theorem 13 of [BHBK24])."""
    N, k = h.length, h.k
    vectors = find(max(N, 2), gamma, seed)
    kv = vectors.k
    fmt = fmt or default_format(N, kv, vectors.max_abs_inner_int)
    f = fmt.frac
    if 2 ** f < N:
        raise ConstructionError(f"construct:thres needs 2^frac >= N = {N} (the layer-2 average), got frac = {f}",
                                "model")
    c = _scale(kv, vectors.max_abs_inner_int, f)
    s = vectors.signs[:N].astype(np.float64)
    X, RET, FEAT, AVG = 0, 1, 1 + k, 2 + k
    KEY = 3 + k
    QRY = [KEY + kv * (1 + h_) for h_ in range(k)]
    ONE = KEY + kv * (1 + k)
    TT = ONE + 1
    assignments = list(itertools.product((0, 1), repeat=k))
    d = TT + len(assignments)

    tok = np.zeros((2, d))
    tok[1, X] = 1.0
    pos = np.zeros((N, d))
    pos[:, KEY:KEY + kv] = s
    pos[:, ONE] = 1.0
    carries = {}
    for i, (members, feature) in enumerate(zip(h.sets, h.features)):
        carries[i] = (members, feature)
    for j in range(N):
        members, feature = carries.get(j, ((j,), None))
        padded = list(members) + [members[-1]] * (k - len(members))
        for h_, t in enumerate(padded):
            pos[j, QRY[h_]:QRY[h_] + kv] = s[t]
        if feature is not None:
            fn = FEATURES[feature]
            for a_index, a in enumerate(assignments):
                # the padded heads repeat the last member: only assignments consistent with that count
                consistent = all(a[h_] == a[len(members) - 1] for h_ in range(len(members), k))
                pos[j, TT + a_index] = float(consistent and fn(a[:len(members)]))

    heads = []
    for h_ in range(k):
        W_Q = np.zeros((d, kv + 1))
        W_Q[QRY[h_]:QRY[h_] + kv, :kv] = c * np.eye(kv)
        W_Q[ONE, kv] = c * kv
        W_K = np.zeros((d, kv + 1))
        W_K[KEY:KEY + kv, :kv] = np.eye(kv)
        W_K[ONE, kv] = -0.5
        W_V = np.zeros((d, 1))
        W_V[X, 0] = 1.0
        W_O = np.zeros((1, d))
        W_O[0, RET + h_] = 1.0
        heads.append(Layer(W_Q, W_K, W_V, W_O))
    W1 = np.zeros((d, len(assignments)))
    for a_index, a in enumerate(assignments):
        for h_ in range(k):
            W1[RET + h_, a_index] = 2.0 * a[h_] - 1.0
        W1[ONE, a_index] = -float(sum(a))
        W1[TT + a_index, a_index] = 1.0
    W2 = np.zeros((len(assignments), d))
    W2[:, FEAT] = 1.0
    layer1 = HeadsLayer(tuple(heads), W1, None, W2, None)

    Z = np.zeros((d, 1))
    V2 = np.zeros((d, 1))
    V2[FEAT, 0] = 1.0
    O2 = np.zeros((1, d))
    O2[0, AVG] = 1.0
    layer2 = HeadsLayer((Layer(Z, Z.copy(), V2, O2),))
    threshold = math.floor(2 ** f * (h.bias + 1) / N) / 2 ** f

    def readout(hidden: np.ndarray) -> np.ndarray:
        """1 iff the layer-2 average reaches the (b + 1)-th step: more than b features are 1."""
        return (hidden[:, AVG] >= threshold).astype(np.int64)

    info = {"construction": "Theorem 13 / Appendix F.3 of [BHBK24]", "h": h.name, "function": h.describe(),
            "seq_len": N, "features": len(h.sets), "sparsity": k, "bias": h.bias, "k": kv, "gamma": gamma,
            "seed": seed, "scale_c": c, "layers": 2, "heads": k, "embedding_dim": d, "width": kv + 1,
            "precision": fmt.bits, "format": fmt.name, "threshold": threshold,
            "exact_by_analysis": 2 ** f >= N and c * (kv - vectors.max_abs_inner_int) > (f + 1) * math.log(2)
            and fmt.max_value >= 1.5 * c * kv + 1}
    return ThresholdTransformer(tok, pos, [layer1, layer2], fmt, readout, spec=spec,
                                description=f"two-layer transformer computing {h.describe()} (Theorem 13 of "
                                            f"[BHBK24])", info=info)
