"""The plainest certificate: an instance on which the model is simply wrong."""
from __future__ import annotations

from typing import Callable

import numpy as np

from commsim.certify.types import Certificate
from commsim.certify.view import problem_name
from commsim.theory.problems import Problem


def error_certificate(problem: Problem, alice, bob, expected: int, answer: int,
                      direct_answers: Callable[[np.ndarray, np.ndarray], np.ndarray], *,
                      where: str = "", index: int | None = None) -> Certificate:
    """The model is wrong on the instance (``alice``, ``bob``): the protocol answered ``answer`` where the
    answer is ``expected``; confirmed by ``direct_answers(A, B)``, the model's answers from a direct forward
    of that instance alone (the pipeline passes its own stage in).  ``where`` names the set the instance comes
    from (e.g. "the random non-members") and ``index`` its place there; both are kept in ``details``."""
    a, b = np.asarray(alice)[None], np.asarray(bob).reshape(1, *np.shape(bob))
    model_answer = int(np.asarray(direct_answers(a, b))[0])
    truth = int(expected)
    # the text counts from 1 (as a reader does); details["instance_index"] keeps the 0-based index
    source = f" on instance {index + 1} of {where}" if where and index is not None else (f" in {where}" if where else "")
    details = {"evaluation_set": where} if where else {}
    name = problem_name(problem.name)   # the source problem's function ("EQ"), not the model's task ("INEQ")
    if index is not None:
        details["instance_index"] = int(index)
    return Certificate(
        "error", np.asarray(alice).tolist(), np.asarray(bob).tolist(), truth, model_answer,
        f"the model answers {name} = {model_answer} where the answer is {name} = {truth}{source} "
        f"(confirmed by a direct forward of this instance)",
        verified=model_answer != truth and model_answer == int(answer), details=details)
