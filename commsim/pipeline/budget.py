"""Bit budgets: how many bits an architecture's protocol carries, against a task's lower bound,
and the largest sequence length N the bound does not rule out.

The protocol's count is the theorem's, from the simulator registered for the architecture
(:meth:`Simulator.budget_bits`; the formulas themselves live with the plugins); the bound as a
function of N comes from the reduction (:meth:`Reduction.length_bound`), which picks it from what the
simulator declares (its direction on the reduction's split), never from the architecture's name.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from commsim.core.errors import InputError
from commsim.plugins import load_plugins
from commsim.theory.bounds import LowerBound

MAX_SEARCH = 1 << 62


def architectures() -> dict:
    """``--arch`` name -> the simulator that gives its budget."""
    return {e.obj.arch: e.obj for e in load_plugins().entries("simulator") if getattr(e.obj, "arch", "")}


def simulator_for_arch(arch: str):
    """The simulator for the architecture ``arch``; InputError naming the known ones otherwise."""
    arches = architectures()
    if arch not in arches:
        raise InputError(f"arch must be one of {', '.join(sorted(arches))}, got {arch!r}", "arch")
    return arches[arch]


@dataclass
class BudgetReport:
    """What ``commsim budget`` reports (``to_dict`` is its ``--json``)."""

    arch: str
    task: str
    width: int
    precision: int
    heads: int
    n: int
    bits: int
    bits_text: str
    bound: LowerBound
    max_n: int | None
    verdict: str
    table: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The ``--json`` object."""
        return {"arch": self.arch, "task": self.task, "width": self.width, "precision": self.precision,
                "heads": self.heads, "n": self.n, "bits_formula": self.bits, "bits_formula_text": self.bits_text,
                "lower_bound_bits": self.bound.bits if self.bound.applies else None,
                "lower_bound_source": self.bound.source, "bound_applies": self.bound.applies,
                "bound_note": self.bound.note, "max_n": self.max_n, "verdict": self.verdict, "table": self.table}


def _fits(reduction, simulator, width, precision, heads, N) -> bool:
    """Does the simulator's count at length N meet the reduction's bound there (or is there none)?"""
    bound = reduction.length_bound(simulator, N)
    if not bound.applies or bound.bits is None:
        return True
    return simulator.budget_bits(width, precision, heads, N)[0] >= bound.bits


def max_length(reduction, simulator, width: int, precision: int, heads: int) -> int | None:
    """Largest N whose bound the simulator's bits still meet (None: no N is ruled out).

    The bounds grow linearly in N and the protocol bits at most logarithmically, so the set of
    N that fit is an initial segment; found by doubling then bisection."""
    if _fits(reduction, simulator, width, precision, heads, MAX_SEARCH):
        return None
    if not _fits(reduction, simulator, width, precision, heads, 1):
        return 0
    lo, hi = 1, 2
    while _fits(reduction, simulator, width, precision, heads, hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _fits(reduction, simulator, width, precision, heads, mid) else (lo, mid)
    return lo


def budget(arch: str, width: int, precision: int, task: str, *, heads: int = 1, n: int | None = None,
           n_range: list[int] | None = None) -> BudgetReport:
    """The architecture's protocol bits against the task's bound at N (``n``, else max_n), and max_n."""
    simulator = simulator_for_arch(arch)
    for value, name in ((width, "width"), (precision, "precision"), (heads, "heads")):
        if value < 1:
            raise InputError(f"{name} must be at least 1, got {value}", name)
    if heads != 1 and "heads" not in simulator.budget_parameters:
        with_heads = sorted(a for a, s in architectures().items() if "heads" in s.budget_parameters)
        raise InputError(f"heads is only for the architecture(s) {' or '.join(with_heads)}", "heads")
    reduction = load_plugins().get("reduction", task, param="task")
    limit = max_length(reduction, simulator, width, precision, heads)
    N = n if n is not None else (limit if limit else 1)
    if N < 1:
        raise InputError(f"n must be at least 1, got {N}", "n")
    bound = reduction.length_bound(simulator, N)
    bits, bits_text = simulator.budget_bits(width, precision, heads, N)
    if not bound.applies:
        verdict = f"the bound does not apply: {bound.reason}"
    elif bits >= bound.bits:
        verdict = f"not ruled out at N = {N}: {bits} protocol bits >= {bound.bits} needed"
    else:
        verdict = f"ruled out at N = {N}: {bits} protocol bits < {bound.bits} needed; the model must fail on some input"
    rows = []
    for length in (n_range or []):
        b = reduction.length_bound(simulator, length)
        used = simulator.budget_bits(width, precision, heads, length)[0]
        rows.append({"n": length, "bits": used, "lower_bound_bits": b.bits if b.applies else None,
                     "ok": (used >= b.bits) if b.applies and b.bits is not None else None})
    return BudgetReport(arch, task, width, precision, heads, N, bits, bits_text, bound, limit, verdict, rows)
