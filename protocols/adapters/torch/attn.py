"""One-layer attention from torch: ``nn.MultiheadAttention``, Hugging Face GPT-2 with one layer,
TransformerLens (HookedTransformer, TransformerBridge, TL-native), as commsim attention models.

The model of Theorem 4 of [BHBK24] is: embeddings x_i (token and position, arbitrary), per head
q = W_Q x_N, k_i = W_K x_i, v_i = W_V x_i, softmax attention at the query position N, heads
concatenated and projected by W_O, then an arbitrary output map psi.  A real layer is brought to
that form by folding, never by approximating:

* projection biases (b_Q, b_K, b_V) ride on a constant coordinate 1 of every embedding; the score
  scale (1/sqrt(d_head) or TransformerLens' ``attn_scale``) is folded into W_Q;
* a pre-attention LayerNorm (GPT-2's ``ln_1``) is a function of (position, token): the embedding is
  a table E(i, s) = ln_1(wte[s] + wpe[i]), one row per position and token;
* everything after the attention *at the query position* -- W_O's bias, the residual connection,
  ``ln_2`` and the MLP, the final LayerNorm and the unembedding -- is psi.  psi needs the query
  position's own residual stream e_N = [wte[s_N] + wpe[N]]: it is stored as extra coordinates of
  every position's embedding (zero weight in W_Q, W_K, W_V) and read by psi through the layer's
  residual path (:class:`protocols.models.attention.AttentionLayer`, ``residual=`` those coordinates).
  The output party gets it for free when it owns the query position; otherwise (the one-way
  exchange) the query owner sends it as the ``embedding`` message, d·p bits.  The reported width
  m is the real head width.

Refused, with the reason: more than one layer (Lemma 5 / Corollary 13.1 of [BHBK24]: no protocol
of this kind exists for two layers), rotary or other non-absolute position schemes, soft-capped
attention scores, ``add_bias_kv`` / ``add_zero_attn`` (a key that belongs to no party), and
parallel attention/MLP blocks.

The commsim model (:class:`TorchAttention`, a :class:`protocols.models.attention.AttentionLayer`) has the
exact finite-precision semantics of :mod:`protocols.models.attention`; the exchange reproduces it bit for
bit, and it agrees with the torch module's own forward within
:data:`~protocols.adapters.torch.layers.TOLERANCE`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from commsim.core.precision import NumberFormat
from protocols.adapters.torch.layers import (
    AdapterError,
    Dense,
    activation,
    format_for_dtype,
    layer_norm,
    numpy_head,
    tensor,
    unwrap,
)
from protocols.models.attention import AttentionLayer

#: positions of the table of a position-free attention model when no sequence length is given
DEFAULT_POSITIONS = 64


#: largest (positions x tokens x dim) embedding table built without being asked to limit it
MAX_TABLE = 20_000_000


TWO_LAYERS = ("the attention protocol wraps one attention layer: for two layers there are models whose output "
              "needs N/2 bits of communication on every balanced split (Lemma 5 and Corollary 13.1 of [BHBK24]), "
              "so no exchange of this kind exists")


class TorchAttention(AttentionLayer):
    """A one-layer attention model folded from torch (module docstring).

    The embedding is a (positions, tokens, dim) table; ``residual`` (a sequence of its coordinates,
    or False) is what psi reads of the query position's embedding besides y = W_O o (the residual
    stream, :class:`~protocols.models.attention.AttentionLayer`).  ``torch_forward`` runs the original torch
    module (the agreement check); ``source`` says what was wrapped.
    """

    def __init__(self, fmt: NumberFormat, table: np.ndarray, W_Q, W_K, W_V, W_O, psi, *, residual=False,
                 spec: str = "", torch_forward=None, source: str = ""):
        table = np.asarray(table, dtype=np.float64)
        if table.ndim != 3:
            raise AdapterError(f"the embedding table must be (positions, tokens, dim), got shape {table.shape}")
        super().__init__(fmt, table[0], None, W_Q, W_K, W_V, W_O, psi, residual=residual, spec=spec)
        self.table = self.ar.from_values(table)
        self.max_positions = int(table.shape[0])
        self.torch_forward = torch_forward
        self.source = source

    def embed(self, tokens, positions):
        """x = E(i, s): the table row of each (position, token); broadcasts like the base class."""
        return self.table[np.asarray(positions, dtype=np.int64), np.asarray(tokens, dtype=np.int64)]

    def _float_embedding(self, tokens: np.ndarray) -> np.ndarray:
        """The (position, token) table rows, as float64 values."""
        return self.ar.to_values(self.embed(tokens, np.arange(tokens.shape[1])))

    def save(self, path) -> None:
        raise AdapterError("a model wrapped from torch is saved by saving the torch module (torch.save)")

    def __repr__(self) -> str:
        return f"<TorchAttention {self.spec}: {self.source}>"


@dataclass
class OneLayer:
    """A one-layer attention model in folded form, before it becomes a :class:`TorchAttention`.

    ``inputs``: named (positions, tokens, dim) tables of the attention's inputs (one shared ``x``,
    or separate ``q``/``k``/``v`` inputs); ``projections``: for ``q``, ``k``, ``v`` the input name,
    the weight (H, m, dim) and bias (H, m) or None; ``scale`` multiplies the logits; ``W_O`` (d, H m);
    ``b_O`` (d,) or None; ``residual``: the (positions, tokens, d) residual stream at each position
    or None; ``post``: numpy function of the query's residual stream r = b_O + W_O o (+ x_N) -> outputs.
    """

    inputs: dict
    projections: dict
    scale: float
    W_O: np.ndarray
    b_O: np.ndarray | None
    residual: np.ndarray | None
    post: Callable
    outputs: int
    source: str = ""
    extras: dict = field(default_factory=dict)


def build_attention(layer: OneLayer, fmt: NumberFormat, *, spec: str = "", torch_forward=None) -> TorchAttention:
    """Fold a :class:`OneLayer` into a :class:`TorchAttention` (module docstring)."""
    H, m, _ = layer.projections["q"][1].shape
    blocks, offset = {}, 0
    for name, table in layer.inputs.items():
        blocks[name] = (offset, table.shape[2])
        offset += table.shape[2]
    const = offset
    offset += 1
    d_res = 0 if layer.residual is None else layer.residual.shape[2]
    shared = next((name for name, t in layer.inputs.items() if t is layer.residual), None)
    if shared is not None:   # the residual stream is an input already (nn.MultiheadAttention): read those coordinates
        res_at, stored = blocks[shared][0], 0
    else:
        res_at, stored = offset, d_res
    dim = offset + stored
    any_table = next(iter(layer.inputs.values()))
    P, V = any_table.shape[:2]
    table = np.zeros((P, V, dim))
    for name, t in layer.inputs.items():
        start, size = blocks[name]
        table[:, :, start:start + size] = t
    table[:, :, const] = 1.0
    if stored:
        table[:, :, res_at:] = layer.residual
    weights = {}
    for which in ("q", "k", "v"):
        source, W, b = layer.projections[which]
        start, size = blocks[source]
        scale = layer.scale if which == "q" else 1.0
        full = np.zeros((H, m, dim))
        full[:, :, start:start + size] = np.asarray(W) * scale
        if b is not None:
            full[:, :, const] = np.asarray(b) * scale
        weights[which] = full
    d_out = layer.W_O.shape[0]
    W_O = np.asarray(layer.W_O, dtype=np.float64)
    b_O = None if layer.b_O is None else np.asarray(layer.b_O, dtype=np.float64)
    q_fmt = fmt.quantize
    b_O_q = None if b_O is None else q_fmt(b_O)
    post = layer.post

    def psi(y):
        y = np.asarray(y, dtype=np.float64)
        stream = y[:, :d_out].copy()
        if b_O_q is not None:
            stream += b_O_q
        if d_res:
            stream += y[:, d_out:d_out + d_res]
        return post(stream)

    residual = np.arange(res_at, res_at + d_res) if d_res else False   # psi reads e_N: (y, x_N[residual])
    return TorchAttention(fmt, table, weights["q"], weights["k"], weights["v"], W_O, psi, residual=residual,
                          spec=spec, torch_forward=torch_forward, source=layer.source)


# ---- shared pieces ---------------------------------------------------------------------------------
def _rows(vocab: int, positions: int, dim: int, what: str) -> None:
    if positions * vocab * dim > MAX_TABLE:
        raise AdapterError(f"{what}: an embedding table of {positions} positions x {vocab} tokens x {dim} would be "
                           f"too large; limit it with vocab_size= and seq_len= (commsim run passes the task's)")


def _limits(model_vocab: int, model_positions: int | None, vocab_size: int | None, seq_len: int | None,
            what: str) -> tuple[int, int]:
    vocab = model_vocab if vocab_size is None else int(vocab_size)
    if vocab > model_vocab:
        raise AdapterError(f"{what} reads {model_vocab} tokens but the task uses {vocab}")
    if seq_len is None:
        if model_positions is None:
            raise AdapterError(f"{what} has no position limit; pass seq_len=")
        positions = model_positions
    else:
        positions = int(seq_len)
        if model_positions is not None and positions > model_positions:
            raise AdapterError(f"{what} has position embeddings for {model_positions} positions; the task needs "
                               f"{positions}")
    return vocab, positions


def _grid(wte: np.ndarray, wpe: np.ndarray | None, vocab: int, positions: int) -> np.ndarray:
    """e(i, s) = wte[s] + wpe[i] as a (positions, vocab, d) table (the sum rounded by the caller's format)."""
    tok = wte[:vocab][None, :, :]
    if wpe is None:
        return np.broadcast_to(tok, (positions, vocab, wte.shape[1])).copy()
    return tok + wpe[:positions][:, None, :]


def _q(fmt: NumberFormat, a):
    return None if a is None else fmt.quantize(tensor(a))


def _torch_last(module, call, dtype):
    """A function tokens -> the module's outputs at the last position (float64 numpy)."""
    import torch

    def forward(tokens):
        with torch.no_grad():
            t = torch.as_tensor(np.atleast_2d(np.asarray(tokens)), dtype=torch.long)
            out = call(module, t)
            if isinstance(out, (tuple, list)):
                out = out[0]
            if hasattr(out, "logits"):
                out = out.logits
            if out.dim() == 3:
                out = out[:, -1]
            return tensor(out)
    return forward


# ---- nn.MultiheadAttention ---------------------------------------------------------------------------
def wrap_mha(mha, embedding=None, positions=None, head=None, fmt: NumberFormat | None = None, *, residual: bool = False,
             key_embedding=None, value_embedding=None, vocab_size: int | None = None, seq_len: int | None = None,
             spec: str = "", torch_forward=None, source: str = "") -> TorchAttention:
    """Wrap ``nn.MultiheadAttention`` as self-attention over token (+ position) embeddings.

    ``embedding``: an ``nn.Embedding`` or (vocab, E) matrix for the attention's inputs; ``positions``:
    an ``nn.Embedding``/matrix of position embeddings added to it (or None); ``head``: a torch module
    or callable applied to the attention output at the query position (psi; None: the output itself);
    ``residual``: psi sees x_N + attention output (a residual connection) instead of the output alone.
    With separate key/value dimensions (``kdim``/``vdim`` != E) give ``key_embedding`` /
    ``value_embedding`` of those widths.  Biases (packed or separate) are folded; ``add_bias_kv`` and
    ``add_zero_attn`` are refused.
    """
    import torch.nn as nn
    if not isinstance(mha, nn.MultiheadAttention):
        raise AdapterError(f"expected nn.MultiheadAttention, got {type(mha).__name__}")
    if mha.bias_k is not None or mha.bias_v is not None:
        raise AdapterError("nn.MultiheadAttention with add_bias_kv=True attends to a learned extra key that belongs "
                           "to no position, hence to neither party; the exchange does not model it")
    if mha.add_zero_attn:
        raise AdapterError("nn.MultiheadAttention with add_zero_attn=True attends to an extra zero key that belongs to "
                           "no position; the exchange does not model it")
    if embedding is None:
        raise AdapterError("nn.MultiheadAttention needs a token embedding (embedding=, or a wrapping module with an "
                           "nn.Embedding)")
    params = dict(mha.named_parameters())
    dtype = next(iter(params.values())).dtype
    fmt = format_for_dtype(dtype) if fmt is None else fmt
    E, H = mha.embed_dim, mha.num_heads
    m = E // H
    if mha._qkv_same_embed_dim:
        W = tensor(mha.in_proj_weight)
        Wq, Wk, Wv = W[:E], W[E:2 * E], W[2 * E:]
    else:
        Wq, Wk, Wv = tensor(mha.q_proj_weight), tensor(mha.k_proj_weight), tensor(mha.v_proj_weight)
    if mha.in_proj_bias is not None:
        b = tensor(mha.in_proj_bias)
        bq, bk, bv = b[:E], b[E:2 * E], b[2 * E:]
    else:
        bq = bk = bv = None
    tok = _matrix(embedding, "embedding")
    pos = None if positions is None else _matrix(positions, "positions")
    model_positions = None if pos is None else pos.shape[0]
    if model_positions is None and seq_len is None:
        seq_len = DEFAULT_POSITIONS  # no position embedding: any length; the table is built for this many
    vocab, P = _limits(tok.shape[0], model_positions, vocab_size, seq_len, "the attention model")
    q = fmt.quantize
    _rows(vocab, P, E, "nn.MultiheadAttention")
    x = q(_grid(q(tok), None if pos is None else q(pos), vocab, P))  # [E_tok(s) + E_pos(i)]
    inputs = {"x": x}
    proj = {"q": ("x", _heads(q(Wq), H, m), _bias(bq, q, H, m))}
    for which, extra_emb, Wx, bx, dimx in (("k", key_embedding, Wk, bk, mha.kdim),
                                           ("v", value_embedding, Wv, bv, mha.vdim)):
        if dimx == E and extra_emb is None:
            proj[which] = ("x", _heads(q(Wx), H, m), _bias(bx, q, H, m))
            continue
        if extra_emb is None:
            raise AdapterError(f"this nn.MultiheadAttention has {which}dim={dimx} != embed_dim={E}: its {which} inputs "
                               f"are not the query's embedding; give {('key' if which == 'k' else 'value')}_embedding= "
                               f"(an nn.Embedding or (vocab, {dimx}) matrix)")
        t = _matrix(extra_emb, f"{which} embedding")
        if t.shape[1] != dimx or t.shape[0] < vocab:
            raise AdapterError(f"the {which} embedding has shape {t.shape}; expected ({vocab}+, {dimx})")
        inputs[which] = q(_grid(q(t), None, vocab, P))
        proj[which] = (which, _heads(q(Wx), H, m), _bias(bx, q, H, m))
    W_O = q(tensor(mha.out_proj.weight))
    b_O = None if mha.out_proj.bias is None else tensor(mha.out_proj.bias)
    head_fn = numpy_head(head, E, fmt, dtype, "psi head")
    what = (f"nn.MultiheadAttention(embed_dim={E}, heads={H}" + (", separate k/v projections" if not
            mha._qkv_same_embed_dim else "") + f") with {'a residual connection and ' if residual else ''}"
            f"{head_fn.description} psi")
    layer = OneLayer(inputs, proj, 1.0 / math.sqrt(m), W_O, b_O, x if residual else None, head_fn, head_fn.outputs,
                     source or what)
    return build_attention(layer, fmt, spec=spec or "torch:multihead-attention", torch_forward=torch_forward)


def _matrix(emb, what: str) -> np.ndarray:
    import torch.nn as nn
    if isinstance(emb, nn.Embedding):
        if emb.max_norm is not None:
            raise AdapterError(f"the {what} renormalizes its weights during the forward (max_norm); commsim needs "
                               f"fixed weights")
        return tensor(emb.weight)
    if isinstance(emb, nn.Module):
        raise AdapterError(f"the {what} must be an nn.Embedding or a matrix, got {type(emb).__name__}")
    arr = tensor(emb)
    if arr.ndim != 2:
        raise AdapterError(f"the {what} must be a 2-D (rows, dim) matrix, got shape {arr.shape}")
    return arr


def _heads(W: np.ndarray, H: int, m: int) -> np.ndarray:
    """(H m, d) rows -> (H, m, d)."""
    return W.reshape(H, m, W.shape[1])


def _bias(b, q, H: int, m: int):
    return None if b is None else q(np.asarray(b)).reshape(H, m)


# ---- Hugging Face GPT-2 ------------------------------------------------------------------------------
def _hf_layer_norm(ln, fmt):
    ln = unwrap(ln)
    return layer_norm(_q(fmt, getattr(ln, "weight", None)), _q(fmt, getattr(ln, "bias", None)),
                      float(getattr(ln, "eps", getattr(ln, "variance_epsilon", 1e-5))))


def _conv1d(module, fmt):
    """transformers' Conv1D stores weight as (in, out): y = x W + b.  Returns (W^T (out, in), b)."""
    module = unwrap(module)
    return _q(fmt, module.weight).T, _q(fmt, module.bias)


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
    wte, wpe = _q(fmt, unwrap(body.wte).weight), _q(fmt, unwrap(body.wpe).weight)
    vocab, P = _limits(wte.shape[0], wpe.shape[0], vocab_size, seq_len, "this GPT-2")
    _rows(vocab, P, 2 * d + 1, "GPT-2")
    q = fmt.quantize
    e = q(_grid(wte, wpe, vocab, P))                    # the residual stream entering the block
    x = q(_hf_layer_norm(block.ln_1, fmt)(e.reshape(-1, d)).reshape(e.shape))   # ln_1: per (position, token)
    Wqkv, bqkv = _conv1d(attn.c_attn, fmt)             # (3d, d), (3d,)
    Wo, bo = _conv1d(attn.c_proj, fmt)                 # (d, d), (d,)
    proj = {which: ("x", _heads(Wqkv[i * d:(i + 1) * d], H, m),
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

    def post(r):
        r = r + pr(act(fc(ln_2(r))))
        return out_fn(ln_f(r))

    what = f"GPT-2, 1 layer, d={d}, heads={H}, ln_1 folded into the embedding, residual + ln_2 + MLP + ln_f + " \
           f"{'head' if head is not None else 'lm_head'} as psi"
    layer = OneLayer({"x": x}, proj, scale, Wo, bo, e, post, out_fn.outputs, what)
    if torch_forward is None:
        torch_forward = _torch_last(model, lambda mod, t: mod(t), dtype) if head is None else None
    return build_attention(layer, fmt, spec=spec or "hf-gpt2", torch_forward=torch_forward)


# ---- TransformerLens ---------------------------------------------------------------------------------
def _tl_norm(module, fmt, eps_default=1e-5):
    """A TransformerLens / TL-native norm module as a numpy function (None: identity)."""
    import torch.nn as nn
    module = unwrap(module)
    name = type(module).__name__
    eps = float(getattr(module, "eps", getattr(getattr(module, "cfg", None), "eps", eps_default)) or eps_default)
    if module is None or isinstance(module, nn.Identity) or name == "Identity":
        return lambda x: x
    if name in ("LayerNorm",):
        w = getattr(module, "w", getattr(module, "weight", None))
        b = getattr(module, "b", getattr(module, "bias", None))
        return layer_norm(_q(fmt, w), _q(fmt, b), eps)
    if name in ("LayerNormPre", "NativeLayerNormPre"):
        return layer_norm(None, None, eps)
    if name in ("RMSNorm", "NativeRMSNorm"):
        return layer_norm(_q(fmt, getattr(module, "w", getattr(module, "weight", None))), None, eps, center=False)
    if name in ("RMSNormPre", "NativeRMSNormPre"):
        return layer_norm(None, None, eps, center=False)
    raise AdapterError(f"normalization {name} is not supported")


def _residual_readout(steps, final_norm, unembed, soft_cap):
    """psi for a TransformerLens block: the residual steps after attention (MLP), the final norm,
    the unembedding, and the optional logit soft cap."""
    cap = float(soft_cap or -1.0)

    def post(r):
        for step in steps:
            r = step(r)
        logits = unembed(final_norm(r))
        return cap * np.tanh(logits / cap) if cap > 0 else logits
    return post


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
    wte = _q(fmt, model.embed.W_E)
    wpe = _q(fmt, model.pos_embed.W_pos)
    vocab, P = _limits(wte.shape[0], wpe.shape[0], vocab_size, seq_len, "this HookedTransformer")
    _rows(vocab, P, 2 * d + 1, "HookedTransformer")
    q = fmt.quantize
    e = q(_grid(wte, wpe, vocab, P))
    x = q(_tl_norm(block.ln1, fmt)(e.reshape(-1, d)).reshape(e.shape))
    proj = {}
    for which, W, b in (("q", attn.W_Q, attn.b_Q), ("k", attn.W_K, attn.b_K), ("v", attn.W_V, attn.b_V)):
        proj[which] = ("x", np.transpose(_q(fmt, W), (0, 2, 1)), _q(fmt, b))   # (H, d, m) -> (H, m, d)
    scale = 1.0 / float(attn.attn_scale) if cfg.use_attn_scale else 1.0
    W_O = _q(fmt, attn.W_O).reshape(H * m, d).T                                  # (H, m, d) -> (d, H m)
    b_O = _q(fmt, attn.b_O)
    steps = []
    if not cfg.attn_only:
        ln2 = _tl_norm(block.ln2, fmt)
        mlp = block.mlp
        W_in, b_in = _q(fmt, mlp.W_in), _q(fmt, mlp.b_in)
        W_out, b_out = _q(fmt, mlp.W_out), _q(fmt, mlp.b_out)
        if cfg.act_fn in ("solu_ln",) or hasattr(mlp, "ln"):
            raise AdapterError(f"act_fn={cfg.act_fn!r} (an MLP with its own LayerNorm) is not supported")
        act = activation(cfg.act_fn)
        fc_in, fc_out = Dense.for_format(W_in, b_in, fmt), Dense.for_format(W_out, b_out, fmt)
        if getattr(cfg, "gated_mlp", False):
            gate = Dense.for_format(_q(fmt, mlp.W_gate), None, fmt)
            steps.append(lambda r: r + fc_out(act(gate(ln2(r))) * fc_in(ln2(r))))
        else:
            steps.append(lambda r: r + fc_out(act(fc_in(ln2(r)))))
    ln_final = _tl_norm(getattr(model, "ln_final", None), fmt) if hasattr(model, "ln_final") else (lambda r: r)
    unembed = Dense.for_format(_q(fmt, model.unembed.W_U), _q(fmt, model.unembed.b_U), fmt)
    post = _residual_readout(steps, ln_final, unembed, getattr(cfg, "output_logits_soft_cap", -1.0))

    what = (f"HookedTransformer, 1 layer, d={d}, heads={H}, d_head={m}" + (", attn-only" if cfg.attn_only else ", MLP")
            + f", normalization={cfg.normalization_type}")
    layer = OneLayer({"x": x}, proj, scale, W_O, b_O, e, post, unembed.outputs, what)
    torch_forward = torch_forward or _torch_last(model, lambda mod, t: mod(t), dtype)
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
    wte, wpe = _q(fmt, unwrap(model.tok_embed).weight), _q(fmt, unwrap(model.pos).weight)
    vocab, P = _limits(wte.shape[0], wpe.shape[0], vocab_size, seq_len, "this TransformerLens model")
    _rows(vocab, P, 2 * d + 1, "TransformerLens")
    qf = fmt.quantize
    e = qf(_grid(wte, wpe, vocab, P))
    x = qf(_tl_norm(block.ln1, fmt)(e.reshape(-1, d)).reshape(e.shape))
    repeats = getattr(attn, "kv_repeats", 1)
    proj = {}
    for which in "qkv":
        lin = unwrap(getattr(attn, which))
        W, b = _q(fmt, lin.weight), _q(fmt, lin.bias)
        heads = H if which == "q" else H // repeats
        W3 = W.reshape(heads, m, d)
        b2 = None if b is None else b.reshape(heads, m)
        if which != "q" and repeats > 1:  # grouped-query attention: each k/v head serves `repeats` query heads
            W3 = np.repeat(W3, repeats, axis=0)
            b2 = None if b2 is None else np.repeat(b2, repeats, axis=0)
        proj[which] = ("x", W3, b2)
    o = unwrap(attn.o)
    W_O, b_O = _q(fmt, o.weight), _q(fmt, o.bias)
    steps = []
    if not cfg.attn_only:
        ln2 = _tl_norm(block.ln2, fmt)
        mlp = unwrap(block.mlp)
        if getattr(mlp, "ln", None) is not None:
            raise AdapterError("an MLP with its own LayerNorm (solu_ln) is not supported")
        act = activation(cfg.act_fn or ("silu" if cfg.gated_mlp else "gelu"))
        if cfg.gated_mlp:
            lin = {k: unwrap(getattr(mlp, k)) for k in ("gate", "in", "out")}
            gate, inp, out = (Dense.for_format(_q(fmt, lin[k].weight).T, _q(fmt, lin[k].bias), fmt)
                              for k in ("gate", "in", "out"))
            steps.append(lambda r: r + out(act(gate(ln2(r))) * inp(ln2(r))))
        else:
            fc_in, fc_out = unwrap(mlp.fc_in), unwrap(mlp.fc_out)
            a_in = Dense.for_format(_q(fmt, fc_in.weight).T, _q(fmt, fc_in.bias), fmt)
            a_out = Dense.for_format(_q(fmt, fc_out.weight).T, _q(fmt, fc_out.bias), fmt)
            steps.append(lambda r: r + a_out(act(a_in(ln2(r)))))
    ln_out = _tl_norm(model.ln_out, fmt)
    head = unwrap(model.head)
    unembed = Dense.for_format(_q(fmt, head.weight).T, _q(fmt, getattr(head, "bias", None)), fmt)
    post = _residual_readout(steps, ln_out, unembed, getattr(model, "output_logits_soft_cap", -1.0))

    what = (f"TransformerLens native model, 1 layer, d={d}, heads={H}, d_head={m}" +
            (", attn-only" if cfg.attn_only else ", MLP") + f", normalization={cfg.normalization_type}")
    layer = OneLayer({"x": x}, proj, 1.0 / float(attn.scale), W_O, b_O, e, post, unembed.outputs, what)
    torch_forward = torch_forward or _torch_last(model, lambda mod, t: mod(t), dtype)
    return build_attention(layer, fmt, spec=spec or "tl:native", torch_forward=torch_forward)


def wrap_bridge(bridge, fmt: NumberFormat | None = None, *, vocab_size: int | None = None, seq_len: int | None = None,
                spec: str = "") -> TorchAttention:
    """Wrap a TransformerLens ``TransformerBridge`` around a one-layer GPT-2 or TL-native model.

    The agreement check runs the bridge's own forward (its hooks and components), not the bare model."""
    inner = bridge.original_model
    dtype = next(inner.parameters()).dtype
    forward = _torch_last(bridge, lambda mod, t: mod(t), dtype)
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
