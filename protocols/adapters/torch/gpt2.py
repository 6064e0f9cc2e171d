"""A one-layer Hugging Face GPT-2 as a commsim attention model (Theorem 4 of [BHBK24]), folded by
:mod:`.fold`: ``ln_1`` into the (position, token) embedding table, the residual stream, ``ln_2``, the
MLP, ``ln_f`` and the unembedding into psi."""
from __future__ import annotations

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
from protocols.adapters.torch.layers import (
    AdapterError,
    activation,
    format_for_dtype,
    layer_norm,
    numpy_head,
    quantized_matrix,
    unwrap,
)


def _hf_layer_norm(ln, fmt):
    """A Hugging Face LayerNorm (weights rounded to ``fmt``) as a numpy function."""
    ln = unwrap(ln)
    return layer_norm(quantized(fmt, getattr(ln, "weight", None)), quantized(fmt, getattr(ln, "bias", None)),
                      float(getattr(ln, "eps", getattr(ln, "variance_epsilon", 1e-5))))


def _conv1d(module, fmt):
    """transformers' Conv1D stores weight as (in, out): y = x W + b.  Returns (W^T (out, in), b)."""
    module = unwrap(module)
    return quantized(fmt, module.weight).T, quantized(fmt, module.bias)


class Gpt2Post:
    """Everything after the attention: residual + MLP(ln_2), then ln_f and the head (picklable)."""

    def __init__(self, ln_2, fc, act, pr, ln_f, out_fn):
        self.ln_2, self.fc, self.act, self.pr, self.ln_f, self.out_fn = ln_2, fc, act, pr, ln_f, out_fn

    def __call__(self, r):
        """psi's map of the query position's residual stream r."""
        r = r + self.pr(self.act(self.fc(self.ln_2(r))))
        return self.out_fn(self.ln_f(r))


def wrap_gpt2(model, fmt: NumberFormat | None = None, *, head=None, vocab_size: int | None = None,
              seq_len: int | None = None, spec: str = "", torch_forward=None) -> TorchAttention:
    """Wrap a one-layer Hugging Face GPT-2 (``GPT2LMHeadModel``, or ``GPT2Model`` with ``head=``)."""
    from transformers import GPT2LMHeadModel, GPT2Model
    model = unwrap(model)
    if isinstance(model, GPT2LMHeadModel):
        body, lm_head = unwrap(model.transformer), unwrap(model.lm_head)
    elif isinstance(model, GPT2Model):
        body, lm_head = model, None
    else:
        raise AdapterError(f"expected a transformers GPT2LMHeadModel or GPT2Model, got {type(model).__name__}")
    cfg = body.config
    if cfg.n_layer != 1 or len(body.h) != 1:
        raise AdapterError(f"this GPT-2 has {cfg.n_layer} layers; {TWO_LAYERS}")
    if getattr(cfg, "add_cross_attention", False):
        raise AdapterError("GPT-2 with cross-attention reads a second sequence; not a one-layer self-attention model")
    dtype = next(model.parameters()).dtype
    fmt = format_for_dtype(dtype) if fmt is None else fmt
    block = unwrap(body.h[0])
    attn = unwrap(block.attn)
    d, H = cfg.n_embd, cfg.n_head
    m = d // H
    scale = (m ** -0.5 if cfg.scale_attn_weights else 1.0)
    if cfg.scale_attn_by_inverse_layer_idx:
        scale /= float((getattr(attn, "layer_idx", 0) or 0) + 1)
    wte, wpe = unwrap(body.wte).weight, unwrap(body.wpe).weight
    vocab, P = vocab_and_positions(wte.shape[0], wpe.shape[0], vocab_size, seq_len, "this GPT-2")
    check_table_size(vocab, P, 2 * d + 1, "GPT-2")
    wte, wpe = quantized_matrix(fmt, wte[:vocab]), quantized_matrix(fmt, wpe[:P])   # the rows the task reads
    e = embedding_grid(wte, wpe, vocab, P, fmt)                  # the residual stream entering the block
    x = fold_pre_attention(e, _hf_layer_norm(block.ln_1, fmt), fmt)   # ln_1: per (position, token)
    Wqkv, bqkv = _conv1d(attn.c_attn, fmt)             # (3d, d), (3d,)
    Wo, bo = _conv1d(attn.c_proj, fmt)                 # (d, d), (d,)
    proj = {which: ("x", split_heads(Wqkv[i * d:(i + 1) * d], H, m),
                    None if bqkv is None else bqkv[i * d:(i + 1) * d].reshape(H, m))
            for i, which in enumerate("qkv")}
    ln_2, ln_f = _hf_layer_norm(block.ln_2, fmt), _hf_layer_norm(body.ln_f, fmt)
    mlp = unwrap(block.mlp)
    Wfc, bfc = _conv1d(mlp.c_fc, fmt)
    Wpr, bpr = _conv1d(mlp.c_proj, fmt)
    act = activation(cfg.activation_function)
    fc, pr = Dense.for_format(Wfc.T, bfc, fmt), Dense.for_format(Wpr.T, bpr, fmt)
    if head is not None:
        out_fn = numpy_head(head, d, fmt, dtype, "head")
    elif lm_head is not None:
        out_fn = numpy_head(lm_head, d, fmt, dtype, "lm_head")
    else:
        raise AdapterError("a GPT2Model has no output head: pass head= (e.g. an nn.Linear to the classes) or use "
                           "GPT2LMHeadModel")

    post = Gpt2Post(ln_2, fc, act, pr, ln_f, out_fn)
    what = f"GPT-2, 1 layer, d={d}, heads={H}, ln_1 folded into the embedding, residual + ln_2 + MLP + ln_f + " \
           f"{'head' if head is not None else 'lm_head'} as psi"
    layer = OneLayer({"x": x}, proj, scale, Wo, bo, e, post, out_fn.outputs, what)
    if torch_forward is None:
        torch_forward = last_position_forward(model, dtype) if head is None else None
    return build_attention(layer, fmt, spec=spec or "hf-gpt2", torch_forward=torch_forward)
