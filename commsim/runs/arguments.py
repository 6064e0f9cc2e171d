"""The Python API's arguments checked at the public boundary (``commsim.run``, ``commsim.sample``,
``commsim.vocabulary``, ``commsim.sweep``): a wrong type is an :class:`InputError` naming the parameter,
never an AttributeError or a TypeError from deep inside the pipeline.

Each check returns the value it accepts (normalized where that is its job) so entry points read
``reduction = reduction_argument(reduction)``.  Sizes (``n``, ``instances``, ``seed``) are judged where
they are used, by :mod:`commsim.core.limits`; spec strings by :mod:`commsim.spec`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from commsim.core.errors import InputError
from commsim.core.limits import MAX_INSTANCES, check_size
from commsim.contract import Reduction

__all__ = ["callable_argument", "flag_argument", "instances_argument", "model_argument", "names_argument",
           "reduction_argument", "run_arguments"]

#: an attribute no model has: reading it shows whether the object's attribute lookup follows Python's rule
_ABSENT = "_commsim_absent_attribute_"


def _shown(value: Any) -> str:
    """``value`` for an error line: its type, and its repr when short."""
    text = repr(value) if not isinstance(value, (str, bytes)) or len(value) <= 60 else repr(value[:60]) + "..."
    return text if len(text) <= 80 else type(value).__name__ + " object"


def reduction_argument(value: Any, param: str = "reduction") -> str | Reduction:
    """A registered reduction id (a non-empty string) or a :class:`Reduction` object."""
    if isinstance(value, Reduction):
        return value
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{param} must be a reduction id such as 'index-idxl' (commsim list shows them) or a "
                         f"Reduction, got {_shown(value)}", param)
    return value.strip()


def model_argument(value: Any, param: str = "model") -> Any:
    """None (the reduction's default model), a spec string, or a model object whose attribute lookup behaves:
    a missing attribute raises AttributeError (``getattr(model, name, default)`` is how commsim asks a model
    what it offers; a ``__getattr__`` that raises anything else would escape from deep inside a run)."""
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            raise InputError(f"{param} must be a model spec such as 'elman:width=8,precision=8', got an empty "
                             f"string", param)
        return value
    if isinstance(value, (bool, int, float, complex, bytes, bytearray)):
        raise InputError(f"{param} must be a model spec string or a model object (a commsim model, a torch module "
                         f"or a dict of its parts), got {_shown(value)}", param)
    try:
        getattr(value, _ABSENT, None)
    except Exception as exc:
        raise InputError(f"{param}: reading a missing attribute of the {type(value).__name__} object raised "
                         f"{type(exc).__name__}: {str(exc)[:120]} (its __getattr__ must raise AttributeError for "
                         f"a name it does not have)", param) from None
    return value


def callable_argument(value: Any, param: str) -> Any:
    """None or a function (``progress``, ``write``); ``progress=True`` (draw a bar) is handled before this."""
    if value is not None and not callable(value):
        shown = "a function, True (draw a bar) or None" if param == "progress" else "a function or None"
        raise InputError(f"{param} must be {shown}, got {_shown(value)}", param)
    return value


def flag_argument(value: Any, param: str) -> bool:
    """A bool (``audit``, ``certify``): 0 and 1 are not taken for flags."""
    if not isinstance(value, bool):
        raise InputError(f"{param} must be True or False, got {_shown(value)}", param)
    return value


def names_argument(value: Any, param: str, what: str, *, allow_none: bool = False, object_hint: str = "") -> list:
    """One name or a list of names (strings; None entries too when ``allow_none``), as a list; a wrong entry is
    named by its index (``object_hint`` follows when it is an object, not a number)."""
    if value is None and allow_none:
        return [None]
    if isinstance(value, str):
        return [value]
    try:
        items = list(value) if not isinstance(value, (bytes, bytearray, dict)) else None
    except TypeError:
        items = None
    if items is None:
        raise InputError(f"{param} must be {what} or a list of them, got {_shown(value)}", param)
    for at, item in enumerate(items):   # the entry that is wrong, not the whole list
        if not (isinstance(item, str) or (allow_none and item is None)):
            raise InputError(f"{param}[{at}] must be {what}{' (or None)' if allow_none else ''}, got "
                             f"{_shown(item)}{'' if type(item).__module__ == 'builtins' else object_hint}", param)
    return items


def instances_argument(value: Any, param: str = "instances") -> Any:
    """``"all"`` (any case, as ``--instances all`` and the report's own ``instances`` field spell it) or None:
    every instance, as None; any other string is refused; a count is judged where it is used (its size)."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "all"):
        return None
    if isinstance(value, str):
        raise InputError(f"{param} must be 'all' or a number of instances, got {_shown(value)}", param)
    return value


def run_arguments(reduction: Any, model: Any, *, audit: Any = False, certify: Any = True,
                  progress: Any = None) -> tuple[Any, Any]:
    """The checks ``commsim.run`` makes on entry: (reduction, model) as accepted."""
    flag_argument(audit, "audit")
    flag_argument(certify, "certify")
    callable_argument(progress, "progress")
    return reduction_argument(reduction), model_argument(model)


def given_side(problem, values, param: str, party: str, single: bool):
    """One party's given inputs (:func:`commsim.runs.stages.given_instances`) (one per row) checked at the API boundary: an array of numbers (not ragged, not
    empty) whose every row the problem accepts (its ``validate_alice`` / ``validate_bob``); returns the rows as
    the problem normalizes them.  A bad row is an :class:`InputError` naming ``param`` and the row's index."""
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        raise InputError(f"{param} must be an array with one {party} input per row, got a ragged or unreadable "
                         f"{type(values).__name__}", param) from None
    if arr.ndim == 0 or len(arr) == 0:
        raise InputError(f"{param} must hold at least one instance ({party}'s input per row), got "
                         f"{'a scalar' if arr.ndim == 0 else 'none'}", param)
    if arr.dtype.kind not in "biuf":
        raise InputError(f"{param} must hold numbers ({party}'s input per row), got dtype {arr.dtype}", param)
    if arr.dtype.kind == "f" and not np.array_equal(arr, np.floor(arr)):   # a problem may cast to ints silently
        at = int(np.flatnonzero((arr != np.floor(arr)).reshape(len(arr), -1).any(axis=1))[0])
        raise InputError(f"{param}{'' if single else f'[{at}]'}: {party}'s input must hold whole numbers (symbols, "
                         f"bits or indices)", param)
    check_size(len(arr), param, 1, MAX_INSTANCES, "each instance is a full model run and protocol run",
               noun="number of instances")
    validate = problem.validate_alice if party == "Alice" else problem.validate_bob
    distinct, first, inverse = np.unique(arr, axis=0, return_index=True, return_inverse=True)
    accepted = []
    for row, at in zip(distinct, first):
        try:
            accepted.append(validate(row.item() if row.ndim == 0 and row.dtype.kind in "iub" else row))
        except InputError as exc:
            raise InputError(f"{param}{'' if single else f'[{int(at)}]'}: {exc}", param) from None
    return np.asarray(accepted)[np.asarray(inverse).reshape(-1)]
