"""What a wrapping module's forward does, found by running it: which of its submodules it calls, in which
order and on what.  The forward decides the roles -- token and position embeddings, layers before the core,
the core, the head after it -- never the order in which ``__init__`` registered the attributes.

:func:`trace_forward` runs the module once on probe token ids with forward pre-hooks on every submodule;
:func:`find_roles` reads the record; :func:`readout_positions` perturbs the attention core's output at
one position at a time and sees whether the module's output at the last position moves (a readout that
pools over positions -- mean pooling, a CLS token at position 0 -- reads other positions' outputs, and the
single-query protocol of Theorem 4 of [BHBK24] does not apply to it).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from protocols.adapters.torch.layers import AdapterError
from protocols.adapters.torch.trust import module_output


class Traced(NamedTuple):
    """One run of a module's forward: each called submodule's name -> the indices of its calls (in call
    order, counting every submodule call), the module, and the first positional input of its first call."""

    calls: dict
    modules: dict
    inputs: dict


def trace_forward(module, tokens: np.ndarray) -> Traced:
    """Run ``module`` on ``tokens`` (token ids) with pre-hooks recording every submodule call; the
    forward's own exceptions propagate."""
    import torch
    calls, modules, inputs, counter = {}, {}, {}, [0]
    handles = []

    def recorder(name):
        def hook(mod, args):
            calls.setdefault(name, []).append(counter[0])
            counter[0] += 1
            if name not in inputs:
                modules[name] = mod
                inputs[name] = args[0] if args and isinstance(args[0], torch.Tensor) else None
        return hook

    for name, sub in module.named_modules():
        if name:
            handles.append(sub.register_forward_pre_hook(recorder(name)))
    try:
        with torch.no_grad():
            module(torch.as_tensor(tokens, dtype=torch.long))
    finally:
        for h in handles:
            h.remove()
    return Traced(calls, modules, inputs)


class Roles(NamedTuple):
    """What the forward does around the core: the token and position embeddings it calls (name, module) or
    None, and the outermost other submodules it calls before and after the core, in call order."""

    tokens: tuple | None
    positions: tuple | None
    before: list
    after: list


def _within(name: str, other: str) -> bool:
    """Is ``name`` the submodule ``other`` or inside it?"""
    return name == other or name.startswith(other + ".")


def _reads(x, tokens: np.ndarray) -> str | None:
    """"tokens" when an embedding's input is the token ids (either layout), "positions" when it is
    0..L-1 along its last axis, else None."""
    if x is None:
        return None
    a = x.detach().cpu().numpy()
    if a.shape == tokens.shape and np.array_equal(a, tokens) or a.shape == tokens.T.shape and np.array_equal(a, tokens.T):
        return "tokens"
    length = tokens.shape[1]
    if a.size and a.shape[-1] == length and np.array_equal(np.broadcast_to(np.arange(length), a.shape), a):
        return "positions"
    return None


