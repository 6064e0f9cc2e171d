"""The reductions of [BHBK24] and [SHT23], one module per source problem family.

Each module defines :class:`commsim.contract.Reduction` subclasses and lists them in
``REDUCTIONS``; :func:`register` registers every one.
"""
from __future__ import annotations

from protocols.reductions import attention_tasks, compose, disj, dyck, eq, graph, index, qsa_approx

MODULES = (index, eq, disj, dyck, attention_tasks, compose, graph, qsa_approx)


def register(registry) -> None:
    """Register every reduction of every module."""
    for module in MODULES:
        for cls in module.REDUCTIONS:
            registry.register("reduction", cls.id, cls(), cls.description)
