"""Match3 in one third-order attention unit ([SHT23]'s claim; the explicit weights and their analysis are commsim's).

Match3 at position i of z_0..z_(N-1) in Z_M (commsim's ``match3``): 1 iff some j, k, distinct and both != i,
have z_i + z_j + z_k = 0 (mod M).  The Match2 trick with three angles, theta = 2 pi z / M: the trilinear form
<q_i, k1_j ⊙ k2_k> of (cos theta, sin theta) features gives, over four columns,

    c cos a cos b cos c - c cos a sin b sin c - c sin a cos b sin c - c sin a sin b cos c = c cos(a + b + c),

exactly c at a match and at most c (1 - r), r = 1 - cos(2 pi / M), otherwise.  The rest of the unit:

* a blank token (the model's own, appended as position N) whose pair (blank, blank) is the softmax's floor:
  one column gives it the logit f = c - c r / 2 (rounded down to the grid); every other pair with the blank
  has logit at most 2 mu G (below);
* the degenerate pairs (j = k, j = i or k = i) are pushed down by position-code penalty columns: with codes
  u_p (one-hot, or Lemma 2's sign vectors when they are shorter), <u_p, u_p> = D and |<u_p, u_q>| <= G for
  p != q, three groups of k columns add -mu <u_j, u_k>, -mu <u_i, u_j> and -mu <u_i, u_k>;
* values v1 = v2 = 1 on real tokens and 0 on the blank, so a pair's value is 1 iff both are real tokens;
  position i answers [o_i - 1/2] > 0.

Finite precision (F fraction bits, step Delta = 2^-F; features rounded down): each of the four trilinear
columns is off by at most 3 c Delta and the sum's rounding by Delta, so |a_ijk - exact| <= E = 12 c Delta +
Delta.  A weight [exp(-t)] is exactly 0 once t >= T = F ln 2 + Delta.  The builder chooses F (12 Delta <= r/8),
then c (doubling) and mu so that, in exact arithmetic on the actual grid values,

1. every real match: c - E - 3 mu G >= f + T   (the floor gets weight 0 when some match exists);
2. every non-match: c (1 - r) + E + 3 mu G <= f - T;
3. every degenerate pair: c + E - mu (D - 2G) <= f - T;
4. every pair with one blank: 2 mu G <= f - T,

so the attention is hard: o_i = 1 exactly when position i has a match (every pair with weight is a real match
of value 1), else the floor alone, o_i = 0.  ``info["margins"]`` holds the four slacks (all >= 0 by
construction); the tests verify the unit on every input at small N and M and on random inputs beyond.
Width m = 5 + 3k (k = N with one-hot codes), value width 1, d = 4 + k, p = F + the integer bits of c.
"""
from __future__ import annotations

import math

import numpy as np

from commsim.core.precision import NumberFormat
from protocols.constructions.common import (
    BlankAppended,
    ConstructionError,
    fixed_format,
    grid_ceil,
    require_fixed,
)
from protocols.models.pair_attention import ThirdOrderAttention

__all__ = ["Match3ThirdOrder", "build_match3_third_order", "match3_all_positions", "position_codes"]

#: Lemma 2's gamma for sign codes (3 gamma / (1 - 2 gamma) < 1 keeps condition 1 satisfiable)
CODE_GAMMA = 0.15


class Match3ThirdOrder(BlankAppended, ThirdOrderAttention):
    """The unit; :meth:`decide` reads residues (B, N) and answers Match3 at every position."""

    construction = "match3-third-order"

    def decide(self, z: np.ndarray) -> np.ndarray:
        """Match3 at every position (B, N) of the residues z (B, N)."""
        return self.outputs(self.with_blank(z))[:, :-1]


def match3_all_positions(z: np.ndarray, modulus: int) -> np.ndarray:
    """commsim's ``match3`` at every position (B, N)."""
    from protocols.reductions.attention_tasks import match3
    z = np.atleast_2d(np.asarray(z, dtype=np.int64))
    return np.stack([match3(z, modulus, i) for i in range(z.shape[1])], axis=1).astype(np.int64)


def position_codes(length: int, codes: str = "auto", seed: int = 0) -> tuple[np.ndarray, int, int]:
    """(U (N, k) integer codes, D = <u_p, u_p>, G = max |<u_p, u_q>| over p != q): one-hot (D = 1, G = 0) or
    Lemma 2's sign vectors at gamma = 0.15 (entries +-1, so D = k), whichever is shorter for ``auto``."""
    if codes not in ("auto", "onehot", "lemma2"):
        raise ConstructionError(f"codes must be auto, onehot or lemma2; got {codes!r}", "model")
    if codes != "onehot" and length >= 2:
        from protocols.constructions.orthogonal import smallest_k
        signs = smallest_k(length, CODE_GAMMA, seed).best.signs.astype(np.int64)
        if codes == "lemma2" or signs.shape[1] < length:
            gram = signs @ signs.T
            off = np.abs(gram - np.diag(np.diag(gram)))
            return signs, int(signs.shape[1]), int(off.max())
    return np.eye(length, dtype=np.int64), 1, 0


