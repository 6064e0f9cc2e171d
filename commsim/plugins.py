"""The plugin registry and model specs.

Plugins register through the ``commsim.plugins`` entry-point group: each entry
point names a function ``register(registry)``.  A user's own module can be
loaded the same way, or named with ``--plugin module.path`` (its ``register``
is called).  The engine imports no plugin by name.

Kinds of entries:

``cc-protocol``   plain communication protocols for a source problem (``commsim cc``)
``reduction``     reductions from a source problem to a model task (``commsim run``)
``model``         model factories, selected by a spec ``KIND[:key=value,...]``
``simulator``     what turns a model into two party programs (rnn-handoff, attention-exchange)
``adapter``       functions ``adapt(obj, **context) -> model | None`` that turn a user's object (a PyTorch
                  module, ...) into a model a simulator accepts; ``make_model(obj)`` tries them in turn
``topic``         teaching walkthroughs (``commsim teach``)
``exercises``     a topic's exercises, checked by running commsim (``commsim teach TOPIC --exercises``,
                  ``commsim teach check``): ``build(n, seed) -> commsim.teach.exercises.ExerciseSet``
``separation``    both sides of a separation (``commsim separate``)
``experiment``    a paper's experiment: trained models with the bounds beside them (``commsim replicate``)
"""
from __future__ import annotations

import importlib
import inspect
import os
import sys
import time
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Callable

from commsim.contract.loading import current_directory_on_path
from commsim.core.decision import RULES
from commsim.core.errors import InputError, NotApplicable
from commsim.core.limits import check_size
from commsim.core.precision import FORMAT_KEYS, parse_format
from commsim.spec import ModelSpec, did_you_mean, user_code_failure

ENTRY_POINT_GROUP = "commsim.plugins"


KINDS = ("cc-protocol", "reduction", "model", "simulator", "adapter", "topic", "exercises", "separation",
         "experiment", "course")


@dataclass(frozen=True)
class Entry:
    kind: str
    name: str
    obj: Any
    description: str = ""
    plugin: str = ""
    #: a simulator's: when several selectable ones accept a model, the lowest precedence wins (then the name)
    precedence: int = 100
    #: a simulator's: the architecture name ``commsim budget --arch`` uses for its protocol ("" = not offered)
    arch: str = ""


