"""Equality in two attention layers of width O(log N) (Theorem 6, Appendix F.2 of [BHBK24]).

Input x in {0,1}^N (N = 2n): the model outputs INEQ(x) = 1 iff the halves differ, at the last
position.  With nearly orthogonal sign vectors s(1..N) (Lemma 2; T(i) = s(i)/sqrt(k)) and
t(i) = i for i <= N/2, t(i) = i - N/2 otherwise:

* embedding of (x_i, i): ``[x_i, 0, 0, 0, s(i), s(t(i)), 1]`` (width d = 2k + 5);
* layer 1: query ``c [s(t(i)), k]``, key ``[s(j), -1/2]``, so the logit is
  ``c (<s(t(i)), s(j)> - k/2)``: ``c k/2`` at j = t(i), at most ``-c k/4`` elsewhere (gamma = 1/4).  With
  ``c (k - max <s, s'>) > (frac + 1) ln 2`` every other ``exp`` rounds down to 0: the finite-precision
  softmax *is* hard attention (the paper's rounding argument), and the value ``x_j`` lands in
  slot 1 exactly.  The MLP puts ``relu(x_i - x_t(i)) + relu(x_t(i) - x_i)`` = XOR in slot 2
  (0 for i <= N/2, where t(i) = i);
* layer 2: zero query, so uniform weights ``floor(1/N)``; the value is the XOR slot, so the last
  position reads ``#mismatches * floor(1/N)``, which is > 0 iff the halves differ once
  ``frac >= log2 N`` (at lower precision ``1/N`` rounds to 0 and the model fails).

It is two layers: the one-layer protocols cannot wrap it, and Lemma 5 / Appendix F.4 say no
protocol of that kind can (for every balanced partition such a model needs >= N/2 bits).
"""
from __future__ import annotations

import math

import numpy as np

from commsim.core.precision import FixedPoint
from protocols.constructions.common import grid_ceil
from protocols.constructions.orthogonal import DEFAULT_GAMMA, find
from protocols.models.transformer import Layer, MultiLayerAttention

__all__ = ["TwoLayerEquality", "build_eq2", "default_format", "NO_PROTOCOL_REASON"]

NO_PROTOCOL_REASON = (
    "construct:eq2 is a two-layer transformer; the attention protocol (Theorem 4 of [BHBK24]) "
    "simulates one layer only, and no protocol of that kind exists for two layers: for every "
    "balanced partition there is a two-layer width-O(log N) transformer whose output needs >= N/2 bits "
    "of communication (Lemma 5 and Corollary 13.1, Appendix F.4 of [BHBK24]) — and this model, which "
    "computes INEQ, is one of them; `commsim separate two-layers` computes its communication matrix's rank "
    "and fooling set on random balanced partitions")


class TwoLayerEquality(MultiLayerAttention):
    """The Theorem 6 construction: a two-layer transformer computing INEQ on {0,1}^N."""

    no_protocol_reason = NO_PROTOCOL_REASON

    def trace(self, bits) -> dict:
        """What each layer does on one input x in {0,1}^N (for lessons and reports): layer 1's
        attention target of every position and its weight (1.0: hard attention after rounding),
        the retrieved bit and the XOR the MLP computes; layer 2's uniform weight, the average at
        the last position, and the decision (INEQ)."""
        x = np.asarray(bits, dtype=np.int64).reshape(1, -1)
        record: dict = {}
        out = self.hidden(x, trace=record)
        w1 = record["weights"][0][0]                    # (N, N)
        layer1 = record["layers"][0][0]                 # (N, d)
        target = np.argmax(w1, axis=1)
        others = np.ones_like(w1, dtype=bool)
        others[np.arange(len(w1)), target] = False
        return {"input": x[0].tolist(),
                "layer1_target": target.tolist(),
                "layer1_target_weight": w1.max(axis=1).tolist(),
                "layer1_other_weight_max": float(w1[others].max(initial=0.0)),
                "retrieved": layer1[:, 1].astype(int).tolist(), "xor": layer1[:, 2].astype(int).tolist(),
                "layer2_weight": float(record["weights"][1][0, 0, 0]), "average": float(out[0, 3]),
                "ineq": int(out[0, 3] > 0), "eq": int(out[0, 3] <= 0)}


def _scale(k: int, max_inner: int, frac: int) -> float:
    """c on the grid with c (k - max_inner) > (frac + 1) ln 2: the gap between the target logit
    c k/2 and any other, c (<s, s'> - k/2), makes every other exp round down to 0."""
    return grid_ceil((frac + 1) * math.log(2) / max(k - max_inner, 1) * 1.05, frac)