def _parameters(M: int, D: int, G: int, frac: int | None):
    """(F, c, f, mu, E, T, margins) meeting conditions 1-4 of the module docstring."""
    r = 1.0 - math.cos(2 * math.pi / M)
    F = frac if frac is not None else max(4, math.ceil(math.log2(96.0 / r)))      # 12 Delta <= r / 8
    delta = 2.0 ** -F
    T = F * math.log(2) + delta
    c = 1
    for _ in range(64):
        E = 12 * c * delta + delta
        f = math.floor((c - c * r / 2) / delta) * delta
        mu = grid_ceil((c + E + T - f) / (D - 2 * G), F) if D > 2 * G else math.inf
        margins = [(c - E - 3 * mu * G) - f - T, f - (c * (1 - r) + E + 3 * mu * G) - T,
                   f - (c + E - mu * (D - 2 * G)) - T, f - 2 * mu * G - T]
        if min(margins) >= 0:
            return F, c, f, mu, E, T, margins
        c *= 2
    raise ConstructionError(f"construct:match3-third-order: no scale c makes the unit exact at M = {M} with "
                            f"F = {F} fraction bits (give a larger frac)", "model")


def build_match3_third_order(length: int, modulus: int, *, codes: str = "auto", seed: int = 0,
                             fmt: NumberFormat | None = None,
                             spec: str = "construct:match3-third-order") -> Match3ThirdOrder:
    """The unit for N residues mod M (module docstring); ``fmt`` sets F (its range must hold the logits)."""
    if length < 1 or modulus < 2:
        raise ConstructionError(f"construct:match3-third-order needs N >= 1 and M >= 2, got N={length}, M={modulus}",
                                "model")
    if fmt is not None:
        require_fixed(fmt, "construct:match3-third-order")
    U, D, G = position_codes(length, codes, seed)
    F, c, f, mu, E, T, margins = _parameters(modulus, D, G, None if fmt is None else fmt.frac)
    largest = max(c + E + 3 * mu * G, mu * max(D, 1), c) + 1
    need = fixed_format(F, largest)
    if fmt is None:
        fmt = need
    elif fmt.max_value < largest:
        raise ConstructionError(f"construct:match3-third-order at N = {length}, M = {modulus} needs a range holding "
                                f"{largest:g} ({need.name}); {fmt.name} does not", "model")
    k = U.shape[1]
    d = 4 + k
    COS, SIN, REAL, BLANK = 0, 1, 2, 3
    theta = 2 * math.pi * np.arange(modulus) / modulus
    tok = np.zeros((modulus + 1, d))
    tok[:modulus, COS], tok[:modulus, SIN], tok[:modulus, REAL] = np.cos(theta), np.sin(theta), 1.0
    tok[modulus, BLANK] = 1.0
    tok = fmt.quantize(tok)                                   # features rounded down
    pos = np.zeros((length + 1, d))
    pos[:length, 4:] = U                                      # the blank's position carries no code
    m = 5 + 3 * k
    W_Q, W_K1, W_K2 = np.zeros((d, m)), np.zeros((d, m)), np.zeros((d, m))
    # the three-angle columns: c cos(a + b + c)
    for col, (qc, qs, k1c, k2c) in enumerate([(COS, c, COS, COS), (COS, -c, SIN, SIN), (SIN, -c, COS, SIN),
                                              (SIN, -c, SIN, COS)]):
        W_Q[qc, col], W_K1[k1c, col], W_K2[k2c, col] = qs, 1.0, 1.0
    W_Q[REAL, 4], W_K1[BLANK, 4], W_K2[BLANK, 4] = f, 1.0, 1.0      # the floor: (blank, blank) only
    codes_at = np.arange(4, 4 + k)
    for group in range(3):
        cols = 5 + group * k + np.arange(k)
        if group == 0:                                            # -mu <u_j, u_k>
            W_Q[REAL, cols] = -mu
            W_K1[codes_at, cols] = W_K2[codes_at, cols] = 1.0
        elif group == 1:                                          # -mu <u_i, u_j>
            W_Q[codes_at, cols] = -mu
            W_K1[codes_at, cols] = 1.0
            W_K2[REAL, cols] = W_K2[BLANK, cols] = 1.0
        else:                                                     # -mu <u_i, u_k>
            W_Q[codes_at, cols] = -mu
            W_K1[REAL, cols] = W_K1[BLANK, cols] = 1.0
            W_K2[codes_at, cols] = 1.0
    W_V = np.zeros((d, 1))
    W_V[REAL, 0] = 1.0
    info = {"construction": "three-angle Match2 trick in a third-order unit (commsim's weights)",
            "task": "Match3 at every position", "length": length, "modulus": modulus, "seq_len": length + 1,
            "codes": "onehot" if G == 0 and D == 1 else "lemma2", "code_dim": k, "code_D": D, "code_G": G,
            "scale_c": c, "floor": f, "penalty_mu": mu, "logit_error_bound": E, "zero_weight_gap": T,
            "margins": margins, "width": m, "value_width": 1, "dim": d, "precision": fmt.bits, "frac": fmt.frac,
            "format": fmt.name}
    return Match3ThirdOrder(fmt, tok, pos, W_Q, W_K1, W_K2, W_V, W_V.copy(), np.ones(1), -0.5, spec=spec,
                            info=info)
