"""Index lookup in one attention layer of width O(log N) (Theorem 1, Appendix C.2 of [BHBK24]).

Input: symbols s_1..s_N, then an index token p; output s_p.  The vocabulary is the one of the
``index-idxl`` reduction: tokens 0 .. |Sigma| - 1 are the symbols, token |Sigma| - 1 + p is the index p
(p = 1..N).  With nearly orthogonal sign vectors s(1..N) in {+-1}^k (Lemma 2; T(i) = s(i)/sqrt(k)):

* symbol token s at position i embeds as ``[rho(s), 0_k, s(i)]`` (rho: the binary code of s, r bits),
  the index token p as ``[0_r, s(p), 0_k]`` (the query position has no position vector), so d = r + 2k;
* ``W_Q = c * (select the middle block)``, ``W_K`` = select the last block, ``W_V`` = select the first
  block, one head of width m = k.  The logit at position i is ``c <s(p), s(i)>``: ``c k`` at i = p, at
  most ``c floor(k/4)`` elsewhere, 0 at the query itself;
* ``eta = c k >= 2 ln(3 (N + 1))`` (Appendix C.2 of [BHBK24]: eta > 2 ln(3N)) leaves every other term below
  ``exp(-eta / 2)`` when gamma <= 1/2 (for larger gamma, c grows to keep the gap
  ``c (k - max |<s(i), s(j)>|) >= ln(3 (N + 1))``): the other N terms sum to <= 1/3, Z <= 4/3, so the head output is >= 3/4 (minus one grid step) on the bits of
  rho(s_p) that are 1 and <= 1/4 on those that are 0, whatever the rounding (every rounding is down);
* psi is a two-layer ReLU MLP: ``relu(4o - 1) - relu(4o - 2)`` is exactly the bit, and each class
  scores how many bits agree with its code (:func:`protocols.constructions.common.step_psi`).

All numbers are on the fixed-point grid: c is rounded *up* to the grid, so nothing else is rounded
before the softmax, and the format is the narrowest one holding the logits (:func:`idxl_format`).
The precision needed is tiny (a few bits more than log2 log2 N): the theorem's p = O(log N) is an
upper bound.
"""
from __future__ import annotations

import math

import numpy as np

from commsim.core.precision import FixedPoint, NumberFormat
from protocols.constructions.common import (
    ConstructionError,
    fixed_format,
    grid_ceil,
    require_fixed,
    sizes,
    step_psi,
)
from protocols.constructions.orthogonal import DEFAULT_GAMMA, NearlyOrthogonal, find
from protocols.models.attention import AttentionLayer

__all__ = ["IndexLookupConstruction", "build_idxl", "idxl_format", "eta_for", "rho_codes"]


class IndexLookupConstruction(AttentionLayer):
    """The Theorem 1 layer; an :class:`AttentionLayer`, so the attention exchange wraps it."""

    construction = "idxl"


def eta_for(n: int) -> float:
    """eta > 2 ln(3 (N + 1)): N symbol positions plus the query compete with position p."""
    return 2 * math.log(3 * (n + 1))


def rho_codes(symbols: int) -> np.ndarray:
    """rho(s): the r-bit binary code of each symbol s (r = ceil(log2 |Sigma|), at least 1)."""
    r = max(1, math.ceil(math.log2(symbols)))
    return ((np.arange(symbols)[:, None] >> np.arange(r - 1, -1, -1)) & 1).astype(np.float64)


def _scale(n: int, k: int, vectors: NearlyOrthogonal) -> float:
    """c before rounding: eta / k (the reference's eta), or more when the vectors are so far from
    orthogonal (gamma > 1/2) that the gap c (k - max |<s(i), s(j)>|) would fall below ln(3 (N + 1))."""
    gap = k - vectors.max_abs_inner_int
    return max(eta_for(n) / k, math.log(3 * (n + 1)) / max(gap, 1))


