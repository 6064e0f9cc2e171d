"""Match3Local in one attention layer by reduction to qSA ([SHT23]'s claim; the weights and their analysis are
commsim's).

Match3Local at position i of z_0..z_(N-1) in Z_M, window K (the definition of the seeds' slides, taken
literally): 1 iff some j1, j2 with |i - j1| <= K, |i - j2| <= K (0 <= j1, j2 < N; j1 = j2 and j1 = i allowed,
unlike ``match3``'s distinct j, k) have z_i + z_j1 + z_j2 = 0 (mod M).  The answer depends only on which
residues occur in the window S_i = [i - K, i + K] ∩ [0, N): it is 1 iff some residues a, b present in S_i have
a + b = -z_i.  So the layer is q-sparse averaging with q = 2K + 1 (|S_i| <= q), followed by an MLP:

* keys u_j from the position embedding: one-hot (k = N, the weights are then exactly uniform on S_i) or Lemma 2's
  sign vectors / sqrt(k) with |<u_i, u_j>| <= gamma = 1/(3q) (k = O(q^2 log N), shorter once N is large), as in
  ``construct:qsa``; ``codes=auto`` takes the shorter;
* position i's query is alpha w_(S_i) (:func:`protocols.constructions.qsa.set_query`: <w_S, u_j> = 1 on S,
  |<w_S, u_j>| <= 1/2 off S), alpha = 2 ln(16 q N) -- the qSA layer with the query set fixed by the position;
* values: the one-hot of z_j (M coordinates), so o_i is within qSA's error of the window's residue histogram
  divided by |S_i|: o_a <= 1/(4q) for an absent residue, o_a >= 3/(4q) for a present one (``construct:qsa``'s
  1/(4q)-approximation; the tests check both on every input at small sizes);
* the MLP (ReLU between layers) reads (o, onehot(z_i)) (the residual path): s_a = relu(2q o_a - 1/2) -
  relu(2q o_a - 3/2) is exactly 0 (absent) or 1 (present); unit (r, a) = relu(onehot_r(z_i) + s_a + s_b - 2) with
  b = -r - a mod M is 1 iff z_i = r and a, b are both present; the output is sum_units - 1/2 > 0.

Width m = max(k, M) (queries and keys k, values M), one head, d = 2k + M, M^2 + 3M MLP units.
"""
from __future__ import annotations

import math

import numpy as np

from commsim.contract import InputError
from protocols.constructions.common import ConstructionError, fixed_format, grid_ceil
from protocols.constructions.orthogonal import find
from protocols.constructions.qsa import qsa_format, set_query
from protocols.models.attention import AttentionLayer

__all__ = ["Match3Local", "build_match3_local", "match3_local", "CODES"]

#: the key codes: one-hot, Lemma 2's sign vectors, or the shorter of the two
CODES = ("auto", "onehot", "lemma2")


def match3_local(z: np.ndarray, modulus: int, window: int) -> np.ndarray:
    """The truth (B, N): 1 at i iff some j1, j2 within distance ``window`` of i have z_i + z_j1 + z_j2 = 0 mod M."""
    z = np.atleast_2d(np.asarray(z, dtype=np.int64)) % modulus
    B, N = z.shape
    out = np.zeros((B, N), dtype=np.int64)
    for i in range(N):
        near = z[:, max(0, i - window):i + window + 1]                              # (B, w)
        sums = (z[:, i, None, None] + near[:, :, None] + near[:, None, :]) % modulus
        out[:, i] = (sums == 0).reshape(B, -1).any(axis=1)
    return out


class Match3Local(AttentionLayer):
    """The layer; :meth:`decide_all` answers Match3Local at every position."""

    construction = "match3-local"

    def decide_all(self, z: np.ndarray) -> np.ndarray:
        """Match3Local at every position (B, N) of residues z (B, N), N the layer's length."""
        z = np.atleast_2d(np.asarray(z, dtype=np.int64))
        if z.shape[1] != self.info["length"]:
            raise ConstructionError(f"construct:match3-local was built for N = {self.info['length']} positions; "
                                    f"the input has {z.shape[1]}", "model")
        return np.stack([self.decide(z, query=i) for i in range(z.shape[1])], axis=1)


