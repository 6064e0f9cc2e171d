"""Match3's Variant 1 in two attention layers of one head, m = 3 ([SHT23]'s claim; the weights are commsim's).

Variant 1 (the family of hard instances of the one-layer bound, ``disj-match3``'s): z_N = 0 and only the N-th
output matters, so the question is whether two distinct positions j != k < N have z_j + z_k = 0 (mod M).
Residual stream (d = 8): cos theta, sin theta, 1, last, s, o, flag, mean, with theta = 2 pi z / M and
s = [2z = 0 mod M].  The last position's embedding cancels its cos (z_N = 0) and sets ``last``.

* Layer 1 (Match2 at every position, counting): q_j = c (cos, sin, 1), k_k = (cos, -sin, last): the logit is
  c cos(theta_j + theta_k) for k < N and exactly c for k = N (the floor); values 1 - last.  Non-matches are at
  least c r - 2 eps below (r = 1 - cos(2 pi / M), eps the rounding error), so their weights are exactly 0, and
  with beta matching k (k = j included when s_j = 1) o_j is about beta / (beta + 1): 0, about 1/2, or >= 0.64.
* MLP 1: z = o + (1 - s)/4 - last, flag = relu(K(z - t)) - relu(K(z - t) - 1) with K = 16, t = 9/16: flag_j = 1
  iff some k != j, k < N matches j (beta >= 1 when s_j = 0, beta >= 2 when s_j = 1), and 0 at the last position.
* Layer 2: uniform attention (q = 0), value flag: mean = [count / N] > 0 iff some flag is 1 -- the readout.

The builder picks F and c so that, with eps = 4 c Delta + Delta and a = exp(-2 eps) - Delta, the weights of
non-matches vanish (c r - 2 eps >= F ln 2 + Delta) and the o intervals stay on their side of the MLP's
threshold (``info["margins"]``, all >= 0); the tests check every input at small N and M.
"""
from __future__ import annotations

import math

import numpy as np

from commsim.core.precision import FixedPoint
from protocols.constructions.common import (
    ConstructionError,
    fixed_format,
    no_protocol_reason,
)
from protocols.models.transformer import Layer, MultiLayerAttention

__all__ = ["Match3Variant1", "build_match3_variant1", "variant1"]

COS, SIN, ONE, LAST, SELF, SLOT_O, SLOT_FLAG, SLOT_MEAN = range(8)
K, THRESHOLD = 16.0, 9.0 / 16.0


class Match3Variant1(MultiLayerAttention):
    """The two-layer model; ``forward(tokens)`` answers Variant 1 at the last position."""

    no_protocol_reason = no_protocol_reason("construct:match3-variant1", "Match3's Variant 1 in two layers")


def variant1(z: np.ndarray, modulus: int) -> np.ndarray:
    """Variant 1's answer per row (z_N = 0): some distinct j, k < N with z_j + z_k = 0 (mod M)."""
    from protocols.reductions.attention_tasks import match3
    z = np.atleast_2d(np.asarray(z, dtype=np.int64))
    return match3(z, modulus, z.shape[1] - 1).astype(np.int64)


def _parameters(M: int, N: int):
    r = 1.0 - math.cos(2 * math.pi / M)
    for F in range(max(4, math.ceil(math.log2(N)) + 1), 40):
        delta = 2.0 ** -F
        T = F * math.log(2) + delta
        c = math.ceil((T + 0.1) / r)
        eps = 4 * c * delta + delta
        a = math.exp(-2 * eps) - delta
        if c * r - 2 * eps < T:
            continue
        one_hi = 1 / (1 + a) + delta             # beta = 1: o <= 1/(1 + a)
        two_lo = 2 * a / (2 * a + 1) - 2 * delta   # beta >= 2: o >= 2a/(2a + 1), rounded down
        one_lo = a / (a + 1) - 2 * delta
        margins = [K * (two_lo - THRESHOLD) - 1,            # s = 1, beta >= 2: flag 1
                   K * (THRESHOLD - one_hi),                # s = 1, beta = 1: flag 0
                   K * (one_lo + 0.25 - THRESHOLD) - 1,     # s = 0, beta = 1: flag 1
                   K * (THRESHOLD - 0.25)]                  # s = 0, beta = 0 (and the last position): flag 0
        if min(margins) >= 0 and (1 << F) >= N:
            return F, c, eps, margins
    raise ConstructionError(f"construct:match3-variant1: no format found for M = {M}, N = {N}", "model")


def build_match3_variant1(length: int, modulus: int, *,
                          spec: str = "construct:match3-variant1") -> Match3Variant1:
    """The model for N = ``length`` residues mod M (z_N = 0), read at the last position (module docstring)."""
    if length < 2 or modulus < 2:
        raise ConstructionError(f"construct:match3-variant1 needs N >= 2 and M >= 2, got N={length}, M={modulus}",
                                "model")
    F, c, eps, margins = _parameters(modulus, length)
    fmt: FixedPoint = fixed_format(F, max(c + 2, K * 2))
    q = fmt.quantize
    theta = 2 * np.pi * np.arange(modulus) / modulus
    tok = np.zeros((modulus, 8))
    tok[:, COS], tok[:, SIN], tok[:, ONE] = q(np.cos(theta)), q(np.sin(theta)), 1.0
    tok[:, SELF] = ((2 * np.arange(modulus)) % modulus == 0)
    pos = np.zeros((length, 8))
    pos[-1, COS], pos[-1, LAST] = -1.0, 1.0          # z_N = 0: its cos 1 cancelled; it is the floor
    W_Q, W_K = np.zeros((8, 3)), np.zeros((8, 3))
    W_Q[COS, 0], W_Q[SIN, 1], W_Q[ONE, 2] = c, c, c
    W_K[COS, 0], W_K[SIN, 1], W_K[LAST, 2] = 1.0, -1.0, 1.0
    W_V = np.zeros((8, 1))
    W_V[ONE, 0], W_V[LAST, 0] = 1.0, -1.0
    W_O = np.zeros((1, 8))
    W_O[0, SLOT_O] = 1.0
    W1 = np.zeros((8, 2))                             # K (o + (1 - s)/4 - last - t), and that minus 1
    W1[SLOT_O, :], W1[SELF, :], W1[LAST, :] = K, -K / 4, -K
    b1 = np.array([K * (0.25 - THRESHOLD), K * (0.25 - THRESHOLD) - 1])
    W2 = np.zeros((2, 8))
    W2[0, SLOT_FLAG], W2[1, SLOT_FLAG] = 1.0, -1.0
    layer1 = Layer(W_Q, W_K, W_V, W_O, W1, b1, W2, np.zeros(8))
    W_V2, W_O2 = np.zeros((8, 1)), np.zeros((1, 8))
    W_V2[SLOT_FLAG, 0], W_O2[0, SLOT_MEAN] = 1.0, 1.0
    layer2 = Layer(np.zeros((8, 1)), np.zeros((8, 1)), W_V2, W_O2)
    model = Match3Variant1(tok, pos, [layer1, layer2], fmt, lambda h: (np.asarray(h)[:, SLOT_MEAN] > 0).astype(np.int64),
                           spec=spec, description="Match3's Variant 1 in two layers of one head (m = 3)")
    model.info = {"construction": "two layers, one head: Match2 counting at every position, then an average",
                  "task": "Variant 1 of Match3 (z_N = 0, the N-th output)", "length": length, "modulus": modulus,
                  "layers": 2, "heads": 1, "width": 3, "embedding_dim": 8, "precision": fmt.bits, "frac": F,
                  "scale_c": c, "logit_error_bound": eps, "margins": margins, "format": fmt.name}
    return model
