"""Match3Bigram in two attention layers of width <= 3 ([SHT23]'s claim; the weights are commsim's).

Match3Bigram at position i of z_1..z_N in Z_M: 1 iff some j < N has z_i + z_j + z_(j+1) = 0 (mod M).
Residual stream: cos theta, sin theta, 1, last, the position angle phi_j = 2 pi j / P (cos, sin) and that of
j + 1, the one-hot of z_j, the retrieved one-hot of z_(j+1), the bigram's angle (cos, sin) and layer 2's output.

* Layer 1 (m = 2): q_j = c1 (cos phi_(j+1), sin phi_(j+1)), k_k = (cos phi_k, sin phi_k): the logit
  c1 cos(phi_(j+1) - phi_k) is largest at k = j + 1 and at least c1 (1 - cos(2 pi / P)) - 2 eps1 lower elsewhere,
  so every other weight is exactly 0: position j retrieves the one-hot of z_(j+1) exactly.
* MLP 1 (M^2 units): unit (a, b) = relu(onehot_a(z_j) + onehot_b(z_(j+1)) - 1 - last) is 1 exactly when
  (z_j, z_(j+1)) = (a, b) (never at the last position) and writes the grid values of cos, sin of 2 pi (a + b) / M.
* Layer 2 (m = 3): Match2 between z_i and the bigram sums with the last position as the floor: q_i =
  (c2 cos theta_i, c2 sin theta_i, f2), k_j = (cos sigma_j, -sin sigma_j, last_j), values 1 - last; with F, c2 and
  f2 = c2 (1 - r/2) chosen as for ``construct:match3-third-order`` the weights of non-matches and of the floor
  (when a match exists) are exactly 0: o_i = 1 or 0, and position i answers o_i > 1/2.

The tests check every input at small N and M.
"""
from __future__ import annotations

import math

import numpy as np

from protocols.constructions.common import (
    ConstructionError,
    fixed_format,
    no_protocol_reason,
)
from protocols.models.transformer import Layer, MultiLayerAttention

__all__ = ["Match3Bigram", "build_match3_bigram", "match3_bigram"]


class Match3Bigram(MultiLayerAttention):
    """The two-layer model; :meth:`decide` answers Match3Bigram at every position."""

    no_protocol_reason = no_protocol_reason("construct:match3-bigram", "Match3Bigram in two layers")

    def decide(self, z: np.ndarray) -> np.ndarray:
        """Match3Bigram at every position (B, N)."""
        z = np.atleast_2d(np.asarray(z, dtype=np.int64))
        return np.stack([self.readout(self.hidden(z, query_position=i)) for i in range(z.shape[1])], axis=1)


def match3_bigram(z: np.ndarray, modulus: int) -> np.ndarray:
    """The truth (B, N): 1 at i iff some j < N has z_i + z_j + z_(j+1) = 0 (mod M)."""
    z = np.atleast_2d(np.asarray(z, dtype=np.int64)) % modulus
    sums = (z[:, :-1] + z[:, 1:]) % modulus                                  # (B, N - 1)
    need = (-z) % modulus                                                     # (B, N)
    return (need[:, :, None] == sums[:, None, :]).any(axis=2).astype(np.int64)


def _scale(r: float, F: int, columns: int) -> tuple[int, float, float]:
    """(c, eps, T): hard attention at gap r c - 2 eps >= T with eps = 2 columns c Delta + Delta."""
    delta = 2.0 ** -F
    T = F * math.log(2) + delta
    c = math.ceil((T + 0.1) / (r / 2 - 2 * columns * delta))
    return c, 2 * columns * c * delta + delta, T


