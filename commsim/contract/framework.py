"""What a model framework (PyTorch, ...) offers the engine, so that the engine never names one.

Two sides:

* :class:`Framework` -- the framework's adapter plugin (registry kind ``adapter``): it turns the framework's objects
  into commsim models (calling it), and holds their train/eval state for the length of a run
  (:meth:`Framework.evaluating`), so that a run leaves the caller's modules as they were;
* :class:`FrameworkBacked` -- a model adapted from the framework: its agreement with the framework's own forward
  (``framework_agreement``, the check a report states) and the framework forward's decisions
  (``framework_labels``, with which a certificate is re-checked).

The engine calls these hooks when a registered adapter is a :class:`Framework` and when a model is
:class:`FrameworkBacked`; any other adapter or model is left alone.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

import numpy as np


class Framework(ABC):
    """A framework's adapter (registry kind ``adapter``): ``adapter(obj, **context)`` is ``obj`` as a commsim model
    (None when ``obj`` is not the framework's), and :meth:`evaluating` keeps the caller's objects' state across a
    run.  ``name``: the framework's name, as reports and notes say it ("torch")."""

    name: str = ""

    @abstractmethod
    def __call__(self, obj: Any, **context) -> Any | None:
        """``obj`` converted into a model a simulator accepts, sized by ``context`` (``vocab_size``, ``seq_len``,
        ``precision``: a NumberFormat, ...); None for an object that is not the framework's."""

    @abstractmethod
    def evaluating(self, obj: Any) -> AbstractContextManager[None]:
        """A context for one run on ``obj`` (the user's object as given: a module, a dict of parts, a spec string,
        anything): inside it the run reads the framework's objects in inference mode (the adapter switches a module
        it reads to it), and on the way out each of them gets back the train/eval state it had on the way in.  For
        an object that holds none of the framework's: nothing to do."""


@runtime_checkable
class FrameworkBacked(Protocol):
    """A model adapted from a framework, which can run the framework's own forward.

    ``framework``: its name ("torch"); ``framework_agreement(tokens, output_positions)``: the agreement check,
    a dict with the keys of the framework's one agreement rule (for torch,
    :func:`protocols.adapters.torch.trust.judge`) -- ``ok`` (True/False, or None when not judged, the ``note``
    then saying "not judged" and why), ``atol``, ``rtol``, ``max_abs_diff``, ``reference`` (what the model was
    compared with: the user's module's own forward, or only the parts it was built from) and ``note`` -- with
    ``framework`` and ``instances``; or None when the framework's forward is not available;
    ``framework_labels(tokens, output_positions)``: the framework forward's decisions (batch, outputs),
    labelled as the model labels its own outputs, or None; ``framework_judged``: whether the model runs in
    a number format whose agreement is judged (not a different, e.g. fixed-point, model of the module)."""

    framework: str
    framework_judged: bool

    def framework_agreement(self, tokens, output_positions=None) -> dict | None: ...

    def framework_labels(self, tokens, output_positions=None) -> np.ndarray | None: ...
