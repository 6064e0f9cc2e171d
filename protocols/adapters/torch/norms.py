"""Normalisations recognised by what they compute, never by their class name.

Research code writes its own norm classes (nanoGPT's ``LayerNorm`` with an optional bias calling
``F.layer_norm``, Llama-style ``RMSNorm`` modules with ``variance_epsilon``).  :func:`probe_norm` runs an unknown
module that holds a weight vector (and optionally a bias of the same size) on random rows in its own dtype -- rows
of every scale, small-variance rows among them, where epsilon shows -- and compares its output with LayerNorm
(``F.layer_norm``) and with RMSNorm computed with the module's own weight and bias.  Epsilon is read from the
module (``eps``, ``variance_epsilon``, ``epsilon``, ``norm_eps``) when it holds one, else found by the probe:
solved from the small-variance rows, then tried with the usual values.  The module is read as that
normalisation when every probe row agrees within a few units in the last place of its dtype; otherwise it is
not a normalisation commsim reads (None, with the reason).
"""
from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np

#: attributes under which norm modules keep their epsilon
EPS_NAMES = ("eps", "variance_epsilon", "epsilon", "norm_eps", "layer_norm_eps", "rms_norm_eps")

class Norm(NamedTuple):
    """A normalisation as read: LayerNorm (``center``) or RMSNorm over the last axis, y = w (x - [mean]) /
    sqrt(mean square + eps) + b, with the module's own weight and bias (float64 arrays; bias None: none)."""

    weight: np.ndarray
    bias: np.ndarray | None
    eps: float
    center: bool


#: epsilons tried when the module keeps none and the solved one does not match
USUAL_EPS = (1e-5, 1e-6, 1e-8, 1e-12, 1e-7, 1e-10, 1e-4, 1e-3, 0.0)

#: agreement on the probe: |module - norm| <= ULPS * finfo(dtype).eps * (1 + |norm|)
ULPS = 64


def _vectors(module):
    """(weight, bias or None) when the module's own parameters are a weight vector and at most a bias of the same
    size (nothing else, no submodules); None otherwise."""
    if any(True for _ in module.children()):
        return None
    params = dict(module.named_parameters(recurse=False))
    weight, bias = params.get("weight"), params.get("bias")
    if weight is None or weight.dim() != 1 or set(params) - {"weight", "bias"}:
        return None
    if bias is not None and tuple(bias.shape) != tuple(weight.shape):
        return None
    return weight, bias


def _rows(d: int, dtype, seed: int = 0):
    """Probe rows (float64 values representable in ``dtype``): random rows at scales 1e-3 .. 1e2 with offsets, the
    small scales being where epsilon shows."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    scales = torch.tensor([1e-3, 3e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0], dtype=torch.float64).repeat_interleave(6)
    rows = torch.randn(len(scales), d, generator=gen, dtype=torch.float64) * scales[:, None]
    rows = rows + torch.randn(len(scales), 1, generator=gen, dtype=torch.float64) * scales[:, None]
    return rows.to(dtype)


def _norm(x, weight, bias, eps: float, center: bool):
    """LayerNorm (``center``) or RMSNorm of float64 rows ``x`` with the given weight and bias (float64)."""
    centred = x - x.mean(dim=-1, keepdim=True) if center else x
    y = centred / (centred.pow(2).mean(dim=-1, keepdim=True) + eps).sqrt()
    y = y * weight
    return y if bias is None else y + bias


def _solved_eps(x, y, weight, bias, center: bool) -> float | None:
    """Epsilon solved from the smallest-scale rows: y = w (x - m) / sqrt(var + eps) + b gives
    eps = ((x - m) w / (y - b))^2 - var where the division is well defined."""
    x, y = x.double()[:12], y.double()[:12]
    centred = x - x.mean(dim=-1, keepdim=True) if center else x
    var = centred.pow(2).mean(dim=-1, keepdim=True)
    z = y - (0.0 if bias is None else bias)
    ok = (z.abs() > 1e-30) & (weight.abs() > 0)[None, :] & (centred.abs() > 1e-30)
    if not bool(ok.any()):
        return None
    est = ((centred * weight / z) ** 2 - var)[ok]
    value = float(est.median())
    return value if np.isfinite(value) and value >= 0 else None


#: probe results per module, kept while its weight and bias are unchanged (their tensor versions)
_SEEN: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def probe_norm(module) -> tuple[Norm | None, str]:
    """(the normalisation ``module`` computes, "") or (None, why it is none) (module docstring)."""
    vectors = _vectors(module)
    key = None if vectors is None else tuple((id(t), t._version) for t in vectors if t is not None)
    hit = _SEEN.get(module)
    if hit is not None and hit[0] == key:
        return hit[1]
    found = _probe(module, vectors)
    _SEEN[module] = (key, found)
    return found


def _probe(module, vectors) -> tuple[Norm | None, str]:
    """:func:`probe_norm` without the memo."""
    import torch
    if vectors is None:
        return None, "it holds no weight vector (and optional bias) alone"
    weight, bias = vectors
    d, dtype = int(weight.shape[0]), weight.dtype
    if not dtype.is_floating_point:
        return None, f"its weight is of dtype {dtype}"
    x = _rows(d, dtype)
    try:
        with torch.no_grad():
            y = module(x)
    except Exception as exc:  # noqa: BLE001 - the user's forward: not a norm commsim reads
        return None, f"it did not run on rows of {d} values ({type(exc).__name__}: {exc})"
    if not isinstance(y, torch.Tensor) or tuple(y.shape) != tuple(x.shape):
        return None, f"it does not map rows of {d} values to rows of {d} values"
    w = weight.detach().double()
    b = None if bias is None else bias.detach().double()
    xd, yd = x.double(), y.detach().double()
    if not bool(torch.isfinite(yd).all()):
        return None, "it gives non-finite values on random rows"
    unit = float(torch.finfo(dtype).eps) * ULPS
    kept = next((getattr(module, n) for n in EPS_NAMES if isinstance(getattr(module, n, None), (int, float))
                 and not isinstance(getattr(module, n), bool)), None)
    worst = {}
    for center in (True, False):
        candidates = [float(kept)] if kept is not None else []
        solved = _solved_eps(xd, yd, w, b, center)
        if kept is None and solved is not None:
            candidates += [float(f"{solved:.1g}"), solved]
        candidates += [] if kept is not None else list(USUAL_EPS)
        for eps in dict.fromkeys(candidates):
            ref = _norm(xd, w, b, eps, center)
            gap = float(((yd - ref).abs() / (1.0 + ref.abs())).max())
            worst[center] = min(worst.get(center, np.inf), gap)
            if gap <= unit:
                return Norm(w.numpy().copy(), None if b is None else b.numpy().copy(), eps, center), ""
    return None, (f"on random rows it computes neither LayerNorm (F.layer_norm) nor RMSNorm with its own weight and "
                  f"bias for any epsilon tried (closest: {min(worst.values()):.2g} relative, allowed {unit:.2g})")