def default_format(seq_len: int, k: int, max_inner: int | None = None) -> FixedPoint:
    """The smallest format this construction is exact in: ``frac = ceil(log2 N) + 1`` fraction
    bits (so 1/N survives rounding) and enough integer bits for logits up to 3ck/2."""
    frac = math.ceil(math.log2(max(seq_len, 2))) + 1
    c = _scale(k, k // 4 if max_inner is None else max_inner, frac)
    top = 1.5 * c * k + 2
    bits = frac + 1 + math.ceil(math.log2(top))
    return FixedPoint(bits, frac)


def build_eq2(n: int, *, fmt: FixedPoint | None = None, gamma: float = DEFAULT_GAMMA, seed: int = 0,
              vocab_size: int = 2, spec: str = "construct:eq2") -> TwoLayerEquality:
    """The construction for strings of length N = 2n (tokens 0 and 1)."""
    if n < 1:
        raise ValueError(f"construct:eq2 needs n >= 1, got {n}")
    N = 2 * n
    vectors = find(N, gamma, seed)
    k = vectors.k
    fmt = fmt or default_format(N, k, vectors.max_abs_inner_int)
    if not isinstance(fmt, FixedPoint):
        raise ValueError("construct:eq2 is built in binary fixed point (precision=P); float formats are not supported")
    f = fmt.frac
    c = _scale(k, vectors.max_abs_inner_int, f)
    s = vectors.signs.astype(np.float64)                      # (N, k), rows s(1..N)
    target = np.array([i if i < n else i - n for i in range(N)])   # t(i), 0-based
    X, RET, XOR, AVG = 0, 1, 2, 3
    KEY = slice(4, 4 + k)
    QRY = slice(4 + k, 4 + 2 * k)
    ONE = 4 + 2 * k
    d = 5 + 2 * k

    tok = np.zeros((max(vocab_size, 2), d))
    tok[1, X] = 1.0
    pos = np.zeros((N, d))
    pos[:, KEY] = s
    pos[:, QRY] = s[target]
    pos[:, ONE] = 1.0

    # layer 1: hard attention to t(i), XOR by a ReLU MLP
    W_Q = np.zeros((d, k + 1))
    W_Q[QRY, :k] = c * np.eye(k)
    W_Q[ONE, k] = c * k
    W_K = np.zeros((d, k + 1))
    W_K[KEY, :k] = np.eye(k)
    W_K[ONE, k] = -0.5
    W_V = np.zeros((d, 1))
    W_V[X, 0] = 1.0
    W_O = np.zeros((1, d))
    W_O[0, RET] = 1.0
    W1 = np.zeros((d, 2))
    W1[X, 0], W1[RET, 0] = 1.0, -1.0
    W1[X, 1], W1[RET, 1] = -1.0, 1.0
    W2 = np.zeros((2, d))
    W2[0, XOR] = W2[1, XOR] = 1.0
    layer1 = Layer(W_Q, W_K, W_V, W_O, W1, None, W2, None)

    # layer 2: uniform attention (zero query) averaging the XOR slot
    Z = np.zeros((d, 1))
    V2 = np.zeros((d, 1))
    V2[XOR, 0] = 1.0
    O2 = np.zeros((1, d))
    O2[0, AVG] = 1.0
    layer2 = Layer(Z, Z.copy(), V2, O2)

    def readout(h: np.ndarray) -> np.ndarray:
        """INEQ: 1 iff the average of the XORs at the last position is > 0."""
        return (h[:, AVG] > 0).astype(np.int64)

    weight = math.floor(2 ** f / N) / 2 ** f
    info = {
        "construction": "Theorem 6 / Appendix F.2 of [BHBK24]", "task": "INEQ on {0,1}^N (1 iff the halves differ)",
        "seq_len": N, "n": n, "k": k, "gamma": gamma, "seed": seed, "scale_c": c, "eta": c * k,
        "uniform_weight": weight, "layers": 2, "embedding_dim": d, "width": k + 1,
        "precision": fmt.bits, "format": fmt.name,
        "exact_by_analysis": weight > 0 and c * (k - vectors.max_abs_inner_int) > (f + 1) * math.log(2) and
        fmt.max_value >= 1.5 * c * k + 1,
    }
    return TwoLayerEquality(tok, pos, [layer1, layer2], fmt, readout, spec=spec,
                            description="two-layer transformer computing INEQ (Theorem 6 of [BHBK24])", info=info)
