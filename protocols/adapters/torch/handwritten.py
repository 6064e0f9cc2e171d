"""Hand-written attention (nanoGPT, minGPT and most research code) read from what its forward does.

No ``nn.MultiheadAttention``: a packed ``c_attn = nn.Linear(d, 3d)`` (or separate query / key / value
``nn.Linear``\\ s) split into heads, then ``F.scaled_dot_product_attention(q, k, v, is_causal=True)`` or an
explicit ``softmax(q @ k^T * scale + mask) @ v``, then an output ``nn.Linear``.  :func:`find_attention`
runs the module once on probe tokens under a :class:`torch.overrides.TorchFunctionMode` that records the
calls to ``scaled_dot_product_attention``, ``softmax`` and ``matmul``, with hooks saying which submodule was
running: the innermost one that computed the attention is the core.  :func:`read_attention` runs that
core on its own input and reads, from the recorded tensors:

* q, k, v: which ``nn.Linear`` output (and which third of a packed one) each is, heads split as
  ``view(B, L, H, d_h).transpose(1, 2)`` -- compared exactly, or after a rotation by position (RoPE, rotate-halves
  or GPT-J's interleaved pairs, folded into W_Q and W_K as halves: :mod:`.positions`);
* the scale (``scale=`` of SDPA, default 1/sqrt(d_h); for an explicit softmax, the ratio of its input to
  q k^T at the query row) and the mask at the query (the last position): nothing hidden (a causal mask
  hides nothing from the last query), or a bias linear in the key position (ALiBi, :mod:`.positions`);
* the output projection: the ``nn.Linear`` called on the heads' outputs concatenated.

One head without a heads axis -- (batch, length, length) scores, ``softmax(q @ k^T * scale) @ v`` as in
Karpathy's ``Head`` -- is read as H = 1.  Heads written one module each (``MultiHead(heads=ModuleList([Head,
...]), proj)``) are the H heads of one layer when every head reads the layer's input, has no output projection
of its own and their outputs are concatenated (in call order) before at most one ``nn.Linear``
(:func:`_read_heads`); attentions that read one another's output are two layers (refused, Lemma 5).

What it reads becomes an :class:`~protocols.adapters.torch.mha.ReadAttention`, folded like
``nn.MultiheadAttention``; the whole model is then verified against the module's own forward
(:mod:`.discover`).  What cannot be read is refused, naming it; the declared-parts fallback
(:func:`declared_attention`) takes the ``query``, ``key``, ``value`` and ``out`` projections, the heads, the
scale and the mask from the user instead.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from protocols.adapters.torch.layers import AdapterError, tensor
from protocols.adapters.torch.mha import ReadAttention
from protocols.adapters.torch.positions import ROPES, close, read_alibi, read_rope, rotate, to_halves

#: what a user declares when the forward cannot be read (:func:`declared_attention`)
DECLARED = ("query", "key", "value", "out", "heads", "scale", "mask", "rope", "alibi")

_SOFTMAX = {torch.softmax, F.softmax, torch.Tensor.softmax}
_MATMUL = {torch.matmul, torch.Tensor.__matmul__, torch.Tensor.matmul, torch.bmm}


class _Recorder(TorchFunctionMode):
    """Records attention calls (with the innermost running submodule) in call order."""

    def __init__(self, stack):
        super().__init__()
        self.stack, self.events = stack, []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func is F.scaled_dot_product_attention:
            names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale")
            call = dict(zip(names, args), **kwargs)
            self.events.append(("sdpa", self.stack[-1] if self.stack else "", call, out))
        elif func in _SOFTMAX:
            self.events.append(("softmax", self.stack[-1] if self.stack else "", {"input": args[0]}, out))
        elif func in _MATMUL:
            self.events.append(("matmul", self.stack[-1] if self.stack else "", {"a": args[0], "b": args[1]}, out))
        return out


def _record(module, run):
    """Run ``run()`` recording attention calls and every nn.Linear's (input, output) in ``module``, in call order."""
    stack, linears, handles = [], [], []
    rec = _Recorder(stack)
    for name, sub in module.named_modules():
        handles.append(sub.register_forward_pre_hook(lambda m, a, name=name: stack.append(name)))
        handles.append(sub.register_forward_hook(lambda m, a, o, name=name: (stack.pop(), None)[1]))
        if isinstance(sub, nn.Linear):
            handles.append(sub.register_forward_hook(
                lambda m, a, o, name=name: linears.append((len(rec.events), name, m, a[0], o))))
    try:
        with torch.no_grad(), rec:
            out = run()
    finally:
        for h in handles:
            h.remove()
    return rec.events, linears, out


