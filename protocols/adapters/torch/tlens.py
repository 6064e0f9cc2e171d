"""One-layer TransformerLens models as commsim attention models (Theorem 4 of [BHBK24]):
``HookedTransformer`` (TransformerLens 3.x), TL-native models and ``TransformerBridge`` (4.x), folded
by :mod:`.fold` (norms before attention into the embedding table, the MLP, final norm and
unembedding into psi)."""
from __future__ import annotations

import numpy as np

from commsim.contract import Dense
from commsim.core.precision import NumberFormat
from protocols.adapters.torch.fold import (
    TWO_LAYERS,
    OneLayer,
    TorchAttention,
    build_attention,
    check_table_size,
    embedding_grid,
    fold_pre_attention,
    last_position_forward,
    quantized,
    vocab_and_positions,
)
from protocols.adapters.torch.gpt2 import wrap_gpt2
from protocols.adapters.torch.layers import (
    AdapterError,
    activation,
    format_for_dtype,
    identity,
    layer_norm,
    unwrap,
)


def _tl_norm(module, fmt, eps_default=1e-5):
    """A TransformerLens / TL-native norm module as a numpy function (None: identity)."""
    import torch.nn as nn
    module = unwrap(module)
    name = type(module).__name__
    eps = float(getattr(module, "eps", getattr(getattr(module, "cfg", None), "eps", eps_default)) or eps_default)
    if module is None or isinstance(module, nn.Identity) or name == "Identity":
        return identity
    if name in ("LayerNorm",):
        w = getattr(module, "w", getattr(module, "weight", None))
        b = getattr(module, "b", getattr(module, "bias", None))
        return layer_norm(quantized(fmt, w), quantized(fmt, b), eps)
    if name in ("LayerNormPre", "NativeLayerNormPre"):
        return layer_norm(None, None, eps)
    if name in ("RMSNorm", "NativeRMSNorm"):
        weight = quantized(fmt, getattr(module, "w", getattr(module, "weight", None)))
        return layer_norm(weight, None, eps, center=False)
    if name in ("RMSNormPre", "NativeRMSNormPre"):
        return layer_norm(None, None, eps, center=False)
    raise AdapterError(f"normalization {name} is not supported")


class ResidualReadout:
    """psi for a TransformerLens block: the residual steps after attention (MLP), the final norm,
    the unembedding, and the optional logit soft cap (picklable)."""

    def __init__(self, steps, final_norm, unembed, soft_cap):
        self.steps, self.final_norm, self.unembed = list(steps), final_norm, unembed
        self.cap = float(soft_cap or -1.0)

    def __call__(self, r):
        """The residual steps, the final norm, the unembedding and the soft cap."""
        for step in self.steps:
            r = step(r)
        logits = self.unembed(self.final_norm(r))
        return self.cap * np.tanh(logits / self.cap) if self.cap > 0 else logits


def _residual_readout(steps, final_norm, unembed, soft_cap) -> ResidualReadout:
    """psi for a TransformerLens block (:class:`ResidualReadout`)."""
    return ResidualReadout(steps, final_norm, unembed, soft_cap)


class MlpStep:
    """r -> r + out(act(inp(ln2(r)))), or with a gate r + out(act(gate(ln2(r))) * inp(ln2(r))) (picklable)."""

    def __init__(self, ln2, inp, out, act, gate=None):
        self.ln2, self.inp, self.out, self.act, self.gate = ln2, inp, out, act, gate

    def __call__(self, r):
        """One residual MLP step."""
        z = self.ln2(r)
        if self.gate is None:
            return r + self.out(self.act(self.inp(z)))
        return r + self.out(self.act(self.gate(z)) * self.inp(z))


