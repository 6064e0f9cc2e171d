"""``nn.MultiheadAttention`` with its embeddings and head as a one-layer commsim attention model
(Theorem 4 of [BHBK24]), folded by :mod:`.fold`: biases on a constant coordinate, the score scale in
W_Q, the head (and an optional residual connection) as psi."""
from __future__ import annotations

import math

import numpy as np

from commsim.core.precision import NumberFormat
from protocols.adapters.torch.fold import (
    DEFAULT_POSITIONS,
    OneLayer,
    TorchAttention,
    build_attention,
    check_table_size,
    embedding_grid,
    split_heads,
    vocab_and_positions,
)
from protocols.adapters.torch.layers import AdapterError, embedding_weights, format_for_dtype, numpy_head, tensor


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
    tok = embedding_weights(embedding, "embedding")
    pos = None if positions is None else embedding_weights(positions, "positions")
    model_positions = None if pos is None else pos.shape[0]
    if model_positions is None and seq_len is None:
        seq_len = DEFAULT_POSITIONS  # no position embedding: any length; the table is built for this many
    vocab, P = vocab_and_positions(tok.shape[0], model_positions, vocab_size, seq_len, "the attention model")
    q = fmt.quantize
    check_table_size(vocab, P, E, "nn.MultiheadAttention")
    x = q(embedding_grid(q(tok), None if pos is None else q(pos), vocab, P))  # [E_tok(s) + E_pos(i)]
    inputs = {"x": x}
    proj = {"q": ("x", split_heads(q(Wq), H, m), _bias(bq, q, H, m))}
    for which, extra_emb, Wx, bx, dimx in (("k", key_embedding, Wk, bk, mha.kdim),
                                           ("v", value_embedding, Wv, bv, mha.vdim)):
        if dimx == E and extra_emb is None:
            proj[which] = ("x", split_heads(q(Wx), H, m), _bias(bx, q, H, m))
            continue
        if extra_emb is None:
            raise AdapterError(f"this nn.MultiheadAttention has {which}dim={dimx} != embed_dim={E}: its {which} inputs "
                               f"are not the query's embedding; give {('key' if which == 'k' else 'value')}_embedding= "
                               f"(an nn.Embedding or (vocab, {dimx}) matrix)")
        t = embedding_weights(extra_emb, f"{which} embedding")
        if t.shape[1] != dimx or t.shape[0] < vocab:
            raise AdapterError(f"the {which} embedding has shape {t.shape}; expected ({vocab}+, {dimx})")
        inputs[which] = q(embedding_grid(q(t), None, vocab, P))
        proj[which] = (which, split_heads(q(Wx), H, m), _bias(bx, q, H, m))
    W_O = q(tensor(mha.out_proj.weight))
    b_O = None if mha.out_proj.bias is None else tensor(mha.out_proj.bias)
    head_fn = numpy_head(head, E, fmt, dtype, "psi head")
    what = (f"nn.MultiheadAttention(embed_dim={E}, heads={H}" + (", separate k/v projections" if not
            mha._qkv_same_embed_dim else "") + f") with {'a residual connection and ' if residual else ''}"
            f"{head_fn.description} psi")
    layer = OneLayer(inputs, proj, 1.0 / math.sqrt(m), W_O, b_O, x if residual else None, head_fn, head_fn.outputs,
                     source or what)
    return build_attention(layer, fmt, spec=spec or "torch:multihead-attention", torch_forward=torch_forward)


def _bias(b, q, H: int, m: int):
    """A packed projection bias (H m,) rounded by ``q`` and split by head (H, m); None stays None."""
    return None if b is None else q(np.asarray(b)).reshape(H, m)
