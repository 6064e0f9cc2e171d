"""Bit budgets: what an architecture's protocol really sends, against a task's lower bound, and the
largest valid sequence length N the bound does not rule out.

The protocol's bits are the simulator's own plan for an architecture of those sizes at length N on the
task's partition (:meth:`Simulator.shape_plan`: the attention exchange's message plan, the handoff's
m·p), computed without running; the paper's count (:meth:`Simulator.budget_bits`) is shown beside it as
``bits_formula``.  The bound as a function of N comes from the reduction (:meth:`Reduction.length_bound`),
for the parties that really speak in the plan.  N is always the sequence length in tokens, and only the
task's valid lengths (:meth:`Reduction.is_valid_length`) are judged.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from commsim.core.errors import InputError, NotApplicable
from commsim.plugins import load_plugins
from commsim.theory.bounds import LowerBound

#: the largest source size searched when the simulator's plan has no limit of its own
MAX_SEARCH = 1 << 58


def architectures() -> dict:
    """``--arch`` name -> the simulator that gives its budget."""
    return {e.obj.arch: e.obj for e in load_plugins().entries("simulator") if e.obj.arch}


def simulator_for_arch(arch: str):
    """The simulator for the architecture ``arch``; InputError naming the known ones otherwise."""
    arches = architectures()
    if arch not in arches:
        raise InputError(f"arch must be one of {', '.join(sorted(arches))}, got {arch!r}", "arch")
    return arches[arch]


@dataclass
class Judgement:
    """The protocol's bits and the bound at one valid length N."""

    n: int
    bound: LowerBound
    protocol_bits: int | None = None
    alice_to_bob: int | None = None
    bob_to_alice: int | None = None
    text: str = ""
    assumptions: dict = field(default_factory=dict)

    @property
    def fits(self) -> bool:
        """Not ruled out: the bound does not apply, or the protocol's bits meet it."""
        if not self.bound.applies or self.bound.bits is None or self.protocol_bits is None:
            return True
        return self.protocol_bits >= self.bound.bits


def judge(reduction, simulator, width: int, precision: int, heads: int, N: int, dim: int = 8) -> Judgement:
    """The protocol's plan and the bound for the parties that speak in it, at the valid length N."""
    bound = reduction.length_bound(simulator, N)
    if simulator.split_direction(reduction.split) is None:     # no protocol for the task's split at all
        return Judgement(N, bound if not bound.applies else bound.not_applicable(
            f"{simulator.name} has no protocol for a {reduction.split} split"))
    alice, outputs = reduction.partition(N)
    try:
        plan = simulator.shape_plan(width, precision, heads, N, alice, outputs, dim=dim)
    except NotApplicable as exc:
        return Judgement(N, bound.not_applicable(str(exc)))
    bound = reduction.length_bound(simulator, N, senders=plan.senders)
    return Judgement(N, bound, plan.bits, plan.alice_to_bob, plan.bob_to_alice, plan.text, plan.assumptions)