def find_roles(traced: Traced, core_name, tokens: np.ndarray, label: str, span: tuple[int, int] | None = None) -> Roles:
    """The roles around the core (:class:`Roles`), from the record of one forward.  ``core_name``: the core
    submodule's name, or the names of the submodules an attention written in the forward itself calls (its
    projections: :mod:`.inline`) with ``span``, the first and last call index of that attention."""
    import torch.nn as nn
    cores = (core_name,) if isinstance(core_name, str) else tuple(core_name)
    for core in cores:
        if len(traced.calls.get(core, ())) > 1:
            raise AdapterError(f"{label}'s forward applies {core} {len(traced.calls[core])} times: that is a "
                               f"stack of layers, not one; commsim wraps one application of the core")
        if core not in traced.calls:
            raise AdapterError(f"{label}'s forward never calls {core}")
    start, end = span or (traced.calls[cores[0]][0],) * 2
    at = start

    def transparent(name):      # containers of the core or of an embedding: look inside them
        mod = traced.modules[name]
        return any(_within(c, name) for c in cores) or (not isinstance(mod, nn.Embedding) and
                                                         any(isinstance(m, nn.Embedding) for m in mod.modules()))

    names = [n for n in traced.calls if not any(_within(n, c) for c in cores) and not transparent(n)]
    outer = [n for n in names if not any(_within(n, o) and n != o for o in names)]
    outer.sort(key=lambda n: traced.calls[n][0])
    found = {"tokens": [], "positions": []}
    before, after = [], []
    for name in outer:
        mod, idx = traced.modules[name], traced.calls[name]
        if isinstance(mod, nn.Embedding):
            role = _reads(traced.inputs[name], tokens)
            if role is None or idx[0] > at:
                raise AdapterError(f"{label}: cannot tell what the nn.Embedding {name} reads (neither the token ids "
                                   f"nor the positions 0..L-1 before the core); return a dict of parts "
                                   f"{{'embedding', 'positions', 'core', 'head'}}")
            found[role].append((name, mod))
            continue
        if isinstance(mod, (nn.Dropout, nn.Identity)):
            continue
        if idx[0] < at and idx[-1] > end:
            raise AdapterError(f"{label}'s forward calls {name} both before and after {' / '.join(cores)}; commsim "
                               f"cannot tell its role: return a dict of parts")
        if idx[0] < at or idx[0] > end:   # (a layer called inside an attention span is read with the attention)
            (before if idx[0] < at else after).append((name, mod))
    for role in ("tokens", "positions"):
        if len(found[role]) > 1:
            raise AdapterError(f"{label}: several embeddings read the {role} "
                               f"({', '.join(n for n, _ in found[role])}); return a dict of parts")
    return Roles(found["tokens"][0] if found["tokens"] else None,
                 found["positions"][0] if found["positions"] else None, before, after)


def _last_output(out):
    """The module's output at the last position (read by :func:`~.trust.module_output`)."""
    out = module_output(out)
    return out[:, -1] if out.dim() == 3 else out


def readout_positions(module, core, tokens: np.ndarray, batch_first: bool) -> list[int]:
    """The positions of the core's output that the module's output at the last position depends on: the
    core's output is shifted at one position at a time (a forward hook) and the module's output compared."""
    import torch
    t = torch.as_tensor(tokens, dtype=torch.long)
    length = tokens.shape[1]
    shift = {"at": None}

    def hook(mod, args, out):
        if shift["at"] is None:
            return None
        y = out[0] if isinstance(out, (tuple, list)) else out
        y = y.clone()
        index = (slice(None), shift["at"]) if batch_first else (shift["at"], slice(None))
        y[index] = y[index] + 1.0 + y[index].abs()
        return (y, *out[1:]) if isinstance(out, (tuple, list)) else y

    handle = core.register_forward_hook(hook)
    try:
        with torch.no_grad():
            base = _last_output(module(t))
            read = []
            for j in range(length):
                shift["at"] = j
                if not torch.equal(_last_output(module(t)), base):
                    read.append(j)
    finally:
        handle.remove()
    return read


def pooled_readout_reason(label: str, core_name: str, read: list[int], length: int) -> str | None:
    """Why the single-query protocol does not apply when the readout reads the core's output at positions
    other than the last (None when it reads the last position only)."""
    others = [j for j in read if j != length - 1]
    if not others:
        return None
    if length - 1 not in read and others == [0]:
        how = "reads the attention output at position 0 only (a CLS-token readout)"
    else:
        shown = ", ".join(map(str, read[:8])) + (", ..." if len(read) > 8 else "")
        how = f"pools the attention output over positions {shown} (e.g. mean pooling)"
    return (f"{label}'s readout {how}: the single-query protocol does not apply -- the attention exchange "
            f"(Theorem 4 of [BHBK24]) computes {core_name}'s output at one query position, the last, where the "
            f"task's decision is read; read the decision from the last position's output (y[:, -1]) instead")
