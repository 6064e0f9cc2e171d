"""The teaching topics (``commsim teach``): each lower-bound proof narrated with concrete numbers.

Every lesson builds a :class:`commsim.teach.Lesson` from the same library calls a user makes
(``run_reduction``, ``fooling_set``, ``analyze_matrix``, ``automaton_report``, the protocols'
party programs), so the numbers in a lesson are computed, never typed in.
"""
from __future__ import annotations

import importlib

#: topic name -> (module, function, one-line description)
TOPICS = {
    "fooling-sets": ("lower_bounds", "fooling_sets",
                     "fooling sets for EQ, DISJ, INDEX and Dyck-(2,2); the rectangle property"),
}


def _builder(module: str, function: str):
    def build(n=None):
        return getattr(importlib.import_module(f"{__name__}.{module}"), function)(n)
    build.__name__ = function
    return build


def register(registry) -> None:
    for name, (module, function, description) in TOPICS.items():
        registry.register("topic", name, _builder(module, function), description)
