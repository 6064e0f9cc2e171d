"""A user's wrapping ``nn.Module``: find the core and the parts around it from what the forward does
(:mod:`.trace`), build the commsim model, and *verify* it against the module's own forward.

The core is one ``nn.RNN``/``nn.LSTM``/``nn.GRU``, one ``nn.MultiheadAttention``, one
``nn.TransformerEncoderLayer`` or a one-layer ``nn.TransformerEncoder``.  The forward, run once on probe
token ids, says which ``nn.Embedding`` reads the tokens and which the positions 0..L-1, which layers it
calls before the core (per-position layers -- an embedding LayerNorm, a pre-LN block's norm -- folded into
the embedding table), and which after it (the head, in call order).  With an attention core the readout
must read the core's output at the last position only (else the single-query protocol does not apply).
Where the forward leaves a choice (is there a residual connection, and around which norm), each reading
is built and the one that matches the module's forward is kept; none matching is refused.
"""
from __future__ import annotations

import numpy as np

from protocols.adapters.torch.encoder import encoder_parts, wrap_encoder
from protocols.adapters.torch.fold import TWO_LAYERS
from protocols.adapters.torch.layers import AdapterError, embedding_weights
from protocols.adapters.torch.mha import _batch_first, per_position, wrap_mha
from protocols.adapters.torch.rnn import wrap_recurrent
from protocols.adapters.torch.trace import find_roles, pooled_readout_reason, readout_positions, trace_forward
from protocols.adapters.torch.trust import ModuleForward, compare_outputs, judge

#: how a user says what is what when the forward cannot be read: every part a pre-LN block with an MLP needs
PARTS_HINT = ("return a dict of parts from your factory to say what is what: {'embedding': tok, 'positions': pos, "
              "'norm': ln_1, 'core': attn, 'residual': True, 'mlp': nn.Sequential(ln_2, mlp), "
              "'head': nn.Sequential(ln_f, lm_head), 'module': your_module} (leave out what your model lacks)")

#: library models found inside a wrapping module (wrapped whole, then verified)
NESTED = {"GPT2LMHeadModel", "GPT2Model", "HookedTransformer", "TransformerBridge", "NativeModel"}


def class_names(obj) -> set[str]:
    """The names of the object's classes, its bases included (library types checked without importing them)."""
    return {c.__name__ for c in type(obj).__mro__}


def _core_types():
    import torch.nn as nn
    return (nn.RNNBase, nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerEncoder)


def find_cores(module) -> list:
    """The outermost cores among the module's submodules, as (name, module)."""
    cores = [(n, m) for n, m in module.named_modules() if isinstance(m, _core_types())]
    return [(n, m) for n, m in cores if not any(o != n and n.startswith(o + ".") for o, _ in cores)]


def _probe(module, vocab_size, seq_len, rows: int = 4) -> np.ndarray:
    """Token ids every embedding of the module can read: below the smallest table, at most 8 positions."""
    import torch.nn as nn
    sizes = [m.num_embeddings for m in module.modules() if isinstance(m, nn.Embedding)]
    vocab = min(sizes + ([vocab_size] if vocab_size else []) or [2])
    length = max(2, min([8, seq_len or 8] + sizes))
    return np.random.default_rng(0).integers(0, max(vocab, 1), size=(rows, length))