class Registry:
    def __init__(self):
        self._entries: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}
        self._loaded: set[str] = set()
        self._current_plugin = ""

    def register(self, kind: str, name: str, obj: Any, description: str = "", *, precedence: int = 100,
                 arch: str = "") -> Any:
        """Register ``obj`` as ``name`` of ``kind``; a simulator's ``precedence`` (the model's kind selects the
        lowest among those that accept it) and ``arch`` (its ``commsim budget --arch`` name) are given here."""
        if kind not in self._entries:
            raise ValueError(f"unknown registry kind {kind!r}; kinds are {', '.join(KINDS)}")
        existing = self._entries[kind].get(name)
        if existing is not None and existing.obj is not obj:
            raise ValueError(f"{kind} {name!r} is registered twice ({existing.plugin} and {self._current_plugin})")
        self._entries[kind][name] = Entry(kind, name, obj, description or (obj.__doc__ or "").strip().split("\n")[0],
                                          self._current_plugin, precedence, arch)
        return obj

    def get(self, kind: str, name: str, param: str | None = None) -> Any:
        """The object registered as ``name`` of ``kind``; an :class:`InputError` naming ``param`` (default: the
        kind) and the known names when there is none."""
        entry = self._entries[kind].get(name)
        if entry is None:
            known = ", ".join(sorted(self._entries[kind])) or "none registered"
            raise InputError(f"unknown {kind} {name!r}{did_you_mean(name, self._entries[kind])}; known: {known}",
                             param=param or kind)
        return entry.obj

    def entries(self, kind: str) -> list[Entry]:
        return sorted(self._entries[kind].values(), key=lambda e: e.name)

    def names(self, kind: str) -> list[str]:
        return sorted(self._entries[kind])

    def load_module(self, module_path: str) -> None:
        """Import ``module_path`` and call its ``register(registry)`` (once).  Whatever the module's code does
        wrong -- an import that raises or calls ``sys.exit``, no ``register``, a ``register`` of another
        signature or one that raises -- is an :class:`InputError` naming the plugin, and nothing it
        registered before failing stays registered."""
        if not isinstance(module_path, str):
            raise InputError(f"plugin must be a module name (text), got {type(module_path).__name__}", param="plugin")
        if module_path in self._loaded or f"{module_path}:register" in self._loaded:   # its entry point did
            return
        if not module_path or not all(part.isidentifier() for part in module_path.split(".")):
            raise InputError(f"plugin {module_path!r} is not a dotted module name (such as my_plugins or "
                             "pkg.plugins); give the module, not a file or directory path", param="plugin")
        current_directory_on_path()
        try:
            module = importlib.import_module(module_path)
        except ImportError as exc:
            raise InputError(f"cannot import plugin module {module_path!r}: {exc} (searched from the current "
                             f"directory, then Python's path)", param="plugin") from exc
        except (Exception, SystemExit) as exc:
            raise InputError(f"importing plugin module {module_path!r} failed: it {user_code_failure(exc)}",
                             param="plugin") from exc
        hook = getattr(module, "register", None)
        if not callable(hook):
            raise InputError(f"plugin module {module_path!r} has no register(registry) function", param="plugin")
        try:
            inspect.signature(hook).bind(self)
        except TypeError:
            raise InputError(f"plugin module {module_path!r}: register{inspect.signature(hook)} cannot be called "
                             f"as register(registry)", param="plugin") from None
        except ValueError:                         # no signature to read (a builtin): calling it will tell
            pass
        saved = {kind: dict(entries) for kind, entries in self._entries.items()}
        try:
            self._call(hook, module_path)
        except (Exception, SystemExit) as exc:
            self._entries = saved
            self._loaded.discard(module_path)
            raise InputError(f"plugin module {module_path!r}: register(registry) {user_code_failure(exc)}",
                             param="plugin") from exc

    def _call(self, hook: Callable, label: str) -> None:
        self._loaded.add(label)
        self._current_plugin = label
        try:
            hook(self)
        finally:
            self._current_plugin = ""

    def load_entry_points(self) -> None:
        for ep in _plugin_entry_points():
            # a module loaded by --plugin is the same plugin as its entry point ``module:register`` (found once
            # the current directory, where its metadata may be, is on sys.path)
            if ep.value not in self._loaded and not (ep.attr == "register" and ep.module in self._loaded):
                self._call(ep.load(), ep.value)


registry = Registry()

#: the entry points last read: the state of the path they were read under (a folder changed too recently to be
#: trusted has None for its time), the package metadata found in each folder then, and the points
_entry_point_cache: tuple[tuple | None, dict, tuple] = (None, {}, ())
#: a folder changed this recently when the entry points were read may change again within the same tick of its
#: modification time, unseen: such a read is not reused
_RECENT_NS = 2_000_000_000
#: the names of the entries entry points are read from (``importlib.metadata``'s distributions)
_METADATA_SUFFIXES = (".dist-info", ".egg-info", ".egg")


def _path_state() -> tuple:
    """Each ``sys.path`` entry (absolute: ``""`` is the current directory) with its modification time: a
    package installed into, or removed from, a folder on the path changes that folder's time."""
    state = []
    for entry in sys.path:
        folder = os.path.abspath(entry or ".") if isinstance(entry, str) else repr(entry)
        try:
            state.append((folder, os.stat(folder).st_mtime_ns))
        except (OSError, TypeError, ValueError):
            state.append((folder, None))
    return tuple(state)


def _packages_in(folder: str) -> tuple | None:
    """The package metadata in a folder on the path -- each ``*.dist-info``, ``*.egg-info`` or ``*.egg`` entry
    with its modification time -- or None if it is not a folder that can be listed."""
    try:
        with os.scandir(folder) as entries:
            return tuple(sorted((e.name, e.stat().st_mtime_ns) for e in entries
                                if e.name.lower().endswith(_METADATA_SUFFIXES)))
    except (OSError, TypeError, ValueError):
        return None


