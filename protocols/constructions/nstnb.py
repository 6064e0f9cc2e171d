"""Nearest neighbour in two attention layers of width O(log N) (Theorem 7, Appendix G.2 of [BHBK24]).

The task (NstNb): labelled unit vectors, then queries: on the prefix (x_1, y_1, ..., x_(k-1), y_(k-1), x_k)
the answer is y_(j*), j* = argmax_(i < k) <x_k, x_i>, for inputs meeting the paper's assumptions (unit
norm; the nearest earlier vector beats every other by a margin gamma).  Here the vectors come from the
public codebook of normalized hypercube corners {+-1/sqrt(D)}^D (the vectors of Theorem 8's proof and of
``disj-mqar``): token ``2 + c`` is the corner whose signs are the D bits of c (1 -> +, most significant
first), tokens 0 and 1 are the labels.  Inner products of distinct corners differ by multiples of 2/D, so
a unique nearest neighbour has margin gamma >= 2/D; D = O(log N).

The construction keeps the paper's plan (attend by content to find the neighbour, attend by position to
fetch its label; nearly orthogonal position codes s(p), Lemma 2) with the two steps in the other order,
which makes "do not attend to yourself" and "labels must not win" exact instead of needing position
codes orthogonal to within gamma/100:

* embedding of token t at position p: ``[X = sign vector of t (0 for labels), Y = label (0 for vectors),
  LBL = 1 for labels, RET = 0 (D), OUT = 0, s(p), s(p - 1), 1]`` (s(p - 1) = s(p) at p = 1);
* layer 1 (positional, one head): query ``c [s(p - 1), k]``, key ``[s(p'), -1/2]``: logit ``c k/2`` at
  p' = p - 1 and at most ``c (g - k/2)`` elsewhere; with ``c (k - g) > (frac + 1) ln 2`` every other
  exp rounds down to 0 (the rounding argument of Theorem 6), so every position copies its predecessor's
  X into RET exactly: the label y_i's position now holds x_i;
* layer 2 (content, one head) at the query x_k: query ``eta [X, 3D + 2]``, key ``[RET, LBL]``: a label
  position scores ``eta (<s_k, s_i> + 3D + 2)`` >= ``eta (2D + 2)``, a vector position at most ``eta D``
  (its RET is a label's zero or an earlier vector), and the nearest neighbour's label beats every other
  label by ``2 eta``; with ``2 eta > (frac + 1) ln 2`` the rounded softmax is hard attention again and the
  value Y brings y_(j*) to OUT exactly; the readout is ``OUT >= 1/2``.

The query x_k is a vector position, so it never attends to itself; no layer needs 1/N, so the precision
is FRAC + 1 + ceil(log2 of the largest logit) bits here (:func:`nstnb_format`; the theorem allows O(log N), and no
smaller order is claimed); width and embedding dimension are O(log N).
"""
from __future__ import annotations

import math

import numpy as np

from commsim.core.precision import FixedPoint
from protocols.constructions.common import (
    ConstructionError,
    grid_ceil,
    no_protocol_reason,
)
from protocols.constructions.eq2 import _scale
from protocols.constructions.orthogonal import DEFAULT_GAMMA, find
from protocols.models.transformer import Layer, MultiHeadAttention

__all__ = ["NearestNeighbour", "build_nstnb", "corner_signs", "nearest_labels", "sample_nstnb", "all_nstnb",
           "nstnb_format", "MAX_DIM"]

#: the codebook has 2^D corners; tokens index them
MAX_DIM = 16
FRAC = 3


def corner_signs(dim: int) -> np.ndarray:
    """(2^D, D) +-1: row c holds the bits of c (most significant first), 1 -> +1, 0 -> -1."""
    c = np.arange(1 << dim)
    return (((c[:, None] >> np.arange(dim - 1, -1, -1)) & 1) * 2 - 1).astype(np.int64)


