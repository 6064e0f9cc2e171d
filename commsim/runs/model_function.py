"""A model's own function on a reduction's instances: the answers of its direct forward, for the model-function
matrix (:mod:`commsim.theory.model_matrix`, ``commsim matrix --model SPEC --reduction R``).

The answers are :meth:`commsim.runs.stages.Prepared.direct_answers`: encode, the simulator's
``direct_labels`` (the model's own forward), decode.  A model no simulator wraps -- a multi-layer transformer,
refused by ``run`` with its reason (Lemma 5 of [BHBK24]) -- still has a function: it is evaluated by its own
``forward(tokens)``, which must give its decision at the last position (one label per row) on a reduction whose
output is read there; anything else is refused with the reason.  A model that decides its outputs by a decision
rule (``decide``: a torch module of several layers, a Hugging Face decoder) gives its decisions by that rule, as
every model does (:class:`commsim.core.decision.Decision`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from commsim.core.errors import InputError, NotApplicable
from commsim.core.limits import check_size
from commsim.runs.stages import prepare, simulator_for
from commsim.plugins import load_plugins, make_model
from commsim.theory.model_matrix import MAX_MODEL_CELLS, check_matrix_size
from commsim.theory.problems import Problem

#: the largest n of a model's matrix (every problem's matrix has at least 2^n cells: 2^32 is far past the limit)
MAX_MATRIX_N = 32


def model_answers(reduction: str, model: str, n: int, *, max_cells: int = MAX_MODEL_CELLS
                  ) -> tuple[Problem, Callable, str]:
    """(the reduction's problem at n, ``answers(A, B)`` -> the model's 0/1 answers, how they are computed).  The
    matrix's size (at most ``max_cells`` instances) is checked before the model is built."""
    check_size(n, "n", 1, MAX_MATRIX_N, "a model's matrix runs the model on every instance")
    check_matrix_size(load_plugins().get("reduction", reduction, param="reduction").problem(n), max_cells)
    try:
        setup = prepare(reduction, model, n)
    except NotApplicable as refused:
        return _forward_only(reduction, model, n, refused)
    return (setup.problem, setup.direct_answers,
            f"the model's direct forward ({setup.simulator.name}'s direct_labels), decoded by {setup.reduction.id}")


def _forward_only(reduction_id: str, spec: str, n: int, refused: NotApplicable):
    """A model that no simulator wraps, evaluated by its own ``forward`` (module docstring); ``refused`` is
    raised again when a simulator does wrap it (the reduction refused the model for another reason)."""
    reduction = load_plugins().get("reduction", reduction_id, param="reduction")
    problem = reduction.problem(n)
    built = make_model(spec, **reduction.model_context(n))
    try:
        simulator_for(built)
    except NotApplicable:
        pass
    else:
        raise refused
    forward = getattr(built, "forward", None)
    if not callable(forward):
        raise InputError(f"model: no simulator wraps {spec!r} ({refused}) and it has no forward(tokens) to evaluate "
                         f"its function with", "model")
    _check_length(built, spec, reduction, n)

    def answers(A, B):
        encoded = reduction.encode(problem, A, B)
        last = encoded.tokens.shape[1] - 1
        if tuple(encoded.output_positions) != (last,):
            raise InputError(f"model: no simulator wraps {spec!r}, and its forward gives its decision at the last "
                             f"position; {reduction.id} reads the output at position(s) "
                             f"{[p + 1 for p in encoded.output_positions]} of {last + 1}", "model")
        labels = np.asarray(forward(encoded.tokens))
        if labels.shape != (len(encoded.tokens),):
            raise InputError(f"model: no simulator wraps {spec!r}, and its forward(tokens) gave shape {labels.shape}, "
                             f"not one decision per row", "model")
        return reduction.decode(labels[:, None], B)

    rule = (" at the last position, decided by its decision rule (argmax of two or more outputs, the sign of one "
            "logit)" if callable(getattr(built, "decide_raw", None)) else "")
    return problem, answers, f"the model's own forward (no simulator wraps it){rule}, decoded by {reduction.id}"


def _check_length(built, spec: str, reduction, n: int) -> None:
    """A model of a fixed sequence length (its ``seq_len``; every length up to it when it runs on ``prefixes``)
    that cannot read the reduction's sequences at size n is bad input (--model or --n), refused before its
    forward is called."""
    model_len = getattr(built, "seq_len", None)
    if not isinstance(model_len, int):
        return
    needed = reduction.seq_len(n)
    fits = 1 <= needed <= model_len if getattr(built, "prefixes", False) else needed == model_len
    if not fits:
        reads = f"lengths 1..{model_len}" if getattr(built, "prefixes", False) else f"length {model_len}"
        raise InputError(f"model: {spec} reads sequences of {reads}; {reduction.id} at n = {n} encodes sequences "
                         f"of length {needed} (change n or the model's size)", "model")
