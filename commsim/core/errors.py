"""Error types: bad input (the caller's fault, exit status 2) apart from internal faults (exit status 1).

Every error commsim raises on purpose is a :class:`CommsimError`.  Two branches:

* :class:`InputError` -- what the caller asked for cannot be done: a malformed spec, an out-of-range size,
  an unknown name, a weights file that does not load, a bound or protocol that does not apply
  (:class:`NotApplicable`).  ``param`` names the parameter at fault (``"n"``, ``"model"``); the command
  line shows it as the flag the user typed (``--n``).
* :class:`InternalError` -- an invariant inside commsim or a plugin broke: a protocol whose vectorized
  sweep disagrees with the runner, a codec handed a value that its own caller should never produce.
  Not the user's input; a bug to report.
"""
from __future__ import annotations


class CommsimError(Exception):
    """Base of every error commsim raises on purpose; ``param`` names the parameter at fault, when known."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


class InputError(CommsimError, ValueError):
    """Bad input from the caller: a malformed spec, an out-of-range size, an unknown name (exit status 2).

    The message says what was expected; when it is about one parameter it names it (``"n must be at
    least 1, got 0"``) and ``param`` is that parameter's name (``"n"``), which the command line maps to
    the flag the user typed.
    """


class NotApplicable(InputError):
    """A reduction, protocol or bound cannot be applied to this model or partition (the reason says why)."""


class ModelError(InputError):
    """The caller's model cannot be built or run as asked: a weights file that does not load or contradicts
    the spec, a state that overflows to NaN under the chosen precision."""


class ProblemInputError(InputError):
    """An instance does not belong to the problem (length, alphabet, index)."""


class InternalError(CommsimError, RuntimeError):
    """A broken invariant inside commsim or a plugin (exit status 1): e.g. a protocol whose batch run
    disagrees with the runner, or a codec handed a value its caller should never have produced."""
