"""A user's ``nn.Module`` that exposes its recurrence step by step, as a commsim recurrent model.

Theorem 2 of [BHBK24] needs only a recurrence: a state, a step and a readout.  A module of any
architecture (an SSM, a linear-attention layer, a gated cell of your own) is accepted when it has three
methods -- the **step contract**:

``initial_state(batch: int)``
    h_0 for ``batch`` sequences: a tensor ``(batch, *shape)``, or a tuple/list of such tensors (e.g.
    ``(h, c)``).  A part may be complex (``complex64``: S4D-Lin, LRU): each complex entry is two numbers of
    the format, its real and imaginary parts (``2·d·p`` bits for d complex entries, as ``ssm:complex=true``),
    handed off and rounded as such; the format is that of the real dtype (complex64 -> float32).
``step(state, tokens)``
    the next state (the same structure and shapes) from a state and ``tokens``, a ``LongTensor (batch,)``
    of token ids.
``readout(state)``
    the class scores at this position, ``(batch, classes)``; the decision is their argmax.

and, optionally, ``vocab_size`` (an int attribute; otherwise the task's vocabulary is used).  commsim runs
the step, never ``forward``: the reference output is the module's own loop of ``step``/``readout`` in torch.
When the module also has a ``forward`` of its own (a parallel form, say) that runs on token ids, the
agreement check (the report's ``torch_agreement``, :func:`~protocols.adapters.torch.adapt.agreement`) also
compares that forward with iterating ``step``, at the module's own dtype by the same rule
(:func:`~protocols.adapters.torch.trust.judge`), and reports ``ok`` False when they disagree: the bits commsim
counts are the step's, and a forward that computes something else is not the model that was run.

Semantics: commsim calls ``step`` and ``readout`` under ``torch.no_grad()`` one sequence at a time
(batch 1), so every row's bits are the same whatever the batch, and rounds the state (every number of
every part, in order) to the number format after every step and the scores after every readout.  The
format is the module's dtype (float32 -> p = 32 ...), under which the rounding changes nothing and the
model is the module itself; or ``precision=P``/``dtype=NAME``, under which a copy of the module with every
parameter rounded to the format is run and the state is rounded to it (a different model: its agreement
with the module's own loop is reported, not judged).  The handoff sends the whole state: every part's
numbers, ``units · p`` bits.

Pickling (``--audit``): the module travels with the model; a module whose class a spawned process cannot
import (a factory file loaded by path) travels by value when ``cloudpickle`` is installed.
"""
from __future__ import annotations

import copy

import numpy as np

from commsim.core.precision import NumberFormat
from protocols.adapters.torch.layers import (
    AdapterError,
    format_for_dtype,
    require_torch,
    tensor,
)
from protocols.adapters.torch.trust import (
    ModuleForward,
    TorchTrust,
    at_positions,
    judge,
)
from protocols.models.recurrent import RecurrentModel
from protocols.models.step import portable, restore

#: the methods of the step contract
STEP_METHODS = ("initial_state", "step", "readout")


def is_step_module(obj) -> bool:
    """Does ``obj`` expose the step contract (callable ``initial_state``, ``step`` and ``readout``)?"""
    return all(callable(getattr(obj, name, None)) for name in STEP_METHODS)


def _parts(state) -> list:
    """A state as a list of tensors (a single tensor is one part)."""
    return list(state) if isinstance(state, (tuple, list)) else [state]


def real_dtype(dtype):
    """The real dtype of a torch dtype (complex64 -> float32, complex128 -> float64; a real dtype is itself)."""
    return dtype.to_real() if dtype.is_complex else dtype


def part_numbers(part) -> np.ndarray:
    """One state part (batch, *shape) as its numbers, float64 (batch, units): a real part's values in order; a
    complex part's real parts then its imaginary parts (2 numbers per complex entry, as ``ssm:complex=true``)."""
    batch = part.shape[0]
    if part.is_complex():
        return np.concatenate([tensor(part.real).reshape(batch, -1), tensor(part.imag).reshape(batch, -1)], axis=1)
    return tensor(part).reshape(batch, -1)


