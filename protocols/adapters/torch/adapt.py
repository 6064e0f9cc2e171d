"""``from_torch``: any supported torch object -> a commsim model, and the agreement check.

Accepted: ``nn.RNN``/``nn.LSTM``/``nn.GRU``, ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer``
and one-layer ``nn.TransformerEncoder`` cores (with the embedding and head given), a wrapping
``nn.Module`` that holds one such core with its ``nn.Embedding``(s), per-position layers before it (a
LayerNorm/RMSNorm: pre-LN blocks) and head modules (found by running its forward, then *verified*
against it: :mod:`.discover`), a dict of parts ``{"core", "embedding", "positions", "norm", "head",
...}``, a one-layer Hugging Face GPT-2, TransformerLens ``HookedTransformer`` (3.x), ``TransformerBridge``
and TL-native models (4.x).  Commsim models pass through unchanged.
"""
from __future__ import annotations

import numpy as np

from commsim.core.precision import NumberFormat, parse_format
from protocols.adapters.torch.discover import _pre_folded, class_names, discover, probe_tokens
from protocols.adapters.torch.encoder import wrap_encoder
from protocols.adapters.torch.gpt2 import wrap_gpt2
from protocols.adapters.torch.layers import AdapterError, within_tolerance
from protocols.adapters.torch.mha import wrap_mha
from protocols.adapters.torch.rnn import wrap_recurrent
from protocols.adapters.torch.step import is_step_module, wrap_step_module
from protocols.adapters.torch.tlens import wrap_bridge, wrap_hooked, wrap_tl_native
from protocols.adapters.torch.trust import compare_outputs
from protocols.models.attention import AttentionLayer
from protocols.models.recurrent import RecurrentModel

#: keys of a dict of parts (a factory's return value, or a torch.save'd file)
PARTS = ("core", "embedding", "positions", "norm", "head", "residual", "key_embedding", "value_embedding")


def resolve_format(precision) -> NumberFormat | None:
    """A NumberFormat from a format, its name (``16``, ``fixed16.8``, ``bfloat16``) or None."""
    if precision is None or isinstance(precision, NumberFormat):
        return precision
    return parse_format(str(precision))


def is_commsim_model(obj) -> bool:
    """Is the object already a commsim model (recurrent or attention)?"""
    return isinstance(obj, (RecurrentModel, AttentionLayer))


def from_torch(obj, *, embedding=None, positions=None, head=None, precision=None, residual: bool | None = None,
               key_embedding=None, value_embedding=None, vocab_size: int | None = None, seq_len: int | None = None,
               spec: str = "", check: bool = True, norm=None):
    """A commsim model for ``obj`` (module docstring).  ``precision``: a NumberFormat or its name
    (``"16"``, ``"fixed16.8"``, ``"bfloat16"``); default: the module's dtype (float32 -> p = 32).
    ``vocab_size``/``seq_len`` limit the embedding tables to the task's tokens and length.  ``norm``: a
    per-position layer (LayerNorm, RMSNorm) on the summed embedding before the core -- with
    ``residual=True`` around an attention core, the pre-LN block ``x + MHA(norm(x))``."""
    fmt = resolve_format(precision)
    if is_commsim_model(obj):
        if fmt is not None:
            raise AdapterError("the factory returned a commsim model, which fixes its own number format; "
                               "precision=/dtype= apply to torch modules")
        return obj
    if isinstance(obj, dict):
        return _from_parts(obj, fmt, vocab_size, seq_len, spec, check, head=head, embedding=embedding,
                           positions=positions, residual=residual, norm=norm)
    try:
        import torch.nn as nn
    except ImportError:  # pragma: no cover - exercised without torch
        raise AdapterError(f"a {type(obj).__name__} is not a commsim model, and torch is not installed "
                           f"(pip install 'commsim[torch]')") from None
    if not isinstance(obj, nn.Module):
        raise AdapterError(f"expected a torch module, a dict of parts ({', '.join(PARTS)}) or a commsim model; "
                           f"got {type(obj).__name__}")
    obj.eval()
    names = class_names(obj)
    kw = dict(vocab_size=vocab_size, seq_len=seq_len, spec=spec)
    if is_step_module(obj):  # initial_state / step / readout: any recurrence (protocols.adapters.torch.step)
        return wrap_step_module(obj, fmt, vocab_size=vocab_size, spec=spec, check=check)
    if isinstance(obj, nn.RNNBase):
        return wrap_recurrent(obj, _pre_folded(embedding, [norm] if norm is not None else [], fmt), head, fmt,
                              vocab_size=vocab_size, spec=spec)
    if isinstance(obj, nn.MultiheadAttention):
        mode = ("stream" if norm is not None else "input") if residual else "none"
        return wrap_mha(obj, embedding, positions, head, fmt, residual=mode, norm=norm, key_embedding=key_embedding,
                        value_embedding=value_embedding, **kw)
    if isinstance(obj, (nn.TransformerEncoderLayer, nn.TransformerEncoder)):
        return wrap_encoder(obj, embedding, positions, head, fmt, pre=norm, **kw)
    if names & {"GPT2LMHeadModel", "GPT2Model"}:
        return wrap_gpt2(obj, fmt, head=head, **kw)
    if "HookedTransformer" in names:
        return wrap_hooked(obj, fmt, **kw)
    if "TransformerBridge" in names:
        return wrap_bridge(obj, fmt, **kw)
    if "NativeModel" in names:
        return wrap_tl_native(obj, fmt, **kw)
    if any(n.endswith("PreTrainedModel") for n in names):
        raise AdapterError(f"{type(obj).__name__} is a Hugging Face model commsim does not wrap "
                           f"(supported: a one-layer GPT-2: GPT2LMHeadModel / GPT2Model)")
    return discover(obj, fmt, vocab_size, seq_len, spec, check, adapt=from_torch, head=head, embedding=embedding,
                    positions=positions, residual=residual)


