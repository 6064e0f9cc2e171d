"""``from_torch``: any supported torch object -> a commsim model, and the agreement check.

Accepted: ``nn.RNN``/``nn.LSTM``/``nn.GRU``, ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer``
and one-layer ``nn.TransformerEncoder`` cores (with the embedding and head given), a wrapping
``nn.Module`` that holds one such core with its ``nn.Embedding``(s), per-position layers before it (a
LayerNorm/RMSNorm: pre-LN blocks) and head modules (found by running its forward, then *verified*
against it: :mod:`.discover`), a dict of parts ``{"core", "embedding", "positions", "norm", "head",
...}``, a one-layer Hugging Face GPT-2, Llama (:mod:`.llama`) or other decoder by its ``model_type`` (Qwen2,
Mistral, Phi-3, Gemma, GPT-NeoX, GPT-J: :mod:`.hf_decoders`), TransformerLens ``HookedTransformer`` (3.x),
``TransformerBridge`` and TL-native models (4.x).  Commsim models pass through unchanged.

The reference.  The agreement check (:func:`agreement`, the report's ``torch_agreement``: one rule,
:func:`~protocols.adapters.torch.trust.judge`) compares commsim's model with the user's model itself: a
module's own forward when a module is given whole (a wrapping module, GPT-2, TransformerLens, a step
module's own loop).  A dict of parts is not a model of the user's: say which module the parts come from with
a ``"module"`` entry (a factory returns ``{"module": net, "embedding": net.tok, "core": net.attn, ...}``) or
``from_torch(parts, reference=net)``, and commsim's model is compared with ``net``'s own forward (a part left
out -- a residual connection -- shows as ``ok`` False).  Without one, the parts are compared with themselves
composed in torch, which is reported but not judged ("no reference forward given: not judged").
"""
from __future__ import annotations

import numpy as np

from commsim.core.precision import FormatError, NumberFormat, parse_format
from protocols.adapters.torch.discover import (
    _pre_folded,
    class_names,
    discover,
    probe_tokens,
)
from protocols.adapters.torch.encoder import wrap_encoder
from protocols.adapters.torch.gpt2 import wrap_gpt2
from protocols.adapters.torch.hf_decoders import wrap_decoder
from protocols.adapters.torch.graph import is_graph_module, is_third_order_module, wrap_graph, wrap_third_order
from protocols.adapters.torch.layers import AdapterError
from protocols.adapters.torch.llama import wrap_llama
from protocols.adapters.torch.mha import ReadAttention, wrap_mha
from protocols.adapters.torch.mlp import is_mlp, wrap_mlp
from protocols.adapters.torch.rnn import wrap_recurrent
from protocols.adapters.torch.rwkv import wrap_hf_rwkv
from protocols.adapters.torch.selective import is_mambapy, wrap_hf_mamba, wrap_mambapy
from protocols.adapters.torch.step import is_step_module, wrap_step_module
from protocols.adapters.torch.tlens import wrap_bridge, wrap_hooked, wrap_tl_native
from protocols.adapters.torch.trust import ModuleForward, TorchTrust
from protocols.models.attention import AttentionLayer
from protocols.models.fnn import FullyConnected
from protocols.models.recurrent import RecurrentModel

#: keys of a dict of parts (a factory's return value, or a torch.save'd file); ``module``: the user's module the
#: parts come from, whose own forward is the agreement check's reference
PARTS = ("core", "embedding", "positions", "norm", "head", "residual", "mlp", "key_embedding", "value_embedding",
         "module")


def resolve_format(precision) -> NumberFormat | None:
    """A NumberFormat from any spelling :func:`commsim.core.precision.parse_format` reads (a format, an int P, its
    name: ``16``, ``fixed16.8``, ``bfloat16``) or None; a bad one is an :class:`AdapterError` naming ``precision``."""
    try:
        return parse_format(precision)
    except FormatError as exc:
        text = str(exc)
        raise AdapterError(text if text.startswith("precision") else f"precision: {text}", "precision") from None


#: from_torch's arguments that are a token table (an nn.Embedding or a matrix) and those that are modules
TABLES = ("embedding", "positions", "key_embedding", "value_embedding")
MODULES = ("head", "norm")


def _on_meta(value) -> bool:
    """Does a torch module or tensor keep a parameter, buffer or value on the meta device (shapes, no data)?"""
    if getattr(value, "is_meta", False):
        return True
    tensors = getattr(value, "parameters", None), getattr(value, "buffers", None)
    return any(callable(get) and any(t.is_meta for t in get()) for get in tensors)


def _shown(value) -> str:
    """A bad argument in an error line: a short text or number as it is, anything else by its type."""
    if isinstance(value, (str, int, float)) and len(repr(value)) <= 40:
        return repr(value)
    return f"a {type(value).__name__}"