def discover(module, fmt, vocab_size, seq_len, spec, check, *, adapt, head=None, embedding=None, positions=None,
             residual=None):
    """A commsim model for a wrapping module (module docstring); ``adapt`` is :func:`.adapt.from_torch` (for a
    library model inside the module)."""
    import torch.nn as nn
    label = type(module).__name__
    cores = find_cores(module)
    nested = [(n, m) for n, m in module.named_modules() if n and class_names(m) & NESTED]
    if not cores and len(nested) == 1:
        model = adapt(nested[0][1], precision=fmt, vocab_size=vocab_size, seq_len=seq_len, spec=spec, head=head)
        return verify(model, module, label, check)
    probe = _probe(module, vocab_size, seq_len)
    if not cores:   # a hand-written attention (SDPA or an explicit softmax), read from the forward
        from protocols.adapters.torch.handwritten import find_attention
        none = (f"{label} holds no nn.RNN/nn.LSTM/nn.GRU, nn.MultiheadAttention, nn.TransformerEncoderLayer, GPT-2 "
                f"or TransformerLens model")
        try:
            found = find_attention(module, probe)
        except AdapterError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's forward
            raise AdapterError(f"{none}, and its forward did not run on token ids of shape {probe.shape} "
                               f"({type(exc).__name__}: {exc}) to show a hand-written attention") from None
        if found is None:
            raise AdapterError(f"{none}, and its forward computes no softmax attention; commsim wraps recurrent cores "
                               f"and one-layer attention")
        cores = [found]
    inline = None
    if cores[0][0] == "" and cores[0][1] is module:   # the attention is computed in the module's own forward
        from protocols.adapters.torch.inline import read_inline
        inline = read_inline(module, probe, label)
        cores = [(f"{label}'s own forward", inline.attention.module)]
    rnn = [c for c in cores if isinstance(c[1], nn.RNNBase)]
    att = [c for c in cores if not isinstance(c[1], nn.RNNBase)]
    if rnn and att:
        raise AdapterError(f"{label} mixes a recurrent core ({rnn[0][0]}) with attention ({att[0][0]}); commsim wraps "
                           f"one or the other")
    if len(att) > 1:
        raise AdapterError(f"{label} has {len(att)} attention layers ({', '.join(n for n, _ in att)}); {TWO_LAYERS}")
    if len(rnn) > 1:
        raise AdapterError(f"{label} has {len(rnn)} recurrent cores ({', '.join(n for n, _ in rnn)}); commsim "
                           f"wraps one (stacked) core: use num_layers=L, whose state is every layer's state")
    core_name, core = cores[0]
    if isinstance(core, nn.TransformerEncoder):
        try:
            encoder_parts(core)
        except AdapterError as exc:
            raise AdapterError(f"{label}: {exc}") from None
    roles = _roles(module, core_name, core, probe, label) if inline is None else inline.roles
    attention = core if inline is None else inline.attention
    if inline is None and not isinstance(core, _core_types()):
        from protocols.adapters.torch.handwritten import read_attention
        if roles.get("core_input") is None:
            raise AdapterError(f"{label}: {core_name} is not called on a tensor; commsim reads an attention "
                               f"submodule called as attn(x)")
        attention = read_attention(core, roles["core_input"], label)
    tokens_emb = embedding if embedding is not None else roles["tokens"]
    position_emb = positions if positions is not None else roles["positions"]
    if tokens_emb is None and not isinstance(core, nn.RNNBase):
        raise AdapterError(f"{label}: no nn.Embedding reads the token ids; return a dict of parts "
                           f"{{'embedding', 'core', 'head'}}")
    after = roles["after"]
    heads = [head]
    if head is None:
        from protocols.adapters.torch.blocks import head_readings
        width = getattr(attention, "embed_dim", None) or getattr(getattr(core, "self_attn", None), "embed_dim", None)
        heads = head_readings(after, width, next(core.parameters()).dtype) if after else [None]
        head = heads[0]
    before = roles["before"]
    if check and roles["traced"] and not isinstance(core, nn.RNNBase) and (inline is None or inline.out is not None):
        read = readout_positions(module, core if inline is None else inline.out, probe, _batch_first(core))
        reason = pooled_readout_reason(label, core_name, read, probe.shape[1])
        if reason:
            raise AdapterError(reason)
    kw = dict(vocab_size=vocab_size, seq_len=seq_len, spec=spec)
    candidates = []
    if isinstance(core, nn.RNNBase):
        if position_emb is not None:
            raise AdapterError(f"{label} adds a position embedding to a recurrent core's input; the hidden-state "
                               f"handoff (Theorem 2 of [BHBK24]) wraps a recurrence over the tokens alone")
        what = f"{label}: {core_name} with {type(tokens_emb).__name__} and " \
               f"{type(head).__name__ if head is not None else 'no'} head"
        candidates.append(lambda f: wrap_recurrent(core, _pre_folded(tokens_emb, before, f), head, f,
                                                   vocab_size=vocab_size, spec=spec, source=what))
    elif attention is not core or isinstance(core, nn.MultiheadAttention):
        splits = [(before, [], "none"), (before, [], "input")] + \
            [(before[:i], before[i:], "stream") for i in range(len(before))]
        if residual is not None:
            splits = [s for s in splits if (s[2] != "none") == bool(residual)]
        for h in heads:   # the layers after the attention in order first, then with an MLP branch (.blocks)
            for pre, norm, res in splits:
                if h is not heads[0] and res == "none":
                    continue
                candidates.append(lambda f, pre=pre, norm=norm, res=res, h=h: wrap_mha(
                    attention, tokens_emb, position_emb, h, f, residual=res, pre=pre or None, norm=norm or None, **kw))
    else:
        candidates.append(lambda f: wrap_encoder(core, tokens_emb, position_emb, head, f, pre=before or None, **kw))
    failures = []
    for build in candidates:
        native = build(None)
        try:
            # several readings: only the module's own forward tells which is the module, even unchecked
            checked = verify(native, module, label, check or len(candidates) > 1)
        except AdapterError as exc:
            failures.append(str(exc))
            continue
        if fmt is None:
            return checked
        model = build(fmt)
        model.torch_forward = checked.torch_forward
        return model
    raise AdapterError(failures[-1] + ("" if len(failures) < 2 else
                                       f" (also tried {len(failures) - 1} other reading(s): with and without a "
                                       f"residual connection, around each layer before the core, with each "
                                       f"prefix of the layers after it as an MLP branch)"))


