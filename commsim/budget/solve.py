"""``commsim budget --solve``: the inverse question of :mod:`commsim.budget.compute` -- the smallest width,
precision or head count whose protocol plan a sequence length N does not rule out."""
from __future__ import annotations

from commsim.core.errors import InputError
from commsim.budget.arches import arch_shape, simulator_for_arch
from commsim.budget.compute import (PRECISIONS, BudgetReport, Judgement, budget, check_sizes, format_of, judge,
                                     paper_count, paper_fits, planning_simulator, valid_at_most)
from commsim.plugins import load_plugins

#: the largest width and head count tried (a plan's cost grows with the heads; precision: PRECISIONS)
MAX_SOLVE = {"width": 1 << 40, "heads": 1 << 12}
SOLVABLE = ("width", "precision", "heads")


def solve(arch: str, task: str, parameter: str, N: int, *, width: int = 1, precision: int = 1, heads: int = 1,
          dim: int = 8, dtype: str | None = None) -> BudgetReport:
    """The smallest ``parameter`` (width, precision or heads; the others as given) whose protocol plan at the
    valid length N is not ruled out by the bound -- the same plan ``commsim run`` executes (:meth:`Simulator.
    plan`) -- found exactly: the plan's bits grow with each size (every message is made of m numbers per
    head, of p bits each), so the threshold is bisected after doubling, and the size one below is judged too.
    Beside it, the paper's answer (``solve["paper"]``): the smallest size whose paper count (:func:`paper_count`)
    meets the bound, found the same way (None where the papers give no count).  ``dtype`` plans a float layer
    (not with ``parameter`` precision: the solved widths are fixed point).  Returns the budget report at that size
    with ``solve`` set."""
    if parameter not in SOLVABLE:
        raise InputError(f"solve must be one of {', '.join(SOLVABLE)}, got {parameter!r}", "solve")
    if dtype is not None and parameter == "precision":
        raise InputError(f"solve precision searches fixed-point widths; {dtype} fixes p (leave out dtype)", "dtype")
    if dtype is not None:
        precision, fmt, _, _ = format_of(None, dtype)
    else:
        fmt = None
    simulator = simulator_for_arch(arch)
    shape = arch_shape(arch, simulator)
    if parameter not in simulator.budget_parameters:
        raise InputError(f"solve {parameter}: the {shape.name} count does not depend on {parameter}", "solve")
    if N is None:
        raise InputError("solve needs n, the sequence length N to solve at", "n")
    sizes = {"width": width, "precision": precision, "heads": heads}
    check_sizes(simulator, *(1 if k == parameter else v for k, v in sizes.items()))
    reduction = load_plugins().get("reduction", task, param="task")
    simulator = planning_simulator(reduction, simulator)
    if N < 1:
        raise InputError(f"n must be at least 1, got {N}", "n")
    limit = simulator.plan_limit
    if limit is not None and N > limit:
        raise InputError(f"budget plans the {shape.name} protocol up to N = {limit}, the longest input its runs "
                         f"lay out; got N = {N}", "n")
    L = valid_at_most(reduction, N) or reduction.length_for_size(reduction.min_size)
    # the sizes are searched by their index i = 1, 2, ...: the size itself, or the i-th of PRECISIONS
    size = (lambda i: PRECISIONS[i - 1]) if parameter == "precision" else (lambda i: i)
    top = len(PRECISIONS) if parameter == "precision" else MAX_SOLVE[parameter]

    def judged(i: int) -> Judgement | None:
        """The judgement with ``parameter`` = size(i); None when the architecture has no such size."""
        s = {**sizes, parameter: size(i)}
        try:
            return judge(reduction, simulator, shape.plan_width(s["width"]), s["precision"], s["heads"], L, dim, fmt)
        except InputError:
            return None

    lo, hi = 1, top
    while lo <= hi and judged(lo) is None:       # the sizes the architecture takes (fixed point: p in 2..53)
        lo += 1
    while parameter == "precision" and hi > lo and judged(hi) is None:
        hi -= 1
    if lo > hi:
        raise InputError(f"solve {parameter}: no {parameter} in 1..{size(top)} is a size of {shape.name}", "solve")
    first = judged(lo)
    why = ""
    if not first.bound.applies:
        index, why = lo, (f"the bound does not apply at N = {L}: {first.bound.reason}; any {parameter} is not ruled "
                          f"out")
    elif first.fits:
        index, why = lo, f"the smallest {parameter} ({size(lo)}) is not ruled out at N = {L}"
    else:
        a, b = lo, min(2 * lo, hi)                 # not fits(a); double b until it fits
        while not judged(b).fits:
            if b == hi:
                raise InputError(f"solve {parameter}: no {parameter} up to {size(hi)} is enough at N = {L} "
                                 f"({first.bound.bits} bits needed)", "solve")
            a, b = b, min(2 * b, hi)
        while b - a > 1:
            mid = (a + b) // 2
            a, b = (a, mid) if judged(mid).fits else (mid, b)
        index = b
    value = size(index)
    s = {**sizes, parameter: value}
    report = budget(arch, s["width"], None if dtype else s["precision"], task, heads=s["heads"], n=L, dim=dim,
                    dtype=dtype)
    below = judged(index - 1) if index > lo else None
    smaller = size(index - 1) if below is not None else None
    report.solve = {
        "parameter": parameter, "n": L, "value": value, "protocol_bits": report.judgement.protocol_bits,
        "lower_bound_bits": report.bound.bits if report.bound.applies else None,
        "one_smaller": (None if below is None else
                        {"value": smaller, "protocol_bits": below.protocol_bits, "ruled_out": not below.fits}),
        "text": why or (f"{parameter} = {value} is the smallest not ruled out at N = {L}: the protocol sends "
                        f"{report.judgement.protocol_bits} bits >= {report.bound.bits} needed; {parameter} = "
                        f"{smaller} sends {below.protocol_bits} < {below.bound.bits}"),
        "paper": _paper_answer(reduction, simulator, shape, sizes, parameter, size, lo, hi, L, first, dim)}
    return report