def wrap_hooked(model, fmt: NumberFormat | None = None, *, vocab_size: int | None = None, seq_len: int | None = None,
                spec: str = "", torch_forward=None) -> TorchAttention:
    """Wrap a one-layer TransformerLens ``HookedTransformer`` (TransformerLens 3.x; attn-only or with MLP)."""
    cfg = model.cfg
    if cfg.n_layers != 1:
        raise AdapterError(f"this HookedTransformer has {cfg.n_layers} layers; {TWO_LAYERS}")
    if cfg.positional_embedding_type != "standard":
        raise AdapterError(f"positional_embedding_type={cfg.positional_embedding_type!r}: commsim's attention model "
                           f"adds absolute position embeddings to the input ('standard' only)")
    for flag in ("parallel_attn_mlp", "use_local_attn"):
        if getattr(cfg, flag, False):
            raise AdapterError(f"HookedTransformer with {flag}=True is not supported")
    if getattr(cfg, "n_key_value_heads", None) not in (None, cfg.n_heads):
        raise AdapterError("grouped-query attention (n_key_value_heads) is not supported for HookedTransformer")
    if float(getattr(cfg, "attn_scores_soft_cap", -1.0) or -1.0) > 0:
        raise AdapterError("soft-capped attention scores are not softmax attention of bilinear logits")
    dtype = next(model.parameters()).dtype
    fmt = format_for_dtype(dtype) if fmt is None else fmt
    block = model.blocks[0]
    attn = block.attn
    H, m, d = cfg.n_heads, cfg.d_head, cfg.d_model
    wte = quantized(fmt, model.embed.W_E)
    wpe = quantized(fmt, model.pos_embed.W_pos)
    vocab, P = vocab_and_positions(wte.shape[0], wpe.shape[0], vocab_size, seq_len, "this HookedTransformer")
    check_table_size(vocab, P, 2 * d + 1, "HookedTransformer")
    e = embedding_grid(wte, wpe, vocab, P, fmt)
    x = fold_pre_attention(e, _tl_norm(block.ln1, fmt), fmt)
    proj = {}
    for which, W, b in (("q", attn.W_Q, attn.b_Q), ("k", attn.W_K, attn.b_K), ("v", attn.W_V, attn.b_V)):
        proj[which] = ("x", np.transpose(quantized(fmt, W), (0, 2, 1)), quantized(fmt, b))   # (H, d, m) -> (H, m, d)
    scale = 1.0 / float(attn.attn_scale) if cfg.use_attn_scale else 1.0
    W_O = quantized(fmt, attn.W_O).reshape(H * m, d).T                                  # (H, m, d) -> (d, H m)
    b_O = quantized(fmt, attn.b_O)
    steps = []
    if not cfg.attn_only:
        ln2 = _tl_norm(block.ln2, fmt)
        mlp = block.mlp
        W_in, b_in = quantized(fmt, mlp.W_in), quantized(fmt, mlp.b_in)
        W_out, b_out = quantized(fmt, mlp.W_out), quantized(fmt, mlp.b_out)
        if cfg.act_fn in ("solu_ln",) or hasattr(mlp, "ln"):
            raise AdapterError(f"act_fn={cfg.act_fn!r} (an MLP with its own LayerNorm) is not supported")
        act = activation(cfg.act_fn)
        fc_in, fc_out = Dense.for_format(W_in, b_in, fmt), Dense.for_format(W_out, b_out, fmt)
        if getattr(cfg, "gated_mlp", False):
            gate = Dense.for_format(quantized(fmt, mlp.W_gate), None, fmt)
            steps.append(MlpStep(ln2, fc_in, fc_out, act, gate))
        else:
            steps.append(MlpStep(ln2, fc_in, fc_out, act))
    ln_final = _tl_norm(getattr(model, "ln_final", None), fmt) if hasattr(model, "ln_final") else identity
    unembed = Dense.for_format(quantized(fmt, model.unembed.W_U), quantized(fmt, model.unembed.b_U), fmt)
    post = _residual_readout(steps, ln_final, unembed, getattr(cfg, "output_logits_soft_cap", -1.0))

    what = (f"HookedTransformer, 1 layer, d={d}, heads={H}, d_head={m}" + (", attn-only" if cfg.attn_only else ", MLP")
            + f", normalization={cfg.normalization_type}")
    layer = OneLayer({"x": x}, proj, scale, W_O, b_O, e, post, unembed.outputs, what)
    torch_forward = torch_forward or last_position_forward(model, dtype)
    return build_attention(layer, fmt, spec=spec or "tl:hooked-transformer", torch_forward=torch_forward)


