"""``from_torch``: any supported torch object -> a commsim model, and the agreement check.

Accepted: ``nn.RNN``/``nn.LSTM``/``nn.GRU`` and ``nn.MultiheadAttention`` cores (with the
embedding and head given), a wrapping ``nn.Module`` that holds one such core with its
``nn.Embedding``(s) and head modules (found by looking at its children, then *verified* against the
module's own forward), a dict of parts ``{"core", "embedding", "positions", "head", ...}``, a
one-layer Hugging Face GPT-2, TransformerLens ``HookedTransformer`` (3.x), ``TransformerBridge``
and TL-native models (4.x).  Commsim models pass through unchanged.
"""
from __future__ import annotations

import numpy as np

from commsim.core.precision import NumberFormat, parse_format
from protocols.adapters.torch.fold import TWO_LAYERS
from protocols.adapters.torch.gpt2 import wrap_gpt2
from protocols.adapters.torch.layers import AdapterError, tensor, within_tolerance
from protocols.adapters.torch.mha import wrap_mha
from protocols.adapters.torch.rnn import wrap_recurrent
from protocols.adapters.torch.tlens import wrap_bridge, wrap_hooked, wrap_tl_native
from protocols.models.attention import AttentionLayer
from protocols.models.recurrent import RecurrentModel

#: keys of a dict of parts (a factory's return value, or a torch.save'd file)
PARTS = ("core", "embedding", "positions", "head", "residual", "key_embedding", "value_embedding")


def resolve_format(precision) -> NumberFormat | None:
    """A NumberFormat from a format, its name (``16``, ``fixed16.8``, ``bfloat16``) or None."""
    if precision is None or isinstance(precision, NumberFormat):
        return precision
    return parse_format(str(precision))


def _class_names(obj) -> set[str]:
    """The names of the object's classes, its bases included (library types checked without importing them)."""
    return {c.__name__ for c in type(obj).__mro__}


def is_commsim_model(obj) -> bool:
    """Is the object already a commsim model (recurrent or attention)?"""
    return isinstance(obj, (RecurrentModel, AttentionLayer))


def from_torch(obj, *, embedding=None, positions=None, head=None, precision=None, residual: bool | None = None,
               key_embedding=None, value_embedding=None, vocab_size: int | None = None, seq_len: int | None = None,
               spec: str = "", check: bool = True):
    """A commsim model for ``obj`` (module docstring).  ``precision``: a NumberFormat or its name
    (``"16"``, ``"fixed16.8"``, ``"bfloat16"``); default: the module's dtype (float32 -> p = 32).
    ``vocab_size``/``seq_len`` limit the embedding tables to the task's tokens and length."""
    fmt = resolve_format(precision)
    if is_commsim_model(obj):
        if fmt is not None:
            raise AdapterError("the factory returned a commsim model, which fixes its own number format; "
                               "precision=/dtype= apply to torch modules")
        return obj
    if isinstance(obj, dict):
        return _from_parts(obj, fmt, vocab_size, seq_len, spec, check, head=head, embedding=embedding,
                           positions=positions, residual=residual)
    try:
        import torch.nn as nn
    except ImportError:  # pragma: no cover - exercised without torch
        raise AdapterError(f"a {type(obj).__name__} is not a commsim model, and torch is not installed "
                           f"(pip install 'commsim[torch]')") from None
    if not isinstance(obj, nn.Module):
        raise AdapterError(f"expected a torch module, a dict of parts ({', '.join(PARTS)}) or a commsim model; "
                           f"got {type(obj).__name__}")
    obj.eval()
    names = _class_names(obj)
    kw = dict(vocab_size=vocab_size, seq_len=seq_len, spec=spec)
    if isinstance(obj, nn.RNNBase):
        return wrap_recurrent(obj, embedding, head, fmt, vocab_size=vocab_size, spec=spec)
    if isinstance(obj, nn.MultiheadAttention):
        return wrap_mha(obj, embedding, positions, head, fmt, residual=bool(residual), key_embedding=key_embedding,
                        value_embedding=value_embedding, **kw)
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
    return _discover(obj, fmt, vocab_size, seq_len, spec, check, head=head, embedding=embedding, positions=positions,
                     residual=residual)


def _from_parts(parts: dict, fmt, vocab_size, seq_len, spec, check, **given):
    """A model from a dict of parts (``core`` and optional ``embedding``, ``head``, ...)."""
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise AdapterError(f"unknown part(s) {', '.join(map(repr, unknown))}; a dict of parts has keys "
                           f"{', '.join(PARTS)}")
    if "core" not in parts:
        raise AdapterError(f"a dict of parts needs a 'core' (an nn.LSTM/nn.GRU/nn.RNN or nn.MultiheadAttention); "
                           f"it has {', '.join(map(repr, parts)) or 'nothing'}")
    kw = {k: parts.get(k, given.get(k)) for k in ("embedding", "positions", "head", "residual")}
    return from_torch(parts["core"], precision=fmt, vocab_size=vocab_size, seq_len=seq_len, spec=spec, check=check,
                      key_embedding=parts.get("key_embedding"), value_embedding=parts.get("value_embedding"), **kw)


