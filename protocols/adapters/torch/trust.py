"""Trust signals for a model adapted from torch: how closely commsim's model follows a torch forward it is
compared with (its *reference*), and the torch module's own decisions (to re-check a certificate).

**One rule** (:func:`judge`), used by every adapter, by :func:`~protocols.adapters.torch.adapt.agreement`,
by the adapters' build-time checks and by the report's ``torch_agreement``
(:mod:`commsim.runs.framework`).  On the same token rows, at the same output positions, it computes
``max_abs_diff`` = max |commsim - torch| and judges it under the tolerance of the model's number format
(:data:`~protocols.adapters.torch.layers.TOLERANCE`): |commsim - torch| <= atol + rtol * |torch| on every
output value.  Its keys, everywhere:

``ok``
    True (within the tolerance) / False (outside it, or the output shapes differ) / None (not judged; the
    ``note`` then says "not judged" and why);
``atol``, ``rtol``
    the tolerance of the model's format (None for a fixed-point format: no tolerance applies);
``max_abs_diff``
    max |commsim - torch| (None when the shapes differ);
``reference``
    what commsim's model was compared with, in words;
``note``
    the judgement in one sentence;

and ``max_allowed`` (the largest atol + rtol * |torch|), ``rule``, ``format`` and ``label_agreement``.

What is judged.  A model wrapped from torch keeps ``torch_forward`` (token ids (batch, length) -> the
outputs as float64, every position's (batch, length, classes) or the last position's (batch, classes)).
That forward is the *user's model* when it is a module's own forward -- a wrapping module, GPT-2,
TransformerLens, a step module's own loop, or a module given with ``reference=`` (a dict of parts with a
``"module"``) -- and the judgement is the rule's.  A dict of parts (or a core given with its embedding and
head) without such a module is compared with the *parts composed in torch*: that shows commsim follows the
parts (outside the tolerance: ``ok`` False), not that the parts are the user's model (a left-out residual
connection goes unseen), so within the tolerance it is *not judged*: ``ok`` None, "no reference forward
given: not judged".  A fixed-point ``precision=`` override makes commsim's model a different model from the
module: reported, not judged.

:class:`TorchTrust` is the engine's hook (:class:`commsim.runs.framework.FrameworkBacked`):
``framework_agreement`` fills the report's ``torch_agreement``; ``framework_labels`` re-checks a certificate
with the torch forward.  The engine never imports torch.
"""
from __future__ import annotations

import hashlib

import numpy as np

from commsim.contract import Decision, InputError
from protocols.adapters.torch.layers import TOLERANCE, tensor

#: rows compared at once (bounds the memory of long sequences)
CHUNK_ROWS = 64

#: rows x length^2 of a chunk: the torch forward of a full-length attention holds (rows, heads, length, length)
#: scores, 3 GB for 64 rows of 1025 tokens and 12 heads
CHUNK_SCORES = 1 << 22


#: bytes of torch outputs a forward keeps for rows asked again
MEMO_BYTES = 256 << 20


