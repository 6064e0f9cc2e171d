"""Model specs ``KIND[:key=value,...]``: parsing and typed access to the keys, precision keys in one place."""
from __future__ import annotations

from dataclasses import dataclass, field

from commsim.core.errors import InputError
from commsim.core.precision import FLOAT_DTYPES, FixedPoint, FloatFormat, NumberFormat, parse_format

#: the keys that choose a number format: ``precision=P[,frac=F]`` (fixed point) or ``dtype=NAME``
FORMAT_KEYS = ("precision", "frac", "dtype")


# ---- model specs -------------------------------------------------------------
@dataclass
class ModelSpec:
    """A parsed ``KIND[:TARGET][:key=value,...]`` model spec.

    Factories read their parameters with the ``int``/``float``/``str``/``format``
    helpers, then call :meth:`finish`, which refuses keys nobody read.
    """

    text: str
    kind: str
    target: str = ""
    params: dict[str, str] = field(default_factory=dict)
    _used: set = field(default_factory=set)

    @classmethod
    def parse(cls, text: str, kinds: list[str]) -> "ModelSpec":
        """Split a spec: the longest registered kind prefix, then a target, then key=value pairs."""
        text = text.strip()
        parts = text.split(":")
        kind = next((":".join(parts[:i]) for i in range(len(parts), 0, -1) if ":".join(parts[:i]) in kinds), None)
        if kind is None:
            raise InputError(f"unknown model kind in spec {text!r}; known kinds: {', '.join(kinds)}", param="model")
        rest = parts[kind.count(":") + 1:]
        target_parts, param_text = [], []
        for i, part in enumerate(rest):
            if "=" in part:
                param_text = rest[i:]
                break
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
        """An integer key, within [minimum, maximum] when given; ``default`` when absent."""
        raw = self._raw(key)
        if raw is None:
            return default
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

    def format_given(self) -> bool:
        """Does the spec choose a number format (any of :data:`FORMAT_KEYS`)?  A model whose format
        comes from elsewhere (a weights file, a torch module) keeps it unless this is true."""
        return any(key in self.params for key in FORMAT_KEYS)

    def format_if_given(self) -> NumberFormat | None:
        """The number format the spec chooses (:meth:`format`), or None when it chooses none."""
        return self.format() if self.format_given() else None

    def format(self, default: NumberFormat | None = None) -> NumberFormat:
        """The number format from ``precision=P[,frac=F]`` (fixed point) or ``dtype=NAME`` (float)."""
        precision, frac, dtype = self._raw("precision"), self._raw("frac"), self._raw("dtype")
        if dtype is not None and (precision is not None or frac is not None):
            raise InputError(f"model spec {self.text!r}: give either precision= (fixed point) or dtype=, not both",
                             param="model")
        if dtype is None and precision is None and frac is not None:
            raise InputError(f"model spec {self.text!r}: frac= needs precision=", param="model")
        try:
            if dtype is not None:
                return FloatFormat(dtype)
            if precision is None:
                return default if default is not None else FixedPoint.with_bits(16)
            if precision.lower() in FLOAT_DTYPES:
                return parse_format(precision)
            bits = int(precision)
            return FixedPoint.with_bits(bits, None if frac is None else int(frac))
        except ValueError as exc:
            raise InputError(f"model spec {self.text!r}: {exc}", param="model") from None

    def finish(self) -> None:
        """Refuse keys no factory read (typos, keys of another kind)."""
        unknown = sorted(set(self.params) - self._used)
        if unknown:
            raise InputError(f"model spec {self.text!r}: unknown key(s) {', '.join(unknown)} for kind {self.kind!r}",
                             param="model")