def search_lengths(reduction, simulator, width: int, precision: int, heads: int, dim: int = 8):
    """(max_n, first_ruled_out, searched_up_to): the largest valid N not ruled out and the smallest ruled
    out, over the valid lengths N = scale·n + offset up to the simulator's plan limit.

    No monotonicity over all N is assumed: the source sizes n are cut into dyadic pieces [2^k, 2^(k+1)),
    within which the plan's message widths (functions of ceil(log2) of the counts) and the bound move one
    way; each piece is bisected (at most ~log2 N evaluations) for its last length that fits, and the
    answers of all pieces are combined."""
    limit = simulator.shape_plan_limit
    top = MAX_SEARCH if limit is None else max((limit - reduction.length_offset) // reduction.length_scale, 0)
    cache: dict[int, bool] = {}

    def fits(n: int) -> bool:
        if n not in cache:
            cache[n] = judge(reduction, simulator, width, precision, heads, reduction.length_for_size(n), dim).fits
        return cache[n]

    last_fit, first_out = None, None
    lo = max(reduction.min_size, 1)
    while lo <= top:
        hi = min((1 << lo.bit_length()) - 1, top)     # the dyadic piece [lo, 2^k - 1]
        if fits(hi):
            last_fit = hi
        elif fits(lo):
            a, b = lo, hi            # fits(a), not fits(b)
            while b - a > 1:
                mid = (a + b) // 2
                a, b = (mid, b) if fits(mid) else (a, mid)
            last_fit = a
            first_out = b if first_out is None else first_out
        elif first_out is None:
            first_out = lo
        lo = hi + 1
    searched = reduction.length_for_size(top) if limit is not None else None
    length = reduction.length_for_size
    if first_out is None:
        return None, None, searched
    return (length(last_fit) if last_fit is not None else None), length(first_out), searched


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
    judgement: Judgement | None = None
    first_ruled_out: int | None = None
    searched_up_to: int | None = None
    n_meaning: str = ""
    n_requested: int | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The ``--json`` object."""
        j = self.judgement
        return {"arch": self.arch, "task": self.task, "width": self.width, "precision": self.precision,
                "heads": self.heads, "n": self.n, "n_requested": self.n_requested, "n_meaning": self.n_meaning,
                "protocol_bits": j.protocol_bits if j else None, "protocol_text": j.text if j else "",
                "bits_by_direction": ({"alice_to_bob": j.alice_to_bob, "bob_to_alice": j.bob_to_alice}
                                      if j and j.protocol_bits is not None else None),
                "assumptions": j.assumptions if j else {},
                "bits_formula": self.bits, "bits_formula_text": self.bits_text,
                "lower_bound_bits": self.bound.bits if self.bound.applies else None,
                "lower_bound_source": self.bound.source, "bound_applies": self.bound.applies,
                "bound_direction": self.bound.conditions.direction,
                "bound_note": self.bound.note, "max_n": self.max_n, "first_ruled_out": self.first_ruled_out,
                "searched_up_to": self.searched_up_to, "verdict": self.verdict, "notes": self.notes,
                "table": self.table}


def _valid_at_most(reduction, N: int) -> int | None:
    """The largest valid length <= N (None: none)."""
    n = (int(N) - reduction.length_offset) // reduction.length_scale
    return reduction.length_for_size(n) if n >= reduction.min_size else None


def budget(arch: str, width: int, precision: int, task: str, *, heads: int = 1, n: int | None = None,
           n_range: list[int] | None = None, dim: int = 8) -> BudgetReport:
    """The architecture's real protocol bits against the task's bound at N (``n``, else max_n), max_n
    and first_ruled_out."""
    simulator = simulator_for_arch(arch)
    for value, name in ((width, "width"), (precision, "precision"), (heads, "heads")):
        if value < 1:
            raise InputError(f"{name} must be at least 1, got {value}", name)
    if heads != 1 and "heads" not in simulator.budget_parameters:
        with_heads = sorted(a for a, s in architectures().items() if "heads" in s.budget_parameters)
        raise InputError(f"heads is only for the architecture(s) {' or '.join(with_heads)}", "heads")
    reduction = load_plugins().get("reduction", task, param="task")
    if n is not None and n < 1:
        raise InputError(f"n must be at least 1, got {n}", "n")
    limit = simulator.shape_plan_limit
    if n is not None and limit is not None and n > limit:
        raise InputError(f"budget lays out the {arch} protocol's plan position by position up to N = {limit}; "
                         f"got N = {n}", "n")
    notes = []
    first = reduction.length_for_size(reduction.min_size)
    # whether the bound applies is judged at a generic size (n = 2: at n = 1 some tasks degenerate)
    probe = judge(reduction, simulator, width, precision, heads, reduction.length_for_size(max(reduction.min_size, 2)),
                  dim)
    if probe.bound.applies:
        max_n, first_out, searched = search_lengths(reduction, simulator, width, precision, heads, dim)
    else:
        max_n, first_out, searched = None, None, None
    if n is None:
        N = max_n if max_n else (first_out or (searched if probe.bound.applies and searched else first))
    else:
        N = _valid_at_most(reduction, n) or first
        if N != n:
            notes.append(f"N = {n} is not a length of {task} ({reduction.n_meaning}); judged at N = {N}")
    j = judge(reduction, simulator, width, precision, heads, N, dim)
    if not probe.bound.applies and j.bound.applies:
        j = Judgement(N, probe.bound)
    bound = j.bound
    bits, bits_text = simulator.budget_bits(width, precision, heads, N)
    if j.protocol_bits is not None and bits < j.protocol_bits:
        notes.append(f"the paper's count ({bits} bits) is lower than what the protocol really sends "
                     f"({j.protocol_bits} bits); the verdict uses the protocol's bits")
    if not bound.applies:
        verdict = f"the bound does not apply: {bound.reason}"
    elif j.fits:
        verdict = f"not ruled out at N = {N}: {j.protocol_bits} protocol bits >= {bound.bits} needed"
    else:
        verdict = (f"ruled out at N = {N}: the protocol sends {j.protocol_bits} bits < {bound.bits} needed; "
                   f"the model must fail on some input")
    if bound.applies and max_n is None and first_out is None and searched is not None and limit is not None:
        notes.append(f"no valid N <= {searched} is ruled out (the {arch} plan is evaluated up to N = {limit})")
    rows = []
    for length in (n_range or []):
        if limit is not None and length > limit:
            continue
        L = _valid_at_most(reduction, length)
        if L is None:
            continue
        r = judge(reduction, simulator, width, precision, heads, L, dim)
        rows.append({"n": L, "bits": r.protocol_bits, "bits_formula": simulator.budget_bits(width, precision, heads, L)[0],
                     "lower_bound_bits": r.bound.bits if r.bound.applies else None,
                     "ok": r.fits if r.bound.applies and r.protocol_bits is not None else None})
    return BudgetReport(arch, task, width, precision, heads, N, bits, bits_text, bound, max_n, verdict, rows, j,
                        first_out, searched, reduction.n_meaning, n, notes)