def build_match3_bigram(length: int, modulus: int, *, spec: str = "construct:match3-bigram") -> Match3Bigram:
    """The model for N = ``length`` residues mod M (module docstring)."""
    if length < 2 or modulus < 2:
        raise ConstructionError(f"construct:match3-bigram needs N >= 2 and M >= 2, got N={length}, M={modulus}",
                                "model")
    N, M = length, modulus
    P = N + 1
    r1, r2 = 1 - math.cos(2 * math.pi / P), 1 - math.cos(2 * math.pi / M)
    F = max(4, math.ceil(math.log2(64.0 / min(r1, r2))))
    c1, eps1, T = _scale(r1, F, 2)
    c2, eps2, _ = _scale(r2, F, 2)
    f2 = math.floor((c2 - c2 * r2 / 2) * 2 ** F) / 2 ** F
    margins = [c1 * r1 - 2 * eps1 - T,                       # layer 1: every other position's weight is 0
               (c2 - eps2) - f2 - T,                         # layer 2: a match beats the floor
               f2 - (c2 * (1 - r2) + eps2) - T]              # layer 2: the floor beats every non-match
    if min(margins) < 0:  # pragma: no cover - the scales above are chosen to make them hold
        raise ConstructionError(f"construct:match3-bigram: no exact scale at N = {N}, M = {M}", "model")
    fmt = fixed_format(F, max(c1, c2) + 2)
    q = fmt.quantize
    COS, SIN, ONE, LAST, PC, PS, NC, NS = range(8)
    OH, RT = 8, 8 + M
    SC, SS, OUT = 8 + 2 * M, 9 + 2 * M, 10 + 2 * M
    d = 11 + 2 * M
    theta = 2 * np.pi * np.arange(M) / M
    tok = np.zeros((M, d))
    tok[:, COS], tok[:, SIN], tok[:, ONE] = q(np.cos(theta)), q(np.sin(theta)), 1.0
    tok[np.arange(M), OH + np.arange(M)] = 1.0
    phi = 2 * np.pi * np.arange(P) / P
    pos = np.zeros((N, d))
    pos[:, PC], pos[:, PS] = q(np.cos(phi[:N])), q(np.sin(phi[:N]))
    pos[:, NC], pos[:, NS] = q(np.cos(phi[1:N + 1])), q(np.sin(phi[1:N + 1]))
    pos[-1, LAST] = 1.0
    # layer 1: position j + 1's one-hot into RT
    W_Q, W_K = np.zeros((d, 2)), np.zeros((d, 2))
    W_Q[NC, 0], W_Q[NS, 1], W_K[PC, 0], W_K[PS, 1] = c1, c1, 1.0, 1.0
    W_V = np.zeros((d, M))
    W_V[OH + np.arange(M), np.arange(M)] = 1.0
    W_O = np.zeros((M, d))
    W_O[np.arange(M), RT + np.arange(M)] = 1.0
    pairs = [(a, b) for a in range(M) for b in range(M)]
    W1, b1 = np.zeros((d, len(pairs))), np.full(len(pairs), -1.0)
    W2 = np.zeros((len(pairs), d))
    for u, (a, b) in enumerate(pairs):
        W1[OH + a, u], W1[RT + b, u], W1[LAST, u] = 1.0, 1.0, -1.0
        W2[u, SC], W2[u, SS] = q(np.array([math.cos(2 * math.pi * (a + b) / M), math.sin(2 * math.pi * (a + b) / M)]))
    layer1 = Layer(W_Q, W_K, W_V, W_O, W1, b1, W2, np.zeros(d))
    # layer 2: Match2 between z_i and the bigram sums, the last position as the floor
    W_Q2, W_K2 = np.zeros((d, 3)), np.zeros((d, 3))
    W_Q2[COS, 0], W_Q2[SIN, 1], W_Q2[ONE, 2] = c2, c2, f2
    W_K2[SC, 0], W_K2[SS, 1], W_K2[LAST, 2] = 1.0, -1.0, 1.0
    W_V2 = np.zeros((d, 1))
    W_V2[ONE, 0], W_V2[LAST, 0] = 1.0, -1.0
    W_O2 = np.zeros((1, d))
    W_O2[0, OUT] = 1.0
    layer2 = Layer(W_Q2, W_K2, W_V2, W_O2)
    model = Match3Bigram(tok, pos, [layer1, layer2], fmt,
                         lambda h: (np.asarray(h)[:, OUT] > 0.5).astype(np.int64), spec=spec,
                         description="Match3Bigram in two layers (m = 2 and 3)")
    model.info = {"construction": "positional lookup of z_(j+1), an MLP table of the bigram's angle, then Match2",
                  "task": "Match3Bigram at every position", "length": N, "modulus": M, "layers": 2, "heads": 1,
                  "width": 3, "embedding_dim": d, "mlp_units": len(pairs), "precision": fmt.bits, "frac": F,
                  "scales": (c1, c2), "floor": f2, "margins": margins, "format": fmt.name}
    return model
