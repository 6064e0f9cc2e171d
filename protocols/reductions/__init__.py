"""The reductions of REFERENCE section 6, one module per source problem family.

Each module defines :class:`commsim.reduction.Reduction` subclasses and lists them in
``REDUCTIONS``; :func:`register` registers every one.
"""
from __future__ import annotations

import importlib

MODULES = ("index", "eq", "disj", "dyck", "attention_tasks")


def register(registry) -> None:
    for name in MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:  # a family that has not been written yet
            if exc.name != f"{__name__}.{name}":
                raise
            continue
        for cls in module.REDUCTIONS:
            registry.register("reduction", cls.id, cls(), cls.description)