def _from_parts(parts: dict, fmt, vocab_size, seq_len, spec, check, **given):
    """A model from a dict of parts (``core`` and optional ``embedding``, ``head``, ...)."""
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise AdapterError(f"unknown part(s) {', '.join(map(repr, unknown))}; a dict of parts has keys "
                           f"{', '.join(PARTS)}")
    if "core" not in parts:
        raise AdapterError(f"a dict of parts needs a 'core' (an nn.LSTM/nn.GRU/nn.RNN, nn.MultiheadAttention or "
                           f"nn.TransformerEncoderLayer); "
                           f"it has {', '.join(map(repr, parts)) or 'nothing'}")
    for part in parts.values():   # dropout and the like as in the module's eval mode, as for a module given whole
        if callable(getattr(part, "eval", None)) and hasattr(part, "training"):
            part.eval()
    kw = {k: parts.get(k, given.get(k)) for k in ("embedding", "positions", "head", "residual", "norm")}
    return from_torch(parts["core"], precision=fmt, vocab_size=vocab_size, seq_len=seq_len, spec=spec, check=check,
                      key_embedding=parts.get("key_embedding"), value_embedding=parts.get("value_embedding"), **kw)


def agreement(model, tokens=None, *, rows: int = 16, seed: int = 0) -> dict:
    """How closely the commsim model follows the torch module's own forward on ``tokens`` (default:
    random rows), at the last position (every position when the module returns them all).  Returns
    ``agrees``, ``max_abs_diff``, ``allowed``, ``format``, ``note``, ``label_agreement`` and ``rows``.
    The tolerance (:data:`~protocols.adapters.torch.layers.TOLERANCE`) is that of the model's format
    (a fixed-point override falls back to a loose (0.1, 0.1)); the report's judged form is
    :meth:`~protocols.adapters.torch.trust.TorchTrust.framework_agreement`."""
    if getattr(model, "torch_forward", None) is None:
        raise AdapterError("this model keeps no torch forward to compare with")
    if tokens is None:
        tokens = probe_tokens(model, rows, seed)
    tokens = np.atleast_2d(np.asarray(tokens))
    probe = np.asarray(model.torch_forward(tokens[:1]), dtype=np.float64)
    positions = range(tokens.shape[1]) if probe.ndim == 3 and not isinstance(model, AttentionLayer) else None
    compared = compare_outputs(model, tokens, positions)
    ours, theirs = compared.ours, compared.theirs
    fmt_name = model.format.name
    ok, diff, allowed = within_tolerance(ours, theirs, fmt_name)
    note = (f"max |commsim - torch| = {diff:.3g} (allowed {allowed:.3g} for {fmt_name})" if ours.shape == theirs.shape
            else f"output shapes differ: commsim {ours.shape}, torch {theirs.shape}")
    labels_equal = float(np.mean(np.argmax(ours, -1) == np.argmax(theirs, -1))) if ours.shape == theirs.shape else 0.0
    return {"agrees": ok, "max_abs_diff": diff, "allowed": allowed, "format": fmt_name, "note": note,
            "label_agreement": labels_equal, "rows": int(tokens.shape[0])}
