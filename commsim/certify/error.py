"""The plainest certificate: an instance on which the model is simply wrong."""
from __future__ import annotations

from typing import Callable

import numpy as np

from commsim.certify.types import Certificate
from commsim.theory.problems import Problem


def error_certificate(problem: Problem, A, B, expected, answers, index: int,
                      direct_answers: Callable[[np.ndarray, np.ndarray], np.ndarray], *,
                      where: str = "") -> Certificate:
    """The model is wrong on instance ``index``: confirmed by ``direct_answers(A, B)``, the model's answers
    from a direct forward of that instance alone (the pipeline passes its own stage in).  ``where`` names the
    set the instance comes from (e.g. "the random non-members"); it is kept in ``details["evaluation_set"]``."""
    a, b = A[index:index + 1], B[index:index + 1]
    model_answer = int(np.asarray(direct_answers(a, b))[0])
    truth = int(expected[index])
    source = f" on instance {index} of {where}" if where else ""
    return Certificate(
        "error", np.asarray(A[index]).tolist(), np.asarray(B[index]).tolist(), truth, model_answer,
        f"the model answers {model_answer} but the {problem.name} answer is {truth}{source} "
        f"(confirmed by a direct forward of this instance)",
        verified=model_answer != truth and model_answer == int(answers[index]),
        details={"evaluation_set": where} if where else {})