def nearest_labels(tokens: np.ndarray, queries, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The NstNb answers at the query positions (0-based, each a vector position) and whether the
    margin assumption holds there (a unique nearest labelled earlier vector): two (B, Q) arrays."""
    T = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
    signs = corner_signs(dim)
    B = T.shape[0]
    answers = np.zeros((B, len(queries)), dtype=np.int64)
    unique = np.zeros((B, len(queries)), dtype=bool)
    for qi, p in enumerate(queries):
        # earlier vector positions followed by their label (the layout is the same in every row)
        vec = [i for i in range(p - 1) if T[0, i] >= 2 and T[0, i + 1] < 2]
        if not vec:
            continue
        inner = np.einsum("bd,bjd->bj", signs[T[:, p] - 2], signs[T[:, vec] - 2])
        best = inner.max(axis=1)
        unique[:, qi] = (inner == best[:, None]).sum(axis=1) == 1
        answers[:, qi] = T[np.arange(B), np.asarray(vec)[inner.argmax(axis=1)] + 1]
    return answers, unique


def _sample_row(rng, n_vectors: int, dim: int) -> np.ndarray:
    """One NstNb sequence x_1 y_1 .. x_N (y_N omitted): N/2 distinct data vectors, then queries whose
    nearest earlier vector is unique (half exact repeats, as in MQAR, half random corners)."""
    signs = corner_signs(dim)
    half = max(1, n_vectors // 2)
    codes = list(rng.choice(1 << dim, size=half, replace=False))
    while len(codes) < n_vectors:
        for _ in range(32):
            c = int(rng.integers(1 << dim)) if rng.random() < 0.5 else int(codes[rng.integers(len(codes))])
            inner = signs[codes] @ signs[c]
            if (inner == inner.max()).sum() == 1:
                break
        else:  # an earlier vector that occurs once: its exact repeat is the unique nearest
            once = [x for x in codes if codes.count(x) == 1]
            c = int(once[rng.integers(len(once))]) if once else int(rng.integers(1 << dim))
        codes.append(c)
    row = np.zeros(2 * n_vectors - 1, dtype=np.int64)
    row[0::2] = 2 + np.asarray(codes)
    row[1::2] = rng.integers(0, 2, n_vectors - 1)
    return row


def sample_nstnb(rng, count: int, n_vectors: int, dim: int) -> np.ndarray:
    """``count`` seeded NstNb sequences of N vectors (length 2N - 1)."""
    if (1 << dim) < max(1, n_vectors // 2):
        raise ConstructionError(f"the codebook has 2^{dim} corners, fewer than the N/2 = {n_vectors // 2} "
                                f"distinct data vectors", "model")
    return np.stack([_sample_row(rng, n_vectors, dim) for _ in range(count)])


def all_nstnb(n_vectors: int, dim: int) -> np.ndarray:
    """Every sequence x_1 y_1 .. x_N over the codebook (for exhaustive checks at tiny N and D)."""
    per = [np.arange(2, 2 + (1 << dim)), np.arange(2)] * (n_vectors - 1) + [np.arange(2, 2 + (1 << dim))]
    grids = np.meshgrid(*per, indexing="ij")
    return np.stack([g.reshape(-1) for g in grids], axis=1).astype(np.int64)


def nstnb_format(k: int, max_inner: int, dim: int) -> FixedPoint:
    """FRAC fraction bits and integer bits for the largest logit (layer 1: 3ck/2; layer 2: eta(4D + 2))."""
    c = _scale(k, max_inner, FRAC)
    eta = grid_ceil((FRAC + 1) * math.log(2) / 2 * 1.05, FRAC)
    top = max(1.5 * c * k, eta * (4 * dim + 2)) + 2
    return FixedPoint(FRAC + 1 + math.ceil(math.log2(top)), FRAC)


class NearestNeighbour(MultiHeadAttention):
    """The two-layer nearest-neighbour transformer; :meth:`answers` reads every query of a sequence."""

    def __post_init__(self):
        super().__post_init__()
        self.no_protocol_reason = no_protocol_reason("construct:nstnb", "nearest neighbour, Theorem 7")

    def answers(self, tokens: np.ndarray, queries) -> np.ndarray:
        """The model's label at each query position (0-based): its output on the prefix ending there."""
        T = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
        return np.stack([self.forward(T[:, :p + 1]) for p in queries], axis=1)


def build_nstnb(max_length: int, dim: int, *, gamma: float = DEFAULT_GAMMA, seed: int = 0, fmt=None,
                spec: str = "construct:nstnb") -> NearestNeighbour:
    """The construction for sequences of up to ``max_length`` tokens over the 2^D-corner codebook."""
    if max_length < 1:
        raise ConstructionError(f"construct:nstnb needs a length >= 1, got {max_length}", "model")
    if not 1 <= dim <= MAX_DIM:
        raise ConstructionError(f"construct:nstnb needs a codebook dimension 1..{MAX_DIM}, got {dim}", "model")
    L = max_length
    vectors = find(max(L, 2), gamma, seed)
    k = vectors.k
    fmt = fmt or nstnb_format(k, vectors.max_abs_inner_int, dim)
    f = fmt.frac
    c = _scale(k, vectors.max_abs_inner_int, f)
    eta = grid_ceil((f + 1) * math.log(2) / 2 * 1.05, f)
    s = vectors.signs[:L].astype(np.float64)
    X, Y, LBL = 0, dim, dim + 1
    RET = dim + 2
    OUT = RET + dim
    KEY = OUT + 1
    QRY = KEY + k
    ONE = QRY + k
    d = ONE + 1

    tok = np.zeros((2 + (1 << dim), d))
    tok[1, Y] = 1.0
    tok[0:2, LBL] = 1.0
    tok[2:, X:X + dim] = corner_signs(dim)
    pos = np.zeros((L, d))
    pos[:, KEY:KEY + k] = s
    pos[:, QRY:QRY + k] = s[np.maximum(np.arange(L) - 1, 0)]
    pos[:, ONE] = 1.0

    W_Q = np.zeros((d, k + 1))
    W_Q[QRY:QRY + k, :k] = c * np.eye(k)
    W_Q[ONE, k] = c * k
    W_K = np.zeros((d, k + 1))
    W_K[KEY:KEY + k, :k] = np.eye(k)
    W_K[ONE, k] = -0.5
    W_V = np.zeros((d, dim))
    W_V[X:X + dim, :] = np.eye(dim)
    W_O = np.zeros((dim, d))
    W_O[:, RET:RET + dim] = np.eye(dim)
    layer1 = Layer(W_Q, W_K, W_V, W_O)

    Q2 = np.zeros((d, dim + 1))
    Q2[X:X + dim, :dim] = eta * np.eye(dim)
    Q2[ONE, dim] = eta * (3 * dim + 2)
    K2 = np.zeros((d, dim + 1))
    K2[RET:RET + dim, :dim] = np.eye(dim)
    K2[LBL, dim] = 1.0
    V2 = np.zeros((d, 1))
    V2[Y, 0] = 1.0
    O2 = np.zeros((1, d))
    O2[0, OUT] = 1.0
    layer2 = Layer(Q2, K2, V2, O2)

    def readout(h: np.ndarray) -> np.ndarray:
        """The retrieved label."""
        return (h[:, OUT] >= 0.5).astype(np.int64)

    info = {"construction": "Theorem 7 / Appendix G.2 of [BHBK24] (layers: copy by position, then match by content)",
            "task": "nearest neighbour over the 2^D-corner codebook", "seq_len": L, "codebook_dim": dim,
            "margin": 2 / dim, "k": k, "gamma_positions": gamma, "seed": seed, "scale_c": c, "eta": eta,
            "layers": 2, "heads": 1, "embedding_dim": d, "width": max(k, dim) + 1, "precision": fmt.bits,
            "format": fmt.name,
            "exact_by_analysis": c * (k - vectors.max_abs_inner_int) > (f + 1) * math.log(2) and
            2 * eta > (f + 1) * math.log(2) and fmt.max_value >= max(1.5 * c * k, eta * (4 * dim + 2)) + 1}
    return NearestNeighbour(tok, pos, [layer1, layer2], fmt, readout, spec=spec,
                            description="two-layer transformer doing nearest neighbour (Theorem 7 of [BHBK24])",
                            info=info)
