"""A one-layer Hugging Face Llama (``LlamaForCausalLM``, or ``LlamaModel`` with ``head=``) as a commsim attention
model (Theorem 4 of [BHBK24]), folded by :mod:`.fold` as GPT-2 is (:mod:`.gpt2`), never approximated:

* phi: ``input_layernorm`` (an RMSNorm) of the token embedding is a function of the token: the attention's input
  table x(i, s) = RMSNorm(wte[s]) (:func:`~.fold.fold_pre_attention`); each party computes it for its positions;
* RoPE as transformers computes it (``rotate_half``: the two halves of each head, angle i * theta^(-2j/d_h) at
  position i, the query rotated at its own position): the attention layer's ``rope`` with base ``rope_theta``
  (:mod:`protocols.models.attention_positions`).  Only the default RoPE is read: a ``rope_scaling`` (linear,
  dynamic, yarn, llama3, ...) changes the angles or scales cos/sin (``attention_scaling``) and is refused, naming
  it; the rotation the module computes is checked against the one folded (its ``inv_freq``).  transformers
  computes the angles and cos/sin in float32 whatever the model's dtype, commsim in float64 rounded once to the
  format: the same within float32's, float16's and bfloat16's tolerances, but a float64 Llama differs from its
  module by about 3e-6 (float32's cos/sin), outside float64's tolerance, and its agreement says so;
* grouped-query attention (``num_key_value_heads`` < ``num_attention_heads``): query head h reads key/value head
  h // (H / H_kv), as transformers' ``repeat_kv``; W_K and W_V are repeated per query head.  The exchange's
  messages are per *query* head -- each query head has its own q_N, logits, max, Z and U (its partial softmax
  depends on its own query), so the H_kv shared projections save no bits: bits are counted for H query heads;
* psi: everything after the attention at the query position -- ``o_proj``'s bias, the residual, the
  ``post_attention_layernorm``, the gated MLP down(act(gate(x)) * up(x)), the final ``norm`` and ``lm_head``.

More than one layer: no one-layer exchange simulates it (Lemma 5 of [BHBK24], :data:`~.fold.TWO_LAYERS`).  A
``LlamaForCausalLM`` of any depth becomes a :class:`LayeredLlama`, which ``commsim run`` refuses with that reason
and which keeps the model's own function for ``commsim matrix --model SPEC --reduction R --n N``
(:mod:`commsim.runs.model_function`); a ``LlamaModel`` of more layers is refused outright.
"""
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
    split_heads,
    vocab_and_positions,
)
from protocols.adapters.torch.layered import LayeredModule
from protocols.adapters.torch.layers import (
    AdapterError,
    activation,
    format_for_dtype,
    layer_norm,
    numpy_head,
    tensor,
)


def _rms_norm(norm, fmt: NumberFormat):
    """A ``LlamaRMSNorm`` (weight rounded to ``fmt``) as a numpy function."""
    return layer_norm(quantized(fmt, norm.weight), None, float(norm.variance_epsilon), center=False)


def _dense(linear, fmt: NumberFormat) -> Dense:
    """An ``nn.Linear`` (weights rounded to ``fmt``) as a batch-independent product."""
    return Dense.for_format(quantized(fmt, linear.weight).T, quantized(fmt, linear.bias), fmt)


def rope_base(config, rotary, head_dim: int) -> float:
    """``rope_theta`` of a Llama whose RoPE is the default one (module docstring); any ``rope_scaling`` is refused,
    naming it, and the module's own inverse frequencies are checked against the folded rotation's."""
    params = getattr(config, "rope_parameters", None)          # transformers >= 5: rope_theta and rope_type here
    if not isinstance(params, dict):
        params = dict(getattr(config, "rope_scaling", None) or {}, rope_theta=getattr(config, "rope_theta", 10000.0))
    kind = params.get("rope_type", params.get("type", "default"))
    if kind != "default":
        raise AdapterError(f"this Llama has rope_scaling {kind!r} ({params}); commsim folds only the default RoPE "
                           f"(rope_scaling=None): the exchange rotates q and k by i * theta^(-2j/d_h) exactly",
                           "rope_scaling")
    base = float(params.get("rope_theta", 10000.0))
    scaling = float(getattr(rotary, "attention_scaling", 1.0))
    inv_freq = tensor(rotary.inv_freq)        # in the module's dtype after .to(bfloat16): compared to its precision
    expected = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    within = 2 * float(np.finfo(np.float32).eps if rotary.inv_freq.dtype.itemsize >= 4 else 2.0 ** -7)
    if scaling != 1.0 or inv_freq.shape != expected.shape or not np.allclose(inv_freq, expected, rtol=within, atol=0):
        raise AdapterError(f"this Llama's rotary embedding is not the default RoPE of base {base:g} over head width "
                           f"{head_dim} (attention_scaling {scaling:g}, {inv_freq.size} frequencies); commsim folds "
                           f"only rope_scaling=None", "rope_scaling")
    return base


class LayeredLlama(LayeredModule):
    """A decoder of more than one layer (a ``LlamaForCausalLM``, or another architecture :mod:`.hf_decoders`
    reads; module docstring): ``no_protocol_reason`` says why no exchange simulates it (``commsim run`` refuses it
    with that reason), ``forward(tokens)`` gives its decisions -- its own forward's outputs at the last position
    decided by the model's rule (:class:`~.layered.LayeredModule`) -- for the matrix of its function."""

    def __init__(self, module, layers: int, spec: str = "", name: str = "Llama"):
        super().__init__(module, f"this {name} has {layers} layers; {TWO_LAYERS}", spec or "hf-llama")