def _recent(mtime: int | None, read_at: int) -> bool:
    return mtime is not None and mtime >= read_at - _RECENT_NS


def _settled(state: tuple, packages: dict, read_at: int) -> tuple:
    """``state`` with None for the time of each folder that changed, or holds a package that changed, too
    recently before ``read_at`` to be trusted (it is looked at again next time)."""
    return tuple((folder, None if _recent(mtime, read_at) or packages.get(folder) == "changing" else mtime)
                 for folder, mtime in state)


def _plugin_entry_points() -> tuple:
    """The ``commsim.plugins`` entry points, read again only when the path or the packages in a folder on it
    have changed (reading every installed package's metadata takes some milliseconds, and the registry is
    consulted at every step of a run).  A folder whose time changed is listed: a file written into it (a
    sweep's table in the current directory) is no package, and the points read before stay."""
    global _entry_point_cache
    state = _path_state()
    known, packages, points = _entry_point_cache
    if state == known:
        return points
    read_at = time.time_ns()
    if known is not None and [f for f, _ in known] == [f for f, _ in state]:
        changed = {folder: _packages_in(folder) for (folder, mtime), (_, was) in zip(state, known)
                   if mtime != was}
        if all(listing is not None and listing == packages.get(folder) for folder, listing in changed.items()):
            _entry_point_cache = (_settled(state, packages, read_at), packages, points)
            return points
    # a package changed moments before this read may change again unseen: its folder's listing is not kept
    packages = {folder: listing if not any(_recent(t, read_at) for _, t in listing or ()) else "changing"
                for folder, listing in ((folder, _packages_in(folder)) for folder, _ in state)}
    points = tuple(entry_points(group=ENTRY_POINT_GROUP))
    _entry_point_cache = (_settled(state, packages, read_at), packages, points)
    return points


def load_plugins(extra_modules: str | tuple[str, ...] | list[str] = ()) -> Registry:
    """Load every installed plugin (entry points), then any ``extra_modules`` (module names; one name may be
    given as a string); returns the registry."""
    if isinstance(extra_modules, str):
        extra_modules = (extra_modules,)
    try:
        modules = list(extra_modules)
    except TypeError:
        raise InputError(f"extra_modules must be module names (a list of strings), got "
                         f"{type(extra_modules).__name__}", param="extra_modules") from None
    registry.load_entry_points()
    for module_path in modules:
        registry.load_module(module_path)
    return registry


#: what the engine (``Reduction.model_context``) and a caller may tell ``make_model`` about the task
CONTEXT_KEYS = ("vocab_size", "seq_len", "n", "task", "reduction", "memory_program", "shape")
#: a module object's number format, for ``make_model`` (a spec string names it inside: ``precision=8``)
FORMAT_KEYWORDS = FORMAT_KEYS


