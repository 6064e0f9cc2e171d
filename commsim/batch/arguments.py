"""The checks ``commsim.sweep`` makes on its arguments at the public boundary (types only: ranges, sizes and names
are the grid's, :mod:`commsim.batch.grid`)."""
from __future__ import annotations

from collections.abc import Iterable, Sized
from typing import Any

from commsim.batch.grid import MAX_CELLS
from commsim.core.errors import InputError
from commsim.runs.arguments import _shown, callable_argument, flag_argument, names_argument


def sweep_arguments(reductions: Any, models: Any, n: Any, options: dict) -> None:
    """The checks ``commsim.sweep`` makes on entry (types only: ranges, sizes and names are the grid's)."""
    names_argument(reductions, "reductions", "a reduction id such as 'index-idxl'")
    names_argument(models, "models", "a model spec pattern such as 'elman:width=2..8:x2'", allow_none=True,
                   object_hint=" (a sweep builds its models from spec patterns; run a model object with commsim.run)")
    if n is not None and not isinstance(n, str):
        if isinstance(n, (int, bytes, bytearray, dict)) or not isinstance(n, Iterable):
            values = [n]
        elif not isinstance(n, Sized) or isinstance(n, range):
            values = []                 # a generator or a range: counted and checked by the grid, never listed here
        else:
            values = list(n) if len(n) <= MAX_CELLS else []         # too many: the grid says so
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise InputError(f"n must be an integer, a list of integers or a range text such as '8..16:x2', got "
                             f"{_shown(n)}", "n")
    for key in ("write", "progress"):
        callable_argument(options.get(key), key)
    if "certify" in options:
        flag_argument(options["certify"], "certify")
    if "plugins" in options:
        names_argument(options["plugins"], "plugins", "a plugin module name")
