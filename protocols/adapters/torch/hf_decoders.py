"""One-layer Hugging Face decoders read by architecture (``config.model_type``), folded into the attention exchange
of Theorem 4 of [BHBK24] as :mod:`.llama` folds a Llama, never approximated.  What each architecture adds to a
Llama, and how it is folded:

``qwen2``
    biases on q, k and v: they ride on the folded table's constant coordinate (:func:`~.fold.bias_carrier`);
    a sliding window is refused when it is shorter than the sequence (below);
``mistral``
    a sliding window (``sliding_window``): key j is seen by query i iff i - j < W, so the query at the last of L
    positions sees every position iff W >= L; a shorter window is refused (the exchange attends to all);
``phi3``
    q, k, v in one ``qkv_proj`` (rows q, then k, then v) and the MLP's gate and up in one ``gate_up_proj``
    (first half gate, second half up); a ``partial_rotary_factor`` rotates the first coordinates only;
``gemma``
    the embedding multiplied by sqrt(d) rounded to the model's dtype, RMSNorms computing x (1 + w), a GeGLU MLP
    (``gelu_pytorch_tanh``): all of it phi or psi;
``gpt_neox``
    LayerNorms, q/k/v in one ``query_key_value`` laid out per head (q, k, v of head h side by side), partial
    rotary (``rotary_pct``: the first coordinates of each head, rotate-halves), and the parallel residual
    x + attn(ln_1(x)) + mlp(ln_2(x)): psi reads the attention's output and the query's stream x_N apart
    (:class:`ParallelPsi`);
``gptj``
    the parallel residual with one shared ``ln_1`` (x + attn(ln_1 x) + mlp(ln_1 x)), partial interleaved rotary
    (``rotary_dim``; GPT-J's ``rotate_every_two``): each head's rotated coordinates are permuted to halves
    (evens, then odds) in W_Q and W_K alike, which leaves every score as it is.

``llama`` and ``gpt2`` go to :func:`~.llama.wrap_llama` and :func:`~.gpt2.wrap_gpt2`.  The architectures of
:data:`REFUSED` are refused naming what stops them; another ``model_type`` is refused listing the supported ones.
A decoder of more than one layer is a :class:`~.llama.LayeredLlama` (its function kept for ``commsim matrix``).
"""
from __future__ import annotations

import math

import numpy as np

