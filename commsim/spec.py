"""Model specs ``KIND[:key=value,...]``: parsing and typed access to the keys, precision keys in one place."""
from __future__ import annotations

from dataclasses import dataclass, field

from commsim.core.errors import InputError
from commsim.core.precision import FixedPoint, FloatFormat, NumberFormat, parse_format


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
            raise InputError(f"unknown model kind in spec {text!r}; known kinds: {', '.join(kinds)}", param="--model")
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
                raise InputError(f"model spec {text!r}: {item!r} is not key=value", param="--model")
            if key.strip() in params:
                raise InputError(f"model spec {text!r}: {key.strip()!r} is given twice", param="--model")
            params[key.strip()] = value.strip()
        return cls(text, kind, ":".join(target_parts), params)

    def has(self, key: str) -> bool:
        return key in self.params

    def _raw(self, key: str):
        self._used.add(key)
        return self.params.get(key)

    def _bad(self, key: str, value: str, expected: str) -> InputError:
        return InputError(f"model spec {self.text!r}: {key}={value!r} is not {expected}", param="--model")

    def int(self, key: str, default: int | None = None, *, minimum: int | None = None,
            maximum: int | None = None) -> int | None:
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
        raw = self._raw(key)
        if raw is None:
            return default
        try:
            return float(raw)
        except ValueError:
            raise self._bad(key, raw, "a number") from None

    def str(self, key: str, default: str | None = None, choices: tuple[str, ...] | None = None) -> str | None:
        raw = self._raw(key)
        if raw is None:
            return default
        if choices is not None and raw not in choices:
            raise self._bad(key, raw, "one of " + ", ".join(choices))
        return raw

    def format(self, default: NumberFormat | None = None) -> NumberFormat:
        """The number format from ``precision=P[,frac=F]`` (fixed point) or ``dtype=NAME`` (float)."""
        precision, frac, dtype = self._raw("precision"), self._raw("frac"), self._raw("dtype")
        if dtype is not None and (precision is not None or frac is not None):
            raise InputError(f"model spec {self.text!r}: give either precision= (fixed point) or dtype=, not both",
                             param="--model")
        try:
            if dtype is not None:
                return FloatFormat(dtype)
            if precision is None:
                if frac is not None:
                    raise InputError(f"model spec {self.text!r}: frac= needs precision=", param="--model")
                return default if default is not None else FixedPoint.with_bits(16)
            if precision.lower() in ("float16", "bfloat16", "float32", "float64"):
                return parse_format(precision)
            bits = int(precision)
            return FixedPoint.with_bits(bits, None if frac is None else int(frac))
        except ValueError as exc:
            raise InputError(f"model spec {self.text!r}: {exc}", param="--model") from None

    def finish(self) -> None:
        """Refuse keys no factory read (typos, keys of another kind)."""
        unknown = sorted(set(self.params) - self._used)
        if unknown:
            raise InputError(f"model spec {self.text!r}: unknown key(s) {', '.join(unknown)} for kind {self.kind!r}",
                             param="--model")
