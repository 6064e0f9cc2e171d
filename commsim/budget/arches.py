"""``budget --arch``: the architecture names and what ``--width`` means for each.

A name is the ``arch`` a simulator registered with (``rnn``, ``attention``) or one of the names a simulator lists in
``budget_arches`` (``lstm``, ``gru``, ``elman``, ``ssm``, ``linear-attention``), each saying what ``--width``
counts and how many numbers the state holds at that width (an LSTM's (h, c): 2m).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from commsim.core.errors import InputError
from commsim.plugins import load_plugins


def architectures() -> dict:
    """``--arch`` name -> the simulator that gives its budget (the ``arch`` it registered with and its
    ``budget_arches``)."""
    out = {}
    entries = load_plugins().entries("simulator")
    for e in entries:
        if e.arch:
            out[e.arch] = e.obj
    for e in entries:
        for name in e.obj.budget_arches:
            out.setdefault(name, e.obj)
    return out


def _arch_name(arch: str) -> str:
    return str(arch).split(":", 1)[0].strip()


def simulator_for_arch(arch: str):
    """The simulator for the architecture ``arch`` (``NAME[:key=value,...]``); InputError naming the known ones."""
    arches = architectures()
    name = _arch_name(arch)
    if name not in arches:
        raise InputError(f"arch must be one of {', '.join(sorted(arches))}, got {arch!r}", "arch")
    return arches[name]


@dataclass(frozen=True)
class ArchShape:
    """An ``--arch`` resolved: its name, options, what ``--width`` means, and the width the simulator's plan takes
    (the state's numbers for a recurrent architecture; the width itself otherwise)."""

    name: str
    options: dict
    width_meaning: str
    arch: object = None          # the simulator's entry in ``budget_arches`` (None: the simulator's own arch)

    def plan_width(self, width: int) -> int:
        """The width the simulator's plan and count take for ``--width`` = width."""
        return width if self.arch is None else self.arch.state_units(width, self.options)

    def relabel(self, text: str) -> str:
        """A handoff text (its m·p or m*p, Theorem 2's m: the state's numbers) in this architecture's letters
        (an LSTM's state is 2m: "2m·p"), so one panel never uses m for two things; unchanged for an attention
        layer or a state of m numbers."""
        symbol = "m" if self.arch is None else self.arch.symbol(self.options)
        if symbol == "m":
            return text
        return re.sub(r"(?<![\w)])m([·*])p\b", lambda g: f"{symbol}{g.group(1)}p", text)

    def state_text(self, width: int) -> str:
        """The state at this width in words ("" for a simulator's own arch)."""
        return "" if self.arch is None else self.arch.state_text(width, self.options)


def arch_shape(arch: str, simulator) -> ArchShape:
    """``NAME[:key=value,...]`` -> :class:`ArchShape`; InputError on an unknown or malformed option."""
    name, _, rest = str(arch).partition(":")
    name, rest = name.strip(), rest.strip()
    entry = simulator.budget_arches.get(name)
    if entry is None:
        if rest:
            raise InputError(f"arch {name!r} takes no options, got {arch!r}", "arch")
        return ArchShape(name, {}, f"m, the width in the {simulator.name} count ({simulator.source})")
    allowed = dict(entry.options)
    options = dict(allowed)
    for item in filter(None, (t.strip() for t in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or key not in allowed:
            keys = ", ".join(f"{k}=true|false" for k in allowed) or "none"
            raise InputError(f"arch {name!r} takes the options: {keys}; got {item!r}", "arch")
        if value.lower() not in ("true", "false"):
            raise InputError(f"arch option {key} must be true or false, got {value!r}", "arch")
        options[key] = value.lower() == "true"
    return ArchShape(name, options, entry.width_meaning, entry)