def wrap_tl_native(model, fmt: NumberFormat | None = None, *, vocab_size: int | None = None,
                   seq_len: int | None = None, spec: str = "", torch_forward=None) -> TorchAttention:
    """Wrap a one-layer TransformerLens 4 native model (``TransformerBridge.boot_native``'s ``NativeModel``)."""
    model = unwrap(model)
    cfg = model.cfg
    layers = list(model.layers)
    if len(layers) != 1:
        raise AdapterError(f"this TransformerLens model has {len(layers)} layers; {TWO_LAYERS}")
    if getattr(model, "pos", None) is None:
        raise AdapterError("rotary position embeddings rotate the queries and keys by position; commsim's attention "
                           "model adds absolute position embeddings to the input instead")
    block = unwrap(layers[0])
    attn = unwrap(block.attn)
    if float(getattr(attn, "attn_scores_soft_cap", -1.0) or -1.0) > 0:
        raise AdapterError("soft-capped attention scores are not softmax attention of bilinear logits")
    dtype = next(model.parameters()).dtype
    fmt = format_for_dtype(dtype) if fmt is None else fmt
    H, m, d = attn.n_heads, attn.d_head, attn.d_model
    wte, wpe = quantized(fmt, unwrap(model.tok_embed).weight), quantized(fmt, unwrap(model.pos).weight)
    vocab, P = vocab_and_positions(wte.shape[0], wpe.shape[0], vocab_size, seq_len, "this TransformerLens model")
    check_table_size(vocab, P, 2 * d + 1, "TransformerLens")
    e = embedding_grid(wte, wpe, vocab, P, fmt)
    x = fold_pre_attention(e, _tl_norm(block.ln1, fmt), fmt)
    repeats = getattr(attn, "kv_repeats", 1)
    proj = {}
    for which in "qkv":
        lin = unwrap(getattr(attn, which))
        W, b = quantized(fmt, lin.weight), quantized(fmt, lin.bias)
        heads = H if which == "q" else H // repeats
        W3 = W.reshape(heads, m, d)
        b2 = None if b is None else b.reshape(heads, m)
        if which != "q" and repeats > 1:  # grouped-query attention: each k/v head serves `repeats` query heads
            W3 = np.repeat(W3, repeats, axis=0)
            b2 = None if b2 is None else np.repeat(b2, repeats, axis=0)
        proj[which] = ("x", W3, b2)
    o = unwrap(attn.o)
    W_O, b_O = quantized(fmt, o.weight), quantized(fmt, o.bias)
    steps = []
    if not cfg.attn_only:
        ln2 = _tl_norm(block.ln2, fmt)
        mlp = unwrap(block.mlp)
        if getattr(mlp, "ln", None) is not None:
            raise AdapterError("an MLP with its own LayerNorm (solu_ln) is not supported")
        act = activation(cfg.act_fn or ("silu" if cfg.gated_mlp else "gelu"))
        if cfg.gated_mlp:
            lin = {k: unwrap(getattr(mlp, k)) for k in ("gate", "in", "out")}
            gate, inp, out = (Dense.for_format(quantized(fmt, lin[k].weight).T, quantized(fmt, lin[k].bias), fmt)
                              for k in ("gate", "in", "out"))
            steps.append(MlpStep(ln2, inp, out, act, gate))
        else:
            fc_in, fc_out = unwrap(mlp.fc_in), unwrap(mlp.fc_out)
            a_in = Dense.for_format(quantized(fmt, fc_in.weight).T, quantized(fmt, fc_in.bias), fmt)
            a_out = Dense.for_format(quantized(fmt, fc_out.weight).T, quantized(fmt, fc_out.bias), fmt)
            steps.append(MlpStep(ln2, a_in, a_out, act))
    ln_out = _tl_norm(model.ln_out, fmt)
    head = unwrap(model.head)
    unembed = Dense.for_format(quantized(fmt, head.weight).T, quantized(fmt, getattr(head, "bias", None)), fmt)
    post = _residual_readout(steps, ln_out, unembed, getattr(model, "output_logits_soft_cap", -1.0))

    what = (f"TransformerLens native model, 1 layer, d={d}, heads={H}, d_head={m}" +
            (", attn-only" if cfg.attn_only else ", MLP") + f", normalization={cfg.normalization_type}")
    layer = OneLayer({"x": x}, proj, 1.0 / float(attn.scale), W_O, b_O, e, post, unembed.outputs, what)
    torch_forward = torch_forward or last_position_forward(model, dtype)
    return build_attention(layer, fmt, spec=spec or "tl:native", torch_forward=torch_forward)


def wrap_bridge(bridge, fmt: NumberFormat | None = None, *, vocab_size: int | None = None, seq_len: int | None = None,
                spec: str = "") -> TorchAttention:
    """Wrap a TransformerLens ``TransformerBridge`` around a one-layer GPT-2 or TL-native model.

    The agreement check runs the bridge's own forward (its hooks and components), not the bare model."""
    inner = bridge.original_model
    dtype = next(inner.parameters()).dtype
    forward = last_position_forward(bridge, dtype)
    name = type(inner).__name__
    if name in ("GPT2LMHeadModel", "GPT2Model"):
        return wrap_gpt2(inner, fmt, vocab_size=vocab_size, seq_len=seq_len, spec=spec or "tl:bridge(gpt2)",
                         torch_forward=forward)
    if name == "NativeModel":
        return wrap_tl_native(inner, fmt, vocab_size=vocab_size, seq_len=seq_len, spec=spec or "tl:bridge(native)",
                              torch_forward=forward)
    layers = getattr(getattr(bridge, "cfg", None), "n_layers", None)
    if layers is not None and layers != 1:
        raise AdapterError(f"this TransformerBridge wraps a {layers}-layer {name}; {TWO_LAYERS}")
    raise AdapterError(f"a TransformerBridge around {name} is not supported (supported: GPT-2, TransformerLens "
                       f"native models)")