def make_model(spec_or_object: str | Any, **context) -> Any:
    """A model from a spec string (``"elman:width=8,precision=8"``) or from an object.

    ``context`` carries what the caller knows (:data:`CONTEXT_KEYS`: ``vocab_size``, ``seq_len``, ``n``,
    ``task``, ...) so factories can size random models to the task.  For an object (a PyTorch module, a dict
    of its parts) it may also carry the number format (:data:`FORMAT_KEYWORDS`): ``precision=P`` (an int or
    a format name: ``2``, ``"fixed16.8"``, ``"bfloat16"``, a NumberFormat) with an optional ``frac=F``, or
    ``dtype=NAME`` (a torch dtype too) -- read by :func:`commsim.core.precision.parse_format` under the rules of a
    spec's keys; default: the module's dtype.  Any other keyword is
    refused (an :class:`InputError` naming it and listing the valid ones).  An object that a registered
    simulator accepts is the model itself; any other goes to the registered adapters in turn (each receives
    the context, the format as ``precision``, a NumberFormat); an object none converts is refused (unless it
    is a model that says why no simulator wraps it, ``no_protocol_reason``: the run then says so)."""
    if spec_or_object is None or isinstance(spec_or_object, (bool, int, float, complex, bytes)):
        raise InputError(f"model must be a spec string (such as 'elman:width=8,precision=8') or a model object "
                         f"(a torch module, ...); got {spec_or_object!r}", param="model")
    is_spec = isinstance(spec_or_object, str)
    decision = context.pop("decision", None)
    valid = (CONTEXT_KEYS if is_spec else CONTEXT_KEYS + FORMAT_KEYWORDS) + ("decision",)
    unknown = [key for key in context if key not in valid]
    if unknown:
        key = unknown[0]
        hint = (f"; a spec string sets its number format inside it ('{spec_or_object}"
                f"{',' if '=' in spec_or_object else ':'}{key}=...')" if is_spec and key in FORMAT_KEYWORDS else "")
        raise InputError(f"make_model got an unknown keyword {key!r}{hint}; valid keywords: {', '.join(valid)}",
                         param=key)
    for key in ("vocab_size", "seq_len", "n"):   # the sizes a model is built for: positive integers
        if context.get(key) is not None:
            check_size(context[key], key)
    reg = load_plugins()
    if not is_spec:
        fmt = parse_format(**{key: context.pop(key, None) for key in FORMAT_KEYWORDS})
        return decided(_adapt(reg, spec_or_object, context, fmt), decision)
    text = spec_or_object
    spec = ModelSpec.parse(text, reg.names("model"))
    factory = reg.get("model", spec.kind, param="model")
    if spec.has("decision"):   # every kind's key, taken before the factory (a python: factory gets the rest)
        if decision is not None:
            raise InputError(f"decision is given twice: {decision!r} and in the spec {text!r}", param="decision")
        decision = spec.str("decision", choices=tuple(RULES))
        del spec.params["decision"]
    model = factory(spec, **context)
    spec.finish()
    return decided(model, decision)


def decided(model, decision) -> Any:
    """``model`` deciding by ``decision`` (a rule of :data:`commsim.core.decision.RULES`; None: the one its output
    shape calls for), through the model's own ``decided_by`` -- an InputError naming ``decision`` for a model
    that decides from no output values (an automaton) or a rule that cannot decide its outputs."""
    if decision is None:
        return model
    if not callable(getattr(model, "decided_by", None)):
        raise InputError(f"decision= applies to a model that decides from output values; a {type(model).__name__} "
                         f"has no such rule", param="decision")
    return model.decided_by(decision)


def _adapt(reg: Registry, obj: Any, context: dict, fmt) -> Any:
    """``obj`` itself when a simulator accepts it (it fixes its own number format: ``fmt`` must be None),
    else the first adapter's conversion (given ``fmt`` as ``precision`` when there is one); a model that says
    why no simulator wraps it (``no_protocol_reason``) itself, for the run to say it; any other object is
    refused (:class:`NotApplicable`, an InputError naming ``model``)."""
    if any(entry.obj.accepts(obj) for entry in reg.entries("simulator")):
        if fmt is not None:
            raise InputError(f"precision=/frac=/dtype= apply to module objects (a torch module, a dict of its "
                             f"parts); this {type(obj).__name__} fixes its own number format", param="precision")
        return obj
    extra = {} if fmt is None else {"precision": fmt}
    for entry in reg.entries("adapter"):
        model = entry.obj(obj, **context, **extra)
        if model is not None:
            return model
    if getattr(obj, "no_protocol_reason", None):   # a model no simulator wraps, which says why: the run says it
        return obj
    adapters = ", ".join(reg.names("adapter")) or "none installed"
    raise NotApplicable(f"no registered simulator wraps a model of type {type(obj).__name__}, and no adapter "
                        f"({adapters}) converts it: give a spec string, a commsim model, or a torch module (or a dict "
                        f"of its parts)", param="model")