class LlamaPost:
    """Everything after the attention at the query position (picklable): r + MLP(post_attention_layernorm(r)), the
    gated MLP down(act(gate(x)) * up(x)), then the final norm and the head."""

    def __init__(self, post_norm, gate, up, down, act, final_norm, out_fn):
        self.post_norm, self.gate, self.up, self.down = post_norm, gate, up, down
        self.act, self.final_norm, self.out_fn = act, final_norm, out_fn

    def __call__(self, r):
        """psi's map of the query position's residual stream r."""
        x = self.post_norm(r)
        r = r + self.down(self.act(self.gate(x)) * self.up(x))
        return self.out_fn(self.final_norm(r))


def wrap_llama(model, fmt: NumberFormat | None = None, *, head=None, vocab_size: int | None = None,
               seq_len: int | None = None, spec: str = "") -> TorchAttention | LayeredLlama:
    """Wrap a one-layer Hugging Face Llama (``LlamaForCausalLM``, or ``LlamaModel`` with ``head=``); a deeper
    ``LlamaForCausalLM`` is a :class:`LayeredLlama` (module docstring)."""
    from transformers import LlamaForCausalLM, LlamaModel
    if isinstance(model, LlamaForCausalLM):
        body, lm_head = model.model, model.lm_head
    elif isinstance(model, LlamaModel):
        body, lm_head = model, None
    else:
        raise AdapterError(f"expected a transformers LlamaForCausalLM or LlamaModel, got {type(model).__name__}")
    cfg = body.config
    dtype = next(model.parameters()).dtype
    if len(body.layers) != 1:
        if lm_head is None or head is not None:
            raise AdapterError(f"this Llama has {len(body.layers)} layers; {TWO_LAYERS}")
        own = format_for_dtype(dtype)
        if fmt is not None and fmt != own:
            raise AdapterError(f"this Llama has {len(body.layers)} layers, so no exchange simulates it and its "
                               f"function is its own forward at {own.name}; precision=/dtype= {fmt.name} does not "
                               f"apply", "precision")
        return LayeredLlama(model, len(body.layers), spec)
    block = body.layers[0]
    attn = block.self_attn
    H, H_kv, m = cfg.num_attention_heads, cfg.num_key_value_heads, attn.head_dim
    if H % H_kv:
        raise AdapterError(f"this Llama has {H} query heads for {H_kv} key/value heads; grouped-query attention "
                           f"needs a whole number of query heads per key/value head", "num_key_value_heads")
    base = rope_base(cfg, body.rotary_emb, m)
    fmt = format_for_dtype(dtype) if fmt is None else fmt
    d = cfg.hidden_size
    wte = quantized(fmt, body.embed_tokens.weight)
    vocab, P = vocab_and_positions(wte.shape[0], cfg.max_position_embeddings, vocab_size, seq_len, "this Llama")
    check_table_size(vocab, P, 2 * d + 1, "Llama")
    e = embedding_grid(wte, None, vocab, P, fmt)           # the residual stream entering the block
    x = fold_pre_attention(e, _rms_norm(block.input_layernorm, fmt), fmt)   # phi: input_layernorm per token
    group = H // H_kv                                                  # transformers' repeat_kv: head h reads h // group

    def projection(linear, heads):
        W = split_heads(quantized(fmt, linear.weight), heads, m)
        b = None if linear.bias is None else quantized(fmt, linear.bias).reshape(heads, m)
        if heads == H:
            return "x", W, b
        return "x", np.repeat(W, group, axis=0), None if b is None else np.repeat(b, group, axis=0)

    proj = {"q": projection(attn.q_proj, H), "k": projection(attn.k_proj, H_kv), "v": projection(attn.v_proj, H_kv)}
    Wo, bo = quantized(fmt, attn.o_proj.weight), quantized(fmt, attn.o_proj.bias)     # (d, H m), (d,)
    mlp = block.mlp
    act = activation(cfg.hidden_act)
    if head is not None:
        out_fn = numpy_head(head, d, fmt, dtype, "head")
    elif lm_head is not None:
        out_fn = numpy_head(lm_head, d, fmt, dtype, "lm_head")
    else:
        raise AdapterError("a LlamaModel has no output head: pass head= (e.g. an nn.Linear to the classes) or use "
                           "LlamaForCausalLM")
    post = LlamaPost(_rms_norm(block.post_attention_layernorm, fmt), _dense(mlp.gate_proj, fmt),
                     _dense(mlp.up_proj, fmt), _dense(mlp.down_proj, fmt), act, _rms_norm(body.norm, fmt), out_fn)
    kv = f"{H_kv} key/value heads shared by {H} query heads (bits per query head)" if H_kv < H else f"{H} heads"
    what = (f"Llama, 1 layer, d={d}, {kv}, head width {m}, RoPE base {base:g} (rotate_half), input_layernorm "
            f"folded into the embedding, residual + post_attention_layernorm + gated MLP + norm + "
            f"{'head' if head is not None else 'lm_head'} as psi")
    layer = OneLayer({"x": x}, proj, float(attn.scaling), Wo, bo, e, post, out_fn.outputs, what,
                     extras={"rope": base})
    torch_forward = last_position_forward(model) if head is None else None
    return build_attention(layer, fmt, spec=spec or "hf-llama", torch_forward=torch_forward)
