"""Attention written in a model's own forward, with no attention submodule: a flat one-layer model whose forward
calls ``c_attn`` (or query / key / value ``nn.Linear``\\ s), splits heads, rotates by position or not, calls
``F.scaled_dot_product_attention(is_causal=True)`` or an explicit masked ``softmax(q k^T * scale) @ v``, and
projects with ``c_proj``.

The forward is read by tracing it: one run on probe token ids under a
:class:`torch.overrides.TorchFunctionMode` that records every torch function the forward calls (with its
arguments and result), while hooks record every submodule call in order.  The trace runs the real forward, so
Python control flow on shapes (``assert t <= block_size``, ``B, T = idx.shape``, ``torch.ones(T, T)``) reads as
it runs -- ``torch.fx.symbolic_trace`` refuses exactly those lines of research code.  From the trace:

* the attention (:func:`~.handwritten.read_recorded`, the same reading as for an attention submodule): which
  ``nn.Linear`` output (or which third of a fused ``c_attn``) is q, k and v, split into heads; the scale (SDPA's
  ``scale=``, its default 1/sqrt(d_h), or the ratio of the softmax input to q k^T); the mask at the last query
  (causal: hides nothing there); a rotation by position (RoPE, both layouts); the output projection;
* the attention's input x: the tensor its projections read -- all three must read the same one;
* its place in the forward: the projections' calls span the attention, the submodules called before it (the
  embeddings, ``ln_1``) and after it (``ln_2``, the MLP, ``ln_f``, the head) take their roles as around an
  attention submodule (:func:`~.trace.find_roles`).

It is then folded as an attention submodule is (:mod:`.discover`, :mod:`.mha`, :mod:`.fold`) and the model is
verified against the module's own forward.  What cannot be read is refused, naming the ops on the path from the
projections to the softmax that the reading does not know (a ``tanh`` soft-cap, say) when there are any.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from protocols.adapters.torch.handwritten import _Recorder, read_recorded
from protocols.adapters.torch.layers import AdapterError
from protocols.adapters.torch.mha import ReadAttention
from protocols.adapters.torch.positions import rotate
from protocols.adapters.torch.trace import Traced, find_roles

#: ops the attention reading understands on the path from the projections to the softmax (by name)
KNOWN_OPS = frozenset(
    "view reshape transpose permute contiguous split chunk unbind __getitem__ size dim float double to type "
    "matmul __matmul__ bmm einsum mul __mul__ __rmul__ div __truediv__ __rtruediv__ add __add__ __radd__ sub "
    "__sub__ __rsub__ neg __neg__ masked_fill masked_fill_ where triu tril ones zeros ones_like zeros_like full "
    "arange outer cat stack cos sin sqrt rsqrt pow __pow__ exp unsqueeze squeeze expand expand_as clone "
    "softmax scaled_dot_product_attention __eq__ __ne__ __lt__ __le__ __gt__ __ge__ bool logical_not "
    "__invert__ dropout __get__ flatten repeat_interleave repeat".split())


class _Tracer(_Recorder):
    """The attention recorder, also keeping every torch call (func, args, kwargs, result) and, on each attention
    event, the number of submodule calls made before it."""

    def __init__(self, stack, calls):
        super().__init__(stack)
        self.calls, self.ops = calls, []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        seen = len(self.events)
        out = super().__torch_function__(func, types, args, kwargs)
        if len(self.events) > seen:
            self.events[-1] = (*self.events[-1], len(self.calls))
        self.ops.append((func, args, kwargs or {}, out))
        return out


def trace_module(module, probe: np.ndarray):
    """One run of ``module`` on ``probe`` token ids: (tracer, Linear calls as :func:`~.handwritten._record` gives
    them, the submodule calls as a :class:`~.trace.Traced`)."""
    stack, calls, modules, inputs, linears, handles = [], [], {}, {}, [], []
    rec = _Tracer(stack, calls)

    def pre(name):
        def hook(mod, args):
            stack.append(name)
            if name:
                calls.append(name)
                modules.setdefault(name, mod)
                inputs.setdefault(name, args[0] if args and isinstance(args[0], torch.Tensor) else None)
        return hook

    for name, sub in module.named_modules():
        handles.append(sub.register_forward_pre_hook(pre(name)))
        handles.append(sub.register_forward_hook(lambda m, a, o: (stack.pop(), None)[1]))
        if isinstance(sub, nn.Linear):
            handles.append(sub.register_forward_hook(
                lambda m, a, o, name=name: linears.append((len(rec.events), name, m, a[0], o))))
    try:
        with torch.no_grad(), rec:
            module(torch.as_tensor(probe, dtype=torch.long))
    finally:
        for h in handles:
            h.remove()
    indices = {}
    for i, name in enumerate(calls):
        indices.setdefault(name, []).append(i)
    return rec, linears, Traced(indices, modules, inputs)


def _op_name(func) -> str:
    """``torch.tanh`` / ``Tensor.view`` / the function's own name."""
    name = getattr(func, "__name__", None) or str(func)
    qual = getattr(func, "__qualname__", "") or ""
    return f"Tensor.{name}" if qual.startswith(("Tensor.", "_TensorBase.")) else f"torch.{name}" \
        if getattr(func, "__module__", "") in ("torch", "torch._C._VariableFunctions", None) else name


