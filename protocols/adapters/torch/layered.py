"""A torch module of two or more attention layers as the **function** it computes: no one-layer exchange simulates
it (Lemma 5 of [BHBK24], :data:`~.fold.TWO_LAYERS`), so ``commsim run`` refuses it with that reason, but its answers
on every instance are still its own forward -- what ``commsim matrix --model SPEC --reduction R --n N`` reads
(:mod:`commsim.runs.model_function`).

:class:`LayeredModule` keeps the module's forward at the last position (outputs of shape (B, V), (B, 1, V) or
(B, T, V), an output object's ``logits``, the first element of a ``(logits, loss)`` tuple) and decides it by the
model's decision rule (:class:`~protocols.models.decides.Decides`: argmax of V >= 2 outputs, the sign of one logit).
:func:`adapt_or_function` is the torch entries' wrapper: a module the adapter refuses for its depth becomes a
:class:`LayeredModule`; every other refusal stands.
"""
from __future__ import annotations

import numpy as np

from commsim.contract import user_code_failure
from protocols.adapters.torch.fold import TWO_LAYERS, LastPositionForward
from protocols.adapters.torch.layers import AdapterError
from protocols.models.decides import Decides

#: what a model of several layers gets instead of a protocol (it has a function, whatever its depth)
MATRIX_HINT = ("what is exact at any depth is the communication matrix of this model's own function at small n: "
               "`commsim matrix --model SPEC --reduction R --n N`")


class LayeredModule(Decides):
    """A module of several attention layers (module docstring): ``no_protocol_reason`` says why no exchange
    simulates it, ``forward(tokens)`` gives its decisions by the model's rule."""

    def __init__(self, module, reason: str, spec: str = ""):
        self.torch_forward = LastPositionForward(module)
        self.spec = spec or type(module).__name__
        self.no_protocol_reason = reason if MATRIX_HINT in reason else f"{reason}; {MATRIX_HINT}"
        head = module.get_output_embeddings() if callable(getattr(module, "get_output_embeddings", None)) else None
        self._width = getattr(head, "out_features", None)   # a Hugging Face head says it; else a run shows it

    @property
    def output_width(self) -> int | None:
        """The width of the module's output head (None when it does not say: the first decision reads it)."""
        return self._width

    def outputs(self, tokens) -> np.ndarray:
        """The module's own outputs (B, V) at the last position on token ids (B, L), float64; a forward that fails on
        token ids (a core without its embedding) is an InputError naming the model."""
        try:
            out = np.asarray(self.torch_forward(tokens), dtype=np.float64)
        except Exception as exc:   # the user's code: its failure is reported, never an internal error
            raise AdapterError(f"{self.spec}'s own forward on token ids (batch, length) {user_code_failure(exc)}; "
                               f"its function is read from that forward") from exc
        if out.ndim not in (1, 2):
            raise AdapterError(f"{self.spec}'s own forward gave outputs of shape {out.shape} at the last position; "
                               f"its function needs (batch, outputs)")
        return out[:, None] if out.ndim == 1 else out

    def forward(self, tokens) -> np.ndarray:
        """The decisions (B,) of the module's own forward on token ids (B, L), by the rule in force."""
        return self.decide_raw(self.outputs(tokens))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}: {self.no_protocol_reason[:40]}...>"


def adapt_or_function(obj, adapt, spec: str = "", fmt=None):
    """``adapt()`` (the torch adapter on ``obj``), or, when it refuses a module for having more than one attention
    layer, the module's function as a :class:`LayeredModule` (its reason kept for ``run`` to say).  A dict of
    parts has no forward of its own: its refusal stands.  A number format given for such a module (``fmt``) is
    refused: its function is its own forward at its own dtype."""
    try:
        return adapt()
    except AdapterError as refused:
        if TWO_LAYERS not in str(refused) or isinstance(obj, dict) or not callable(obj):
            raise
        if fmt is not None:
            raise AdapterError(f"{refused}; its function is its own forward at its own dtype, so precision=/dtype= "
                               f"does not apply", "precision") from None
        return LayeredModule(obj, str(refused), spec)