def _roles(module, core_name, core, probe, label) -> dict:
    """The roles from the traced forward, or -- for an ``nn.Sequential`` whose forward cannot run as a
    pipeline (a recurrent core returns a tuple) -- from its order, which is its forward."""
    import torch.nn as nn
    try:
        traced = trace_forward(module, probe)
    except Exception as exc:  # noqa: BLE001 - the user's forward: any failure is reported or worked around
        if not isinstance(module, nn.Sequential):
            raise AdapterError(f"{label}'s forward did not run on token ids of shape {probe.shape} "
                               f"({type(exc).__name__}: {exc}); return a dict of parts from your factory "
                               f"instead") from None
        children = list(module.named_children())
        index = next(i for i, (n, _) in enumerate(children) if core_name == n or core_name.startswith(n + "."))
        embeddings = [(n, m) for n, m in children[:index] if isinstance(m, nn.Embedding)]
        before = [m for n, m in children[:index] if not isinstance(m, (nn.Embedding, nn.Dropout, nn.Identity))]
        return {"tokens": embeddings[0][1] if embeddings else None, "positions": None, "before": before,
                "after": [m for _, m in children[index + 1:]], "traced": False}
    roles = find_roles(traced, core_name, probe, label)
    positions = roles.positions and roles.positions[1]
    if positions is None:   # a position table read by indexing its weight (never called): named "pos..."
        unused = [m for n, m in module.named_modules() if isinstance(m, nn.Embedding) and n not in traced.calls
                  and "pos" in n.lower()]
        positions = unused[0] if len(unused) == 1 else None
    return {"tokens": roles.tokens and roles.tokens[1], "positions": positions,
            "before": [m for _, m in roles.before], "after": [m for _, m in roles.after], "traced": True,
            "core_input": traced.inputs.get(core_name)}


def _pre_folded(embedding, before, fmt):
    """A recurrent core's token embedding with the per-position layers before the core applied to its rows
    (they see one token's vector, so they are a function of the token)."""
    if not before or embedding is None:
        return embedding
    return per_position(before, fmt, "between the embedding and the recurrent core")(
        embedding_weights(embedding, "token embedding"))


def probe_tokens(model, rows: int = 256, seed: int = 0) -> np.ndarray:
    """Random token rows within the model's vocabulary and positions (for the agreement check)."""
    length = min(getattr(model, "max_positions", None) or 8, 8)
    return np.random.default_rng(seed).integers(0, model.vocab_size, size=(rows, length))


def verify(model, module, label, check):
    """Compare ``model`` (built in the module's own dtype) with ``module``'s forward on probe tokens by the one
    rule (:func:`~protocols.adapters.torch.trust.judge`); on success the model's ``torch_forward`` becomes the
    module's own forward (its reference)."""
    forward = ModuleForward(module)
    if not check:
        model.torch_forward = forward
        return model
    probe = probe_tokens(model)
    try:
        forward(probe)
    except Exception as exc:  # the module's own forward does not take token ids
        import torch.nn as nn
        if isinstance(module, nn.Sequential):  # e.g. Sequential(Embedding, LSTM, Linear): its forward cannot run
            # as a pipeline (the LSTM returns a tuple); its layers in order are the model, so the parts' own
            # torch forward, which applies them in that order, is the user's model
            model.torch_forward.whole_model = True
            model.torch_forward.reference = (f"{label}'s layers applied in order (its own forward cannot run: "
                                             f"{type(exc).__name__})")
            return model
        raise AdapterError(f"{label}'s forward did not run on token ids of shape {probe.shape} "
                           f"({type(exc).__name__}: {exc}); return a dict of parts from your factory instead") from None
    old = model.torch_forward
    model.torch_forward = forward
    theirs = forward(probe[:1])
    recurrent_all = theirs.ndim == 3 and hasattr(model, "forward_batch")
    compared = compare_outputs(model, probe, range(probe.shape[1]) if recurrent_all else None)
    judged = judge(compared.ours, compared.theirs, model.format.name, reference=forward.reference)
    if judged["ok"] is False:
        model.torch_forward = old
        raise AdapterError(f"{label}'s forward does not match embedding -> core -> head as commsim found them "
                           f"({judged['note']}); {PARTS_HINT}")
    return model