def unread_ops(ops, event, linears) -> list[str]:
    """The ops on the path from the projections' outputs to the attention (found by following each tensor back
    to the call that made it) that the reading does not know (:data:`KNOWN_OPS`), in call order."""
    made = {}
    for i, (_, _, _, out) in enumerate(ops):
        for t in (out if isinstance(out, (tuple, list)) else (out,)):
            if isinstance(t, torch.Tensor):
                made.setdefault(id(t), i)
    sources = {id(lin[4]) for lin in linears}
    attention = event[3]
    start = next((i for i, op in enumerate(ops) if op[3] is attention), len(ops) - 1)
    seen, todo, unknown = set(), [start], []
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        func, args, kwargs, _ = ops[i]
        name = getattr(func, "__name__", str(func))
        if name not in KNOWN_OPS:
            unknown.append((i, _op_name(func)))
        for a in (*args, *kwargs.values()):
            for t in (a if isinstance(a, (tuple, list)) else (a,)):
                if isinstance(t, torch.Tensor) and id(t) not in sources and id(t) in made and made[id(t)] < i:
                    todo.append(made[id(t)])
    return list(dict.fromkeys(n for _, n in sorted(unknown)))


class InlineAttention(nn.Module):
    """The attention read from a forward, computed in torch as read (x -> W_O softmax(scale (R q)(R k)^T +
    causal mask) v + b_O): the reference of the parts before the model is verified against the module itself."""

    def __init__(self, att: ReadAttention, dtype):
        super().__init__()
        self.att = att
        for name in ("Wq", "Wk", "Wv", "bq", "bk", "bv", "W_O", "b_O"):
            value = getattr(att, name)
            self.register_buffer(name, None if value is None else torch.tensor(value, dtype=dtype))
        self.anchor = nn.Parameter(torch.zeros((), dtype=dtype), requires_grad=False)   # the dtype, for readers

    def forward(self, x):
        B, L, _ = x.shape
        H = self.att.num_heads
        q, k, v = (F.linear(x, W, b).view(B, L, H, -1).transpose(1, 2)
                   for W, b in ((self.Wq, self.bq), (self.Wk, self.bk), (self.Wv, self.bv)))
        if self.att.rope:
            q, k = rotate(q, self.att.rope).to(x.dtype), rotate(k, self.att.rope).to(x.dtype)
        i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
        bias = torch.zeros(H, L, L, dtype=torch.float64)
        if self.att.alibi is not None:
            bias = torch.tensor(self.att.alibi, dtype=torch.float64)[:, None, None] * (j - i).double()
        mask = bias.masked_fill(j > i, float("-inf")).to(x.dtype)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.att.scale)
        return F.linear(y.transpose(1, 2).reshape(B, L, -1), self.W_O, self.b_O)


class Inline:
    """What :func:`read_inline` found: the attention (its ``module`` an :class:`InlineAttention`), the roles
    around it (as :func:`~.discover._roles` gives them), the names of its projections and the out projection
    module (the readout check perturbs its output; None without one)."""

    def __init__(self, attention: ReadAttention, roles: dict, names: dict, out):
        self.attention, self.roles, self.names, self.out = attention, roles, names, out


def read_inline(module, probe: np.ndarray, label: str) -> Inline:
    """The attention ``module``'s own forward computes, and its place in the forward (module docstring)."""
    rec, linears, traced = trace_module(module, probe)
    att = [e for e in rec.events if e[0] in ("sdpa", "softmax")]
    if len(att) != 1:
        raise AdapterError(f"{label}'s forward computes {len(att)} softmax attentions itself; commsim reads one")
    names = {}
    try:
        read = read_recorded(rec.events, linears, att[0], None, None, module, f"{label}'s forward", label, names)
    except AdapterError as exc:
        unknown = unread_ops(rec.ops, att[0], linears)
        if not unknown:
            raise
        raise AdapterError(f"{label} computes its attention in its own forward and commsim could not read it: "
                           f"{', '.join(unknown)} on the way from the projections to the "
                           f"{'softmax' if att[0][0] == 'softmax' else 'attention'} is no part of "
                           f"softmax(scale * (R q)(R k)^T + mask) v ({exc})") from None
    projections = [names[w] for w in ("q", "k", "v")]
    starts = [traced.calls[n][0] for n in projections if n in traced.calls]
    if len(starts) != 3:
        raise AdapterError(f"{label}: the projections {', '.join(projections)} are not called as submodules")
    end = traced.calls[names["out"]][0] if names["out"] else att[0][4] - 1
    cores = tuple(dict.fromkeys(projections + ([names["out"]] if names["out"] else [])))
    roles = find_roles(traced, cores, probe, label, span=(min(starts), end))
    dtype = next(module.parameters()).dtype
    x = next(lin[3] for lin in linears if lin[1] == names["q"])
    read.module = InlineAttention(read, dtype)
    read.what = read.what.replace(f"{label}'s forward (hand-written:", f"{label}'s own forward (inline:", 1)
    positions = roles.positions and roles.positions[1]
    if positions is None:   # a position table read by indexing its weight (never called): named "pos..."
        unused = [m for n, m in module.named_modules() if isinstance(m, nn.Embedding) and n not in traced.calls
                  and "pos" in n.lower()]
        positions = unused[0] if len(unused) == 1 else None
    found = {"tokens": roles.tokens and roles.tokens[1], "positions": positions,
             "before": [m for _, m in roles.before], "after": [m for _, m in roles.after], "traced": True,
             "core_input": x}
    out = dict(module.named_modules())[names["out"]] if names["out"] else None
    return Inline(read, found, names, out)