class StepForward:
    """tokens -> the module's own readouts at every position (batch, length, classes), float64: its
    ``initial_state``/``step``/``readout`` loop in torch, unrounded: the user's model itself.  Picklable when
    the module is."""

    whole_model = True

    def __init__(self, module):
        self.module = module

    @property
    def reference(self) -> str:
        return f"{type(self.module).__name__}'s own loop of initial_state / step / readout"

    def __call__(self, tokens):
        import torch
        toks = torch.as_tensor(np.atleast_2d(np.asarray(tokens)), dtype=torch.long)
        outs = []
        with torch.no_grad():
            state = self.module.initial_state(toks.shape[0])
            for j in range(toks.shape[1]):
                state = self.module.step(state, toks[:, j])
                outs.append(tensor(self.module.readout(state)))
        return np.stack(outs, axis=1) if outs else np.zeros((toks.shape[0], 0, 0))


class TorchStepModel(TorchTrust, RecurrentModel):
    """A module with the step contract (module docstring) as a recurrent model; the state is every part's
    numbers in order (``state_shapes``), ``state_units`` in all."""

    kind = "torch-step"
    #: the module's own forward (:class:`ModuleForward`), compared with iterating its step; None: it has none
    own_forward = None
    #: why the module's own forward was not compared (it did not run on token ids); None otherwise
    own_forward_skipped = None
    #: the module's own number format (its dtype), under which its forward and its step loop are compared
    native_format = None

    def __init__(self, module, fmt: NumberFormat, vocab_size: int, *, spec: str = "", torch_forward=None,
                 rounded: bool = False):
        torch = require_torch()
        self.module = module
        self.rounded = rounded
        with torch.no_grad():
            first = module.initial_state(1)
            h0 = _parts(first)
            self.tuple_state = isinstance(first, (tuple, list))
            self.state_shapes = [tuple(p.shape[1:]) for p in h0]
            self.state_dtypes = [p.dtype for p in h0]
            units = sum(self._units(p) for p in h0)
            if not units:
                raise AdapterError(f"{type(module).__name__}.initial_state(1) gave an empty state")
            scores = module.readout(first)
            if getattr(scores, "is_complex", lambda: False)():
                raise AdapterError(f"{type(module).__name__}.readout returned complex scores ({scores.dtype}); the "
                                   f"decision is an argmax of real scores: return e.g. the real part")
            scores = tensor(scores)
        if scores.ndim != 2 or scores.shape[0] != 1:
            raise AdapterError(f"{type(module).__name__}.readout must return (batch, classes) scores; on a batch of "
                               f"1 it returned shape {tuple(scores.shape)}")
        super().__init__(fmt, units, units, vocab_size, int(scores.shape[1]), spec or f"torch-step:{type(module).__name__}")
        self.torch_forward = torch_forward
        self._h0 = self.quantize(np.concatenate([part_numbers(p)[0] for p in h0]))

    @staticmethod
    def _units(part) -> int:
        """The numbers one row of a state part holds: its entries, twice that for a complex part (Re, Im)."""
        size = int(np.prod(part.shape[1:]))
        return 2 * size if part.is_complex() else size

    def framework_agreement(self, tokens, output_positions=None) -> dict | None:
        """:meth:`TorchTrust.framework_agreement` against the module's own step loop, and -- when the module
        has a forward of its own -- that forward against iterating its step, by the same rule at the module's
        own dtype (``forward_vs_step``): a disagreement makes ``ok`` False and the note says so."""
        result = super().framework_agreement(tokens, output_positions)
        if result is None:
            return None
        if self.own_forward is None:
            if self.own_forward_skipped:
                result["note"] += f"; its own forward was not compared ({self.own_forward_skipped})"
            return result
        tokens = np.atleast_2d(np.asarray(tokens))
        positions, length = tuple(result["positions"]), tokens.shape[1]
        loop = np.asarray(StepForward(self.own_forward.module)(tokens), dtype=np.float64)
        own = np.asarray(self.own_forward(tokens), dtype=np.float64)
        if at_positions(own, positions, length) is None:   # its forward gives the last position only
            positions = (length - 1,)
        own_at = at_positions(own, positions, length)
        check = judge(at_positions(loop, positions, length), own if own_at is None else own_at,
                      self.native_format.name, reference=self.own_forward.reference)
        check["note"] = check["note"].replace("max |commsim - torch|", "max |step loop - forward|", 1)
        result["forward_vs_step"] = {k: check[k] for k in ("ok", "atol", "rtol", "max_abs_diff", "reference",
                                                           "note")}
        label = type(self.own_forward.module).__name__
        if check["ok"] is False:
            result["ok"] = False
            result["note"] = (f"{label}'s own forward differs from iterating its step ({check['note']}): commsim "
                              f"runs the step, so the model it counts bits for is not the one forward computes; "
                              f"against the step loop: {result['note']}")
        else:
            result["note"] += f"; {label}'s own forward agrees with iterating its step ({check['note']})"
        return result

    def describe_state(self) -> str:
        """The parts of the state and the format."""
        shapes = " + ".join(("2·" if dt.is_complex else "") + ("×".join(map(str, s)) or "1")
                            for s, dt in zip(self.state_shapes, self.state_dtypes))
        if any(dt.is_complex for dt in self.state_dtypes):
            shapes += " (2· marks a complex part: each entry its real and imaginary parts)"
        return f"{shapes} = {self.state_units} number{'s' if self.state_units != 1 else ''} of {self.format.name}"

    def initial_state(self, batch: int = 1) -> np.ndarray:
        """h_0 (every part flattened, rounded to the format) for every row."""
        return np.repeat(self._h0[None], batch, axis=0)

    def _to_torch(self, row: np.ndarray):
        """One flat state row as the module's state structure (batch 1, each part's own dtype)."""
        import torch
        parts, off = [], 0
        for shape, dtype in zip(self.state_shapes, self.state_dtypes):
            size = int(np.prod(shape))
            if dtype.is_complex:
                real = real_dtype(dtype)
                re = torch.as_tensor(row[off:off + size].reshape((1,) + shape), dtype=real)
                im = torch.as_tensor(row[off + size:off + 2 * size].reshape((1,) + shape), dtype=real)
                parts.append(torch.complex(re, im))
                off += 2 * size
            else:
                parts.append(torch.as_tensor(row[off:off + size].reshape((1,) + shape), dtype=dtype))
                off += size
        return tuple(parts) if self.tuple_state else parts[0]

    def _flat(self, state) -> np.ndarray:
        """The module's state as one flat float64 row (its shapes checked)."""
        parts = _parts(state)
        shapes = [tuple(p.shape[1:]) for p in parts]
        if shapes != self.state_shapes:
            raise AdapterError(f"{type(self.module).__name__}.step returned a state of shapes {shapes}, "
                               f"expected {self.state_shapes}")
        kinds = [p.is_complex() for p in parts]
        if kinds != [dt.is_complex for dt in self.state_dtypes]:
            raise AdapterError(f"{type(self.module).__name__}.step returned a state whose parts are "
                               f"{'complex' if any(kinds) else 'real'} where initial_state's were not: a part must "
                               f"stay real or complex from step to step")
        return np.concatenate([part_numbers(p)[0] for p in parts])

    def _step(self, h, x, t):
        """The module's step, one sequence at a time (rounded by the caller)."""
        import torch
        out = np.empty_like(h)
        with torch.no_grad():
            for i in range(h.shape[0]):
                token = torch.as_tensor([int(x[i])], dtype=torch.long)
                out[i] = self._flat(self.module.step(self._to_torch(h[i]), token))
        return out

    def _readout(self, h):
        """The module's readout, one sequence at a time (rounded by the caller)."""
        import torch
        out = np.empty((h.shape[0], self.num_classes))
        with torch.no_grad():
            for i in range(h.shape[0]):
                out[i] = tensor(self.module.readout(self._to_torch(h[i]))).reshape(-1)
        return out

    def __getstate__(self):
        """The module (and the reference forward) by value when another process could not import it."""
        state = dict(self.__dict__)
        state["module"] = portable(self.module)
        for key in ("torch_forward", "own_forward"):
            if state.get(key) is not None:
                state[key] = portable(state[key])
        return state

    def __setstate__(self, state):
        state["module"] = restore(state["module"])
        for key in ("torch_forward", "own_forward"):
            if state.get(key) is not None:
                state[key] = restore(state[key])
        self.__dict__.update(state)