# ---- discovery in a wrapping module ----------------------------------------------------------------
def _discover(module, fmt, vocab_size, seq_len, spec, check, *, head=None, embedding=None, positions=None,
              residual=None):
    """Find the core, embeddings and head in a wrapping module and verify them against its forward."""
    import torch.nn as nn
    label = type(module).__name__
    cores = [(n, m) for n, m in module.named_modules() if isinstance(m, (nn.RNNBase, nn.MultiheadAttention))]
    nested = [(n, m) for n, m in module.named_modules() if n and _class_names(m) & {
        "GPT2LMHeadModel", "GPT2Model", "HookedTransformer", "TransformerBridge", "NativeModel"}]
    if not cores and len(nested) == 1:
        inner = nested[0][1]
        model = from_torch(inner, precision=fmt, vocab_size=vocab_size, seq_len=seq_len, spec=spec, head=head)
        return _verify(model, module, label, check, fmt)
    if not cores:
        raise AdapterError(f"{label} holds no nn.RNN/nn.LSTM/nn.GRU, nn.MultiheadAttention, GPT-2 or TransformerLens "
                           f"model; commsim wraps recurrent cores and one-layer attention")
    rnn = [c for c in cores if isinstance(c[1], nn.RNNBase)]
    mha = [c for c in cores if isinstance(c[1], nn.MultiheadAttention)]
    if rnn and mha:
        raise AdapterError(f"{label} mixes a recurrent core ({rnn[0][0]}) with attention ({mha[0][0]}); commsim wraps "
                           f"one or the other")
    if len(mha) > 1:
        raise AdapterError(f"{label} has {len(mha)} attention layers ({', '.join(n for n, _ in mha)}); {TWO_LAYERS}")
    if len(rnn) > 1:
        raise AdapterError(f"{label} has {len(rnn)} recurrent cores ({', '.join(n for n, _ in rnn)}); commsim "
                           f"wraps one (stacked) core: use num_layers=L, whose state is every layer's state")
    core_name, core = cores[0]
    children = list(module.named_children())
    top = core_name.split(".")[0]
    index = next(i for i, (n, _) in enumerate(children) if n == top)
    embeddings = [(n, m) for n, m in module.named_modules() if isinstance(m, nn.Embedding)]
    tokens_emb, position_emb = embedding, positions
    if tokens_emb is None:
        toks = [(n, m) for n, m in embeddings if "pos" not in n.lower()]
        if len(toks) != 1:
            raise AdapterError(f"{label}: cannot tell the token embedding among {[n for n, _ in toks] or 'no'} "
                               f"nn.Embedding modules; return a dict of parts {{'embedding', 'core', 'head'}}")
        tokens_emb = toks[0][1]
    if position_emb is None and isinstance(core, nn.MultiheadAttention):
        pos = [(n, m) for n, m in embeddings if "pos" in n.lower()]
        if len(pos) > 1:
            raise AdapterError(f"{label}: several position embeddings ({', '.join(n for n, _ in pos)})")
        position_emb = pos[0][1] if pos else None
    used = {id(tokens_emb), id(position_emb), id(core)}
    before = [(n, m) for n, m in children[:index]
              if id(m) not in used and not isinstance(m, (nn.Dropout, nn.Identity))
              and not any(id(sub) in used for sub in m.modules()) and any(True for _ in m.parameters())]
    if before:
        raise AdapterError(f"{label}: {before[0][0]} ({type(before[0][1]).__name__}) sits between the embedding and "
                           f"the core; commsim cannot tell what it does: return a dict of parts instead")
    if head is None:
        after = [m for _, m in children[index + 1:] if id(m) not in used]
        head = None if not after else (after[0] if len(after) == 1 else nn.Sequential(*after))
    candidates = []
    native = None
    if isinstance(core, nn.RNNBase):
        what = f"{label}: {core_name} with {type(tokens_emb).__name__} and " \
               f"{type(head).__name__ if head is not None else 'no'} head"
        candidates.append(lambda f: wrap_recurrent(core, tokens_emb, head, f, vocab_size=vocab_size, spec=spec,
                                                   source=what))
    else:
        for res in ((False, True) if residual is None else (bool(residual),)):
            candidates.append(lambda f, res=res: wrap_mha(core, tokens_emb, position_emb, head, f, residual=res,
                                                          vocab_size=vocab_size, seq_len=seq_len, spec=spec))
    failures = []
    for build in candidates:
        native = build(None)
        try:
            checked = _verify(native, module, label, check, None, raise_on_mismatch=True)
        except AdapterError as exc:
            failures.append(str(exc))
            continue
        if fmt is None:
            return checked
        model = build(fmt)
        model.torch_forward = checked.torch_forward
        return model
    raise AdapterError(failures[-1] + ("" if len(failures) < 2 else " (also tried with a residual connection)"))


