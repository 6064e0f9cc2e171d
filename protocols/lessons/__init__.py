"""The teaching topics (``commsim teach``): each lower-bound proof narrated with concrete numbers.

Every lesson builds a :class:`commsim.teach.Lesson` from the same library calls a user makes
(``run_reduction``, ``fooling_set``, ``analyze_matrix``, ``automaton_report``, the protocols'
party programs), so the numbers in a lesson are computed, never typed in.
"""
from __future__ import annotations

import importlib
from typing import NamedTuple


class Topic(NamedTuple):
    """One lesson, in one entry: where its builder lives (``module``, ``function``), its one-line description
    and the instance sizes that run in seconds (``--n``: default, minimum, maximum, even only); ``size`` says
    what --n is for this topic (n, a party's input size, or N, the sequence length)."""

    module: str
    function: str
    description: str
    default: int
    minimum: int
    maximum: int
    even: bool = False
    size: str = ""


#: topic name -> its one entry (``commsim teach --list`` and ``--help`` read it)
TOPICS = {
    "rnn-index": Topic("rnn", "rnn_index",
                       "recurrent models and index lookup: the hidden-state handoff, m*p >= n (Theorems 2 and 3)",
                       6, 3, 12, size="n, the length of Alice's string (INDEX_n; the model reads N = n + 1 tokens)"),
    "rnn-eq": Topic("rnn", "rnn_eq",
                    "recurrent models and equality, m*p >= N/2: by communication and by automata (Theorem 11, Lemma 4)",
                    4, 2, 8, size="n, the bits of each party's string (N = 2n)"),
    "rnn-disj": Topic("rnn", "rnn_disj",
                      "recurrent models and multi-query recall: DISJ one-way, m*p >= N/2 (Theorem 8, through its MQAR proof)", 4, 2, 10,
                      size="n, the size of DISJ_n (N = 2n: n labelled keys, then n queries)"),
    "attention-protocol": Topic("attention_protocol", "attention_protocol",
                                "one attention layer as a protocol: logits, maximum, Z_A and Z_B, exact output "
                                "(Theorem 4)", 6, 3, 16, size="N, the sequence length"),
    "attention-dyck": Topic("attention_dyck", "attention_dyck",
                            "Dyck-(2,2) against one-layer attention: fooling set, transcript collision, crossing "
                            "(Lemma 1, Theorem 5)", 8, 4, 16, True,
                            size="N, the string length"),
    "attention-disj": Topic("attention_disj", "attention_disj",
                            "DISJ into Match3 and q-sparse averaging: what one attention layer cannot carry ([SHT23])",
                            4, 2, 8, size="n, the size of DISJ_n (Match3 on N = 2n + 1 positions)"),
    "fooling-sets": Topic("lower_bounds", "fooling_sets",
                          "fooling sets for EQ, DISJ, INDEX and Dyck-(2,2); the rectangle property", 4, 2, 8,
                          size="n, the bits of each party's input (Dyck-(2,2) at N = 2n)"),
    "two-layers": Topic("two_layers", "two_layers",
                        "why the method stops at one layer: a two-layer model needs N/2 bits (Lemma 5)", 4, 2, 8,
                        size="n, half the sequence length (N = 2n)"),
    "compose": Topic("compose", "compose",
                     "function composition g(f(x)) against one attention layer: the one-way message, the counting "
                     "argument and the error it forces ([PNP24] Theorems 1 and 2)", 8, 4, 16,
                     size="n, the size of the functions' domain [n]"),
    "graph-transformers": Topic("graph_transformers", "graph_transformers",
                                "graph transformers and Directed 3-Cycle: the node partition, why keys and values "
                                "suffice, DISJ on n^2 bits as triangles, L*H*m*p >= (n^2-2)/(4n) ([SHT23])", 3, 2, 6,
                                size="n, DISJ on n^2 bits (N = 3n nodes)"),
    "randomized": Topic("randomized", "randomized",
                        "randomized protocols: EQ falls to fingerprints, INDEX and DISJ bounds survive coins",
                        64, 4, 1024, size="n, the bits of each party's input"),
}


#: topic -> (module, function) of its exercises: ``function(topic)`` gives ``build(n, seed) -> ExerciseSet``
EXERCISES = {
    "rnn-index": ("exercises_rnn", "rnn_exercises"),
    "rnn-eq": ("exercises_rnn", "rnn_exercises"),
    "rnn-disj": ("exercises_rnn", "rnn_exercises"),
    "attention-protocol": ("exercises_attention", "attention_exercises"),
    "attention-dyck": ("exercises_attention", "attention_exercises"),
    "attention-disj": ("exercises_disj", "disj_exercises"),
    "fooling-sets": ("exercises_bounds", "bounds_exercises"),
    "two-layers": ("exercises_bounds", "bounds_exercises"),
    "randomized": ("exercises_bounds", "bounds_exercises"),
    "compose": ("exercises_disj", "disj_exercises"),
    "graph-transformers": ("exercises_disj", "disj_exercises"),
}


def _exercise_builder(topic: str, module: str, function: str):
    def build(n=None, seed=0):
        return getattr(importlib.import_module(f"{__name__}.{module}"), function)(topic)(n, seed)
    build.__name__ = f"exercises_{topic.replace('-', '_')}"
    return build


def _builder(module: str, function: str, topic: str = ""):
    def build(n=None):
        lesson = getattr(importlib.import_module(f"{__name__}.{module}"), function)(n)
        if lesson.statement is None:                 # every lesson opens with the theorem it proves
            from protocols.lessons.statements import STATEMENTS
            lesson.statement = STATEMENTS.get(topic or lesson.topic)
        return lesson
    build.__name__ = function
    return build


def _described(name: str, description: str) -> str:
    from protocols.lessons.common import size_text
    limits = size_text(name)
    return f"{description} [{limits}]" if limits else description


def register(registry) -> None:
    from protocols.lessons.course import COURSE
    for name, topic in TOPICS.items():
        registry.register("topic", name, _builder(topic.module, topic.function, name),
                          _described(name, topic.description))
    for name, (module, function) in EXERCISES.items():
        registry.register("exercises", name, _exercise_builder(name, module, function), f"exercises of {name}")
    registry.register("course", "lectures", COURSE, COURSE.title)