def _paper_answer(reduction, simulator, shape, sizes: dict, parameter: str, size, lo: int, hi: int, L: int,
                  first: Judgement, dim: int) -> dict | None:
    """The paper's answer at L: the smallest ``parameter`` (of the sizes lo..hi by index) whose paper count meets
    the bound for the parties that speak in the protocol -- the paper's inequality, as ``paper_max_n`` uses it
    (:func:`~commsim.budget.compute.paper_fits`), monotone in every size; None when the papers give no count for
    this protocol, or when the bound does not apply."""
    def sized(i: int) -> dict:
        s = {**sizes, parameter: size(i)}
        return {"width": shape.plan_width(s["width"]), "precision": s["precision"], "heads": s["heads"]}

    if not first.bound.applies or paper_count(simulator, reduction, **sized(lo), N=L, dim=dim) is None:
        return None

    def fits(i: int) -> bool:
        s = sized(i)
        return paper_fits(reduction, simulator, s["width"], s["precision"], s["heads"], L, first.senders, dim)

    if fits(lo):
        index = lo
    else:
        a, b = lo, min(2 * lo, hi)
        while not fits(b):
            if b == hi:
                return {"value": None, "bits_formula": None, "text": f"no {parameter} up to {size(hi)} meets the "
                                                                     f"bound in the paper's count at N = {L}"}
            a, b = b, min(2 * b, hi)
        while b - a > 1:
            mid = (a + b) // 2
            a, b = (a, mid) if fits(mid) else (mid, b)
        index = b
    bits, text = paper_count(simulator, reduction, **sized(index), N=L, dim=dim)
    needed = reduction.length_bound(simulator, L, senders=first.senders).bits
    return {"value": size(index), "bits_formula": bits, "bits_formula_text": shape.relabel(text),
            "text": f"{parameter} = {size(index)} is the smallest whose paper count meets the bound at N = {L}: "
                    f"{shape.relabel(text)} >= {needed}"}