def check_arguments(obj, given: dict) -> None:
    """from_torch's arguments checked before anything is read: the object and its parts hold data (not the meta
    device), a token table is an nn.Embedding or a (rows, dim) matrix of numbers, ``head`` a torch module or a
    callable (``norm`` also a list of them), ``vocab_size``/``seq_len`` positive integers; an
    :class:`AdapterError` (an InputError for a size) names the argument."""
    from commsim.contract import check_size
    if _on_meta(obj):
        raise AdapterError(f"the {type(obj).__name__}'s weights are on the meta device (shapes without values): "
                           f"materialize it first (module.to_empty(device='cpu') and load_state_dict)", "model")
    for key, value in given.items():
        if value is None:
            continue
        if key in ("vocab_size", "seq_len"):
            check_size(value, key)
        elif _on_meta(value):
            raise AdapterError(f"{key} is on the meta device (shapes without values): materialize it first", key)
        elif key in TABLES and not callable(getattr(value, "forward", None)):
            try:
                rows = np.asarray(value, dtype=np.float64) if not hasattr(value, "detach") else None
            except (TypeError, ValueError):
                raise AdapterError(f"{key} must be an nn.Embedding or a (rows, dim) matrix of numbers, got "
                                   f"{_shown(value)}", key) from None
            if rows is not None and rows.ndim != 2:
                raise AdapterError(f"{key} has shape {rows.shape}; it must be a (rows, dim) matrix (or an "
                                   f"nn.Embedding)", key)
        elif key in MODULES and not all(map(callable, value if key == "norm" and isinstance(value, (list, tuple))
                                            else [value])):
            what = "a torch module or a callable" + (" (or a list of them)" if key == "norm" else "")
            raise AdapterError(f"{key} must be {what}, got {_shown(value)}", key)


def is_commsim_model(obj) -> bool:
    """Is the object already a commsim model (recurrent or attention)?"""
    return isinstance(obj, (RecurrentModel, AttentionLayer, FullyConnected))


def from_torch(obj, *, embedding=None, positions=None, head=None, precision=None, residual: bool | None = None,
               key_embedding=None, value_embedding=None, vocab_size: int | None = None, seq_len: int | None = None,
               spec: str = "", check: bool = True, norm=None, reference=None):
    """A commsim model for ``obj`` (module docstring).  ``precision``: a NumberFormat or its name
    (``"16"``, ``"fixed16.8"``, ``"bfloat16"``); default: the module's dtype (float32 -> p = 32).
    ``vocab_size``/``seq_len`` limit the embedding tables to the task's tokens and length.  ``norm``: a
    per-position layer (LayerNorm, RMSNorm) on the summed embedding before the core -- with
    ``residual=True`` around an attention core, the pre-LN block ``x + MHA(norm(x))``.  ``reference``: the
    user's module that ``obj`` (a dict of parts, or a core with its parts) stands for; the agreement check
    compares with its own forward (module docstring)."""
    model = _from_torch(obj, embedding=embedding, positions=positions, head=head, precision=precision,
                        residual=residual, key_embedding=key_embedding, value_embedding=value_embedding,
                        vocab_size=vocab_size, seq_len=seq_len, spec=spec, check=check, norm=norm, reference=reference)
    fmt = resolve_format(precision)
    if isinstance(model, TorchTrust) and fmt is not None and not model.framework_judged:
        model.reading = Reading(obj, dict(embedding=embedding, positions=positions, head=head, residual=residual,
                                          key_embedding=key_embedding, value_embedding=value_embedding,
                                          vocab_size=vocab_size, seq_len=seq_len, norm=norm, reference=reference))
    return model


class Reading:
    """commsim's reading of a module at the module's own dtype, for a model run at another format (a fixed-point
    override): built when the agreement check asks for it (:meth:`TorchTrust.framework_agreement`), so how
    commsim *reads* the module is judged apart from the rounding to the run's format.  Not carried across
    processes (the check runs in the parent)."""

    def __init__(self, obj, keywords: dict):
        self.obj, self.keywords = obj, keywords

    def __call__(self):
        """The module read at its own dtype (an AdapterError when this kind computes only in fixed point)."""
        return from_torch(self.obj, **self.keywords, check=False)

    def __getstate__(self):
        return {"obj": None, "keywords": {}}

    def __bool__(self) -> bool:
        return self.obj is not None


