"""The course the lessons make: the order a lecturer teaches them in, the time each takes, what each builds on,
and the papers they cite (``commsim teach course``)."""
from __future__ import annotations

from commsim import Course, CourseLesson

REFERENCES = {
    "BHBK24": "S. Bhattamishra, M. Hahn, P. Blunsom, V. Kanade. Separations in the Representational Capabilities "
              "of Transformers and Recurrent Architectures. 2024.",
    "SHT23": "C. Sanford, D. Hsu, M. Telgarsky. Representational Strengths and Limitations of Transformers. "
             "NeurIPS 2023.",
    "PNP24": "B. Peng, S. Narayanan, C. Papadimitriou. On Limitations of the Transformer Architecture. COLM 2024.",
}

#: first a 90-minute class (the method, from fooling sets to where it stops), then the further reductions
LESSONS = [
    CourseLesson("fooling-sets", 15, (), "the rectangle property and fooling sets: why a problem needs n bits"),
    CourseLesson("rnn-index", 15, ("fooling-sets",), "a recurrent model's state is a one-way message"),
    CourseLesson("attention-protocol", 20, ("fooling-sets",), "one attention layer is a short two-party protocol"),
    CourseLesson("attention-dyck", 20, ("attention-protocol",), "a fooling set forces a transcript collision"),
    CourseLesson("two-layers", 15, ("attention-protocol", "attention-dyck"), "why the method stops at one layer"),
    CourseLesson("rnn-eq", 15, ("rnn-index",), "equality by communication and by automata"),
    CourseLesson("rnn-disj", 15, ("rnn-index",), "multi-query recall and disjointness"),
    CourseLesson("attention-disj", 20, ("attention-protocol",), "Match3 and sparse averaging"),
    CourseLesson("compose", 20, ("attention-protocol",), "function composition and a counting argument"),
    CourseLesson("graph-transformers", 20, ("attention-protocol", "attention-disj"),
                 "a multi-layer protocol through a node partition"),
    CourseLesson("randomized", 20, ("fooling-sets",), "which bounds survive coins"),
]

COURSE = Course("Communication lower bounds for sequence models", LESSONS, REFERENCES,
                {lesson.topic: 1 if k < 5 else 2 for k, lesson in enumerate(LESSONS)})