def _rounded_copy(module, fmt: NumberFormat):
    """A copy of ``module`` with every parameter and buffer rounded to ``fmt`` (kept in the module's dtype)."""
    import torch
    clone = copy.deepcopy(module)
    with torch.no_grad():
        for value in list(clone.parameters()) + [b for b in clone.buffers()
                                                 if b.is_floating_point() or b.is_complex()]:
            if value.is_complex():   # each of the real and imaginary parts a number of the format
                real = real_dtype(value.dtype)
                value.copy_(torch.complex(torch.as_tensor(fmt.quantize(tensor(value.real)), dtype=real),
                                          torch.as_tensor(fmt.quantize(tensor(value.imag)), dtype=real)))
            else:
                value.copy_(torch.as_tensor(fmt.quantize(tensor(value)), dtype=value.dtype))
    return clone


def wrap_step_module(module, fmt: NumberFormat | None, *, vocab_size: int | None = None, spec: str = "",
                     check: bool = True) -> TorchStepModel:
    """A module with the step contract as a commsim model (module docstring).  In the module's own dtype the
    model is checked against the module's own loop on probe tokens (an AdapterError when they disagree)."""
    torch = require_torch()
    label = type(module).__name__
    declared = getattr(module, "vocab_size", None)
    vocab = int(declared) if isinstance(declared, int) and not isinstance(declared, bool) else vocab_size
    if vocab is None or vocab < 1:
        raise AdapterError(f"{label} exposes a step but no vocabulary size: give it an int attribute vocab_size "
                           f"(or run it on a task, whose vocabulary is then used)")
    module.eval()
    params = list(module.parameters())
    native = format_for_dtype(real_dtype(params[0].dtype) if params else torch.get_default_dtype())
    forward = StepForward(module)
    try:
        if fmt is None:
            model = TorchStepModel(module, native, vocab, spec=spec, torch_forward=forward)
        else:
            model = TorchStepModel(_rounded_copy(module, fmt), fmt, vocab, spec=spec, torch_forward=forward,
                                   rounded=True)
    except AdapterError:
        raise
    except Exception as exc:  # the user's methods failed on the probe: say which contract
        raise AdapterError(f"{label}: calling its step contract (initial_state(1), step, readout) failed: "
                           f"{type(exc).__name__}: {exc}") from None
    model.native_format = native
    probe = np.random.default_rng(0).integers(0, vocab, size=(4, 6))
    if check and fmt is None:
        try:
            theirs = forward(probe)
        except Exception as exc:
            raise AdapterError(f"{label}: its step loop failed on a batch of 4 sequences: "
                               f"{type(exc).__name__}: {exc}") from None
        ours = model.forward_batch(probe, output_positions=range(probe.shape[1]))
        judged = judge(ours, theirs, model.format.name, reference="its own batched loop")
        if judged["ok"] is False:
            raise AdapterError(f"{label}: commsim's row-by-row run of its step does not match its own batched loop "
                               f"({judged['note']}); does step mix the rows of a batch?")
    if type(module).forward is not torch.nn.Module.forward:   # a forward of its own: compared with the step loop
        try:
            ModuleForward(module)(probe)
            model.own_forward = ModuleForward(module)
        except Exception as exc:  # noqa: BLE001 - the user's forward: it need not take token ids
            model.own_forward_skipped = f"it did not run on token ids: {type(exc).__name__}: {exc}"
    return model
