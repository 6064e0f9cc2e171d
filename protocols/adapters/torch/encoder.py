"""One ``nn.TransformerEncoderLayer`` (or an ``nn.TransformerEncoder`` of one layer) as a commsim attention
model (Theorem 4 of [BHBK24]), folded by :mod:`.fold` through :func:`.mha.mha_layer`.

With x the layer's input at a position (the summed embeddings, through any per-position layers before
the encoder), the layer computes

* ``norm_first=True`` (pre-LN):  r = x + SA(norm1(x)),  out = r + FF(norm2(r));
* ``norm_first=False`` (post-LN): r = norm1(x + SA(x)),  out = norm2(r + FF(r));

with FF(z) = linear2(activation(linear1(z))) (dropout is the identity in eval mode).  ``norm1`` of a
pre-LN layer is a per-position map of x, so it is folded into the (position, token) table like GPT-2's
``ln_1``; everything after the attention at the query position -- W_O's bias, the residual connection,
the norms, the feed-forward block, the encoder's final norm and the user's head -- is psi.  psi reads x at
the query position through the layer's residual path.  Refused with the reason: more than one layer
(Lemma 5 / Corollary 13.1 of [BHBK24]).
"""
from __future__ import annotations

from commsim.core.precision import NumberFormat
from protocols.adapters.torch.fold import TWO_LAYERS, TorchAttention, build_attention
from protocols.adapters.torch.layers import (
    AdapterError,
    Gelu,
    Head,
    format_for_dtype,
    numpy_head,
    numpy_steps,
)
from protocols.adapters.torch.mha import AttentionPartsForward, mha_layer, per_position


class EncoderPost:
    """psi of an encoder layer: the stream r = x + W_O o + b_O at the query through the rest of the layer
    (module docstring), then ``out`` (the encoder's final norm and the head).  Picklable."""

    def __init__(self, norm_first: bool, norm1, norm2, fc1, act, fc2, out: Head):
        self.norm_first, self.norm1, self.norm2 = bool(norm_first), norm1, norm2
        self.fc1, self.act, self.fc2, self.out = fc1, act, fc2, out
        self.outputs = out.outputs
        self.probability = out.probability

    def _ff(self, z):
        """The feed-forward block linear2(activation(linear1(z)))."""
        return self.fc2(self.act(self.fc1(z)))

    def __call__(self, r):
        """The rest of the layer, then the head."""
        if self.norm_first:
            r = r + self._ff(self.norm2(r))
        else:
            r = self.norm1(r)
            r = self.norm2(r + self._ff(r))
        return self.out(r)


def _activation(act, fmt):
    """The layer's activation (a function of torch.nn.functional, or a module) as a numpy function."""
    import torch.nn as nn
    import torch.nn.functional as F
    if act is F.relu:
        return numpy_steps(nn.ReLU())[0]
    if act is F.gelu:
        return Gelu("none")
    if isinstance(act, nn.Module):
        steps = numpy_steps(act, fmt)
        if steps is not None:
            return Head(steps, 0, 0, type(act).__name__) if len(steps) != 1 else steps[0]
    raise AdapterError(f"the encoder layer's activation {getattr(act, '__name__', type(act).__name__)} is not "
                       f"supported (relu, gelu, or an activation module commsim reads)")


def _single(module, fmt, what: str):
    """One torch layer as its numpy step (refused when commsim cannot read it)."""
    steps = numpy_steps(module, fmt)
    if steps is None or len(steps) != 1:
        raise AdapterError(f"the encoder layer's {what} ({type(module).__name__}) is not a layer commsim reads")
    return steps[0]


def encoder_parts(core):
    """(the one nn.TransformerEncoderLayer, the encoder's final norm or None) of a layer or a one-layer
    encoder; more layers are refused (:data:`~protocols.adapters.torch.fold.TWO_LAYERS`)."""
    import torch.nn as nn
    if isinstance(core, nn.TransformerEncoderLayer):
        return core, None
    if isinstance(core, nn.TransformerEncoder):
        if len(core.layers) != 1:
            raise AdapterError(f"this nn.TransformerEncoder has num_layers={len(core.layers)}; {TWO_LAYERS}")
        return core.layers[0], core.norm
    raise AdapterError(f"expected nn.TransformerEncoderLayer or nn.TransformerEncoder, got {type(core).__name__}")


def wrap_encoder(core, embedding=None, positions=None, head=None, fmt: NumberFormat | None = None, *, pre=None,
                 vocab_size: int | None = None, seq_len: int | None = None, spec: str = "", torch_forward=None,
                 source: str = "") -> TorchAttention:
    """Wrap ``nn.TransformerEncoderLayer`` (``norm_first`` and ``batch_first`` either way) or a one-layer
    ``nn.TransformerEncoder`` over token (+ position) embeddings, with ``head`` at the query (last)
    position (psi; None: the layer's output itself) and ``pre``: per-position layers on the summed
    embedding before the encoder (or None).  Without ``torch_forward`` the torch parts are the reference."""
    layer, final_norm = encoder_parts(core)
    dtype = next(layer.parameters()).dtype
    fmt = format_for_dtype(dtype) if fmt is None else fmt
    E = layer.self_attn.embed_dim
    pre_fn = per_position(pre, fmt, "between the embedding and the encoder layer")
    head_fn = numpy_head(head, E, fmt, dtype, "head")
    final = [] if final_norm is None else numpy_steps(final_norm, fmt)
    if final is None:
        raise AdapterError(f"the encoder's final norm ({type(final_norm).__name__}) is not a layer commsim reads")
    out = Head(final + head_fn.steps, E, head_fn.outputs,
               ("final norm + " if final else "") + head_fn.description)
    norm1, norm2 = _single(layer.norm1, fmt, "norm1"), _single(layer.norm2, fmt, "norm2")
    post = EncoderPost(layer.norm_first, norm1, norm2, _single(layer.linear1, fmt, "linear1"),
                       _activation(layer.activation, fmt), _single(layer.linear2, fmt, "linear2"), out)
    norm = Head([norm1], E, E, "norm1") if layer.norm_first else None
    what = (f"{type(core).__name__} (1 layer, d={E}, heads={layer.self_attn.num_heads}, "
            f"norm_first={layer.norm_first}, batch_first={layer.self_attn.batch_first})" +
            (f", {pre_fn.description} on the embedding" if pre_fn is not None else "") +
            (", norm1 folded into the embedding" if layer.norm_first else "") +
            f"; the residual, norms and feed-forward after the attention and {out.description} as psi")
    folded = mha_layer(layer.self_attn, embedding, positions, post, fmt, pre=pre_fn, norm=norm,
                       residual="stream" if layer.norm_first else "input", vocab_size=vocab_size, seq_len=seq_len,
                       source=source or what)
    if torch_forward is None:
        torch_forward = AttentionPartsForward(core, embedding, positions, head, pre=pre)
    return build_attention(folded, fmt, spec=spec or "torch:encoder-layer", torch_forward=torch_forward)

