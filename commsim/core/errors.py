"""Error types: every bad-input error is an :class:`InputError` (the CLI exits 2 on it)."""
from __future__ import annotations


class InputError(ValueError):
    """Bad input from the user: a malformed spec, an out-of-range size, an unknown name.

    ``param`` names the argument at fault when known (the CLI shows it).
    """

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


class NotApplicable(InputError):
    """A reduction, protocol or bound cannot be applied to this model or partition (the reason says why)."""


class ModelError(InputError):
    """A model cannot be built or run as asked (bad weights file, overflow to NaN, bad tokens)."""


class ProblemInputError(InputError):
    """An instance does not belong to the problem (length, alphabet, index)."""
