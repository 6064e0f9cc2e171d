"""A torch ``nn.Sequential`` of ``nn.Linear`` layers (with ReLU, Tanh or Identity between them) as an ``fnn``
(:class:`~protocols.models.fnn.FullyConnected`): weights and biases rounded down to a fixed-point format.

The module reads a flat input vector (in_features) and writes out_features numbers; the task reads them as N
rows (:meth:`FullyConnected.for_task`).  Without a format the network is read at fixed32.16: the fnn computes in
fixed point (its first layer exactly on the input, then rounded down: :mod:`protocols.models.fnn`).
"""
from __future__ import annotations

import numpy as np

from commsim.core.precision import FixedPoint
from protocols.adapters.torch.layers import AdapterError
from protocols.models.fnn import FullyConnected

#: torch activation class name -> the fnn's activation
ACTIVATION_NAMES = {"ReLU": "relu", "Tanh": "tanh", "Identity": "identity"}

#: the format a torch MLP is read at when none is given
DEFAULT_FORMAT = FixedPoint.with_bits(32)


def is_mlp(obj) -> bool:
    """Is ``obj`` an ``nn.Sequential`` whose children are Linear layers and the activations fnn has?"""
    import torch.nn as nn
    if not isinstance(obj, nn.Sequential) or not len(obj):
        return False
    return all(isinstance(m, nn.Linear) or type(m).__name__ in ACTIVATION_NAMES for m in obj)


def wrap_mlp(seq, fmt=None, spec: str = "") -> FullyConnected:
    """The Sequential as a FullyConnected in ``fmt`` (a FixedPoint; default fixed32.16): Linear layers alternate
    with at most one activation each (none between two Linear layers: the identity)."""
    import torch.nn as nn
    fmt = DEFAULT_FORMAT if fmt is None else fmt
    if not isinstance(fmt, FixedPoint):
        raise AdapterError(f"an MLP is read as an fnn, which computes in fixed point; got {fmt.name} "
                           f"(give precision=P)")
    weights, biases, activations = [], [], []
    pending = None
    for module in seq:
        if isinstance(module, nn.Linear):
            if weights:
                activations.append(pending or "identity")
            elif pending is not None:
                raise AdapterError("an MLP must start with a Linear layer (an activation before it is not read)")
            pending = None
            w = module.weight.detach().double().cpu().numpy()
            b = module.bias.detach().double().cpu().numpy() if module.bias is not None else np.zeros(w.shape[0])
            weights.append(fmt.to_codes(w, on_saturate="warn"))
            biases.append(fmt.to_codes(b, on_saturate="warn"))
        else:
            if pending is not None:
                raise AdapterError("two activations in a row: the fnn takes one between two Linear layers")
            pending = ACTIVATION_NAMES[type(module).__name__]
    if pending is not None:
        raise AdapterError("an activation after the last Linear layer: the fnn's output layer is linear")
    if len(weights) < 2:
        raise AdapterError("an MLP of one Linear layer has no hidden layer; the fnn needs depth >= 2")
    return FullyConnected(weights, biases, activations, fmt, 1, weights[0].shape[1], weights[-1].shape[0],
                          spec or f"torch MLP ({len(weights)} Linear layers, width {weights[0].shape[0]})")