def find_attention(module, probe: np.ndarray):
    """(name, submodule) of the innermost submodule whose forward computes a softmax attention (SDPA or an
    explicit softmax) on probe tokens -- ("", module) when the module's own forward computes it -- or None when
    the forward computes none."""
    events, _, _ = _record(module, lambda: module(torch.as_tensor(probe, dtype=torch.long)))
    owners = [e[1] for e in events if e[0] in ("sdpa", "softmax")]
    if not owners:
        return None
    if len(set(owners)) > 1 or len(owners) > 1:
        from protocols.adapters.torch.fold import TWO_LAYERS
        shown = ", ".join(sorted(set(o or "the module itself" for o in owners)))
        parent = _heads_parent(module, owners)
        if parent:   # per-head modules (nn.ModuleList of Head): read_attention checks they are one layer's heads
            return parent, dict(module.named_modules())[parent]
        units = _head_units(owners)
        if parent == "" and all(u != o for u, o in zip(units, owners)):   # an attention inside each unit: blocks
            raise AdapterError(f"{type(module).__name__}'s forward computes {len(owners)} softmax attentions "
                               f"({shown}), one inside each of {', '.join(units)}: stacked layers; {TWO_LAYERS}")
        if parent == "":
            raise AdapterError(f"{type(module).__name__}'s forward computes {len(owners)} softmax attentions "
                               f"({shown}) and combines them itself: if they are the heads of one layer, put them in "
                               f"one submodule (x -> proj(cat(heads(x)))); if they are stacked layers, {TWO_LAYERS}")
        raise AdapterError(f"{type(module).__name__}'s forward computes {len(owners)} softmax attentions "
                           f"({shown}); {TWO_LAYERS}")
    return owners[0], dict(module.named_modules())[owners[0]]   # "": the module's own forward (.inline)


def _head_units(owners) -> list[str] | None:
    """The per-head submodules (one name per attention, in call order) of attentions computed by ``owners``
    (the innermost running submodule of each): the names one level below their common prefix; None when
    an attention is computed outside such a unit or two attentions share one."""
    parts = [o.split(".") if o else [] for o in owners]
    depth = 0
    while all(len(p) > depth for p in parts) and len({p[depth] for p in parts}) == 1:
        depth += 1
    if any(len(p) <= depth for p in parts):
        return None
    units = [".".join(p[:depth + 1]) for p in parts]
    return units if len(set(units)) == len(units) else None


def _heads_parent(module, owners) -> str | None:
    """The submodule that combines per-head attention modules (their common ancestor that runs a forward:
    not an nn.ModuleList), "" when that is the module itself, None when the attentions are no such heads."""
    units = _head_units(owners)
    if units is None:
        return None
    names = dict(module.named_modules())
    parent = units[0].rpartition(".")[0]
    while parent and isinstance(names[parent], (nn.ModuleList, nn.ModuleDict)):
        parent = parent.rpartition(".")[0]
    return parent


