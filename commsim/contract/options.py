"""A plugin's own typed options: what a separation's ``run`` takes beyond the engine's (``gamma``, ``q``, ...),
declared once, from which the command line builds its flags (``--gamma``) with their type, help and check.

Options of one name in several plugins share one flag: declare them alike (one :class:`Option` object, shared).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from commsim.core.errors import InputError


@dataclass(frozen=True)
class Option:
    """One typed keyword option.

    ``name``: the keyword (``gamma``), and the flag ``--NAME``; ``type``: ``float``, ``int`` or ``str``, the type
    the flag's value is read as; ``help``: the flag's help text; ``default``: the value the plugin uses when the
    option is not given (the flag itself defaults to not given); ``metavar``: the flag's value name in the help
    (default: the type's); ``check``: ``check(value)`` -> why the value is refused, as the rest of a sentence
    after the flag ("must be in [0.1, 1), got 2.0"), or "" when it is accepted."""

    name: str
    type: type
    help: str
    default: Any = None
    metavar: str | None = None
    check: Callable[[Any], str] | None = None

    @property
    def flag(self) -> str:
        """The command line's flag: ``--NAME``."""
        return f"--{self.name}"

    def checked(self, value: Any, param: str | None = None) -> Any:
        """``value`` when :attr:`check` accepts it, else an InputError naming ``param`` (default: the flag) with
        the reason."""
        reason = self.check(value) if self.check is not None else ""
        if reason:
            param = param or self.flag
            raise InputError(f"{param} {reason}", param)
        return value