def _from_torch(obj, *, embedding, positions, head, precision, residual, key_embedding, value_embedding, vocab_size,
                seq_len, spec, check, norm, reference):
    """:func:`from_torch` without the float64 reading."""
    if reference is not None:
        model = from_torch(obj, embedding=embedding, positions=positions, head=head, precision=precision,
                           residual=residual, key_embedding=key_embedding, value_embedding=value_embedding,
                           vocab_size=vocab_size, seq_len=seq_len, spec=spec, check=check, norm=norm)
        return with_reference(model, reference)
    fmt = resolve_format(precision)
    check_arguments(obj, dict(embedding=embedding, positions=positions, head=head, norm=norm,
                              key_embedding=key_embedding, value_embedding=value_embedding, vocab_size=vocab_size,
                              seq_len=seq_len))
    if is_commsim_model(obj):
        if fmt is not None:
            raise AdapterError("the factory returned a commsim model, which fixes its own number format; "
                               "precision=/dtype= apply to torch modules")
        return obj
    if isinstance(obj, dict):
        return _from_parts(obj, fmt, vocab_size, seq_len, spec, check, head=head, embedding=embedding,
                           positions=positions, residual=residual, norm=norm)
    if isinstance(obj, ReadAttention):   # a declared attention (a dict of parts' 'core')
        return wrap_mha(obj, embedding, positions, head, fmt, residual=("stream" if norm is not None else "input")
                        if residual else "none", norm=norm, vocab_size=vocab_size, seq_len=seq_len, spec=spec)
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
    if is_mlp(obj):  # Linear layers with activations between: a fully-connected network (``fnn``)
        return wrap_mlp(obj, fmt, spec)
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
    if "MambaForCausalLM" in names:
        return wrap_hf_mamba(obj, fmt, **kw)
    if "RwkvForCausalLM" in names:
        return wrap_hf_rwkv(obj, fmt, **kw)
    if names & {"LlamaForCausalLM", "LlamaModel"}:
        return wrap_llama(obj, fmt, head=head, **kw)
    if is_mambapy(obj):
        return wrap_mambapy(obj, fmt, embedding=embedding, head=head, **kw)
    if any(n.endswith("PreTrainedModel") for n in names):   # by config.model_type; others refused, naming why
        return wrap_decoder(obj, fmt, head=head, **kw)
    if is_graph_module(obj):   # [SHT23] graph transformers and third-order attention (.graph)
        return wrap_graph(obj, fmt, seq_len=seq_len, spec=spec, check=check)
    if is_third_order_module(obj):
        return wrap_third_order(obj, fmt, spec=spec)
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
    core = parts["core"]
    if isinstance(core, dict):   # a declared attention: query, key, value, out, heads, scale, mask, rope, alibi
        from protocols.adapters.torch.handwritten import declared_attention
        core = declared_attention(core)
    if parts.get("mlp") is not None:   # the block's second residual branch, r + mlp(r), before the head
        import torch.nn as nn
        from protocols.adapters.torch.blocks import ResidualBranch
        mlp = parts["mlp"]
        mlp = nn.Sequential(*mlp) if isinstance(mlp, (list, tuple)) else mlp
        kw["head"] = nn.Sequential(ResidualBranch(mlp), *([] if kw["head"] is None else [kw["head"]]))
    model = from_torch(core, precision=fmt, vocab_size=vocab_size, seq_len=seq_len, spec=spec, check=check,
                       key_embedding=parts.get("key_embedding"), value_embedding=parts.get("value_embedding"), **kw)
    return model if parts.get("module") is None else with_reference(model, parts["module"], param="model")


def with_reference(model, module, *, param: str = "reference"):
    """``model`` with ``module``'s own forward as the reference of its agreement check (module docstring); the
    forward is run once on probe tokens, and an :class:`AdapterError` naming ``param`` says when it cannot be."""
    try:
        import torch.nn as nn
    except ImportError:  # pragma: no cover - exercised without torch
        raise AdapterError("a reference module needs torch, which is not installed", param) from None
    where = "the parts' 'module'" if param == "model" else "reference="
    if not isinstance(module, nn.Module):
        raise AdapterError(f"{where} must be the torch module the parts come from; got {type(module).__name__}", param)
    if not isinstance(model, TorchTrust):
        raise AdapterError(f"{where} is compared with a model wrapped from torch; got a {type(model).__name__}", param)
    module.eval()
    forward = ModuleForward(module)
    probe = probe_tokens(model, 2)
    try:
        forward(probe)
    except Exception as exc:  # noqa: BLE001 - the user's forward
        raise AdapterError(f"{where}: {type(module).__name__}'s forward did not run on token ids of shape "
                           f"{probe.shape} ({type(exc).__name__}: {exc}); it must map token ids (batch, length) to "
                           f"the outputs", param) from None
    model.torch_forward = forward
    return model


def agreement(model, tokens=None, *, rows: int = 16, seed: int = 0) -> dict:
    """How closely the commsim model follows its reference (the torch module's own forward, or the parts
    composed: module docstring) on ``tokens`` (default: random rows), at the last position (every position
    when the forward returns them all), by the one rule (:func:`~protocols.adapters.torch.trust.judge`).
    Returns the rule's keys -- ``ok``, ``atol``, ``rtol``, ``max_abs_diff``, ``reference``, ``note``,
    ``max_allowed``, ``format``, ``label_agreement`` -- with ``positions`` and ``rows``: the same as the
    report's ``torch_agreement`` on those rows."""
    if not isinstance(model, TorchTrust) or model.torch_forward is None:
        raise AdapterError("this model keeps no torch forward to compare with")
    if tokens is None:
        tokens = probe_tokens(model, rows, seed)
    tokens = np.atleast_2d(np.asarray(tokens))
    probe = np.asarray(model.torch_forward(tokens[:1]), dtype=np.float64)
    positions = range(tokens.shape[1]) if probe.ndim == 3 and not isinstance(model, AttentionLayer) else None
    return {**model.framework_agreement(tokens, positions), "rows": int(tokens.shape[0])}
