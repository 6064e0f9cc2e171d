"""Position schemes of the one-layer attention that act inside the attention: rotary q/k (RoPE) and ALiBi.

Both are functions of a position alone, so each party computes them for the positions it holds (and the
query owner for the query position N, which everyone knows): the exchange of
:mod:`protocols.simulators.attention` stays bit-identical to the direct forward.  NoPE (no position
information but the causal mask) is a layer without a position table; at the query -- the last position --
a causal mask hides nothing.

Exact semantics in a number format (writing [t] for rounding to the format, as in
:mod:`protocols.models.attention`):

RoPE (``rope=True``, base b; Llama / GPT-NeoX "rotate halves"; the head width m even).  For j < m/2,
theta_j = b^(-2j/m); at position i, c_j = [cos(i theta_j)] and s_j = [sin(i theta_j)] (rounded once, from
float64).  A head vector u = (u', u'') (its two halves) becomes::

    rot_i(u) = ( [u'_j c_j - u''_j s_j],  [u''_j c_j + u'_j s_j] )      each a sum of two exact products,
                                                                        rounded once

applied to every key, k_i = rot_i([W_K x_i]), and to the query, q = rot_N([W_Q x_N]); values are not rotated.
Partial rotary (``rope_dims`` = r < m, GPT-NeoX's ``rotary_pct``, GPT-J's ``rotary_dim``): the first r
coordinates of each head are rotated as above with m replaced by r (theta_j = b^(-2j/r), j < r/2) and the other
m - r pass through unchanged.

ALiBi (``alibi``: one slope m_h per head; ``alibi=true`` gives the paper's 2^(-8h/H), h = 1..H)::

    A_i = [ [<q, k_i>] + [m_h (i - N)] ]            the bias rounded once, the sum rounded (saturating)
"""
from __future__ import annotations

import numpy as np

__all__ = ["alibi_slopes", "rotate", "alibi_bias", "rotate_float", "alibi_float"]


def alibi_slopes(heads: int) -> tuple[float, ...]:
    """The ALiBi paper's slopes 2^(-8h/H), h = 1..H (for any H, as the paper's power-of-two recipe)."""
    return tuple(2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads))


def _angles(positions, width: int, base: float) -> np.ndarray:
    """i * theta_j (n, m/2) in float64."""
    inv = 1.0 / (float(base) ** (np.arange(0, width, 2, dtype=np.float64) / width))
    return np.asarray(positions, dtype=np.float64)[:, None] * inv[None, :]


def _base_dims(base, dims):
    """(base, dims) of a base given as a number, or as a layer's config (its ``rope_base`` and ``rope_dims``)."""
    if hasattr(base, "rope_base"):
        return float(base.rope_base), base.rope_dims
    return float(base), dims


def rotate(ar, u: np.ndarray, positions, base, dims: int | None = None) -> np.ndarray:
    """rot_i(u) (module docstring) of head vectors u (B, n, H, m) in the arithmetic's representation at the
    positions (n,); the same representation back.  ``dims``: rotate only the first ``dims`` coordinates;
    ``base`` may be a layer's config, which gives both."""
    base, dims = _base_dims(base, dims)
    u = np.asarray(u)
    if dims is not None and dims < u.shape[-1]:
        return np.concatenate([rotate(ar, u[..., :dims], positions, base), u[..., dims:]], axis=-1)
    m = u.shape[-1]
    half = m // 2
    angles = _angles(positions, m, base)                                # (n, m/2)
    c = ar.from_values(np.cos(angles))[None, :, None, :]
    s = ar.from_values(np.sin(angles))[None, :, None, :]
    u1, u2 = u[..., :half], u[..., half:]
    if ar.is_fixed:
        wide = np.int64 if 2 * ar.p + 1 < 63 else object
        u1, u2, c, s = (a.astype(wide) for a in (u1, u2, c, s))
        out = np.concatenate([u1 * c - u2 * s, u2 * c + u1 * s], axis=-1)
        return ar._round_products(out)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.concatenate([u1 * c - u2 * s, u2 * c + u1 * s], axis=-1)
    return ar.from_values(out)


def alibi_bias(ar, slopes, positions, query: int) -> np.ndarray:
    """[m_h (i - N)] (H, n) for the positions i (n,) and the query position N, in the arithmetic's representation."""
    rel = np.asarray(positions, dtype=np.float64) - float(query)
    return ar.from_values(np.asarray(slopes, dtype=np.float64)[:, None] * rel[None, :])


def rotate_float(u: np.ndarray, positions, base, dims: int | None = None) -> np.ndarray:
    """The plain float64 rotation of u (..., n, H, m) at the positions (n,) (no rounding); ``dims``, ``base``: as
    :func:`rotate`."""
    base, dims = _base_dims(base, dims)
    if dims is not None and dims < u.shape[-1]:
        return np.concatenate([rotate_float(u[..., :dims], positions, base), u[..., dims:]], axis=-1)
    m = u.shape[-1]
    angles = _angles(positions, m, base)[:, None, :]                    # (n, 1, m/2)
    c, s = np.cos(angles), np.sin(angles)
    u1, u2 = u[..., :m // 2], u[..., m // 2:]
    return np.concatenate([u1 * c - u2 * s, u2 * c + u1 * s], axis=-1)


def alibi_float(slopes, positions, query: int) -> np.ndarray:
    """m_h (i - N) (H, n) in float64."""
    return np.asarray(slopes, dtype=np.float64)[:, None] * (np.asarray(positions, dtype=np.float64) - query)[None, :]
