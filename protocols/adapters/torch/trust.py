"""Trust signals for a model adapted from torch: how closely commsim's model follows the torch module's
own forward, and the torch module's own decisions (to re-check a certificate).

A wrapped model keeps ``torch_forward``, a function token ids (batch, length) -> the torch module's
outputs as float64: either every position's outputs (batch, length, classes) or the outputs at the
last position (batch, classes).  :class:`TorchTrust` compares commsim's model with it under the
documented tolerance :data:`~protocols.adapters.torch.layers.TOLERANCE` of the model's number format:
|commsim - torch| <= atol + rtol * |torch| on every output value.  A model whose format has no entry
there (fixed point, from a ``precision=`` override) is a different model from the torch module, so the
comparison is reported and not judged (``passed`` None).

It is the engine's hook (:class:`commsim.pipeline.framework.FrameworkBacked`): ``framework_agreement``
fills the report's ``torch_agreement``; ``framework_labels`` re-checks a certificate with the torch
forward.  The engine never imports torch.
"""
from __future__ import annotations

import numpy as np

from protocols.adapters.torch.layers import TOLERANCE, within_tolerance

#: rows compared at once (bounds the memory of long sequences)
CHUNK_ROWS = 64



#: how agreement with the torch forward is judged
_RULE = "|commsim - torch| <= atol + rtol * |torch|"
#: the tolerance keys of a comparison that is reported but not judged
_NOT_JUDGED = {"atol": None, "rtol": None, "max_allowed": None, "rule": None}


class OutputsCompared:
    """commsim's outputs beside the torch module's on the same tokens (aligned arrays, float64)."""

    def __init__(self, ours: np.ndarray, theirs: np.ndarray, positions: tuple[int, ...]):
        self.ours, self.theirs, self.positions = ours, theirs, positions


def _at_positions(theirs: np.ndarray, positions: tuple[int, ...], length: int) -> np.ndarray | None:
    """The torch outputs at ``positions`` (batch, k, classes); None when the forward gave only the last
    position's outputs and another position is asked for."""
    if theirs.ndim == 3:
        return theirs[:, list(positions)]
    if theirs.ndim == 2 and all(p == length - 1 for p in positions):
        return np.repeat(theirs[:, None], len(positions), axis=1)
    return None


def _torch_view(model, tokens, positions):
    """(torch forward, token rows, output positions (default: the last), length) of a model that keeps its
    torch module's forward; None when it keeps none."""
    forward = getattr(model, "torch_forward", None)
    if forward is None:
        return None
    tokens = np.atleast_2d(np.asarray(tokens))
    length = tokens.shape[1]
    return forward, tokens, (length - 1,) if positions is None else tuple(int(p) for p in positions), length


def compare_outputs(model, tokens: np.ndarray, positions=None) -> OutputsCompared | None:
    """commsim's and torch's outputs at ``positions`` (default: the last) on ``tokens``; None when the model
    keeps no torch forward.  Shapes may differ (the caller reports it)."""
    view = _torch_view(model, tokens, positions)
    if view is None:
        return None
    from protocols.models.attention import AttentionLayer
    forward, tokens, positions, length = view
    ours_parts, theirs_parts = [], []
    for s in range(0, tokens.shape[0], CHUNK_ROWS):
        rows = tokens[s:s + CHUNK_ROWS]
        theirs = np.asarray(forward(rows), dtype=np.float64)
        picked = _at_positions(theirs, positions, length)
        if picked is None:   # the module's output at the last position only: compare there
            positions = (length - 1,)
            picked = _at_positions(theirs, positions, length)
        if picked is None:
            return OutputsCompared(np.zeros(0), theirs, positions)
        if isinstance(model, AttentionLayer):
            ours = np.stack([model.forward(rows, p) for p in positions], axis=1)
        else:
            ours = model.forward_batch(rows, positions)
        ours_parts.append(ours)
        theirs_parts.append(picked)
    return OutputsCompared(np.concatenate(ours_parts), np.concatenate(theirs_parts), positions)


def judged_tolerance(fmt_name: str) -> tuple[float, float] | None:
    """(atol, rtol) of the documented tolerance for a float format; None for formats that are not the
    torch module's own (fixed point): the comparison is then reported, not judged."""
    return TOLERANCE.get(fmt_name)


class TorchTrust:
    """The engine's framework hooks for a model wrapped from torch (module docstring)."""

    framework = "torch"
    torch_forward = None

    def framework_agreement(self, tokens, output_positions=None) -> dict | None:
        """The report's ``torch_agreement`` on these token rows: ``max_abs_diff``, ``atol``, ``rtol`` (None
        when not judged), ``max_allowed`` and the ``rule``, ``ok`` (None when not judged), ``instances``,
        ``framework``, ``format``, ``positions``, ``label_agreement`` and a ``note``; None without a torch
        forward."""
        tokens = np.atleast_2d(np.asarray(tokens))
        compared = compare_outputs(self, tokens, output_positions)
        if compared is None:
            return None
        name = self.format.name
        tol = judged_tolerance(name)
        base = {"framework": self.framework, "instances": int(tokens.shape[0]), "format": name,
                "positions": [int(p) for p in compared.positions]}
        if compared.ours.shape != compared.theirs.shape:
            return {**base, "max_abs_diff": None, **_NOT_JUDGED, "ok": False, "label_agreement": 0.0,
                    "note": f"output shapes differ: commsim {compared.ours.shape}, torch {compared.theirs.shape}"}
        ok, diff, allowed = within_tolerance(compared.ours, compared.theirs, name)
        labels = float(np.mean(np.argmax(compared.ours, -1) == np.argmax(compared.theirs, -1))) \
            if compared.ours.size else 1.0
        if tol is None:
            note = (f"max |commsim - torch| = {diff:.3g}: reported, not judged -- commsim's model runs at {name}, "
                    f"a different number format from the torch module's own")
            return {**base, "max_abs_diff": diff, **_NOT_JUDGED, "ok": None, "label_agreement": labels,
                    "note": note}
        atol, rtol = tol
        note = (f"max |commsim - torch| = {diff:.3g} on {tokens.shape[0]} instances "
                f"({'within' if ok else 'OUTSIDE'} atol + rtol*|torch| = {atol:g} + {rtol:g}*|torch| for {name})")
        return {**base, "max_abs_diff": diff, "atol": atol, "rtol": rtol, "max_allowed": allowed, "rule": _RULE,
                "ok": ok, "label_agreement": labels, "note": note}

    def framework_labels(self, tokens, output_positions=None) -> np.ndarray | None:
        """The torch module's own decisions (batch, outputs) at ``output_positions``, labelled as commsim
        labels its outputs (argmax; one output: > 0); None when no torch forward is kept or it does not
        give those positions."""
        view = _torch_view(self, tokens, output_positions)
        if view is None:
            return None
        forward, tokens, positions, length = view
        theirs = _at_positions(np.asarray(forward(tokens), dtype=np.float64), positions, length)
        if theirs is None:
            return None
        return np.stack([np.asarray(self.labels(theirs[:, k])).reshape(-1) for k in range(len(positions))], axis=1)

    @property
    def framework_judged(self) -> bool:
        """Does commsim's model run in a float format whose agreement with torch is judged (the module's
        own dtype, or a float override)?  False under a fixed-point override."""
        return judged_tolerance(self.format.name) is not None
