"""PyTorch as a :class:`~commsim.contract.framework.Framework`: the ``adapter`` entry that turns a torch module (or
a dict of its parts) into a commsim model, and the train/eval state of the caller's modules kept across a run.

torch is never imported here: an object is a torch module only when torch is already loaded (the user made it).
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator

from commsim.contract.framework import Framework
from protocols.adapters.torch.adapt import from_torch
from protocols.adapters.torch.layered import adapt_or_function


def _is_module(obj: Any) -> bool:
    """Is ``obj`` a torch module (False when torch is not loaded: then no object is one)?"""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def torch_modules(obj: Any, depth: int = 0) -> Iterator[Any]:
    """Every torch module (and its submodules) in a user's object: a module, or a dict of parts (its values, one
    level of lists and dicts inside)."""
    if isinstance(obj, dict) and depth < 2:
        for value in obj.values():
            yield from torch_modules(value, depth + 1)
    elif isinstance(obj, (list, tuple)) and depth < 2:
        for value in obj:
            yield from torch_modules(value, depth + 1)
    elif _is_module(obj):
        yield from obj.modules()


class TorchFramework(Framework):
    """The torch adapter: torch modules (and dicts of their parts) as models; their modes kept across a run."""

    name = "torch"

    def __call__(self, obj, vocab_size=None, seq_len=None, precision=None, **context):
        """A torch module (or a dict of parts) handed to ``commsim.make_model`` as a commsim model sized to the
        task, in ``precision`` (a NumberFormat; default: the module's dtype); None for anything else (torch is
        not imported for other objects)."""
        if isinstance(obj, dict) or _is_module(obj):
            label = f"python object {type(obj).__name__}"
            return adapt_or_function(obj, lambda: from_torch(obj, vocab_size=vocab_size, seq_len=seq_len,
                                                             precision=precision, spec=label), label, precision)
        return None

    @contextmanager
    def evaluating(self, obj) -> Iterator[None]:
        """The run's modules in eval mode (the adapters switch every module they read to it: a run is the module's
        inference), and on the way out every module and submodule of ``obj`` gets back its own ``training``
        flag."""
        saved = [(module, module.training) for module in torch_modules(obj)]
        try:
            yield
        finally:
            for module, training in saved:
                module.training = training


#: the one torch adapter (registered once, as ``adapter`` ``torch``)
TORCH = TorchFramework()
