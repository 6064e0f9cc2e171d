"""The plugin registry and model specs.

Plugins register through the ``commsim.plugins`` entry-point group: each entry
point names a function ``register(registry)``.  A user's own module can be
loaded the same way, or named with ``--plugin module.path`` (its ``register``
is called).  The engine imports no plugin by name.

Kinds of entries:

``cc-protocol``   plain communication protocols for a source problem (``commsim cc``)
``reduction``     reductions from a source problem to a model task (``commsim run``)
``model``         model factories, selected by a spec ``KIND[:key=value,...]``
``model-protocol``  wrappers that turn a model into a two-party protocol (rnn-handoff, ...)
``topic``         teaching walkthroughs (``commsim teach``)
``separation``    both sides of a separation (``commsim separate``)
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Callable

from commsim.errors import InputError
from commsim.precision import FixedPoint, FloatFormat, NumberFormat, parse_format

__all__ = ["Registry", "Entry", "ModelSpec", "registry", "load_plugins", "make_model", "KINDS"]

ENTRY_POINT_GROUP = "commsim.plugins"
KINDS = ("cc-protocol", "reduction", "model", "model-protocol", "topic", "separation")


@dataclass(frozen=True)
class Entry:
    kind: str
    name: str
    obj: Any
    description: str = ""
    plugin: str = ""


class Registry:
    def __init__(self):
        self._entries: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}
        self._loaded: set[str] = set()
        self._current_plugin = ""

    def register(self, kind: str, name: str, obj: Any, description: str = "") -> Any:
        if kind not in self._entries:
            raise ValueError(f"unknown registry kind {kind!r}; kinds are {', '.join(KINDS)}")
        existing = self._entries[kind].get(name)
        if existing is not None and existing.obj is not obj:
            raise ValueError(f"{kind} {name!r} is registered twice ({existing.plugin} and {self._current_plugin})")
        self._entries[kind][name] = Entry(kind, name, obj, description or (obj.__doc__ or "").strip().split("\n")[0],
                                          self._current_plugin)
        return obj

    def get(self, kind: str, name: str, param: str | None = None) -> Any:
        entry = self._entries[kind].get(name)
        if entry is None:
            known = ", ".join(sorted(self._entries[kind])) or "none registered"
            raise InputError(f"unknown {kind} {name!r}; known: {known}", param=param or kind)
        return entry.obj

    def entries(self, kind: str) -> list[Entry]:
        return sorted(self._entries[kind].values(), key=lambda e: e.name)

    def names(self, kind: str) -> list[str]:
        return sorted(self._entries[kind])

    def load_module(self, module_path: str) -> None:
        """Import ``module_path`` and call its ``register(registry)`` (once)."""
        if module_path in self._loaded:
            return
        try:
            module = importlib.import_module(module_path)
        except ImportError as exc:
            raise InputError(f"cannot import plugin module {module_path!r}: {exc}", param="--plugin") from exc
        hook = getattr(module, "register", None)
        if not callable(hook):
            raise InputError(f"plugin module {module_path!r} has no register(registry) function", param="--plugin")
        self._call(hook, module_path)

    def _call(self, hook: Callable, label: str) -> None:
        self._loaded.add(label)
        self._current_plugin = label
        try:
            hook(self)
        finally:
            self._current_plugin = ""

    def load_entry_points(self) -> None:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.value not in self._loaded:
                self._call(ep.load(), ep.value)


registry = Registry()


def load_plugins(extra_modules: tuple[str, ...] | list[str] = ()) -> Registry:
    """Load every installed plugin (entry points), then any ``extra_modules``; returns the registry."""
    registry.load_entry_points()
    for module_path in extra_modules:
        registry.load_module(module_path)
    return registry


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


def make_model(text: str, **context) -> Any:
    """Build a model from a spec.  ``context`` carries what the caller knows (``vocab_size``,
    ``seq_len``, ``n``, ``task``) so factories can size random models to the task."""
    reg = load_plugins()
    spec = ModelSpec.parse(text, reg.names("model"))
    factory = reg.get("model", spec.kind, param="--model")
    model = factory(spec, **context)
    spec.finish()
    return model
