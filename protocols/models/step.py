"""Your own recurrence as a commsim model: a step function ``state, token -> state`` and a readout.

Theorem 2 of [BHBK24] holds for *any* recurrent model: if the output at position t is a function of a
state ``h_t = g(h_{t-1}, x_t)`` and the later tokens, Alice can hand the state to Bob.  :class:`StepModel`
makes a model of three plain functions, so a recurrence commsim does not ship (a gated SSM, a
hand-written automaton, a trained cell exported to numpy) gets the hidden-state handoff, its bit count
and a certificate::

    import numpy as np
    from commsim import make_model
    from protocols.models.step import StepModel

    def step(state, token):           # one sequence: state (2,), token an int -> the new state (2,)
        return np.array([0.5 * state[0] + token, state[0]])

    def readout(state):               # the class scores at this position
        return np.array([state[1], -state[1]])

    model = make_model(StepModel(step, readout, initial_state=np.zeros(2), state_format="8", vocab_size=3))

The contract:

``initial_state``   an array (any shape): h_0, and the shape of every state.  Its values are rounded to
                    the format.
``step(state, token)``   the new state, an array of the same shape, from a state (float64 values of the
                    format) and a token (an ``int`` in ``0..vocab_size-1``).  With ``batched=True`` it
                    takes a batch instead: states ``(batch, *shape)`` and tokens ``(batch,)`` -> ``(batch,
                    *shape)``; it must then give every row the same bits whatever the batch (an elementwise
                    computation does; a BLAS matrix product may not -- commsim's check that the protocol
                    equals the direct forward catches it).
``readout(state)``  the class scores (``num_classes`` numbers; batched: ``(batch, num_classes)``); the
                    decision is their argmax.
``state_format``    the number format of every number in the state (a :class:`NumberFormat` or its name:
                    ``"8"`` = 8-bit fixed point, ``"fixed12.4"``, ``"float16"``, ``"bit"``...).  The state
                    is rounded to it after every step and the scores after every readout, so the model
                    *is* a finite-precision recurrence and the handoff sends exactly ``size(state) · p``
                    bits: the encoded state itself.

For ``--audit`` (each party in its own process) the model is pickled: module-level functions travel by
reference; lambdas, closures and functions of a factory file loaded by path travel by value when
``cloudpickle`` is installed (it comes with the ``sweep`` extra).
"""
from __future__ import annotations

import functools
import pickle

import numpy as np

from commsim.contract import ModelError
from commsim.core.precision import BitFormat, FormatError, NumberFormat, parse_format
from protocols.models.recurrent import RecurrentModel


# ---- callables that travel to other processes ---------------------------------------------------------------
@functools.lru_cache(maxsize=512)
def _package_found(top: str) -> bool:
    """Can a fresh process (``--audit`` spawns them, with this process's ``sys.path``) import the top-level
    module ``top``?  Not so for a factory file loaded by path, whose module exists only here."""
    import importlib.machinery
    import sys
    return top in sys.builtin_module_names or importlib.machinery.PathFinder.find_spec(top, sys.path) is not None


def _importable(module_name: str | None, qualname: str | None = None) -> bool:
    """Would a fresh process find ``module_name.qualname`` by importing the module?"""
    if not module_name or module_name == "__main__" or "<" in (qualname or ""):
        return False
    return _package_found(module_name.split(".")[0])


class _ByReference(pickle.Pickler):
    """A pickler that notes every class or function a fresh process could not import (a lambda, a closure,
    anything of a factory file loaded by path), wherever it sits inside the object."""

    def __init__(self, file):
        super().__init__(file)
        self.foreign: set[str] = set()

    def reducer_override(self, value):
        if isinstance(value, type) or (callable(value) and hasattr(value, "__qualname__")):
            name = getattr(value, "__module__", None)
            if not _importable(name, getattr(value, "__qualname__", None)):
                self.foreign.add(name or "")
        return NotImplemented


def _foreign_modules(obj) -> tuple[set[str], bool]:
    """(the modules of the classes and functions in ``obj`` that another process could not import, whether
    ``obj`` pickles by reference at all)."""
    import io
    pickler = _ByReference(io.BytesIO())
    try:
        pickler.dump(obj)
    except Exception:  # noqa: BLE001 - a lambda, a closure, a local class: not by reference
        return pickler.foreign, False
    return pickler.foreign, True


class Portable:
    """A callable carried by value (cloudpickle) because another process could not import it."""

    def __init__(self, payload: bytes):
        self.payload = payload

    def load(self):
        """The callable again (unpickling needs cloudpickle installed, as pickling did)."""
        return pickle.loads(self.payload)


def portable(obj):
    """``obj`` itself when it pickles by reference into a process that can import everything it names; else a
    :class:`Portable` of it pickled by value with cloudpickle (modules that another process could not import,
    e.g. a factory file loaded by path, registered for pickling by value); else ``obj`` (pickling it will then
    fail and say why)."""
    import sys
    foreign, pickles = _foreign_modules(obj)
    if pickles and not foreign:
        return obj
    try:
        import cloudpickle
    except ImportError:
        return obj
    modules = [sys.modules[name] for name in sorted(foreign)
               if name in sys.modules and name != "__main__" and not _importable(name)]
    for module in modules:
        cloudpickle.register_pickle_by_value(module)
    try:
        return Portable(cloudpickle.dumps(obj))
    except Exception:  # noqa: BLE001 - not picklable even by value: leave it, pickling will say why
        return obj
    finally:
        for module in modules:
            cloudpickle.unregister_pickle_by_value(module)


def restore(obj):
    """The inverse of :func:`portable`."""
    return obj.load() if isinstance(obj, Portable) else obj


