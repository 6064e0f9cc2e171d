"""Position schemes read from a hand-written attention's tensors (:mod:`.handwritten`): rotary q/k (RoPE, angle
i * base^(-2j/d_h) at position i for the j-th pair of each head) and ALiBi (a bias m_h * (j - i) on the logits of
head h, as in the ALiBi paper).  Each reading is compared with what the module computed; what does not fit is
refused, naming it.

RoPE comes in two layouts: *halves* (Llama, GPT-NeoX, transformers' ``rotate_half``: coordinate j is paired with
j + d_h/2) -- the layout of commsim's attention layer -- and *interleaved* (GPT-J, RoFormer: coordinate 2j with
2j + 1).  Rotating interleaved pairs is rotating halves after the permutation :func:`to_halves` (evens, then odds)
of each head's coordinates, and q·k is unchanged when q and k are permuted alike, so an interleaved RoPE folds
exactly into W_Q and W_K (their rows permuted per head; the values are not rotated)."""
from __future__ import annotations

import numpy as np
import torch

from protocols.adapters.torch.layers import AdapterError

#: RoPE bases tried when reading a rotation (GPT-NeoX / Llama 2: 10000; Llama 3: 500000; others: 1e6)
ROPE_BASES = (10000.0, 500000.0, 1000000.0)


def to_halves(width: int) -> torch.Tensor:
    """The order of a head's coordinates that takes the interleaved RoPE layout to rotate-halves: evens, then odds
    (module docstring)."""
    return torch.cat((torch.arange(0, width, 2), torch.arange(1, width, 2)))


def rotate(t: torch.Tensor, base: float, interleaved: bool = False) -> torch.Tensor:
    """(B, H, L, d_h) rotated by position 0..L-1, rotate-halves or ``interleaved`` pairs (float64)."""
    if interleaved:
        order = to_halves(t.shape[-1])
        return rotate(t[..., order], base)[..., torch.argsort(order)]
    L, dh = t.shape[-2], t.shape[-1]
    inv = 1.0 / (base ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh))
    angles = torch.outer(torch.arange(L, dtype=torch.float64), inv)
    cos, sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()
    x = t.double()
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), -1) * sin


def close(a: torch.Tensor, b: torch.Tensor, dtype=None) -> bool:
    """Equal up to a few units of ``dtype`` (default ``b``'s): a rotation or scores computed in another order."""
    eps = torch.finfo(dtype or b.dtype).eps
    return a.shape == b.shape and bool(torch.allclose(a.double(), b.double(), rtol=64 * eps,
                                                      atol=64 * eps * (1 + float(b.abs().max()))))


#: the rotations tried: (base, interleaved), halves first
ROPES = tuple((base, interleaved) for interleaved in (False, True) for base in ROPE_BASES)


def read_rope(chunk: torch.Tensor, target: torch.Tensor) -> tuple[float, bool] | None:
    """(base, interleaved) of the rotation of ``chunk`` (B, H, L, d_h) that is ``target``, or None."""
    if chunk.shape != target.shape or chunk.shape[-1] % 2:
        return None
    return next((rope for rope in ROPES if close(rotate(chunk, *rope), target)), None)


def read_alibi(bias, heads: int, length: int, label: str, name: str) -> tuple | None:
    """Per-head slopes m_h of a bias (H, L) on the last query's logits equal to m_h * (j - (L - 1)) (+ a constant
    per head, which the softmax ignores), or None without a bias; any other bias is refused."""
    if bias is None:
        return None
    b = np.asarray(bias.detach().double().cpu().numpy() if hasattr(bias, "detach") else bias, dtype=np.float64)
    b = b - b[:, -1:]
    if length < 2:
        return tuple(0.0 for _ in range(heads)) if not b.any() else None
    slopes = -b[:, 0] / (length - 1)
    expected = slopes[:, None] * (np.arange(length) - (length - 1))[None, :]
    if not np.allclose(b, expected, rtol=1e-5, atol=1e-6 * (1 + np.abs(b).max())):
        raise AdapterError(f"{label}: {name} adds a bias to its attention logits that is not linear in the key "
                           f"position (ALiBi's m_h (j - i)); the exchange computes no other bias")
    paper = 2.0 ** (-8.0 * (np.arange(heads) + 1) / heads)   # the ALiBi paper's slopes, read exactly when they fit
    if np.allclose(slopes, paper, rtol=1e-6, atol=0):
        slopes = paper
    return None if not slopes.any() else tuple(float(s) for s in slopes)
