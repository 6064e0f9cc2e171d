"""Match2 in one attention layer of width 3 ([SHT23]).

Match2 at position i of z_1..z_N in Z_M: 1 iff some j in [N] (j = i allowed) has z_i + z_j = 0 (mod M).
Tokens 0..M-1 are the residues, token M the blank that is appended after z_N (sequence length N + 1).
With theta = 2 pi z / M and no position embeddings:

* residue z embeds as ``[cos theta, sin theta, 1, 1, 0]`` (rounded down to the grid), the blank as
  ``[0, 0, 0, 0, 1]``;
* query ``c (cos, sin, 1)`` (the blank's is 0), key ``(cos, -sin, 0)`` (the blank's is e_3), value 1
  (the blank's 0): the logit between z_i and z_j is ``c cos(2 pi (z_i + z_j)/M)``, exactly ``c`` at a
  match and against the blank, at most ``c cos(2 pi / M)`` otherwise;
* ``c = M^2 ln(6N)`` (rounded up to an integer) makes every non-match weight negligible, so the
  head output is about ``beta/(beta + 1)`` (beta matches) or about 0; psi thresholds at 1/4 (the
  slides use "0 below 1/6, 1 above 1/3"; any threshold between works).

Finite precision: the embedding rounds cos and sin down by less than one step Delta, so a logit is
off by at most about ``4 c Delta``; the default format (:func:`match2_format`) keeps that below 0.3,
which keeps a matched output above ``exp(-0.6)/2 > 1/4``.  That needs p = O(log M) bits: about
``2 log2(c) + 4``.
"""
from __future__ import annotations

import math

import numpy as np

from commsim.core.precision import FixedPoint, NumberFormat
from protocols.constructions.common import (
    BlankAppended,
    ConstructionError,
    fixed_format,
    require_fixed,
)
from protocols.models.attention import AttentionLayer

__all__ = ["Match2Construction", "build_match2", "match2", "match2_format", "match2_scale", "match2_outputs"]


class Match2Construction(BlankAppended, AttentionLayer):
    """The [SHT23] layer; read any position i < N with ``decide(tokens, query=i)``."""

    construction = "match2"


def match2(z: np.ndarray, modulus: int) -> np.ndarray:
    """Match2 at every position (B, N): 1 iff some j (j = i allowed) has z_i + z_j = 0 mod M."""
    Z = np.atleast_2d(np.asarray(z, dtype=np.int64)) % modulus
    B, N = Z.shape
    present = np.zeros((B, modulus), dtype=bool)
    present[np.repeat(np.arange(B), N), Z.reshape(-1)] = True
    need = (-Z) % modulus
    return present[np.arange(B)[:, None], need].astype(np.uint8)


def match2_scale(length: int, modulus: int) -> float:
    """c = M^2 ln(6N), rounded up to an integer ([SHT23])."""
    return float(math.ceil(modulus ** 2 * math.log(6 * length)))


def match2_format(length: int, modulus: int) -> FixedPoint:
    """A step Delta with 4 c Delta <= 0.3 and a range holding c."""
    c = match2_scale(length, modulus)
    frac = max(3, math.ceil(math.log2(4 * c / 0.3)))
    return fixed_format(frac, c + 1)


def build_match2(length: int, modulus: int, *, fmt: NumberFormat | None = None,
                 spec: str = "construct:match2") -> Match2Construction:
    """The [SHT23] Match2 layer for N residues mod M (width 3; exact by the analysis in the module docstring)."""
    if length < 1 or modulus < 2:
        raise ConstructionError(f"construct:match2 needs N >= 1 and M >= 2, got N={length}, M={modulus}", "model")
    fmt = require_fixed(fmt or match2_format(length, modulus), "construct:match2")
    if fmt.bits > 53:  # pragma: no cover - FixedPoint refuses this already
        raise ConstructionError("construct:match2 needs more than 53 bits at this M and N", "model")
    c = match2_scale(length, modulus)
    theta = 2 * math.pi * np.arange(modulus) / modulus
    tok = np.zeros((modulus + 1, 5))
    tok[:modulus, 0], tok[:modulus, 1] = np.cos(theta), np.sin(theta)
    tok[:modulus, 2] = tok[:modulus, 3] = 1.0
    tok[modulus, 4] = 1.0
    W_Q = np.zeros((1, 3, 5))
    W_Q[0, 0, 0] = W_Q[0, 1, 1] = W_Q[0, 2, 2] = c
    W_K = np.zeros((1, 3, 5))
    W_K[0, 0, 0], W_K[0, 1, 1], W_K[0, 2, 4] = 1.0, -1.0, 1.0
    W_V = np.zeros((1, 3, 5))
    W_V[0, 0, 3] = 1.0
    W_O = np.zeros((1, 3))
    W_O[0, 0] = 1.0
    psi = [(np.array([[1.0]]), np.array([-0.25]))]   # label 1 iff o > 1/4
    layer = Match2Construction(fmt, tok, None, W_Q, W_K, W_V, W_O, psi, spec=spec)
    layer.info = {"construction": "[SHT23] pair matching", "task": "Match2 at every position", "length": length,
                  "modulus": modulus, "seq_len": length + 1, "scale_c": c, "format": fmt.name,
                  "width": 3, "precision": fmt.bits, "logit_error_bound": 4 * c * fmt.step,
                  "exact_by_analysis": 4 * c * fmt.step <= 0.3 and c <= fmt.max_value}
    return layer


def match2_outputs(model: Match2Construction, z: np.ndarray) -> np.ndarray:
    """The model's Match2 decision at every position i of each row of z (B, N)."""
    tokens = model.with_blank(z)
    N = tokens.shape[1] - 1
    return np.stack([model.decide(tokens, query=i) for i in range(N)], axis=1).astype(np.uint8)
