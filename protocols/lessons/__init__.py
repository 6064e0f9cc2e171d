"""The teaching topics (``commsim teach``): each lower-bound proof narrated with concrete numbers.

Every lesson builds a :class:`commsim.teach.Lesson` from the same library calls a user makes
(``run_reduction``, ``fooling_set``, ``analyze_matrix``, ``automaton_report``, the protocols'
party programs), so the numbers in a lesson are computed, never typed in.
"""
from __future__ import annotations

import importlib

#: topic name -> (module, function, one-line description)
TOPICS = {
    "rnn-index": ("rnn", "rnn_index",
                  "recurrent models and index lookup: the hidden-state handoff, m*p >= N (Theorems 2 and 3)"),
    "rnn-eq": ("rnn", "rnn_eq",
               "recurrent models and equality, m*p >= N/2: by communication and by automata (Theorem 11, Lemma 4)"),
    "rnn-disj": ("rnn", "rnn_disj",
                 "recurrent models and multi-query recall: DISJ one-way, m*p >= N/2 (Theorem 8)"),
    "attention-protocol": ("attention_protocol", "attention_protocol",
                           "one attention layer as a protocol: logits, maximum, Z_A and Z_B, exact output (Theorem 4)"),
    "attention-dyck": ("attention_dyck", "attention_dyck",
                       "Dyck-(2,2) against one-layer attention: fooling set, transcript collision, crossing "
                       "(Lemma 1, Theorem 5)"),
    "attention-disj": ("attention_disj", "attention_disj",
                       "DISJ into Match3 and q-sparse averaging: what one attention layer cannot carry ([SHT23])"),
    "fooling-sets": ("lower_bounds", "fooling_sets",
                     "fooling sets for EQ, DISJ, INDEX and Dyck-(2,2); the rectangle property"),
    "two-layers": ("two_layers", "two_layers",
                   "why the method stops at one layer: a two-layer model needs N/2 bits (Lemma 5)"),
    "compose": ("compose", "compose",
                "function composition g(f(x)) against one attention layer: the one-way message, the counting "
                "argument and the error it forces ([PNP24] Theorems 1 and 2)"),
    "randomized": ("randomized", "randomized",
                   "randomized protocols: EQ falls to fingerprints, INDEX and DISJ bounds survive coins"),
}


def _builder(module: str, function: str):
    def build(n=None):
        return getattr(importlib.import_module(f"{__name__}.{module}"), function)(n)
    build.__name__ = function
    return build


def _described(name: str, description: str) -> str:
    from protocols.lessons.common import size_text
    limits = size_text(name)
    return f"{description} [{limits}]" if limits else description


def register(registry) -> None:
    for name, (module, function, description) in TOPICS.items():
        registry.register("topic", name, _builder(module, function), _described(name, description))
