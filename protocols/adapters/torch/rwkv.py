"""Hugging Face ``RwkvForCausalLM`` (RWKV-4) as a finite-precision recurrence for the hidden-state handoff
(Theorem 2 of [BHBK24]).

RWKV's state is what ``RwkvModel`` returns as ``state`` and reads back on the next token: per layer five
vectors -- the channel-mixing input of the last token (``ffn x``, d numbers), the time-mixing input of the last
token (``att x``, d), and the WKV numerator, denominator and running maximum exponent (``num``, ``den``,
``max``, a = attention_hidden_size each).  commsim hands off exactly these, every layer's:
``L·(2d + 3a)`` numbers, ``L·(2d + 3a)·p`` bits at the model's dtype (float32 -> p = 32) or
``precision=``/``dtype=``.  (``max`` is a numerical device -- num and den are stored divided by e^max -- but
it is part of what the model carries, so it is counted.)  The initial ``max`` is the model's -1e30 (rounded to
the format: a narrow format saturates it).

One token (``RwkvBlock``, :meth:`Rwkv._advance`): the embedding, ``pre_ln`` before layer 0; per layer
``h += output(sigmoid(r) ⊙ wkv)`` on ``ln1(h)`` mixed with the last token's (time mixing), then
``h += sigmoid(r') ⊙ value(relu(key(.))²)`` on ``ln2(h)`` mixed likewise (channel mixing); ``ln_out`` and the
head.  The WKV output reads the state *before* the token (HF's ``rwkv_linear_attention_cpu``), so the output at
t comes from the step (:class:`~protocols.models.mamba.StepOutputRecurrence`).  Every new state part is rounded
to the format after the step; everything else is float64, dot products batch-independent.
"""
from __future__ import annotations

import numpy as np

from commsim.contract import Dense, sigmoid
from commsim.core.precision import NumberFormat
from protocols.adapters.torch.layers import (
    AdapterError,
    format_for_dtype,
    layer_norm,
    tensor,
    unwrap,
    without_unpicklable_forward,
)
from protocols.adapters.torch.trust import ModuleForward, TorchTrust
from protocols.models.mamba import StepOutputRecurrence

#: the model's initial running maximum (``RwkvModel.forward``: ``state[4] -= 1e30``)
INITIAL_MAX = -1e30


