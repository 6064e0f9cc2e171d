"""The plainest certificate: an instance on which the model is simply wrong."""
from __future__ import annotations

import numpy as np

from commsim.certify.types import Certificate
from commsim.pipeline.interfaces import Simulator, Reduction
from commsim.theory.problems import Problem


def error_certificate(reduction: Reduction, problem: Problem, wrapper: Simulator, model, A, B, expected,
                      answers, index: int) -> Certificate:
    """The model is wrong on instance ``index``: confirm with a direct forward of that instance alone."""
    one = reduction.encode(problem, A[index:index + 1], B[index:index + 1])
    direct = reduction.decode(wrapper.direct_labels(model, one), B[index:index + 1])
    model_answer = int(direct[0])
    return Certificate(
        "error", np.asarray(A[index]).tolist(), np.asarray(B[index]).tolist(), int(expected[index]), model_answer,
        f"the model answers {model_answer} but the {problem.name} answer is {int(expected[index])} "
        f"(confirmed by a direct forward of this instance)",
        verified=model_answer != int(expected[index]) and model_answer == int(answers[index]))