def _read_heads(core, x: torch.Tensor, att, linears, out, label: str) -> ReadAttention:
    """Heads written as separate modules (nn.ModuleList of Head, the makemore / nanoGPT-lecture style): each
    reads the layer's input x and computes one softmax attention with no output projection of its own; their
    outputs are concatenated (in call order) and go through at most one output nn.Linear.  Then they are the
    H heads of one layer (Theorem 4 of [BHBK24] covers H heads) and fold as one multi-head attention."""
    from protocols.adapters.torch.fold import TWO_LAYERS
    name = type(core).__name__
    units = _head_units([e[1] for e in att])
    if units is None:
        raise AdapterError(f"{label}: {name} computes {len(att)} softmax attentions on one input, not one per head "
                           f"submodule; commsim reads one attention (or heads written as one module each)")
    mods, seen, handles = dict(core.named_modules()), {}, []
    for u in units:
        handles.append(mods[u].register_forward_hook(     # a hook's non-None result would replace the output
            lambda m, a, o, u=u: (seen.setdefault(u, (a[0] if a else None, o)), None)[1]))
    try:
        with torch.no_grad():
            core(x)
    finally:
        for h in handles:
            h.remove()
    for u in units:
        inp = seen[u][0]
        if not isinstance(inp, torch.Tensor) or inp.shape != x.shape or not torch.equal(inp, x):
            raise AdapterError(f"{label}: {name}'s attentions are not the heads of one layer: {u} reads something "
                               f"other than the layer's input (one attention over another's output is two layers); "
                               f"{TWO_LAYERS}")
    heads = [read_attention(mods[u], x, f"{label}, head {u}") for u in units]
    for u, h in zip(units, heads):
        if h.b_O is not None or h.W_O.shape != (h.Wq.shape[0],) * 2 or not np.array_equal(h.W_O, np.eye(h.Wq.shape[0])):
            raise AdapterError(f"{label}: head {u} has its own output projection; commsim reads per-head modules "
                               f"whose outputs are concatenated before one projection")
    first = heads[0]
    if any(h.width != first.width or h.scale != first.scale or h.rope != first.rope for h in heads) or \
            len({h.alibi is None for h in heads}) > 1:
        raise AdapterError(f"{label}: {name}'s heads differ in width, score scale or position scheme; commsim reads "
                           f"heads of one width, one scale and one position scheme")
    concat = torch.cat([seen[u][1] for u in units], dim=-1)
    inside = tuple(u + "." for u in units)
    after = [lin for lin in linears if lin[3].shape == concat.shape and torch.equal(lin[3], concat)
             and lin[1] not in units and not lin[1].startswith(inside)]
    final = concat if not after else after[0][4]
    got = out[0] if isinstance(out, (tuple, list)) else out
    if not isinstance(got, torch.Tensor) or got.shape != final.shape or not torch.equal(got, final):
        raise AdapterError(f"{label}: {name} does something with its heads' outputs besides concatenating them (in "
                           f"call order) and one output nn.Linear; declare the parts ({', '.join(DECLARED)})")
    D = sum(h.Wq.shape[0] for h in heads)

    def stacked(attr):
        bs = [getattr(h, attr) for h in heads]
        if all(b is None for b in bs):
            return None
        return np.concatenate([np.zeros(h.Wq.shape[0]) if b is None else b for h, b in zip(heads, bs)])

    W_O, b_O = (np.eye(D), None) if not after else (tensor(after[0][2].weight), None if after[0][2].bias is None
                                                     else tensor(after[0][2].bias))
    alibi = None if first.alibi is None else tuple(a for h in heads for a in h.alibi)
    H = sum(h.num_heads for h in heads)
    what = (f"{name} ({len(units)} head modules {', '.join(units)} read as the {H} heads of one attention"
            + (f", out {after[0][1]}" if after else "") + f"; each: {first.what})")
    return ReadAttention(int(x.shape[-1]), H, *(np.concatenate([getattr(h, w) for h in heads]) for w in ("Wq", "Wk", "Wv")),
                         stacked("bq"), stacked("bk"), stacked("bv"), W_O, b_O, first.scale, rope=first.rope,
                         alibi=alibi, module=core, what=what)


def _heads_of(t: torch.Tensor):
    """(B, H, L, d_h) -> (B, L, H d_h), as ``y.transpose(1, 2).reshape(B, L, -1)``."""
    B, H, L, dh = t.shape
    return t.transpose(1, 2).reshape(B, L, H * dh)


def read_attention(core, x: torch.Tensor, label: str) -> ReadAttention:
    """What ``core`` (found by :func:`find_attention`) computes on its input ``x`` (B, L, d): module docstring."""
    name = type(core).__name__
    events, linears, out = _record(core, lambda: core(x))
    att = [e for e in events if e[0] in ("sdpa", "softmax")]
    if len(att) > 1:
        return _read_heads(core, x, att, linears, out, label)
    if len(att) != 1:
        raise AdapterError(f"{label}: {name} computes {len(att)} softmax attentions on one input; commsim reads one")
    return read_recorded(events, linears, att[0], x, out, core, name, label)