def check_callable(fn, name: str, what: str) -> None:
    """A ModelError naming the argument unless ``fn`` is callable."""
    if not callable(fn):
        raise ModelError(f"{what}: {name} must be callable, got {type(fn).__name__}", "model")


# ---- the model ----------------------------------------------------------------------------------------------
class StepModel(RecurrentModel):
    """A recurrent model from ``step(state, token)``, ``readout(state)`` and ``initial_state`` (module docstring).

    ``state_units`` is the number of numbers in the state (its size), ``width`` the same, and the handoff
    sends ``state_units · p`` bits, p the bits of ``state_format``."""

    kind = "step"

    def __init__(self, step, readout, initial_state, *, state_format: NumberFormat | str = "16",
                 vocab_size: int, num_classes: int | None = None, batched: bool = False, spec: str = "",
                 name: str = ""):
        check_callable(step, "step", "StepModel")
        check_callable(readout, "readout", "StepModel")
        try:
            fmt = state_format if not isinstance(state_format, str) else \
                BitFormat() if state_format.strip().lower() == "bit" else parse_format(state_format)
        except FormatError as exc:
            raise ModelError(f"StepModel: state_format {state_format!r}: {exc}", "model") from None
        if not isinstance(fmt, NumberFormat):
            raise ModelError(f"StepModel: state_format must be a NumberFormat or its name, got {state_format!r}",
                             "model")
        h0 = np.asarray(initial_state, dtype=np.float64)
        if h0.size == 0 or not np.isfinite(h0).all():
            raise ModelError(f"StepModel: the initial state must be a non-empty array of finite numbers, "
                             f"got shape {h0.shape}", "model")
        self.state_shape = tuple(h0.shape)
        self.name = name or getattr(step, "__qualname__", type(step).__name__)
        self._step_fn, self._readout_fn, self.batched = step, readout, bool(batched)
        self._h0 = h0.reshape(-1)
        if num_classes is None:  # from the readout of h_0
            num_classes = int(self._call_readout(fmt.quantize(self._h0[None].copy())).shape[-1])
        super().__init__(fmt, h0.size, h0.size, int(vocab_size), int(num_classes), spec or f"step:{self.name}")
        self._h0 = self.quantize(self._h0)
        self._check_outputs()

    # ---- the user's functions, row by row or batched --------------------------------------------------------
    def _call_step(self, h: np.ndarray, x: np.ndarray) -> np.ndarray:
        """The user's step on a batch of flat states (batch, units) and tokens (batch,)."""
        batch, shape = h.shape[0], self.state_shape
        if self.batched:
            out = np.asarray(self._step_fn(h.reshape((batch,) + shape).copy(), np.asarray(x, dtype=np.int64)),
                             dtype=np.float64)
            if out.shape != (batch,) + shape:
                raise ModelError(f"StepModel {self.name}: step returned shape {out.shape} for a batch of {batch} "
                                 f"states of shape {shape}", "model")
            return out.reshape(batch, -1).copy()
        out = np.empty_like(h)
        for i in range(batch):
            row = np.asarray(self._step_fn(h[i].reshape(shape).copy(), int(x[i])), dtype=np.float64)
            if row.shape != shape:
                raise ModelError(f"StepModel {self.name}: step returned shape {row.shape}, the state has shape "
                                 f"{shape}", "model")
            out[i] = row.reshape(-1)
        return out

    def _call_readout(self, h: np.ndarray) -> np.ndarray:
        """The user's readout on a batch of flat states: (batch, classes)."""
        batch, shape = h.shape[0], self.state_shape
        if self.batched:
            return np.asarray(self._readout_fn(h.reshape((batch,) + shape).copy()), dtype=np.float64).reshape(batch, -1)
        return np.stack([np.asarray(self._readout_fn(h[i].reshape(shape).copy()), dtype=np.float64).reshape(-1)
                         for i in range(batch)]) if batch else np.empty((0, 0))

    def _check_outputs(self) -> None:
        """Run the step and the readout once on h_0 (token 0): shapes and finite values, named errors."""
        h = self.initial_state(1)
        new = self._call_step(h, np.zeros(1, dtype=np.int64))
        scores = self._call_readout(h)
        if scores.shape != (1, self.num_classes):
            raise ModelError(f"StepModel {self.name}: readout gave {scores.shape[-1]} scores, expected "
                             f"{self.num_classes}", "model")
        if not (np.isfinite(new).all() and np.isfinite(scores).all()):
            raise ModelError(f"StepModel {self.name}: step or readout gave a non-finite value on h_0", "model")

    # ---- the RecurrentModel hooks -------------------------------------------------------------------------
    def initial_state(self, batch: int = 1) -> np.ndarray:
        """h_0 (rounded to the format) for every row."""
        return np.repeat(self._h0[None], batch, axis=0)

    def describe_state(self) -> str:
        """The state's shape and format."""
        shape = "×".join(map(str, self.state_shape)) or "1"
        return f"a {shape} state = {self.state_units} number{'s' if self.state_units != 1 else ''} of {self.format.name}"

    def _step(self, h, x, t):
        """The user's step (rounded by the caller, :meth:`RecurrentModel.step`)."""
        return self._call_step(np.asarray(h, dtype=np.float64), np.asarray(x))

    def _readout(self, h):
        """The user's readout (rounded by the caller)."""
        return self._call_readout(np.asarray(h, dtype=np.float64))

    # ---- pickling (--audit) ------------------------------------------------------------------------------
    def __getstate__(self):
        state = dict(self.__dict__)
        state["_step_fn"], state["_readout_fn"] = portable(self._step_fn), portable(self._readout_fn)
        return state

    def __setstate__(self, state):
        state["_step_fn"], state["_readout_fn"] = restore(state["_step_fn"]), restore(state["_readout_fn"])
        self.__dict__.update(state)