def idxl_format(n: int, k: int, symbols: int = 2, vectors: NearlyOrthogonal | None = None) -> FixedPoint:
    """The narrowest format in which the construction is exact by the analysis above:
    a grid step <= c / 4 (so the rounded-up c k stays within 5/4 of its target) and <= 1/8, and a
    range holding c k."""
    target = eta_for(n) / k if vectors is None else _scale(n, k, vectors)
    frac = max(3, math.ceil(math.log2(4 / target)))
    c = grid_ceil(target, frac)
    r = rho_codes(symbols).shape[1]
    return fixed_format(frac, max(c * k, 4.0, float(r)))


def build_idxl(n: int, *, fmt: NumberFormat | None = None, symbols: int = 2, gamma: float = DEFAULT_GAMMA,
               seed: int = 0, vectors: NearlyOrthogonal | None = None, spec: str = "construct:idxl"
               ) -> IndexLookupConstruction:
    """The construction for N = ``n`` symbols over an alphabet of ``symbols`` letters."""
    if n < 1:
        raise ConstructionError(f"construct:idxl needs N >= 1 symbols, got {n}", "model")
    if symbols < 2:
        raise ConstructionError(f"construct:idxl needs at least 2 symbols, got {symbols}", "model")
    vectors = vectors or find(n, gamma, seed)
    if vectors.n < n:
        raise ConstructionError(f"{vectors.n} nearly orthogonal vectors cannot index {n} positions", "model")
    k = vectors.k
    fmt = require_fixed(fmt or idxl_format(n, k, symbols, vectors), "construct:idxl")
    eta = eta_for(n)
    c = grid_ceil(_scale(n, k, vectors), fmt.frac)
    rho = rho_codes(symbols)
    r = rho.shape[1]
    d = r + 2 * k
    S = vectors.signs[:n].astype(np.float64)
    SYM, MID, LAST = slice(0, r), slice(r, r + k), slice(r + k, r + 2 * k)

    tok = np.zeros((symbols + n, d))
    tok[:symbols, SYM] = rho
    tok[symbols:, MID] = S                         # index token p (p = 1..N) carries s(p)
    pos = np.zeros((n + 1, d))
    pos[:n, LAST] = S                              # symbol position i carries s(i); the query none

    W_Q = np.zeros((1, k, d))
    W_Q[0][:, MID] = c * np.eye(k)
    W_K = np.zeros((1, k, d))
    W_K[0][:, LAST] = np.eye(k)
    W_V = np.zeros((1, k, d))
    W_V[0][:r, SYM] = np.eye(r)
    W_O = np.zeros((r, k))
    W_O[:, :r] = np.eye(r)
    psi = step_psi(r, [rho[s].astype(int).tolist() for s in range(symbols)])

    layer = IndexLookupConstruction(fmt, tok, pos, W_Q, W_K, W_V, W_O, psi, spec=spec)
    params = tok.size + pos.size + W_Q.size + W_K.size + W_V.size + W_O.size + sum(W.size + b.size for W, b in psi)
    layer.info = {
        "construction": "Theorem 1 / Appendix C.2 of [BHBK24]", "task": "index lookup: s_1..s_N, p -> s_p",
        "n": n, "seq_len": n + 1, "symbols": symbols, "k": k, "gamma": gamma, "seed": vectors.seed,
        "max_abs_inner": vectors.max_abs_inner, "eta_required": eta, "scale_c": c, "eta": c * k,
        "format": fmt.name, "k_theorem": math.ceil(8 * math.log(2 * n) / gamma ** 2),
        "exact_by_analysis": _exact_by_analysis(n, k, c, fmt, vectors),
    }
    layer.info.update(sizes(layer, params))
    return layer


def _exact_by_analysis(n: int, k: int, c: float, fmt: FixedPoint, vectors: NearlyOrthogonal) -> bool:
    """Z <= 4/3 (the other terms sum to <= 1/3), the logits fit the range, and the step is <= 1/8."""
    worst_other = c * vectors.max_abs_inner_int
    others = n * math.exp(-(c * k - max(worst_other, 0.0)))
    return others <= 1 / 3 and c * k <= fmt.max_value and fmt.step <= 1 / 8