class ModuleForward:
    """tokens -> the module's own outputs (float64 numpy); picklable when the module is."""

    def __init__(self, module):
        self.module = module

    def __call__(self, tokens):
        """The module's outputs on token ids (logits when it returns an output object)."""
        import torch
        with torch.no_grad():
            out = self.module(torch.as_tensor(np.atleast_2d(np.asarray(tokens)), dtype=torch.long))
            if isinstance(out, (tuple, list)):
                out = out[0]
            if hasattr(out, "logits"):
                out = out.logits
            return tensor(out)


def _module_forward(module, dtype=None) -> ModuleForward:
    """A function tokens -> the module's own outputs (float64 numpy)."""
    return ModuleForward(module)


def _verify(model, module, label, check, fmt, raise_on_mismatch=True):
    """Compare ``model`` (built in the module's own dtype) with ``module``'s forward on probe tokens;
    on success the model's ``torch_forward`` becomes the module's own forward."""
    dtype = next(module.parameters()).dtype
    forward = _module_forward(module, dtype)
    if not check:
        model.torch_forward = forward
        return model
    probe = _probe_tokens(model)
    try:
        forward(probe)
    except Exception as exc:  # the module's own forward does not take token ids
        import torch.nn as nn
        if isinstance(module, nn.Sequential):  # e.g. Sequential(Embedding, LSTM, Linear): its forward cannot run
            return model                       # as a pipeline; the parts' own torch forward stays the reference
        raise AdapterError(f"{label}'s forward did not run on token ids of shape {probe.shape} "
                           f"({type(exc).__name__}: {exc}); return a dict of parts from your factory instead") from None
    old = model.torch_forward
    model.torch_forward = forward
    result = agreement(model, probe)
    if not result["agrees"]:
        model.torch_forward = old
        raise AdapterError(f"{label}'s forward does not match embedding -> core -> head as commsim found them "
                           f"({result['note']}); return a dict of parts {{'embedding', 'core', 'head'}} from your "
                           f"factory to say what is what")
    return model


def _probe_tokens(model, rows: int = 8, seed: int = 0) -> np.ndarray:
    """Random token rows within the model's vocabulary and positions (for the agreement check)."""
    vocab = model.vocab_size
    length = min(getattr(model, "max_positions", None) or 8, 8)
    return np.random.default_rng(seed).integers(0, vocab, size=(rows, length))


def agreement(model, tokens=None, *, rows: int = 16, seed: int = 0) -> dict:
    """How closely the commsim model follows the torch module's own forward on ``tokens`` (default:
    random rows).  Returns ``agrees``, ``max_abs_diff``, ``allowed``, ``format`` and a ``note``.
    The tolerance (:data:`~protocols.adapters.torch.layers.TOLERANCE`) is that of the module's dtype;
    under a ``precision=`` override the comparison is reported, not judged."""
    forward = getattr(model, "torch_forward", None)
    if forward is None:
        raise AdapterError("this model keeps no torch forward to compare with")
    if tokens is None:
        tokens = _probe_tokens(model, rows, seed)
    tokens = np.atleast_2d(np.asarray(tokens))
    theirs = np.asarray(forward(tokens), dtype=np.float64)
    if isinstance(model, AttentionLayer):
        ours = model.forward(tokens)
        fmt_name = model.format.name
        if theirs.ndim == 3:
            theirs = theirs[:, -1]
    else:
        fmt_name = model.format.name
        if theirs.ndim == 3:
            ours = model.forward_batch(tokens, output_positions=range(tokens.shape[1]))
        else:
            ours = model.forward_batch(tokens)[:, 0]
    ok, diff, allowed = within_tolerance(ours, theirs, fmt_name)
    note = (f"max |commsim - torch| = {diff:.3g} (allowed {allowed:.3g} for {fmt_name})" if ours.shape == theirs.shape
            else f"output shapes differ: commsim {ours.shape}, torch {theirs.shape}")
    labels_equal = float(np.mean(np.argmax(ours, -1) == np.argmax(theirs, -1))) if ours.shape == theirs.shape else 0.0
    return {"agrees": ok, "max_abs_diff": diff, "allowed": allowed, "format": fmt_name, "note": note,
            "label_agreement": labels_equal, "rows": int(tokens.shape[0])}
