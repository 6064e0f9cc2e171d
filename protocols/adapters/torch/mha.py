"""``nn.MultiheadAttention`` with its embeddings and head as a one-layer commsim attention model
(Theorem 4 of [BHBK24]), folded by :mod:`.fold`: biases on a constant coordinate, the score scale in
W_Q, per-position layers before the attention (an embedding LayerNorm, a pre-LN block's norm) into the
(position, token) table, the head (and an optional residual connection) as psi.

The residual stream.  Writing e = E_tok(s) + E_pos(i) and ``pre`` / ``norm`` for per-position layers
before the attention, the stream is s = pre(e) and the attention reads x = norm(s).  psi reads y (the
attention's output at the query) and, with a residual connection, y + x (``residual="input"``: a
post-LN or plain residual block, ``y + x``) or y + s (``residual="stream"``: the pre-LN block
``s + MHA(norm(s))``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from commsim.core.precision import NumberFormat
from protocols.adapters.torch.fold import (
    DEFAULT_POSITIONS,
    OneLayer,
    TorchAttention,
    build_attention,
    check_table_size,
    embedding_grid,
    fold_pre_attention,
    split_heads,
    vocab_and_positions,
)
from protocols.adapters.torch.layers import (
    AdapterError,
    Head,
    embedding_weights,
    format_for_dtype,
    numpy_head,
    numpy_steps,
    tensor,
)

@dataclass
class ReadAttention:
    """A self-attention's parameters as commsim reads them (from ``nn.MultiheadAttention``, :func:`read_mha`,
    or from a hand-written module's forward, :mod:`.handwritten`): projections (H d_h, d) and biases, the
    output map W_O (d_out, H d_h) and b_O, the score scale, and the position scheme (``rope``: the RoPE
    base or None; ``alibi``: per-head slopes or None).  ``kdim`` / ``vdim``: the key / value input widths
    (``nn.MultiheadAttention`` with separate ones); ``module``: the torch module it was read from."""

    embed_dim: int
    num_heads: int
    Wq: np.ndarray
    Wk: np.ndarray
    Wv: np.ndarray
    bq: np.ndarray | None
    bk: np.ndarray | None
    bv: np.ndarray | None
    W_O: np.ndarray
    b_O: np.ndarray | None
    scale: float
    kdim: int | None = None
    vdim: int | None = None
    rope: float | None = None
    alibi: tuple | None = None
    module: object = None
    what: str = ""

    @property
    def width(self) -> int:
        """d_h: the width of a head."""
        return self.Wq.shape[0] // self.num_heads


def read_mha(mha) -> ReadAttention:
    """An ``nn.MultiheadAttention``'s parameters; ``add_bias_kv`` and ``add_zero_attn`` are refused (a key that
    belongs to no position, hence to neither party)."""
    import torch.nn as nn
    if not isinstance(mha, nn.MultiheadAttention):
        raise AdapterError(f"expected nn.MultiheadAttention, got {type(mha).__name__}")
    if mha.bias_k is not None or mha.bias_v is not None:
        raise AdapterError("nn.MultiheadAttention with add_bias_kv=True attends to a learned extra key that belongs "
                           "to no position, hence to neither party; the exchange does not model it")
    if mha.add_zero_attn:
        raise AdapterError("nn.MultiheadAttention with add_zero_attn=True attends to an extra zero key that belongs to "
                           "no position; the exchange does not model it")
    E, H = mha.embed_dim, mha.num_heads
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
    b_O = None if mha.out_proj.bias is None else tensor(mha.out_proj.bias)
    return ReadAttention(E, H, Wq, Wk, Wv, bq, bk, bv, tensor(mha.out_proj.weight), b_O, 1.0 / math.sqrt(E // H),
                         mha.kdim, mha.vdim, module=mha,
                         what=f"nn.MultiheadAttention(embed_dim={E}, heads={H}" +
                         (", separate k/v projections" if not mha._qkv_same_embed_dim else "") + ")")


#: what psi adds to the attention's output at the query position
RESIDUALS = ("none", "input", "stream")


def residual_mode(residual) -> str:
    """``False``/None -> "none", ``True`` -> "input" (y + x), or one of :data:`RESIDUALS`."""
    if residual is None or residual is False:
        return "none"
    if residual is True:
        return "input"
    if residual not in RESIDUALS:
        raise AdapterError(f"residual must be True, False or one of {', '.join(RESIDUALS)}; got {residual!r}")
    return residual


def per_position(modules, fmt: NumberFormat | None, what: str):
    """Numpy steps of per-position torch layers applied in order (None: none given); a layer commsim cannot
    read is refused, naming it."""
    if modules is None:
        return None
    modules = list(modules) if isinstance(modules, (list, tuple)) else [modules]
    steps = []
    for module in modules:
        got = numpy_steps(module, fmt)
        if got is None:
            from protocols.adapters.torch.norms import probe_norm
            raise AdapterError(f"{type(module).__name__} sits {what} and commsim cannot read it: it is no Linear, "
                               f"pointwise activation or Dropout, and no normalisation ({probe_norm(module)[1]})")
        steps += got
    return Head(steps, 0, 0, " -> ".join(type(m).__name__ for m in modules)) if modules else None


def mha_layer(mha, embedding, positions, post: Head, fmt: NumberFormat, *, pre=None, norm=None,
              residual: str = "none", key_embedding=None, value_embedding=None, vocab_size: int | None = None,
              seq_len: int | None = None, source: str = "") -> OneLayer:
    """``nn.MultiheadAttention`` (or a :class:`ReadAttention`) over token (+ position) embeddings in folded form
    (module docstring): ``pre``/``norm`` are numpy maps (:func:`per_position`) or None, ``post`` is psi's map of
    the residual stream at the query position."""
    att = mha if isinstance(mha, ReadAttention) else read_mha(mha)
    if embedding is None:
        raise AdapterError("the attention needs a token embedding (embedding=, or a wrapping module with an "
                           "nn.Embedding)")
    E, H = att.embed_dim, att.num_heads
    m = att.width
    Wq, Wk, Wv, bq, bk, bv = att.Wq, att.Wk, att.Wv, att.bq, att.bk, att.bv
    tok = embedding_weights(embedding, "embedding")
    pos = None if positions is None else embedding_weights(positions, "positions")
    model_positions = None if pos is None else pos.shape[0]
    if model_positions is None and seq_len is None:
        seq_len = DEFAULT_POSITIONS  # no position embedding: any length; the table is built for this many
    vocab, P = vocab_and_positions(tok.shape[0], model_positions, vocab_size, seq_len, "the attention model")
    q = fmt.quantize
    check_table_size(vocab, P, E * (2 if residual == "stream" and norm is not None else 1), "the attention")
    e = embedding_grid(q(tok), None if pos is None else q(pos), vocab, P, fmt)  # [E_tok(s) + E_pos(i)]
    stream = e if pre is None else fold_pre_attention(e, pre, fmt)
    x = stream if norm is None else fold_pre_attention(stream, norm, fmt)
    if x.shape[2] != E:
        raise AdapterError(f"the attention reads vectors of {E} values, but the layers before it give {x.shape[2]}")
    inputs = {"x": x}
    proj = {"q": ("x", split_heads(q(Wq), H, m), _bias(bq, q, H, m))}
    for which, extra_emb, Wx, bx, dimx in (("k", key_embedding, Wk, bk, att.kdim),
                                           ("v", value_embedding, Wv, bv, att.vdim)):
        if dimx in (E, None) and extra_emb is None:
            proj[which] = ("x", split_heads(q(Wx), H, m), _bias(bx, q, H, m))
            continue
        if extra_emb is None:
            raise AdapterError(f"this nn.MultiheadAttention has {which}dim={dimx} != embed_dim={E}: its {which} inputs "
                               f"are not the query's embedding; give {('key' if which == 'k' else 'value')}_embedding= "
                               f"(an nn.Embedding or (vocab, {dimx}) matrix)")
        t = embedding_weights(extra_emb, f"{which} embedding")
        if t.shape[1] != dimx or t.shape[0] < vocab:
            raise AdapterError(f"the {which} embedding has shape {t.shape}; expected ({vocab}+, {dimx})")
        inputs[which] = embedding_grid(q(t), None, vocab, P, fmt)
        proj[which] = (which, split_heads(q(Wx), H, m), _bias(bx, q, H, m))
    res = {"none": None, "input": x, "stream": stream}[residual]
    return OneLayer(inputs, proj, att.scale, q(att.W_O), att.b_O, res, post, post.outputs, source,
                    extras={"rope": att.rope, "alibi": att.alibi})


def wrap_mha(mha, embedding=None, positions=None, head=None, fmt: NumberFormat | None = None, *, residual=False,
             pre=None, norm=None, key_embedding=None, value_embedding=None, vocab_size: int | None = None,
             seq_len: int | None = None, spec: str = "", torch_forward=None, source: str = "") -> TorchAttention:
    """Wrap ``nn.MultiheadAttention`` as self-attention over token (+ position) embeddings.

    ``embedding``: an ``nn.Embedding`` or (vocab, E) matrix for the attention's inputs; ``positions``:
    an ``nn.Embedding``/matrix of position embeddings added to it (or None); ``head``: a torch module
    or callable applied to the attention output at the query position (psi; None: the output itself);
    ``pre`` / ``norm``: per-position torch layers (a module or a list: LayerNorm, RMSNorm, ...) on the
    summed embedding, forming the residual stream / between the stream and the attention (the pre-LN
    block's norm); ``residual``: psi sees y + x (``True`` or "input") or y + stream ("stream") instead of
    the output alone.  With separate key/value dimensions (``kdim``/``vdim`` != E) give ``key_embedding``
    / ``value_embedding`` of those widths.  Biases (packed or separate) are folded; ``add_bias_kv`` and
    ``add_zero_attn`` are refused.  Without ``torch_forward`` the torch parts themselves are the reference
    (:class:`AttentionPartsForward`).
    """
    att = mha if isinstance(mha, ReadAttention) else read_mha(mha)
    residual = residual_mode(residual)
    dtype = next(att.module.parameters()).dtype
    fmt = format_for_dtype(dtype) if fmt is None else fmt
    pre_fn = per_position(pre, fmt, "between the embedding and the attention")
    norm_fn = per_position(norm, fmt, "between the residual stream and the attention")
    d_out = att.W_O.shape[0]   # what psi reads: W_O's output (d; H m without an out projection)
    if residual != "none" and d_out != att.embed_dim:
        raise AdapterError(f"the attention's output has {d_out} values (heads x head width, no 'out' projection) "
                           f"but the residual connection adds the {att.embed_dim}-value input: declare 'out' (an "
                           f"nn.Linear({d_out}, {att.embed_dim}))", "out")
    head_fn = numpy_head(head, d_out, fmt, dtype, "head")
    folded = [f"{fn.description} {what}" for fn, what in ((pre_fn, "on the embedding"),
                                                         (norm_fn, "before the attention")) if fn is not None]
    what = (att.what +
            (f" with {' and '.join(folded)} folded into the embedding" if folded else "") +
            {"none": "", "input": ", a residual connection", "stream": ", a pre-norm residual connection"}[residual] +
            f" and {head_fn.description} psi")
    layer = mha_layer(att, embedding, positions, head_fn, fmt, pre=pre_fn, norm=norm_fn, residual=residual,
                      key_embedding=key_embedding, value_embedding=value_embedding, vocab_size=vocab_size,
                      seq_len=seq_len, source=source or what)
    if torch_forward is None:
        torch_forward = AttentionPartsForward(att.module, embedding, positions, head, pre=pre, norm=norm, residual=residual,
                                              key_embedding=key_embedding, value_embedding=value_embedding)
    return build_attention(layer, fmt, spec=spec or ("torch:multihead-attention" if att.module is mha else
                                                     "torch:attention"), torch_forward=torch_forward)


def _bias(b, q, H: int, m: int):
    """A packed projection bias (H m,) rounded by ``q`` and split by head (H, m); None stays None."""
    return None if b is None else q(np.asarray(b)).reshape(H, m)


def _modules(x) -> list:
    """None, a module or a list of modules -> a list."""
    return [] if x is None else list(x) if isinstance(x, (list, tuple)) else [x]


class AttentionPartsForward:
    """The torch parts run as the folded model says they compose (the reference when there is no wrapping
    module): e = embedding + positions, s = pre(e), x = norm(s), y = core(x) at the last position (plus x or s
    with a residual connection), then the head.  ``core`` is an ``nn.MultiheadAttention`` (self-attention,
    or separate key/value embeddings) or a module mapping (batch, length, E) -> (batch, length, E) in its
    own layout (``nn.TransformerEncoderLayer`` / ``nn.TransformerEncoder``).  Picklable when the parts are.  The
    parts composed, not a module of the user's (the agreement with it is not judged:
    :func:`~protocols.adapters.torch.trust.judge`)."""

    whole_model = False
    reference = "the given parts composed in torch (embedding -> norm -> attention core -> head)"

    def __init__(self, core, embedding, positions, head, *, pre=None, norm=None, residual: str = "none",
                 key_embedding=None, value_embedding=None):
        self.core, self.embedding, self.positions, self.head = core, embedding, positions, head
        self.pre, self.norm, self.residual = _modules(pre), _modules(norm), residual
        self.key_embedding, self.value_embedding = key_embedding, value_embedding

    @staticmethod
    def _embed(table, index, dtype):
        """An nn.Embedding (or a matrix) looked up at ``index``."""
        import torch
        if isinstance(table, torch.nn.Module):
            return table(index)
        return torch.as_tensor(tensor(table), dtype=dtype)[index]

    def __call__(self, tokens):
        """The composed torch forward's outputs at the last position, as float64 (batch, classes)."""
        import torch
        dtype = next(self.core.parameters()).dtype
        with torch.no_grad():
            t = torch.as_tensor(np.atleast_2d(np.asarray(tokens)), dtype=torch.long)
            e = self._embed(self.embedding, t, dtype).to(dtype)
            if self.positions is not None:
                e = e + self._embed(self.positions, torch.arange(t.shape[1]), dtype).to(dtype)
            s = e
            for module in self.pre:
                s = module(s)
            x = s
            for module in self.norm:
                x = module(x)
            batch_first = _batch_first(self.core)
            flip = (lambda z: z) if batch_first else (lambda z: z.transpose(0, 1))
            if isinstance(self.core, torch.nn.MultiheadAttention):
                k = x if self.key_embedding is None else self._embed(self.key_embedding, t, dtype).to(dtype)
                v = x if self.value_embedding is None else self._embed(self.value_embedding, t, dtype).to(dtype)
                y = flip(self.core(flip(x), flip(k), flip(v), need_weights=False)[0])
            else:
                y = flip(self.core(flip(x)))
            y = y[:, -1]
            if self.residual == "input":
                y = y + x[:, -1]
            elif self.residual == "stream":
                y = y + s[:, -1]
            if self.head is not None:
                y = self.head(y)
                if isinstance(y, (tuple, list)):
                    y = y[0]
            return tensor(y)


def _batch_first(core) -> bool:
    """Whether an attention core reads (batch, length, E) (else (length, batch, E))."""
    if hasattr(core, "batch_first"):
        return bool(core.batch_first)
    if hasattr(core, "self_attn"):
        return bool(core.self_attn.batch_first)
    layers = getattr(core, "layers", None)
    return bool(layers[0].self_attn.batch_first) if layers else True
