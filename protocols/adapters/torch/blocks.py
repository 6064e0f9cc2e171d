"""What a transformer block does after its attention, read from the layers its forward calls there.

A hand-written pre-LN block (nanoGPT, GPT-2 style)::

    x = x + attn(ln_1(x));  x = x + mlp(ln_2(x));  logits = lm_head(ln_f(x))[:, -1]

calls ``ln_2, mlp, ln_f, lm_head`` after the attention.  At the query position all of it is psi (as for
GPT-2, :mod:`.gpt2`), but the forward does not say which of those layers sit on a second residual branch:
:func:`head_readings` offers each reading -- the layers in order (no branch), or ``r + branch(r)`` with the
first i layers as the branch, then the rest -- and discovery keeps the one that matches the module's own
forward (:mod:`.discover`).  The same holds when the forward slices the last position before the MLP.

A user module the forward calls as one layer (nanoGPT's ``MLP``: ``c_fc``, ``gelu``, ``c_proj``,
``dropout``) is read as the sequence of the children it calls when running those children in call order
gives *bitwise* the module's own output (:func:`sequential_reading`); otherwise it runs in torch, row by
row (:class:`~protocols.adapters.torch.layers.TorchRows`).
"""
from __future__ import annotations

import torch
import torch.nn as nn

from protocols.adapters.torch.layers import numpy_steps


class ResidualStep:
    """x + branch(x) for numpy steps ``branch`` (picklable)."""

    def __init__(self, steps: list):
        self.steps = list(steps)

    def __call__(self, x):
        """The residual branch added to its input."""
        y = x
        for step in self.steps:
            y = step(y)
        return x + y


class ResidualBranch(nn.Module):
    """r -> r + branch(r): the second residual connection of a transformer block (its MLP branch)."""

    def __init__(self, branch: nn.Module):
        super().__init__()
        self.branch = branch

    def forward(self, r):
        return r + self.branch(r)

    def commsim_steps(self, fmt):
        """Numpy steps (:func:`~protocols.adapters.torch.layers.numpy_steps`), or None when the branch is
        not made of layers commsim reads (a user module among them is read as its children when it can be:
        :func:`sequential_reading`)."""
        inner = numpy_steps(self.branch, fmt)
        if inner is None and isinstance(self.branch, nn.Sequential):
            inner = numpy_steps(_read_children(self.branch), fmt)
        return None if inner is None else [ResidualStep(inner)]


def _read_children(seq: nn.Sequential) -> nn.Sequential:
    """``seq`` with each child replaced by its :func:`sequential_reading` at the width it is called with."""
    first = next((m for m in seq.modules() if isinstance(m, (nn.Linear, nn.LayerNorm, nn.RMSNorm))), None)
    if first is None:
        return seq
    width = first.in_features if isinstance(first, nn.Linear) else int(first.normalized_shape[0])
    dtype = next((p.dtype for p in seq.parameters()), torch.float32)
    x, read = torch.zeros(1, width, dtype=dtype), []
    with torch.no_grad():
        for child in seq:
            read.append(sequential_reading(child, x.shape[-1], dtype))
            x = child(x)
    return nn.Sequential(*read)


def sequential_reading(module, width: int | None, dtype=None):
    """``module`` as ``nn.Sequential`` of the children its forward calls, in call order, when that runs
    bitwise like the module on probe rows of ``width`` values; else the module itself."""
    if width is None or numpy_steps(module) is not None:
        return module
    children = dict(module.named_children())
    if not children:
        return module
    order, handles = [], []
    for name, child in children.items():
        handles.append(child.register_forward_pre_hook(lambda mod, args, name=name: order.append(name)))
    dtype = dtype or next((p.dtype for p in module.parameters()), torch.float32)
    probe = torch.randn(5, width, generator=torch.Generator().manual_seed(0)).to(dtype)
    try:
        with torch.no_grad():
            theirs = module(probe)
    except Exception:  # noqa: BLE001 - the user's forward: not readable this way
        return module
    finally:
        for h in handles:
            h.remove()
    if len(set(order)) != len(order) or not order:
        return module
    reading = nn.Sequential(*(children[n] for n in order))
    with torch.no_grad():
        ours = reading(probe)
    if not isinstance(theirs, torch.Tensor) or ours.shape != theirs.shape or not torch.equal(ours, theirs):
        return module
    return reading if numpy_steps(reading) is not None else module


def head_readings(after: list, width: int | None, dtype=None) -> list:
    """The heads the layers called after the attention can form (module docstring): the layers in order,
    then ``r + branch(r)`` followed by the rest, for every nonempty prefix as the branch."""
    if not after:
        return [None]
    layers = [sequential_reading(m, width, dtype) for m in after]
    out = [layers[0] if len(layers) == 1 else nn.Sequential(*layers)]
    for i in range(1, len(layers) + 1):
        branch = layers[0] if i == 1 else nn.Sequential(*layers[:i])
        if width is not None and _keeps_width(branch, width, dtype):
            out.append(nn.Sequential(ResidualBranch(branch), *layers[i:]))
    return out


def _keeps_width(branch, width: int, dtype) -> bool:
    """Does ``branch`` map rows of ``width`` values to rows of ``width`` values (a residual branch can)?"""
    try:
        with torch.no_grad():
            y = branch(torch.zeros(1, width, dtype=dtype or torch.float32))
    except Exception:  # noqa: BLE001 - the user's layers: not a branch of this width
        return False
    return isinstance(y, torch.Tensor) and tuple(y.shape) == (1, width)