def read_recorded(events, linears, event, x, out, core, name: str, label: str, found: dict | None = None) -> ReadAttention:
    """The attention of the recorded ``event`` (an SDPA or softmax of :func:`_record`'s ``events``) from the
    recorded calls: q/k/v, scale, mask, rotation, out projection (module docstring).  ``x``: the attention's
    input (None: the tensor its query projection reads, which the key and value projections must read too --
    attention written in a model's own forward, :mod:`.inline`); ``out``: what the attention returns, checked
    to be the out projection's output (None: not checked here); ``found`` (a dict) gets the names of the
    ``q``, ``k``, ``v`` and ``out`` nn.Linears read (``out`` None without one)."""
    at = events.index(event)
    kind, _, call, y = event[:4]
    if kind == "softmax":
        S, P = call["input"], y
        used = [e for e in events[at + 1:] if e[0] == "matmul" and e[2]["a"].shape == P.shape
                and torch.equal(e[2]["a"], P)]
        if S.dim() not in (3, 4) or not used or used[0][2]["b"].dim() != S.dim():
            raise AdapterError(f"{label}: {name}'s softmax is not followed by (weights @ v) over (batch, heads, "
                               f"length, length) or (batch, length, length) scores; could not read the values: "
                               f"declare the parts ({', '.join(DECLARED)})")
        v, y, limit = used[0][2]["b"], used[0][3], next(i for i, e in enumerate(events) if e is used[0])   # v: projected by then
        if S.dim() == 3:   # one head without a heads axis (Karpathy's Head): (B, L, L) scores, (B, L, d_h) values
            S, v, y = S[:, None], v[:, None], y[:, None]
    else:
        v, S, limit = call["value"], None, at
    B, H, L, dh = v.shape
    D = H * dh
    chunks = []                     # (linear name, module, third, tensor (B, H, L, dh)) of the projections before
    for when, lname, mod, inp, o in linears:
        if when <= limit and o.shape[-1] % D == 0 and o.shape[:2] == (B, L):
            for i in range(o.shape[-1] // D):
                chunks.append((lname, mod, i, inp, o[..., i * D:(i + 1) * D].reshape(B, L, H, dh).transpose(1, 2)))

    def which(t, what, rotated=None):
        for c in chunks:
            if c[4].shape == t.shape and torch.equal(c[4], t):
                return c, None
        for c in chunks if rotated is not None else ():
            base = rotated(c[4], t)
            if base is not None:
                return c, base
        raise AdapterError(f"{label}: could not read the {what} projection of {name}: the {what} tensor its "
                           f"attention uses is no third of an nn.Linear output split into {H} heads of {dh} (nor its "
                           f"rotation by position); declare the parts ({', '.join(DECLARED)})")

    cv, _ = which(v, "value")
    if kind == "sdpa":
        (cq, rope_q), (ck, rope_k) = which(call["query"], "query", read_rope), which(call["key"], "key", read_rope)
        scale = call.get("scale") or 1.0 / math.sqrt(dh)
        bias = _sdpa_bias(call, L, H, label, name)
    else:
        cq, ck, rope_q, scale, bias = _read_scores(S, [c for c in chunks if c is not cv], H, L, dh, label, name)
        rope_k = rope_q
    if (rope_q is None) != (rope_k is None) or rope_q != rope_k:
        raise AdapterError(f"{label}: {name} rotates its queries and keys differently; commsim reads RoPE with one "
                           f"base and layout for both")
    base, interleaved = rope_q or (None, False)
    x = cq[3] if x is None else x
    for c, what in ((cq, "query"), (ck, "key"), (cv, "value")):
        if c[3].shape != x.shape or not torch.equal(c[3], x):
            raise AdapterError(f"{label}: {name}'s {what} projection {c[0]} reads something other than the "
                               f"attention's input; commsim reads self-attention over one input")
    concat = _heads_of(y)
    after = [lin for lin in linears if lin[0] > at and lin[3].shape == concat.shape and torch.equal(lin[3], concat)]
    W_O, b_O = (torch.eye(D, dtype=x.dtype), None) if not after else (after[0][2].weight, after[0][2].bias)
    final = concat if not after else after[0][4]
    got = final if out is None else out[0] if isinstance(out, (tuple, list)) else out
    if not isinstance(got, torch.Tensor) or got.shape != final.shape or not torch.equal(got, final):
        raise AdapterError(f"{label}: {name} does something after its attention besides an output nn.Linear; "
                           f"could not read the out projection: declare the parts ({', '.join(DECLARED)})")
    alibi = read_alibi(bias, H, L, label, name)
    if found is not None:
        found.update(q=cq[0], k=ck[0], v=cv[0], out=after[0][1] if after else None)

    def part(c):
        W = c[1].weight[c[2] * D:(c[2] + 1) * D]
        return tensor(W), None if c[1].bias is None else tensor(c[1].bias[c[2] * D:(c[2] + 1) * D])

    (Wq, bq), (Wk, bk), (Wv, bv) = part(cq), part(ck), part(cv)
    if interleaved:   # GPT-J pairs are rotate-halves after the same permutation of q's and k's head coordinates
        order = (np.arange(H)[:, None] * dh + to_halves(dh).numpy()[None, :]).reshape(-1)
        Wq, Wk = Wq[order], Wk[order]
        bq, bk = (None if b is None else b[order] for b in (bq, bk))
    what = (f"{name} (hand-written: {'scaled_dot_product_attention' if kind == 'sdpa' else 'explicit softmax'}, "
            f"q/k/v from {', '.join(dict.fromkeys(c[0] for c in (cq, ck, cv)))}"
            + (f", out {after[0][1]}" if after else "")
            + (f", RoPE base {base:g}{' interleaved (GPT-J)' if interleaved else ''}" if base else "")
            + (", ALiBi" if alibi is not None else "") + ")")
    return ReadAttention(int(x.shape[-1]), H, Wq, Wk, Wv, bq, bk, bv, tensor(W_O), None if b_O is None else
                         tensor(b_O), float(scale), rope=base, alibi=alibi, module=core, what=what)


def _sdpa_bias(call, L, H, label, name):
    """The additive bias on the query row (H, L) from SDPA's mask (None: nothing added)."""
    mask = call.get("attn_mask")
    if call.get("dropout_p"):
        raise AdapterError(f"{label}: {name} calls scaled_dot_product_attention with dropout_p="
                           f"{call['dropout_p']} in eval mode: a random attention is not a function of the input")
    if mask is None:
        return None
    row = mask[..., -1, :]
    if row.dtype == torch.bool:
        if not bool(row.all()):
            raise AdapterError(f"{label}: {name}'s attention mask hides positions from the last query; the "
                               f"exchange attends at the last position to every position (a causal mask)")
        return None
    return torch.broadcast_to(row.double().reshape(-1, L) if row.dim() > 1 else row.double()[None], (H, L))


def _read_scores(S, chunks, H, L, dh, label, name):
    """(query chunk, key chunk, RoPE (base, interleaved) or None, scale, bias (H, L) or None) whose scores q k^T
    give the softmax input S at the query row (S = scale q k^T + bias)."""
    target = S[:, :, -1, :].double()                          # (B, H, L)
    if not bool(torch.isfinite(target).all()):
        raise AdapterError(f"{label}: {name}'s mask hides positions from the last query; the exchange attends at "
                           f"the last position to every position (a causal mask)")
    for cq in chunks:
        for ck in chunks:
            if ck is cq:
                continue
            for rope in (None, *ROPES):
                q, k = (cq[4], ck[4]) if rope is None else (rotate(cq[4], *rope), rotate(ck[4], *rope))
                sc = (q.double()[:, :, -1:, :] @ k.double().transpose(-2, -1))[:, :, 0]     # (B, H, L)
                centred = sc - sc.mean(dim=0, keepdim=True)     # the bias is the same for every row of the batch
                denom = float((centred * centred).sum())
                if denom == 0:
                    continue
                scale = float((centred * (target - target.mean(dim=0, keepdim=True))).sum()) / denom
                for snap in (1 / math.sqrt(dh), 1.0, 1 / dh):
                    if abs(scale - snap) <= 1e-4 * snap:
                        scale = snap
                if close(target, scale * sc, S.dtype):
                    return cq, ck, rope, scale, None
                bias = (target - scale * sc).mean(dim=0)
                if close(target, scale * sc + bias, S.dtype):
                    return cq, ck, rope, scale, bias
    raise AdapterError(f"{label}: could not read the query and key projections of {name}: no two thirds of its "
                       f"nn.Linear outputs (in {H} heads of {dh}) give its softmax input as scale * q k^T (+ a bias); "
                       f"declare the parts ({', '.join(DECLARED)})")


class DeclaredAttention(nn.Module):
    """The attention a user declared (:func:`declared_attention`), computed in torch as declared: the parts'
    own forward (the reference of a dict of parts without its ``module``)."""

    def __init__(self, query, key, value, out, heads: int, scale: float, rope: float | None, alibi):
        super().__init__()
        self.query, self.key, self.value, self.out = query, key, value, out
        self.heads, self.scale, self.rope = int(heads), float(scale), rope
        self.alibi = None if alibi is None else torch.tensor(alibi, dtype=torch.float64)

    def _split(self, linear, x, third):
        y = linear(x)
        B, L = x.shape[:2]
        D = y.shape[-1] // (3 if self.query is self.key else 1)
        y = y[..., third * D:(third + 1) * D] if self.query is self.key else y
        return y.reshape(B, L, self.heads, -1).transpose(1, 2)

    def forward(self, x):
        q, k, v = (self._split(p, x, i) for i, p in enumerate((self.query, self.key, self.value)))
        if self.rope:
            q, k = rotate(q, self.rope).to(x.dtype), rotate(k, self.rope).to(x.dtype)
        L = x.shape[1]
        j, i = torch.arange(L)[None, :], torch.arange(L)[:, None]
        bias = torch.zeros(self.heads, L, L, dtype=torch.float64)
        if self.alibi is not None:
            bias = self.alibi[:, None, None] * (j - i).double()
        mask = bias.masked_fill(j > i, float("-inf")).to(x.dtype)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale)
        y = y.transpose(1, 2).reshape(x.shape[0], L, -1)
        return y if self.out is None else self.out(y)


