"""Model specs ``KIND[:key=value,...]``: parsing and typed access to the keys, precision keys in one place."""
from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from commsim.contract.loading import FORMAT_KEYS, MAX_SPEC_INT, regular_file, user_code_failure  # noqa: F401
from commsim.core.errors import InputError
from commsim.core.precision import FixedPoint, NumberFormat, parse_format


def _existing_path(text: str) -> bool:
    """Does ``text`` (``~`` expanded) name an existing directory, or an existing file by a path with a ``/``?  (A
    spec's target may contain ``=``; a stray file ``seed=3`` in the current directory is not a target.)"""
    try:
        path = os.path.expanduser(text)
        return os.path.isdir(path) or ("/" in text and os.path.lexists(path))
    except (OSError, ValueError):
        return False


def did_you_mean(name, choices) -> str:
    """`` (did you mean 'index-idxl'?)`` for the choice closest to a misspelled ``name`` (difflib's ratio, as
    click suggests options), or ``""`` when none is close."""
    close = difflib.get_close_matches(str(name), [str(choice) for choice in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# ---- model specs -------------------------------------------------------------
#: a spec key's name: ``key=value`` text starts with one; a segment such as ``/models/lr=0.1`` names a path
_KEY = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_-]*\s*")


def _is_key_value(part: str) -> bool:
    """Is a spec segment ``key=value`` text (a key name before its first ``=``), not a target such as a
    directory whose name holds ``=``?"""
    key, eq, _ = part.partition("=")
    return bool(eq) and _KEY.fullmatch(key) is not None


@dataclass
class ModelSpec:
    """A parsed ``KIND[:TARGET][:key=value,...]`` model spec.

    Factories read their parameters with the ``int``/``float``/``str``/``format``
    helpers (and a target, ``python:MODULE:FUNCTION``, ``torch:FILE``, with :attr:`target`), then
    call :meth:`finish`, which refuses keys nobody read and a target no factory read: a segment
    that is not ``key=value`` (``elman:widht8``) is an error naming it, never ignored.
    """

    text: str
    kind: str
    segments: str = ""
    params: dict[str, str] = field(default_factory=dict)
    _used: set = field(default_factory=set)
    _target_read: bool = False

    @property
    def target(self) -> str:
        """The segments between the kind and the key=value pairs (``""`` when none), marked as read."""
        self._target_read = True
        return self.segments

    @classmethod
    def parse(cls, text: str, kinds: list[str]) -> "ModelSpec":
        """Split a spec: the longest registered kind prefix, then a target, then key=value pairs."""
        text = text.strip()
        parts = text.split(":")
        kind = next((":".join(parts[:i]) for i in range(len(parts), 0, -1) if ":".join(parts[:i]) in kinds), None)
        if kind is None:
            raise InputError(f"unknown model kind in spec {text!r}{did_you_mean(parts[0], kinds)}; known kinds: "
                             f"{', '.join(kinds)}", param="model")
        rest = parts[kind.count(":") + 1:]
        target_parts, param_text = [], []
        for i, part in enumerate(rest):
            if _is_key_value(part) and not _existing_path(":".join([*target_parts, part])):   # a DIR may hold '='
                param_text = rest[i:]
                break
            if not part.strip():
                raise InputError(f"model spec {text!r}: empty segment after {':'.join([kind, *target_parts])!r}; "
                                 "write KIND or KIND:key=value,...", param="model")
            target_parts.append(part)
        params: dict[str, str] = {}
        for item in ":".join(param_text).split(","):
            if not item.strip():
                continue
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise InputError(f"model spec {text!r}: {item!r} is not key=value", param="model")
            if key.strip() in params:
                raise InputError(f"model spec {text!r}: {key.strip()!r} is given twice", param="model")
            params[key.strip()] = value.strip()
        return cls(text, kind, ":".join(target_parts), params)

    def has(self, key: str) -> bool:
        """Is ``key`` given (whether or not a factory has read it)?"""
        return key in self.params

    def _raw(self, key: str):
        """The raw text of ``key`` (None when absent), marked as read."""
        self._used.add(key)
        return self.params.get(key)

    def _bad(self, key: str, value: str, expected: str) -> InputError:
        """The error for a value that is not what ``key`` takes."""
        return InputError(f"model spec {self.text!r}: {key}={value!r} is not {expected}", param="model")

    def int(self, key: str, default: int | None = None, *, minimum: int | None = None,
            maximum: int | None = None) -> int | None:
        """An integer key, within [minimum, maximum] when given (never above :data:`MAX_SPEC_INT`: sizes
        beyond it cannot be built, seeds beyond it are not numpy seeds); ``default`` when absent."""
        raw = self._raw(key)
        if raw is None:
            return default
        maximum = MAX_SPEC_INT if maximum is None else min(maximum, MAX_SPEC_INT)
        if len(raw.strip()) > 40:                      # judged by its length: no 10^6-digit parse, no echo
            shown = self.text if len(self.text) <= 80 else self.text[:60] + "..."
            raise InputError(f"model spec {shown!r}: {key}= must be an integer <= {maximum}, got "
                             f"{len(raw.strip())} characters", param="model")
        try:
            value = int(raw)
        except ValueError:
            raise self._bad(key, raw, "an integer") from None
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            lo = "" if minimum is None else f">= {minimum}"
            hi = "" if maximum is None else f"<= {maximum}"
            raise self._bad(key, raw, "an integer " + " and ".join(x for x in (lo, hi) if x))
        return value

    def float(self, key: str, default: float | None = None) -> float | None:
        """A number key; ``default`` when absent."""
        raw = self._raw(key)
        if raw is None:
            return default
        try:
            return float(raw)
        except ValueError:
            raise self._bad(key, raw, "a number") from None

    def str(self, key: str, default: str | None = None, choices: tuple[str, ...] | None = None) -> str | None:
        """A text key, one of ``choices`` when given; ``default`` when absent."""
        raw = self._raw(key)
        if raw is None:
            return default
        if choices is not None and raw not in choices:
            raise self._bad(key, raw, "one of " + ", ".join(choices))
        return raw

    def file(self, key: str, *, directory: bool = False) -> Path | None:
        """The file named by ``key`` (a regular file, or a directory when ``directory``; :func:`regular_file`),
        None when absent."""
        raw = self._raw(key)
        if raw is None:
            return None
        return regular_file(raw, f"{key}=", directory=directory, prefix=f"model spec {self.text!r}: ")

    def format_given(self) -> bool:
        """Does the spec choose a number format (any of :data:`FORMAT_KEYS`)?  A model whose format
        comes from elsewhere (a weights file, a torch module) keeps it unless this is true."""
        return any(key in self.params for key in FORMAT_KEYS)

    def format_if_given(self) -> NumberFormat | None:
        """The number format the spec chooses (:meth:`format`), or None when it chooses none."""
        return self.format() if self.format_given() else None

    def format(self, default: NumberFormat | None = None) -> NumberFormat:
        """The number format from ``precision=P[,frac=F]`` (fixed point, or any spelling :func:`parse_format`
        reads: ``fixed16.8``, ``bfloat16``) or ``dtype=NAME`` (float); ``default`` (16-bit fixed point unless
        given) when the spec names none.  The keys' rules are :func:`parse_format`'s; an error names the spec."""
        keys = {key: self._raw(key) for key in FORMAT_KEYS}
        try:
            fmt = parse_format(**keys)
        except InputError as exc:
            raise InputError(f"model spec {self.text!r}: {exc}", param="model") from None
        if fmt is not None:
            return fmt
        return default if default is not None else FixedPoint.with_bits(16)

    def finish(self) -> None:
        """Refuse keys no factory read (typos, keys of another kind) and a target no factory read."""
        if self.segments and not self._target_read:
            raise InputError(f"model spec {self.text!r}: segment {self.segments.split(':')[0]!r} is not key=value "
                             f"(kind {self.kind!r} takes key=value pairs only)", param="model")
        unknown = sorted(set(self.params) - self._used)
        if unknown:
            valid = sorted(self._used)
            hints = "".join(did_you_mean(key, valid) for key in unknown[:1])
            path = f"{unknown[0]}={self.params[unknown[0]]}"
            if not self.segments and os.path.exists(path):   # a relative path whose name holds '='
                hints += f" (to name the file or directory {path!r}, write it as ./{path})"
            listed = f"; its keys: {', '.join(valid)}" if valid else f"; kind {self.kind!r} takes no keys"
            raise InputError(f"model spec {self.text!r}: unknown key(s) {', '.join(unknown)} for kind {self.kind!r}"
                             f"{hints}{listed}", param="model")
