"""Bit budgets: what an architecture's protocol really sends, against a task's lower bound, and the
largest valid sequence length N the bound does not rule out -- or, asked the other way round (``solve``), the
smallest width, precision or head count that a length N does not rule out.

The protocol's bits are the simulator's own plan for an architecture of those sizes at length N on the
task's partition (:meth:`Simulator.plan`: the attention exchange's message plan, the handoff's
m·p; a reduction's variant, :func:`planning_simulator`, as run runs it), computed without running; the paper's
count for that protocol (:func:`paper_count`; none where the papers give none) is shown beside it as
``bits_formula``, and the largest N the paper's own inequality (count >= bound) does not rule out as
``paper_max_n`` (said to be unsupported where the count undercounts the protocol).  The bound as a function of
N comes from the reduction (:meth:`Reduction.length_bound`), for the parties that really speak in the plan.  N
is always the sequence length in tokens (``run --n`` is the source problem's size: :func:`run_size` gives it for
N), and only the task's valid lengths (:meth:`Reduction.is_valid_length`) are judged.

``--arch`` names an architecture (:mod:`commsim.budget.arches`).  The number format is p-bit fixed point
(p // 2 fraction bits) unless a float dtype is named (``dtype``: float16, bfloat16, float32, float64; p is its
width): a simulator whose plan depends on the format beyond p takes it (the plan's :class:`Shape`: the
attention exchange, whose sums are sent at their exact widths), every other counts p bits per number in any
format (the handoff's m·p).  The format planned for is always reported (:func:`format_of`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from commsim.contract import Shape
from commsim.core.errors import InputError, NotApplicable
from commsim.budget.arches import (  # noqa: F401
    ArchShape,
    arch_shape,
    architectures,
    simulator_for_arch,
)
from commsim.budget.number_format import (  # noqa: F401  (DTYPES: budget's dtypes, read from here too)
    DTYPES,
    MAX_FIXED_PRECISION,
    format_keywords,
    format_of,
    format_scope,
)
from commsim.budget.paper import (  # noqa: F401  (read from here by the renderers and the CLI)
    MAX_SEARCH,
    no_paper_count,
    paper_count,
    paper_count_text,
    paper_fits,
    paper_lengths,
    paper_max_n_text,
    planning_simulator,
    search_sizes,
)
from commsim.plugins import load_plugins
from commsim.theory.bounds import LowerBound

#: the precisions p a number of ``commsim run``'s models can have, one limit for every architecture: a fixed-point
#: width (:class:`commsim.core.precision.FixedPoint`, up to 53 bits, exact in float64; a one-bit automaton state)
#: or float64's 64 bits (float16/bfloat16/float32 are 16 and 32)
PRECISIONS = (*range(1, MAX_FIXED_PRECISION + 1), 64)
#: what ``budget --n`` and ``run --n`` count (``budget --json``'s ``n_flag``)
N_FLAG_MEANING = ("budget --n, n, max_n and paper_max_n are the sequence length N in tokens; run --n is the source "
                  "problem's size (run_n: the run --n whose encoding has this N)")


#: ``run_size`` bisects the sizes of a task whose encoding is not affine in its size only up to this N
RUN_SIZE_SEARCH = 1 << 20


def run_size(reduction, N: int) -> int | None:
    """The ``commsim run --n`` whose encoding has length N (the source problem's size), or None when no
    ``run --n`` gives N.  Most encodings are affine in the size, N = a·n + c: three small encodings give a and c
    and check it; for any other (Directed 3-Cycle's (3n)^2 tokens) the sizes are bisected (N <= 2^20)."""
    probes = (2, 4, 6)                 # valid sizes of every task (Dyck strings have even length)
    lengths = [reduction.seq_len(a) for a in probes]
    slope, rem = divmod(lengths[1] - lengths[0], probes[1] - probes[0])
    offset = lengths[0] - slope * probes[0]
    if not rem and slope >= 1 and lengths[2] == slope * probes[2] + offset:
        n, rest = divmod(int(N) - offset, slope)
        return n if rest == 0 and n >= 1 else None
    if N > RUN_SIZE_SEARCH:
        return None
    lo, hi = 1, int(N)                 # the encoding grows with the size: the last n with seq_len(n) <= N
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if reduction.seq_len(mid) <= N else (lo, mid - 1)
    return lo if reduction.seq_len(lo) == N else None


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
    senders: frozenset | None = None       # the parties that speak in the plan (None: no plan)

    @property
    def fits(self) -> bool:
        """Not ruled out: the bound does not apply, or the protocol's bits meet it."""
        if not self.bound.applies or self.bound.bits is None or self.protocol_bits is None:
            return True
        return self.protocol_bits >= self.bound.bits


def judge(reduction, simulator, width: int, precision: int, heads: int, N: int, dim: int = 8, fmt=None) -> Judgement:
    """The protocol's plan and the bound for the parties that speak in it, at the valid length N (in the float
    format ``fmt`` when given: :func:`format_of`)."""
    bound = reduction.length_bound(simulator, N)
    if simulator.split_direction(reduction.split_kind) is None:     # no protocol for the task's split at all
        return Judgement(N, bound if not bound.applies else bound.not_applicable(
            f"{simulator.name} has no protocol for a {reduction.split_kind} split"))
    number_format = format_keywords(simulator, fmt).get("number_format", precision)
    try:
        plan = simulator.plan(Shape(width, number_format, heads, {"dim": dim}), reduction.split(N))
    except NotApplicable as exc:
        return Judgement(N, bound.not_applicable(str(exc)))
    bound = reduction.length_bound(simulator, N, senders=plan.senders)
    return Judgement(N, bound, plan.bits, plan.alice_to_bob, plan.bob_to_alice, plan.text, plan.assumptions,
                     plan.senders)


def search_lengths(reduction, simulator, width: int, precision: int, heads: int, dim: int = 8, fmt=None):
    """(max_n, first_ruled_out, searched_up_to): the largest valid N the protocol's plan is not ruled out at
    and the smallest it is, over the valid lengths N = scale·n + offset up to the simulator's plan limit
    (``width`` is the plan's: the state's numbers for a recurrent architecture)."""
    limit = simulator.plan_limit
    top = MAX_SEARCH if limit is None else (_size_at_most(reduction, limit) or 0)
    length = reduction.length_for_size
    last_fit, first_out = search_sizes(
        reduction, lambda n: judge(reduction, simulator, width, precision, heads, length(n), dim, fmt).fits, top)
    searched = length(top) if limit is not None else None
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
    bits: int | None             # the paper's count for this reduction's protocol (None: the papers give none)
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
    paper_max_n: int | None = None
    paper_first_ruled_out: int | None = None
    paper_note: str = ""
    width_meaning: str = ""
    state_units: int | None = None
    state_text: str = ""
    run_n: int | None = None
    solve: dict | None = None
    number_format: str = ""
    number_format_text: str = ""
    paper_own_form: dict | None = None   # the paper's max N with its count as it writes it (a real log N)

    def to_dict(self) -> dict:
        """The ``--json`` object."""
        j = self.judgement
        return {"arch": self.arch, "task": self.task, "width": self.width, "width_meaning": self.width_meaning,
                "state_units": self.state_units, "state_text": self.state_text, "precision": self.precision,
                "number_format": self.number_format, "number_format_text": self.number_format_text,
                "heads": self.heads, "n": self.n, "run_n": self.run_n, "n_requested": self.n_requested,
                "n_meaning": self.n_meaning, "n_flag": N_FLAG_MEANING,
                "protocol_bits": j.protocol_bits if j else None, "protocol_text": j.text if j else "",
                "bits_by_direction": ({"alice_to_bob": j.alice_to_bob, "bob_to_alice": j.bob_to_alice}
                                      if j and j.protocol_bits is not None else None),
                "assumptions": j.assumptions if j else {},
                "bits_formula": self.bits, "bits_formula_text": self.bits_text,
                "lower_bound_bits": self.bound.bits if self.bound.applies else None,
                "lower_bound_source": self.bound.source, "bound_applies": self.bound.applies,
                "bound_direction": self.bound.conditions.direction,
                "bound_note": self.bound.note, "max_n": self.max_n, "first_ruled_out": self.first_ruled_out,
                "paper_max_n": self.paper_max_n, "paper_first_ruled_out": self.paper_first_ruled_out,
                "paper_note": self.paper_note, "paper_own_form": self.paper_own_form,
                "searched_up_to": self.searched_up_to, "verdict": self.verdict, "notes": self.notes,
                "solve": self.solve, "table": self.table}


def _size_at_most(reduction, N: int) -> int | None:
    """The largest source size n whose length is <= N (None: none), bisected over the sizes (the lengths grow
    with n; a task may override :meth:`Reduction.length_for_size` with a non-affine one, as Directed 3-Cycle's
    (3n)^2 does)."""
    lo, hi = reduction.min_size, max(int(N), reduction.min_size)
    if reduction.length_for_size(lo) > N:
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if reduction.length_for_size(mid) <= N else (lo, mid - 1)
    return lo


def valid_at_most(reduction, N: int) -> int | None:
    """The largest valid length <= N (None: none)."""
    n = _size_at_most(reduction, N)
    return None if n is None else reduction.length_for_size(n)


def check_sizes(simulator, width: int, precision: int, heads: int) -> None:
    for value, name in ((width, "width"), (precision, "precision"), (heads, "heads")):
        if value < 1:
            raise InputError(f"{name} must be at least 1, got {value}", name)
    if precision not in PRECISIONS:
        raise InputError(f"precision must be 1..{MAX_FIXED_PRECISION} (fixed point, exact in float64) or 64 (float64): "
                         f"the number widths commsim run builds, got {precision}", "precision")
    if heads != 1 and "heads" not in simulator.budget_parameters:
        with_heads = sorted(a for a, s in architectures().items() if "heads" in s.budget_parameters)
        raise InputError(f"heads is only for the architecture(s) {' or '.join(with_heads)}", "heads")


def _paper_note(simulator, reduction, plan_width, precision, heads, max_n, paper_max_n, paper_out, j,
                applies: bool, dim: int, fmt=None) -> str:
    """One line: where the paper's max N comes from and why it differs from the protocol's (or that they agree),
    or why there is none."""
    if not applies:
        return "the bound does not apply to this protocol, so the paper's inequality rules out nothing either"
    if no_paper_count(simulator, reduction):
        return "none: the papers give no count for this reduction's protocol; max N is the only one"
    N = j.n
    paper_bits, paper_text = paper_count(simulator, reduction, plan_width, precision, heads, N, dim)
    formula = paper_text.split(" = ")[0]
    sent = j.protocol_bits
    limit = simulator.plan_limit
    if (not (sent is not None and sent > paper_bits) and paper_max_n is not None and paper_max_n != N
            and (limit is None or paper_max_n <= limit)):
        # the theorem is cited at paper_max_n: the protocol must not send more than the count there either
        at = judge(reduction, simulator, plan_width, precision, heads, paper_max_n, dim, fmt)
        count = paper_count(simulator, reduction, plan_width, precision, heads, paper_max_n, dim)[0]
        if at.protocol_bits is not None and at.protocol_bits > count:
            N, sent, paper_bits = paper_max_n, at.protocol_bits, count
    if sent is not None and sent > paper_bits:
        found = (f"{paper_max_n}" if paper_max_n is not None or paper_out is not None else
                 f"no ruled-out N up to {reduction.length_for_size(MAX_SEARCH)}")
        return (f"the paper's count undercounts this protocol ({sent} > {paper_bits} bits at N = {N}: {formula} "
                f"leaves out bits this exact protocol sends): the theorem as stated is not what commsim verified, so "
                f"its max N ({found}) is not supported here; max N is "
                f"{max_n if max_n is not None else 'unbounded'}, from the bits really sent")
    if paper_max_n is None and paper_out is None:
        return (f"the paper's inequality (its count against the bound) rules out no valid N up to "
                f"{reduction.length_for_size(MAX_SEARCH)}")
    if max_n == paper_max_n:
        return (f"max N and paper_max_n agree: the protocol sends the paper's count {formula} "
                f"({paper_bits} bits at N = {N})" if sent == paper_bits else
                f"max N and paper_max_n agree ({max_n})")
    relation = "fewer than" if sent is not None and sent < paper_bits else "as many as"
    return (f"max N counts the bits this exact protocol sends for the model in the assumptions ({sent} at N = {N}, "
            f"{relation} the paper's count); paper_max_n uses the paper's count {formula} ({paper_bits} there), "
            f"which holds for every model of these sizes: cite paper_max_n for the theorem")


def budget(arch: str, width: int, precision: int | None, task: str, *, heads: int = 1, n: int | None = None,
           n_range: list[int] | None = None, dim: int = 8, dtype: str | None = None) -> BudgetReport:
    """The architecture's real protocol bits against the task's bound at N (``n``, else max_n), max_n and
    first_ruled_out, and paper_max_n (the paper's inequality) beside them.  ``arch`` is ``NAME[:key=value]``
    (:func:`architectures`); ``width`` is that architecture's own width (an LSTM's hidden size: its state, 2m
    numbers, is what the handoff sends); ``dtype`` plans a float layer (p its width; :func:`format_of`)."""
    precision, fmt, format_name, format_text = format_of(precision, dtype)
    if precision is None:
        raise InputError("give precision (p-bit fixed point) or dtype (a float format)", "precision")
    simulator = simulator_for_arch(arch)
    shape = arch_shape(arch, simulator)
    check_sizes(simulator, width, precision, heads)
    plan_width = shape.plan_width(width)
    reduction = load_plugins().get("reduction", task, param="task")
    simulator = planning_simulator(reduction, simulator)
    if n is not None and n < 1:
        raise InputError(f"n must be at least 1, got {n}", "n")
    limit = simulator.plan_limit
    if n is not None and limit is not None and n > limit:
        raise InputError(f"budget plans the {shape.name} protocol up to N = {limit}, the longest input its runs "
                         f"lay out; got N = {n}", "n")
    notes = []
    first = reduction.length_for_size(reduction.min_size)
    # whether the bound applies is judged at a generic size (n = 2: at n = 1 some tasks degenerate)
    probe = judge(reduction, simulator, plan_width, precision, heads,
                  reduction.length_for_size(max(reduction.min_size, 2)), dim, fmt)
    if probe.bound.applies:
        max_n, first_out, searched = search_lengths(reduction, simulator, plan_width, precision, heads, dim, fmt)
    else:
        max_n, first_out, searched = None, None, None
    # the paper's inequality binds where the bound applies to this protocol at all (Appendix C: not to MQAR)
    paper_max_n, paper_out = (paper_lengths(reduction, simulator, plan_width, precision, heads, probe.senders, dim)
                              if probe.bound.applies and not no_paper_count(simulator, reduction) else (None, None))
    if n is None:
        N = max_n if max_n else (first_out or (searched if probe.bound.applies and searched else first))
    else:
        N = valid_at_most(reduction, n) or first
        if N != n:
            notes.append(f"N = {n} is not a length of {task} ({reduction.n_meaning}); judged at N = {N}")
    j = judge(reduction, simulator, plan_width, precision, heads, N, dim, fmt)
    if not probe.bound.applies and j.bound.applies:
        j = Judgement(N, probe.bound)
    bound = j.bound
    bits, bits_text = paper_count(simulator, reduction, plan_width, precision, heads, N, dim) or (
        None, no_paper_count(simulator, reduction))
    if j.protocol_bits is not None and bits is not None and bits < j.protocol_bits:
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
        notes.append(f"no valid N <= {searched} is ruled out (the {shape.name} plan is evaluated up to N = {limit})")
    rows = []
    for length in (n_range or []):
        if limit is not None and length > limit:
            continue
        L = valid_at_most(reduction, length)
        if L is None:
            continue
        r = judge(reduction, simulator, plan_width, precision, heads, L, dim, fmt)
        rows.append({"n": L, "run_n": run_size(reduction, L), "bits": r.protocol_bits,
                     "bits_formula": (paper_count(simulator, reduction, plan_width, precision, heads, L, dim)
                                      or (None,))[0],
                     "lower_bound_bits": r.bound.bits if r.bound.applies else None,
                     "ok": r.fits if r.bound.applies and r.protocol_bits is not None else None})
    paper_note = _paper_note(simulator, reduction, plan_width, precision, heads, max_n, paper_max_n, paper_out, j,
                             probe.bound.applies, dim, fmt)
    own_form = None
    if (paper_max_n is not None or paper_out is not None) and simulator.paper_form_text:
        own_max, own_out = paper_lengths(reduction, simulator, plan_width, precision, heads, probe.senders, dim, True)
        own_form = {"form": simulator.paper_form_text, "max_n": own_max, "first_ruled_out": own_out}
        paper_note = paper_note.replace("paper_max_n uses the paper's count", "paper_max_n uses commsim's whole-bit "
                                        "form of the paper's count").replace(
            "cite paper_max_n for the theorem", "for the theorem as the paper writes it, cite the first figure")
    # the handoff's texts name the state's numbers m (Theorem 2); in the architecture's letters (an LSTM's is 2m)
    j.text, bits_text, paper_note = shape.relabel(j.text), shape.relabel(bits_text), shape.relabel(paper_note)
    bound = replace(bound, statement=shape.relabel(bound.statement), reason=shape.relabel(bound.reason))
    j.bound = bound
    return BudgetReport(shape.name, task, width, precision, heads, N, bits, bits_text, bound, max_n, verdict, rows, j,
                        first_out, searched, reduction.n_meaning, n, notes, paper_max_n, paper_out, paper_note,
                        shape.width_meaning, plan_width if shape.arch is not None else None, shape.state_text(width),
                        run_size(reduction, N), number_format=format_name,
                        number_format_text=format_text + format_scope(simulator, fmt), paper_own_form=own_form)