def declared_attention(parts: dict, label: str = "the declared attention") -> ReadAttention:
    """The attention from declared parts (module docstring): ``query``, ``key``, ``value`` (``nn.Linear``\\ s, or
    one packed ``nn.Linear(d, 3 d)`` given as all three), ``out`` (an ``nn.Linear`` or None), ``heads``,
    ``scale`` (default 1/sqrt(d_h)), ``mask`` ("causal" or None: the last query sees every position either
    way), ``rope`` (a base, True for 10000, or None) and ``alibi`` (True for the paper's slopes, per-head
    slopes, or None)."""
    unknown = sorted(set(parts) - set(DECLARED))
    missing = [k for k in ("query", "key", "value", "heads") if parts.get(k) is None]
    if unknown or missing:
        raise AdapterError(f"{label}: " + (f"unknown key(s) {', '.join(map(repr, unknown))}" if unknown else
                                           f"missing {', '.join(map(repr, missing))}") +
                           f"; a declared attention has keys {', '.join(DECLARED)}")
    if parts.get("mask") not in (None, "causal"):
        raise AdapterError(f"{label}: mask={parts['mask']!r}; the exchange reads the last query, which a causal "
                           f"mask (or none) lets see every position: give 'causal' or None")
    q, k, v, out, H = parts["query"], parts["key"], parts["value"], parts.get("out"), int(parts["heads"])
    for what, lin in (("query", q), ("key", k), ("value", v), ("out", out)):
        if lin is not None and not isinstance(lin, nn.Linear):
            raise AdapterError(f"{label}: {what} must be an nn.Linear, got {type(lin).__name__}")
    packed = q is k is v
    if not packed and len({id(q), id(k), id(v)}) < 3:
        raise AdapterError(f"{label}: give query, key and value as three nn.Linears or one packed nn.Linear(d, 3d)")
    D = q.out_features // (3 if packed else 1)
    if D % H:
        raise AdapterError(f"{label}: {D} projected values do not split into heads={H}")

    def part(lin, third):
        s = slice(third * D, (third + 1) * D) if packed else slice(None)
        return tensor(lin.weight[s]), None if lin.bias is None else tensor(lin.bias[s])

    (Wq, bq), (Wk, bk), (Wv, bv) = part(q, 0), part(k, 1), part(v, 2)
    rope = parts.get("rope")
    rope = 10000.0 if rope is True else (float(rope) if rope else None)
    alibi = parts.get("alibi")
    if alibi is True:
        alibi = tuple(2.0 ** (-8.0 * (h + 1) / H) for h in range(H))
    alibi = tuple(float(a) for a in alibi) if alibi else None
    if alibi is not None and len(alibi) != H:
        raise AdapterError(f"{label}: alibi has {len(alibi)} slopes for {H} heads")
    scale = float(parts.get("scale") or 1.0 / math.sqrt(D // H))
    W_O = tensor(out.weight) if out is not None else np.eye(D)
    b_O = None if out is None or out.bias is None else tensor(out.bias)
    module = DeclaredAttention(q, k, v, out, H, scale, rope, alibi)
    return ReadAttention(q.in_features, H, Wq, Wk, Wv, bq, bk, bv, W_O, b_O, scale, rope=rope, alibi=alibi,
                         module=module, what=f"declared attention (heads={H}" + (f", RoPE base {rope:g}" if rope
                                                                                 else "") +
                         (", ALiBi" if alibi else "") + ")")