class Rwkv(TorchTrust, StepOutputRecurrence):
    """RWKV-4 read from a Hugging Face ``RwkvForCausalLM`` (module docstring).  State layout per layer:
    ffn x (d), att x (d), num (a), den (a), max (a)."""

    kind = "rwkv"

    def __init__(self, model, fmt: NumberFormat, spec: str = "", torch_forward=None):
        model = unwrap(model)
        cfg = model.config
        body = unwrap(model.rwkv)
        blocks = [unwrap(b) for b in body.blocks]
        if cfg.rescale_every and cfg.rescale_every > 0 and len(blocks) >= cfg.rescale_every:
            raise AdapterError(f"this RWKV halves its hidden states every {cfg.rescale_every} layers in inference "
                               f"(rescale_every) and has {len(blocks)}: commsim reads RWKVs with fewer layers than "
                               f"rescale_every (or rescale_every=0)")
        embed = tensor(unwrap(body.embeddings).weight)
        head = unwrap(model.head)
        d = embed.shape[1]
        a = int(blocks[0].attention.attention_hidden_size)
        self.hidden, self.attention_size, self.num_layers = d, a, len(blocks)
        self.per_layer = 2 * d + 3 * a
        super().__init__(fmt, d, self.per_layer * len(blocks), embed.shape[0], int(head.weight.shape[0]),
                         spec or "hf-rwkv")
        q = self.quantize

        def dense(linear):
            linear = unwrap(linear)
            return Dense.for_format(q(tensor(linear.weight).T), None if linear.bias is None else
                                    q(tensor(linear.bias)), fmt)

        def norm(ln):
            ln = unwrap(ln)
            return layer_norm(q(tensor(ln.weight)), q(tensor(ln.bias)), float(ln.eps))

        self._embed = q(embed)
        self._pre_ln = norm(blocks[0].pre_ln)
        self._layers = []
        for b in blocks:
            att, ffn = unwrap(b.attention), unwrap(b.feed_forward)
            self._layers.append({
                "ln1": norm(b.ln1), "ln2": norm(b.ln2),
                "decay": -np.exp(q(tensor(att.time_decay))), "first": q(tensor(att.time_first)),
                "mix_k": q(tensor(att.time_mix_key).reshape(-1)), "mix_v": q(tensor(att.time_mix_value).reshape(-1)),
                "mix_r": q(tensor(att.time_mix_receptance).reshape(-1)),
                "key": dense(att.key), "value": dense(att.value), "receptance": dense(att.receptance),
                "output": dense(att.output),
                "fmix_k": q(tensor(ffn.time_mix_key).reshape(-1)), "fmix_r": q(tensor(ffn.time_mix_receptance).reshape(-1)),
                "fkey": dense(ffn.key), "freceptance": dense(ffn.receptance), "fvalue": dense(ffn.value),
            })
        self._ln_out = norm(body.ln_out)
        self._head = dense(head)
        self.torch_forward = torch_forward
        self.source = f"RwkvForCausalLM ({len(blocks)} layers, hidden {d}, attention {a})"
        h0 = np.zeros(self.state_units)
        for i in range(self.num_layers):
            h0[i * self.per_layer + 2 * d + 2 * a:(i + 1) * self.per_layer] = INITIAL_MAX
        self._h0 = q(h0)

    @property
    def layers(self) -> int:
        """The number of layers (every layer's state is handed off)."""
        return self.num_layers

    def __getstate__(self):
        """Plain arrays; the torch forward stays behind when another process could not unpickle it."""
        return without_unpicklable_forward(self.__dict__)

    def describe_state(self) -> str:
        """Per layer the five vectors."""
        d, a = self.hidden, self.attention_size
        layers = f"{self.num_layers} layers × " if self.num_layers > 1 else ""
        return (f"{layers}(ffn x {d} + att x {d} + num {a} + den {a} + max {a}) = {self.state_units} numbers of "
                f"{self.format.name}")

    def initial_state(self, batch: int = 1) -> np.ndarray:
        """Zeros, and the running maximum at -1e30 (rounded to the format)."""
        return np.repeat(self._h0[None], batch, axis=0)

    def _advance(self, h, x, t, output):
        """One token through every block (module docstring); the state parts as HF's RwkvBlock updates them."""
        d, a = self.hidden, self.attention_size
        out = np.empty_like(h)
        hidden = self._pre_ln(self._embed[x])
        for i, lay in enumerate(self._layers):
            off = i * self.per_layer
            ffn_x, att_x = h[:, off:off + d], h[:, off + d:off + 2 * d]
            num, den, mx = (h[:, off + 2 * d + j * a:off + 2 * d + (j + 1) * a] for j in range(3))
            cur = lay["ln1"](hidden)
            k = lay["key"](cur * lay["mix_k"] + att_x * (1 - lay["mix_k"]))
            v = lay["value"](cur * lay["mix_v"] + att_x * (1 - lay["mix_v"]))
            r = sigmoid(lay["receptance"](cur * lay["mix_r"] + att_x * (1 - lay["mix_r"])))
            top = np.maximum(mx, k + lay["first"])
            e1, e2 = np.exp(mx - top), np.exp(k + lay["first"] - top)
            wkv = (e1 * num + e2 * v) / (e1 * den + e2)
            top = np.maximum(mx + lay["decay"], k)
            e1, e2 = np.exp(mx + lay["decay"] - top), np.exp(k - top)
            out[:, off + d:off + 2 * d] = cur
            out[:, off + 2 * d:off + 2 * d + a] = e1 * num + e2 * v
            out[:, off + 2 * d + a:off + 2 * d + 2 * a] = e1 * den + e2
            out[:, off + 2 * d + 2 * a:off + self.per_layer] = top
            hidden = hidden + lay["output"](r * wkv)
            cur = lay["ln2"](hidden)
            kk = np.maximum(lay["fkey"](cur * lay["fmix_k"] + ffn_x * (1 - lay["fmix_k"])), 0.0)
            rr = sigmoid(lay["freceptance"](cur * lay["fmix_r"] + ffn_x * (1 - lay["fmix_r"])))
            out[:, off:off + d] = cur
            hidden = hidden + rr * lay["fvalue"](kk * kk)
        self._q(out)
        return out, (self._head(self._ln_out(hidden)) if output else None)


def wrap_hf_rwkv(model, fmt: NumberFormat | None = None, *, vocab_size: int | None = None, spec: str = "",
                 **_) -> Rwkv:
    """A Hugging Face ``RwkvForCausalLM`` (any number of layers below its rescale_every) as a recurrence."""
    model = unwrap(model)
    fmt = format_for_dtype(next(model.parameters()).dtype) if fmt is None else fmt
    wrapped = Rwkv(model, fmt, spec, torch_forward=ModuleForward(model))
    if vocab_size is not None and wrapped.vocab_size < vocab_size:
        raise AdapterError(f"this RwkvForCausalLM embeds {wrapped.vocab_size} tokens but the task uses {vocab_size}")
    return wrapped