def chunk_rows(length: int) -> int:
    """Rows compared at once for sequences of ``length`` tokens: at most :data:`CHUNK_ROWS`, fewer for long ones."""
    return max(1, min(CHUNK_ROWS, CHUNK_SCORES // max(1, length * length)))

#: how agreement with the torch forward is judged
RULE = "|commsim - torch| <= atol + rtol * |torch|"

#: the note of a comparison with the parts themselves (no module of the user's to compare with)
NO_REFERENCE = "no reference forward given: not judged"

#: how a user names the module that a dict of parts came from
HOW_TO_REFERENCE = ("return {'module': your_module, ...parts} from the factory, or pass reference=your_module to "
                    "from_torch")


def compare_decisions(ours, theirs, decision: Decision | None, allowed=None) -> dict:
    """Both sides' decisions under the model's rule (``decision``; None: the rule the output shape calls for) on
    aligned outputs (rows, [positions,] outputs): ``label_agreement`` (the share of equal decisions),
    ``decisions_differ`` (rows with a different decision somewhere) and ``decision_ties`` (of those, the rows
    where the framework's own decision is within ``allowed`` of flipping: a tie at the format's tolerance, not
    a misreading)."""
    rule = decision or Decision.for_outputs(ours.shape[-1])
    if not ours.size:
        return {"decision": rule.rule, "label_agreement": 1.0, "decisions_differ": 0, "decision_ties": 0}
    differ = rule(ours) != rule(theirs)
    rows = differ.reshape(differ.shape[0], -1).any(axis=1)
    ties = 0
    if allowed is not None and rows.any():
        close = rule.margin(theirs) <= 2 * np.max(allowed, axis=-1)
        ties = int((differ & close).reshape(differ.shape[0], -1).any(axis=1)[rows].sum())
    return {"decision": rule.rule, "label_agreement": float(np.mean(~differ)), "decisions_differ": int(rows.sum()),
            "decision_ties": ties}


def _differ_text(decided: dict, rows: int, framework: str) -> str:
    """The decisions' comparison in words (empty when every decision agrees)."""
    if not decided["decisions_differ"]:
        return ""
    ties = decided["decision_ties"]
    return (f"; decisions ({decided['decision']}) differ on {decided['decisions_differ']} of {rows} inputs"
            + (f" ({ties} of them ties within the tolerance)" if ties else "")
            + f", so commsim's accuracy is not the {framework} module's there")


def judge(ours, theirs, fmt_name: str, *, reference: str, whole_model: bool = True, framework: str = "torch",
          decision: Decision | None = None) -> dict:
    """The one agreement rule (module docstring): commsim's outputs ``ours`` against ``theirs`` from
    ``reference`` (aligned arrays), for a model in the format named ``fmt_name``, and both sides' decisions under
    the model's ``decision`` rule.  ``whole_model``: is the reference the user's model itself (else the parts
    commsim was built from: within the tolerance, not judged)?  A judged comparison fails when the values are
    outside the tolerance or a decision differs other than at a tie within it."""
    ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    tol = TOLERANCE.get(fmt_name)
    atol, rtol = tol if tol is not None else (None, None)
    result = {"ok": None, "atol": atol, "rtol": rtol, "max_abs_diff": None, "reference": reference, "note": "",
              "max_allowed": None, "rule": RULE if tol is not None else None, "format": fmt_name,
              "label_agreement": 0.0, "decisions_differ": None, "decision_ties": None,
              "decision": None if decision is None else decision.rule}
    if ours.shape != theirs.shape:
        return {**result, "ok": False,
                "note": f"output shapes differ: commsim {ours.shape}, {reference} {theirs.shape}"}
    diff = np.abs(ours - theirs)
    biggest = float(diff.max(initial=0.0))
    allowed = None if tol is None else atol + rtol * np.abs(theirs)
    decided = compare_decisions(ours, theirs, decision, allowed)
    result.update(max_abs_diff=biggest, **decided)
    rows = int(ours.shape[0])
    measured = f"max |commsim - {framework}| = {biggest:.3g}"
    if tol is None:
        return {**result, "note": f"not judged: commsim's model runs at {fmt_name}, a different number format from "
                                  f"the {framework} module's own ({measured} against {reference})"
                                  f"{_differ_text(decided, rows, framework)}"}
    within = bool(np.all(diff <= allowed))
    result["max_allowed"] = float(allowed.max(initial=atol))
    measured += (f", {'within' if within else 'OUTSIDE'} atol + rtol*|{framework}| = {atol:g} + {rtol:g}*|{framework}| "
                 f"for {fmt_name}")
    misread = decided["decisions_differ"] - decided["decision_ties"]
    if whole_model:
        return {**result, "ok": within and not misread,
                "note": f"{measured}, against {reference}{_differ_text(decided, rows, framework)}"}
    if not within:
        return {**result, "ok": False, "note": f"commsim's model does not follow the parts it was built from "
                                               f"({measured}, against {reference})"}
    return {**result, "note": f"{NO_REFERENCE} -- commsim follows the parts it was built from ({measured}), but "
                              f"nothing shows they are your model (a left-out residual or layer goes unseen); "
                              f"{HOW_TO_REFERENCE}"}


def reference_of(forward) -> tuple[str, bool]:
    """(what a torch forward is, in words; is it the user's whole model?).  The forwards the adapters build
    say it (``reference``, ``whole_model``); any other callable counts as the user's model."""
    return str(getattr(forward, "reference", "the model's torch_forward")), bool(getattr(forward, "whole_model", True))


def module_output(out):
    """What a user's module returns, as one tensor (batch, [positions,] outputs): the first element of a tuple or
    list (nanoGPT returns ``(logits, loss)``, loss None without targets), the ``logits`` of an output object or a
    dict; a (batch, 1, outputs) tensor -- the last position only, as inference code computes
    ``lm_head(x[:, [-1], :])`` -- as (batch, outputs); a (batch,) tensor as one output per row.  (batch, length,
    outputs) stays as it is: every position, read at the last where one position is asked for.  Every place that
    runs a user's module forward reads its output through this function."""
    if isinstance(out, (tuple, list)):
        if not out:
            raise InputError("the module's forward returned an empty tuple; it must return the outputs", "model")
        out = out[0]
    if isinstance(out, dict) and "logits" in out:
        out = out["logits"]
    elif not hasattr(out, "dim") and hasattr(out, "logits"):
        out = out.logits
    if not hasattr(out, "dim"):
        raise InputError(f"the module's forward returned a {type(out).__name__}; it must return the outputs as a "
                         f"tensor (batch, outputs) or (batch, length, outputs), or a tuple whose first element is "
                         f"one", "model")
    if out.dim() == 3 and out.shape[1] == 1:
        return out[:, 0]
    if out.dim() == 1:
        return out[:, None]
    return out


class ModuleForward:
    """tokens -> a module's own outputs (float64 numpy): the user's model itself.  Picklable when the
    module is."""

    whole_model = True

    def __init__(self, module):
        self.module = module

    @property
    def reference(self) -> str:
        return f"{type(self.module).__name__}'s own forward"

    def __call__(self, tokens):
        """The module's outputs on token ids (logits when it returns an output object), in chunks of rows
        (:func:`chunk_rows`); the outputs of the token rows asked last are kept, up to :data:`MEMO_BYTES` (the
        report asks about the same rows two or three times: the agreement, then the module's own decisions)."""
        import torch
        tokens = np.atleast_2d(np.asarray(tokens))
        key = (tokens.shape, tokens.dtype.str, hashlib.blake2b(np.ascontiguousarray(tokens).tobytes()).digest(),
               self._weights_version())
        memo = self.__dict__.setdefault("_memo", {})
        if key in memo:
            return memo[key].copy()
        step, parts = chunk_rows(tokens.shape[1]), []
        with torch.no_grad():
            for s in range(0, max(1, tokens.shape[0]), step):
                out = self.module(torch.as_tensor(tokens[s:s + step], dtype=torch.long), **self.forward_options())
                parts.append(tensor(self.select(module_output(out))))
        result = parts[0] if len(parts) == 1 else np.concatenate(parts)
        if sum(a.nbytes for a in memo.values()) + result.nbytes > MEMO_BYTES:
            memo.clear()
        memo[key] = result
        return result.copy()

    def _weights_version(self) -> tuple:
        """The module's parameters and buffers as (identity, in-place version) pairs: a weight changed in place
        after its outputs were kept is not answered from them."""
        tensors = []
        for get in ("parameters", "buffers"):
            tensors += list(getattr(self.module, get, lambda: ())())
        return tuple((id(t), getattr(t, "_version", 0)) for t in tensors)

    def __getstate__(self):
        """Picklable state: the module (the kept outputs stay behind)."""
        return {k: v for k, v in self.__dict__.items() if k != "_memo"}

    def forward_options(self) -> dict:
        """Keyword arguments of the module's forward (none here)."""
        return {}

    @staticmethod
    def select(out):
        """The part of the module's output that is compared (all of it here)."""
        return out


class OutputsCompared:
    """commsim's outputs beside the torch module's on the same tokens (aligned arrays, float64)."""

    def __init__(self, ours: np.ndarray, theirs: np.ndarray, positions: tuple[int, ...]):
        self.ours, self.theirs, self.positions = ours, theirs, positions


def at_positions(theirs: np.ndarray, positions: tuple[int, ...], length: int) -> np.ndarray | None:
    """Torch outputs at ``positions`` (batch, k, classes); None when the forward gave only the last
    position's outputs and another position is asked for."""
    if theirs.ndim == 3 and theirs.shape[1] == 1 and length > 1:   # the last position only, kept as (batch, 1, V)
        theirs = theirs[:, 0]
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
    step = chunk_rows(length)
    for s in range(0, tokens.shape[0], step):
        rows = tokens[s:s + step]
        theirs = np.asarray(forward(rows), dtype=np.float64)
        picked = at_positions(theirs, positions, length)
        if picked is None:   # the module's output at the last position only: compare there
            positions = (length - 1,)
            picked = at_positions(theirs, positions, length)
        if picked is None:
            return OutputsCompared(np.zeros(0), theirs, positions)
        if isinstance(model, AttentionLayer):
            ours = np.stack([model.forward(rows, p) for p in positions], axis=1)
        else:
            ours = model.forward_batch(rows, positions)
        ours_parts.append(ours)
        theirs_parts.append(picked)
    return OutputsCompared(np.concatenate(ours_parts), np.concatenate(theirs_parts), positions)


class TorchTrust:
    """The engine's framework hooks for a model wrapped from torch (module docstring)."""

    framework = "torch"
    torch_forward = None
    #: commsim's float64 reading of the module, for a model run at another format (adapt.Reading; None: none)
    reading = None

    def framework_agreement(self, tokens, output_positions=None) -> dict | None:
        """The report's ``torch_agreement`` on these token rows, by :func:`judge` against ``torch_forward``: its
        keys (``ok``, ``atol``, ``rtol``, ``max_abs_diff``, ``reference``, ``note``, ...) and ``framework``,
        ``instances``, ``positions``; None without a torch forward."""
        tokens = np.atleast_2d(np.asarray(tokens))
        compared = compare_outputs(self, tokens, output_positions)
        if compared is None:
            return None
        reference, whole = reference_of(self.torch_forward)
        judged = judge(compared.ours, compared.theirs, self.format.name, reference=reference, whole_model=whole,
                       framework=self.framework, decision=self.decision_for(compared.ours))
        if judged["ok"] is None and self.reading:
            judged = self._reading_judged(judged, tokens, output_positions)
        return {**judged, "framework": self.framework, "instances": int(tokens.shape[0]),
                "positions": [int(p) for p in compared.positions]}

    def _reading_judged(self, judged: dict, tokens, output_positions) -> dict:
        """``judged`` (the run's format, not judged) with commsim's reading of the module at its own dtype judged
        against the module itself: how commsim reads the module can never hide behind "a different number
        format"."""
        try:
            reading = self.reading()
        except InputError as exc:
            return {**judged, "reading": None, "note": f"{judged['note']}; commsim's reading at the module's own "
                                                       f"dtype could not be built to judge it apart ({exc})"}
        reading.torch_forward = self.torch_forward
        compared = compare_outputs(reading, tokens, output_positions)
        reference, whole = reference_of(self.torch_forward)
        read = judge(compared.ours, compared.theirs, reading.format.name, reference=reference, whole_model=whole,
                     framework=self.framework, decision=self.decision_for(compared.ours))
        kept = {k: read[k] for k in ("ok", "max_abs_diff", "atol", "rtol", "format", "label_agreement",
                                     "decisions_differ", "note")}
        verdict = {True: "agrees with", False: "DISAGREES with", None: "is not judged against"}[read["ok"]]
        return {**judged, "ok": read["ok"], "reading": kept,
                "note": f"commsim's {reading.format.name} reading of the module {verdict} it ({read['note']}); the run's "
                        f"{self.format.name} rounding of that reading is not judged ({judged['note']})"}

    def framework_labels(self, tokens, output_positions=None) -> np.ndarray | None:
        """The torch module's own decisions (batch, outputs) at ``output_positions``, decided by the model's own
        rule (:class:`~protocols.models.decides.Decides`); None when no torch forward is kept or it does not
        give those positions."""
        view = _torch_view(self, tokens, output_positions)
        if view is None:
            return None
        forward, tokens, positions, length = view
        step = chunk_rows(length)   # the chunks compare_outputs asks for: a forward that keeps them answers again
        outs = [np.asarray(forward(tokens[s:s + step]), dtype=np.float64) for s in range(0, len(tokens), step)]
        theirs = at_positions(np.concatenate(outs) if outs else np.asarray(forward(tokens), dtype=np.float64),
                              positions, length)
        if theirs is None:
            return None
        return np.stack([np.asarray(self.decide_values(theirs[:, k])).reshape(-1) for k in range(len(positions))],
                        axis=1)

    def decision_for(self, outputs: np.ndarray) -> Decision:
        """The rule in force for outputs like ``outputs`` (..., width)."""
        return self.decision or Decision.for_outputs(np.shape(outputs)[-1], probability=self.output_probability)

    @property
    def framework_judged(self) -> bool:
        """Does commsim's model run in a float format whose agreement with torch is judged (the module's
        own dtype, or a float override)?  False under a fixed-point override."""
        return self.format.name in TOLERANCE
