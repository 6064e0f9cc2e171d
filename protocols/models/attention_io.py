"""Saving and loading a one-layer attention (:class:`~protocols.models.attention.AttentionLayer`) as ``.npz``:
its tables, weights and semantics (query, self, residual, division, RoPE, ALiBi)."""
from __future__ import annotations

import numpy as np

from commsim.contract import InputError
from commsim.core.precision import NumberFormat, parse_format


def save_layer(layer, path) -> None:
    """Save to ``.npz`` (tables only: callable embeddings or psi cannot be saved)."""
    if layer.token_table is None or layer.position_fn is not None or layer.psi_fn is not None:
        raise InputError("a layer with callable embeddings or psi cannot be saved to .npz")
    val = layer.arithmetic.to_values
    arrays = {"format": np.array(layer.format.name), "token_embedding": val(layer.token_table),
              "W_Q": val(layer.W_Q), "W_K": val(layer.W_K), "W_V": val(layer.W_V), "W_O": val(layer.W_O),
              "attend_self": np.array(layer.attend_self), "psi_layers": np.array(len(layer.psi_layers)),
              "division": np.array(layer.division)}
    optional = {"position_embedding": layer.position_table, "query": layer.query, "residual": layer.residual_coords,
                "rope_base": layer.rope_base if layer.rope else None, "alibi": layer.alibi,
                "rope_dims": layer.config.rope_dims if layer.rope else None}
    arrays.update({k: val(v) if k == "position_embedding" else np.array(v) for k, v in optional.items() if v is not None})
    for i, (W, b) in enumerate(layer.psi_layers):
        arrays[f"psi_W{i}"], arrays[f"psi_b{i}"] = val(W), val(b)
    np.savez(path, **arrays)


def load_layer(cls, path, fmt: NumberFormat | None = None, *, spec: str = ""):
    """Load a layer saved by :func:`save_layer` (``fmt`` re-rounds the weights); a bad file is an InputError."""
    from protocols.models.npz import numeric_array, read_npz
    arrays, layers = read_npz(path, "attention weights"), None
    if "psi_layers" in arrays and arrays["psi_layers"].dtype.kind in "iu" and arrays["psi_layers"].ndim == 0:
        layers = int(arrays["psi_layers"]) if 0 <= arrays["psi_layers"] <= len(arrays) else None
    dims = {"token_embedding": 2, "position_embedding": 2, "W_Q": 3, "W_K": 3, "W_V": 3, "W_O": 2,
            **{f"psi_{m}{i}": d for i in range(layers or 0) for m, d in (("W", 2), ("b", 1))}}
    missing = [k for k in ["format", *dims] if k not in arrays and k != "position_embedding"]
    if missing or (layers is None and "psi_layers" in arrays):
        raise InputError(f"attention weights {str(path)!r}: " + (f"lack {', '.join(missing)}" if missing else
                         f"psi_layers={arrays['psi_layers']} is not a count of the stored layers"), "model")
    num = {k: numeric_array(arrays, k, d, path, "attention weights") for k, d in dims.items() if k in arrays}
    psi = [(num[f"psi_W{i}"], num[f"psi_b{i}"]) for i in range(layers or 0)] or None
    try:
        layer = cls(fmt or parse_format(str(arrays["format"])), num["token_embedding"], num.get("position_embedding"),
                    num["W_Q"], num["W_K"], num["W_V"], num["W_O"], psi,
                    query=int(arrays["query"]) if "query" in arrays else None,
                    attend_self=bool(arrays.get("attend_self", np.array(True))),
                    residual=arrays["residual"] if "residual" in arrays else False,
                    division=str(arrays["division"]) if "division" in arrays else "once", spec=spec)
        if "rope_base" in arrays:
            layer.config = layer.config.replace(rope=True, rope_base=float(numeric_array(
                arrays, "rope_base", 0, path, "attention weights")))
        if "rope_dims" in arrays:
            layer.config = layer.config.replace(rope_dims=int(numeric_array(arrays, "rope_dims", 0, path,
                                                                            "attention weights")))
        if "alibi" in arrays:
            layer.alibi = tuple(numeric_array(arrays, "alibi", 1, path, "attention weights"))
        return layer
    except (ValueError, TypeError, IndexError) as exc:  # shapes that do not fit, a bad query or residual
        raise InputError(f"attention weights {str(path)!r}: {exc}", "model") from None