from commsim.contract import Dense
from commsim.core.precision import NumberFormat
from protocols.adapters.torch.fold import (
    TWO_LAYERS,
    FoldedPsi,
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
from protocols.adapters.torch.layers import AdapterError, activation, format_for_dtype, layer_norm, numpy_head, tensor
from protocols.adapters.torch.llama import LayeredLlama, rope_base

#: model_type -> the architecture's name (the ones folded exactly; llama and gpt2 by their own wrappers)
SUPPORTED = {"llama": "Llama", "qwen2": "Qwen2", "mistral": "Mistral", "phi3": "Phi-3", "gemma": "Gemma",
             "gpt_neox": "GPT-NeoX", "gptj": "GPT-J", "gpt2": "GPT-2"}

_QK_NORM = ("a normalisation of each query and key vector (q_norm / k_norm) after the projections: the exchange's "
            "keys are linear in the position's embedding")
#: model_type -> the feature that keeps it out
REFUSED = {
    "gemma2": "soft-capped attention scores (attn_logit_softcapping) and sliding-window layers",
    "gemma3": _QK_NORM, "gemma3_text": _QK_NORM, "qwen3": _QK_NORM, "olmo2": _QK_NORM,
    "olmo": "clipped q/k/v (clip_qkv) and LayerNorms without weights",
    "falcon": "ALiBi or multi-query attention in a parallel block with its own layout (not read)",
    "bloom": "ALiBi inside a fused query_key_value of its own layout (not read)",
    "mpt": "ALiBi and clipped q/k/v (clip_qkv)",
    "phi": "a parallel block with one LayerNorm and optional q/k LayerNorms (not read)",
    "mamba": "a recurrence, not an attention layer: use hf-mamba:DIR (hf:DIR does)",
    "rwkv": "a recurrence, not an attention layer: use hf-rwkv:DIR (hf:DIR does)",
}


def supported_text() -> str:
    """The supported model types, for messages."""
    return ", ".join(f"{t} ({name})" for t, name in SUPPORTED.items())


class GatedMlp:
    """down(act(gate(x)) * up(x)) (Llama, Qwen2, Mistral, Phi-3, Gemma's GeGLU), picklable."""

    def __init__(self, gate, up, down, act):
        self.gate, self.up, self.down, self.act = gate, up, down, act

    def __call__(self, x):
        return self.down(self.act(self.gate(x)) * self.up(x))


class PlainMlp:
    """out(act(in(x))) (GPT-NeoX, GPT-J), picklable."""

    def __init__(self, fc, act, out):
        self.fc, self.act, self.out = fc, act, out

    def __call__(self, x):
        return self.out(self.act(self.fc(x)))


class SequentialPost:
    """psi of a sequential block: r + mlp(norm(r)), then the final norm and the head (picklable)."""

    def __init__(self, norm, mlp, final_norm, out_fn):
        self.norm, self.mlp, self.final_norm, self.out_fn = norm, mlp, final_norm, out_fn

    def __call__(self, r):
        return self.out_fn(self.final_norm(r + self.mlp(self.norm(r))))


class ParallelPost:
    """psi of a parallel block: x + a + mlp(norm(x)) from the attention's output a and the query's stream x, then
    the final norm and the head (picklable)."""

    def __init__(self, norm, mlp, final_norm, out_fn):
        self.norm, self.mlp, self.final_norm, self.out_fn = norm, mlp, final_norm, out_fn

    def __call__(self, a, x):
        return self.out_fn(self.final_norm(x + a + self.mlp(self.norm(x))))


class ParallelPsi(FoldedPsi):
    """:class:`~.fold.FoldedPsi` for a parallel block: the attention's output b_O + W_O o and the query's stream
    x_N go to the post map apart (the MLP reads x_N, not x_N + the attention)."""

    def __call__(self, y):
        y = np.asarray(y, dtype=np.float64)
        a = y[:, :self.d_out].copy()
        if self.b_O is not None:
            a += self.b_O
        return self.post(a, y[:, self.d_out:self.d_out + self.d_res])


def _dense(linear, fmt: NumberFormat, rows: slice | None = None) -> Dense:
    """An ``nn.Linear`` (weights rounded to ``fmt``; only ``rows`` of its outputs when given) as a product."""
    W, b = quantized(fmt, linear.weight), quantized(fmt, linear.bias)
    if rows is not None:
        W, b = W[rows], None if b is None else b[rows]
    return Dense.for_format(W.T, b, fmt)


def _rms(norm, fmt: NumberFormat, offset: bool = False):
    """An RMSNorm (weight rounded to ``fmt``; Gemma's computes x (1 + w): ``offset``) as a numpy function."""
    w = quantized(fmt, norm.weight)
    eps = float(getattr(norm, "variance_epsilon", getattr(norm, "eps", 1e-6)))
    return layer_norm(fmt.quantize(1.0 + w) if offset else w, None, eps, center=False)


def _ln(norm, fmt: NumberFormat):
    """An ``nn.LayerNorm`` (weights rounded to ``fmt``) as a numpy function."""
    return layer_norm(quantized(fmt, norm.weight), quantized(fmt, norm.bias), float(norm.eps))


def _body(model):
    """(the decoder body, its lm_head or None) of a ``...ForCausalLM`` or a bare ``...Model``."""
    for name in ("model", "gpt_neox", "transformer"):
        inner = getattr(model, name, None)
        if inner is not None and hasattr(inner, "config"):
            return inner, model.get_output_embeddings()
    return model, None


def _rows(W, b, heads: int, m: int):
    """(heads m, d) rows and (heads m,) bias as (heads, m, d), (heads, m)."""
    return W.reshape(heads, m, W.shape[-1]), None if b is None else b.reshape(heads, m)


def _llama_like(body, fmt, name: str) -> dict:
    """The attention of Qwen2, Mistral, Phi-3 and Gemma (Llama's layout; Phi-3's fused qkv_proj)."""
    cfg, block = body.config, body.layers[0]
    attn = block.self_attn
    H, H_kv, m = cfg.num_attention_heads, cfg.num_key_value_heads, attn.head_dim
    if hasattr(attn, "qkv_proj"):                                   # Phi-3: rows q (H m), k (H_kv m), v (H_kv m)
        W, b = quantized(fmt, attn.qkv_proj.weight), quantized(fmt, attn.qkv_proj.bias)
        cut = np.cumsum([0, H * m, H_kv * m, H_kv * m])
        qkv = [(W[cut[i]:cut[i + 1]], None if b is None else b[cut[i]:cut[i + 1]]) for i in range(3)]
    else:
        qkv = [(quantized(fmt, p.weight), quantized(fmt, p.bias)) for p in (attn.q_proj, attn.k_proj, attn.v_proj)]
    partial = float((getattr(cfg, "rope_parameters", None) or {}).get("partial_rotary_factor", 1.0))
    dims = int(m * partial)
    offset = name == "Gemma"
    return dict(H=H, H_kv=H_kv, m=m, qkv=qkv, scale=float(attn.scaling), rope=rope_base(cfg, body.rotary_emb, dims),
                rope_dims=dims, interleaved=False, Wo=quantized(fmt, attn.o_proj.weight),
                bo=quantized(fmt, attn.o_proj.bias), pre=_rms(block.input_layernorm, fmt, offset),
                window=getattr(attn, "sliding_window", getattr(cfg, "sliding_window", None)),
                wte=body.embed_tokens.weight, final=_rms(body.norm, fmt, offset), parallel=False,
                post_norm=_rms(block.post_attention_layernorm, fmt, offset), mlp=_gated_mlp(block.mlp, cfg, fmt))


def _gated_mlp(mlp, cfg, fmt) -> GatedMlp:
    """The gated MLP of a Llama-like block (Phi-3: gate and up as the halves of ``gate_up_proj``)."""
    act = activation(getattr(cfg, "hidden_activation", None) or cfg.hidden_act)
    if hasattr(mlp, "gate_up_proj"):
        f = mlp.gate_up_proj.out_features // 2
        return GatedMlp(_dense(mlp.gate_up_proj, fmt, slice(0, f)), _dense(mlp.gate_up_proj, fmt, slice(f, 2 * f)),
                        _dense(mlp.down_proj, fmt), act)
    return GatedMlp(_dense(mlp.gate_proj, fmt), _dense(mlp.up_proj, fmt), _dense(mlp.down_proj, fmt), act)


def _gpt_neox(body, fmt, name: str) -> dict:
    """GPT-NeoX: per-head fused query_key_value, partial rotate-halves rotary, parallel (or sequential) residual."""
    cfg, block = body.config, body.layers[0]
    attn = block.attention
    H, m = cfg.num_attention_heads, attn.head_size
    W = quantized(fmt, attn.query_key_value.weight).reshape(H, 3 * m, -1)
    b = quantized(fmt, attn.query_key_value.bias)
    b = None if b is None else b.reshape(H, 3 * m)
    qkv = [(W[:, i * m:(i + 1) * m].reshape(H * m, -1), None if b is None else b[:, i * m:(i + 1) * m].reshape(-1))
           for i in range(3)]
    dims = int(attn.rotary_ndims)
    mlp = PlainMlp(_dense(block.mlp.dense_h_to_4h, fmt), activation(cfg.hidden_act),
                   _dense(block.mlp.dense_4h_to_h, fmt))
    return dict(H=H, H_kv=H, m=m, qkv=qkv, scale=float(attn.scaling), rope=rope_base(cfg, body.rotary_emb, dims),
                rope_dims=dims, interleaved=False, Wo=quantized(fmt, attn.dense.weight),
                bo=quantized(fmt, attn.dense.bias),
                pre=_ln(block.input_layernorm, fmt), window=None, wte=body.embed_in.weight,
                final=_ln(body.final_layer_norm, fmt), parallel=bool(cfg.use_parallel_residual),
                post_norm=_ln(block.post_attention_layernorm, fmt), mlp=mlp)


def _gptj(body, fmt, name: str) -> dict:
    """GPT-J: separate q/k/v, partial interleaved rotary of base 10000, one ln_1 for the attention and the MLP."""
    cfg, block = body.config, body.h[0]
    attn = block.attn
    H, m = attn.num_attention_heads, attn.head_dim
    dims = attn.rotary_dim or m
    if dims > m or dims % 2:
        raise AdapterError(f"this GPT-J rotates {dims} coordinates of heads of width {m} (rotary_dim): commsim reads "
                           f"an even rotary_dim of at most the head width", "rotary_dim")
    table = tensor(attn.embed_positions)                         # (positions, dims): sin | cos of i * 10000^(-2j/r)
    angles = np.arange(table.shape[0])[:, None] / (10000.0 ** (np.arange(0, dims, 2) / dims))[None, :]
    import torch                                                 # the table is in the model's dtype
    within = 1e-6 * max(1, table.shape[0]) + 2 * float(torch.finfo(attn.embed_positions.dtype).eps)
    if table.shape[1] != dims or not np.allclose(table, np.concatenate([np.sin(angles), np.cos(angles)], axis=1),
                                                 rtol=0, atol=within):
        raise AdapterError("this GPT-J's rotary table (embed_positions) is not sin/cos of i * 10000^(-2j/rotary_dim);"
                           " commsim folds GPT-J's own rotary embedding only", "rotary_dim")
    qkv = [(quantized(fmt, p.weight), quantized(fmt, p.bias)) for p in (attn.q_proj, attn.k_proj, attn.v_proj)]
    ln = _ln(block.ln_1, fmt)
    mlp = PlainMlp(_dense(block.mlp.fc_in, fmt), activation(cfg.activation_function), _dense(block.mlp.fc_out, fmt))
    return dict(H=H, H_kv=H, m=m, qkv=qkv, scale=1.0 / float(attn.scale_attn), rope=10000.0, rope_dims=dims,
                interleaved=True, Wo=quantized(fmt, attn.out_proj.weight), bo=quantized(fmt, attn.out_proj.bias),
                pre=ln, window=None, wte=body.wte.weight, final=_ln(body.ln_f, fmt), parallel=True, post_norm=ln,
                mlp=mlp)


#: model_type -> the reader of its one block
READERS = {"qwen2": _llama_like, "mistral": _llama_like, "phi3": _llama_like, "gemma": _llama_like,
           "gpt_neox": _gpt_neox, "gptj": _gptj}


def _halves(dims: int, m: int) -> np.ndarray:
    """The order of a head's coordinates that turns interleaved pairs (2j, 2j + 1), j < dims/2, into halves."""
    return np.concatenate([np.arange(0, dims, 2), np.arange(1, dims, 2), np.arange(dims, m)])


def check_architecture(model_type) -> str:
    """The architecture's name for a supported ``model_type``; AdapterError naming the feature of a refused one,
    or listing the supported ones."""
    if model_type in SUPPORTED:
        return SUPPORTED[model_type]
    if model_type in REFUSED:
        raise AdapterError(f"a {model_type!r} model has {REFUSED[model_type]}; commsim folds exactly the one-layer "
                           f"decoders {supported_text()}", "model_type")
    raise AdapterError(f"commsim does not know the model_type {str(model_type)[:40]!r}; it folds exactly the "
                       f"one-layer decoders {supported_text()}", "model_type")


def wrap_decoder(model, fmt: NumberFormat | None = None, *, head=None, vocab_size: int | None = None,
                 seq_len: int | None = None, spec: str = "") -> TorchAttention | LayeredLlama:
    """A Hugging Face decoder (``...ForCausalLM``, or its ``...Model`` with ``head=``) folded by its
    ``config.model_type`` (module docstring)."""
    from protocols.adapters.torch.gpt2 import wrap_gpt2
    from protocols.adapters.torch.llama import wrap_llama
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    name = check_architecture(model_type)
    kw = dict(head=head, vocab_size=vocab_size, seq_len=seq_len, spec=spec)
    if model_type in ("llama", "gpt2"):
        return (wrap_llama if model_type == "llama" else wrap_gpt2)(model, fmt, **kw)
    body, lm_head = _body(model)
    cfg = body.config
    layers = len(body.layers if hasattr(body, "layers") else body.h)
    dtype = next(model.parameters()).dtype
    if layers != 1:
        if lm_head is None or head is not None:
            raise AdapterError(f"this {name} has {layers} layers; {TWO_LAYERS}")
        own = format_for_dtype(dtype)
        if fmt is not None and fmt != own:
            raise AdapterError(f"this {name} has {layers} layers, so no exchange simulates it and its function is "
                               f"its own forward at {own.name}; precision=/dtype= {fmt.name} does not apply",
                               "precision")
        return LayeredLlama(model, layers, spec or f"hf:{model_type}", name)
    fmt = format_for_dtype(dtype) if fmt is None else fmt
    part = READERS[model_type](body, fmt, name)
    H, H_kv, m, d = part["H"], part["H_kv"], part["m"], cfg.hidden_size
    if H % H_kv:
        raise AdapterError(f"this {name} has {H} query heads for {H_kv} key/value heads; grouped-query attention "
                           f"needs a whole number of query heads per key/value head", "num_key_value_heads")
    vocab, P = vocab_and_positions(part["wte"].shape[0], getattr(cfg, "max_position_embeddings", None), vocab_size,
                                   seq_len, f"this {name}")
    window = part["window"]
    if window is not None and window < P:
        raise AdapterError(f"this {name} attends within a sliding window of {window} positions, shorter than the "
                           f"{P} positions of the input: its query does not see every position, and the exchange's "
                           f"does; commsim folds a window of at least the sequence length", "sliding_window")
    check_table_size(vocab, P, 2 * d + 1, name)
    wte = quantized(fmt, part["wte"])
    if model_type == "gemma":                    # embed_tokens(s) * sqrt(d), the factor rounded to the dtype first
        wte = fmt.quantize(wte * fmt.quantize(np.float64(math.sqrt(d))))
    e = embedding_grid(wte, None, vocab, P, fmt)        # the residual stream entering the block
    x = fold_pre_attention(e, part["pre"], fmt)                     # phi: the norm before the attention, per token
    order = _halves(part["rope_dims"], m) if part["interleaved"] else None
    proj = {}
    for which, (W, b), heads in zip("qkv", part["qkv"], (H, H_kv, H_kv)):
        W, b = _rows(W, b, heads, m)
        if order is not None and which in "qk":
            W, b = W[:, order], None if b is None else b[:, order]
        if heads != H:                                              # repeat_kv: query head h reads h // (H / H_kv)
            W, b = np.repeat(W, H // H_kv, axis=0), None if b is None else np.repeat(b, H // H_kv, axis=0)
        proj[which] = ("x", W, b)
    if head is not None:
        out_fn = numpy_head(head, d, fmt, dtype, "head")
    elif lm_head is not None:
        out_fn = numpy_head(lm_head, d, fmt, dtype, "lm_head")
    else:
        raise AdapterError(f"a bare {name} model has no output head: pass head= or use its ...ForCausalLM")
    post = (ParallelPost if part["parallel"] else SequentialPost)(part["post_norm"], part["mlp"], part["final"], out_fn)
    rot = f"RoPE base {part['rope']:g} on {part['rope_dims']} of {m} coordinates" + \
        (" (interleaved, folded as halves)" if order is not None else "")
    what = (f"{name}, 1 layer, d={d}, {H} query heads ({H_kv} key/value), head width {m}, {rot}, the pre-attention "
            f"norm folded into the embedding, {'parallel' if part['parallel'] else 'sequential'} residual + MLP + "
            f"final norm + {'head' if head is not None else 'lm_head'} as psi")
    layer = OneLayer({"x": x}, proj, part["scale"], part["Wo"], part["bo"], e, post, out_fn.outputs, what,
                     extras={"rope": part["rope"]})
    torch_forward = last_position_forward(model) if head is None else None
    model_out = build_attention(layer, fmt, spec=spec or f"hf:{model_type}", torch_forward=torch_forward)
    if part["rope_dims"] != m:
        model_out.config = model_out.config.replace(rope_dims=part["rope_dims"])
    if part["parallel"]:
        psi = model_out.psi_fn
        model_out.psi_fn = ParallelPsi(psi.d_out, psi.b_O, psi.d_res, post)
    return model_out