def _keys(N: int, q: int, codes: str, seed: int) -> tuple[np.ndarray, str, float]:
    """(U (N, k) unit key vectors, the codes used, their largest |<u_i, u_j>|)."""
    if codes not in CODES:
        raise ConstructionError(f"codes must be one of {', '.join(CODES)}; got {codes!r}", "model")
    if codes != "onehot" and N >= 2:
        gamma = 1 / (3 * q)
        try:
            vectors = find(N, gamma, seed)
        except InputError as err:          # gamma too small for the widest set built
            if codes == "lemma2":
                raise ConstructionError(f"construct:match3-local: codes=lemma2 at window K = {(q - 1) // 2}, N = "
                                        f"{N}: {err}", "model") from None
            return np.eye(N), "onehot", 0.0
        if codes == "lemma2" or vectors.k < N:
            return vectors.signs[:N].astype(np.float64) / math.sqrt(vectors.k), "lemma2", gamma
    return np.eye(N), "onehot", 0.0


def build_match3_local(length: int, modulus: int, window: int, *, codes: str = "auto", seed: int = 0,
                       spec: str = "construct:match3-local") -> Match3Local:
    """The layer for N = ``length`` residues mod M and window K (module docstring)."""
    N, M, K = int(length), int(modulus), int(window)
    if N < 1 or M < 2 or K < 0:
        raise ConstructionError(f"construct:match3-local needs N >= 1, M >= 2 and K >= 0; got N={N}, M={M}, K={K}",
                                "model")
    q = 2 * K + 1
    U, used, gamma = _keys(N, q, codes, seed)
    k = U.shape[1]
    base = qsa_format(q, N, k)
    alpha = 2 * math.log(16 * q * N)
    fmt = fixed_format(base.frac, max(alpha * 2 * math.sqrt(q) + 2, 2 * q + 2))
    alpha = grid_ceil(alpha, fmt.frac)
    KEY, QRY, VAL = 0, k, 2 * k
    d = 2 * k + M
    m = max(k, M)
    tok = np.zeros((M, d))
    tok[np.arange(M), VAL + np.arange(M)] = 1.0
    pos = np.zeros((N, d))
    pos[:, KEY:KEY + k] = U
    for i in range(N):
        pos[i, QRY:QRY + k] = alpha * set_query(U, range(max(0, i - K), min(N, i + K + 1)))
    W_Q, W_K, W_V = np.zeros((1, m, d)), np.zeros((1, m, d)), np.zeros((1, m, d))
    W_Q[0, np.arange(k), QRY + np.arange(k)] = 1.0
    W_K[0, np.arange(k), KEY + np.arange(k)] = 1.0
    W_V[0, np.arange(M), VAL + np.arange(M)] = 1.0
    W_O = np.zeros((M, m))
    W_O[np.arange(M), np.arange(M)] = 1.0
    # psi reads (o_0..o_(M-1), onehot(z_i)): layer 1 the steps' two ramps and the one-hot, layer 2 the pairs
    W1, b1 = np.zeros((3 * M, 2 * M)), np.zeros(3 * M)
    for a in range(M):
        W1[2 * a, a], b1[2 * a] = 2 * q, -0.5
        W1[2 * a + 1, a], b1[2 * a + 1] = 2 * q, -1.5
        W1[2 * M + a, M + a] = 1.0
    W2, b2 = np.zeros((M * M, 3 * M)), np.full(M * M, -2.0)
    for r in range(M):
        for a in range(M):
            b = (-r - a) % M
            unit = r * M + a
            W2[unit, 2 * M + r] = 1.0
            for c in (a, b):                       # s_c = ramp1 - ramp2 (twice when a = b)
                W2[unit, 2 * c] += 1.0
                W2[unit, 2 * c + 1] -= 1.0
    W3, b3 = np.ones((1, M * M)), np.array([-0.5])
    layer = Match3Local(fmt, tok, pos, W_Q, W_K, W_V, W_O, [(W1, b1), (W2, b2), (W3, b3)],
                        residual=np.arange(VAL, VAL + M), spec=spec)
    layer.info = {"construction": "qSA over the window (q = 2K + 1) then an MLP on the residue histogram "
                                  "(commsim's weights)",
                  "task": "Match3Local at every position", "length": N, "modulus": M, "window": K, "q": q,
                  "codes": used, "k": k, "gamma": gamma, "alpha": alpha, "width": m, "heads": 1, "layers": 1,
                  "embedding_dim": d, "mlp_units": M * M + 3 * M, "precision": fmt.bits, "frac": fmt.frac,
                  "format": fmt.name, "absent_below": 1 / (4 * q), "present_above": 3 / (4 * q)}
    return layer
