"""The number format ``commsim budget`` plans for: p-bit fixed point (p // 2 fraction bits), or a float dtype
(``budget --dtype``: float16, bfloat16, float32, float64; p is its width), and how it reaches a simulator's plan
(:mod:`commsim.budget.compute`)."""
from __future__ import annotations

from commsim.core.errors import InputError
from commsim.core.precision import FLOAT_DTYPES, parse_format

#: the float dtypes ``budget --dtype`` plans for: the float formats there are
DTYPES = FLOAT_DTYPES
#: the widest fixed point commsim run builds (exact in float64); p = 64 is float64
MAX_FIXED_PRECISION = 53


def format_of(precision: int | None, dtype=None):
    """(p, the number format planned for or None for p-bit fixed point, its name, the line saying it): ``dtype``
    (a float format by any spelling :func:`parse_format` reads, p its width) or p-bit fixed point with p // 2
    fraction bits (named by the format :func:`parse_format` reads from p); ``precision`` with ``dtype`` must be
    the dtype's width (InputError naming ``dtype`` otherwise).  p itself stays the papers' integer: the size a
    plan is laid out for and ``--solve precision`` searches, 1 (a bit) and 64 (float64's width) included."""
    if dtype is None:
        if precision is None:
            return None, None, "", ""
        fixed = isinstance(precision, int) and 2 <= precision <= MAX_FIXED_PRECISION
        name = (parse_format(precision).name if fixed else "float64" if precision == 64 else
                f"{precision}-bit numbers")
        fraction = f", {precision // 2} of them fraction bits (fixed point; a float dtype plans a float layer)"
        return precision, None, name, f"{name}: p = {precision} bits per number" + (fraction if fixed else "")
    fmt = parse_format(dtype=dtype)      # a float format, or an InputError naming dtype
    if precision is not None and precision != fmt.bits:
        raise InputError(f"dtype {fmt.name} has p = {fmt.bits} bits; give dtype or precision, not both",
                         "dtype")
    return fmt.bits, fmt, fmt.name, f"{fmt.name}: p = {fmt.bits} bits per number (floating point)"


def format_keywords(simulator, fmt) -> dict:
    """``number_format=fmt`` for a simulator that plans a format's own messages (it declares
    ``plans_number_format``), else nothing: its messages are p-bit numbers in any format."""
    if fmt is None or not simulator.plans_number_format:
        return {}
    return {"number_format": fmt}


def format_scope(simulator, fmt) -> str:
    """How the format enters the plan (module docstring), for the number format's line."""
    if format_keywords(simulator, fmt):
        return f"; {simulator.name} plans this format's own messages (its sums at their exact widths)"
    if fmt is not None:
        return f"; {simulator.name}'s messages are numbers of p bits in any format"
    return ""
