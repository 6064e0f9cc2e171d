"""The papers' side of ``commsim budget``: the count a paper gives for the protocol budget plans (none where the
papers give none), its inequality against the bound as a function of N (``paper_max_n``), and the search over the
valid lengths that both sides use (:func:`search_sizes`)."""
from __future__ import annotations

from commsim.contract import ANY_PARTITION, Shape, Split
from commsim.plugins import load_plugins

#: the largest source size searched when the simulator's plan has no limit of its own
MAX_SEARCH = 1 << 58


def search_sizes(reduction, fits, top: int) -> tuple[int | None, int | None]:
    """(largest source size n <= top whose length fits, smallest that does not), for ``fits(n)`` over the sizes.

    No monotonicity over all n is assumed: the sizes are cut into dyadic pieces [2^k, 2^(k+1)), within which
    the plans' message widths (functions of ceil(log2) of the counts), the papers' counts and the bounds move
    one way; each piece is bisected (at most ~log2 N evaluations) for its last size that fits, and the answers
    of all pieces are combined."""
    cache: dict[int, bool] = {}

    def ok(n: int) -> bool:
        if n not in cache:
            cache[n] = fits(n)
        return cache[n]

    last_fit, first_out = None, None
    lo = max(reduction.min_size, 1)
    while lo <= top:
        hi = min((1 << lo.bit_length()) - 1, top)     # the dyadic piece [lo, 2^k - 1]
        if ok(hi):
            last_fit = hi
        elif ok(lo):
            a, b = lo, hi            # ok(a), not ok(b)
            while b - a > 1:
                mid = (a + b) // 2
                a, b = (mid, b) if ok(mid) else (a, mid)
            last_fit = a
            first_out = b if first_out is None else first_out
        elif first_out is None:
            first_out = lo
        lo = hi + 1
    return last_fit, first_out


def no_paper_count(simulator, reduction) -> str:
    """Why the papers give no count for the protocol budget plans for this reduction ("" when they do: the
    simulator's :meth:`Simulator.paper_count`, the count of its own protocol).  A simulator that runs on any
    partition but is one-way on some split kinds (:attr:`Simulator.one_way_splits`) runs a one-way variant there:
    its count (Theorem 4's two-way exchange) is not that variant's, and no paper counts the variant's message."""
    if simulator.partition_kind == ANY_PARTITION and reduction.split_kind in simulator.one_way_splits:
        return (f"none: {simulator.source.split(';')[0]} counts the two-way exchange; on {reduction.id}'s "
                f"{reduction.split_kind} split the protocol is one-way (the bound: {reduction.source}), and the papers "
                f"give no count for the one-way message it sends")
    return ""


def paper_count(simulator, reduction, width: int, precision: int, heads: int, N: int,
                dim: int = 8) -> tuple[int, str] | None:
    """The paper's count for this reduction's protocol at N, (bits, formula text) -- the simulator's
    :meth:`Simulator.paper_count`, e.g. Theorem 4's 3m(p + ceil(log2 N))H, [PNP24]'s H(d + 1)p (it takes the
    embedding width d), a graph transformer's count over the owned nodes (it takes the public positions) -- or
    None when the papers give none for it (:func:`no_paper_count`)."""
    if no_paper_count(simulator, reduction):
        return None
    return simulator.paper_count(Shape(width, precision, heads, {"dim": dim}), Split.at(reduction, N))


def planning_simulator(reduction, simulator):
    """The simulator whose protocol ``run`` executes for this reduction: the reduction's variant of the
    architecture's simulator (:attr:`Reduction.simulator_variants`, e.g. composition's one-way public-query
    message) when it names one, else the simulator itself."""
    variant = reduction.simulator_variants.get(simulator.name)
    return simulator if variant is None else load_plugins().get("simulator", variant)


def paper_fits(reduction, simulator, width: int, precision: int, heads: int, N: int,
               senders: frozenset | None = None, dim: int = 8, own_form: bool = False) -> bool:
    """The paper's inequality at length N: its count (:func:`paper_count`) >= the bound at N in the theorem's own
    form (:meth:`Reduction.length_bound`, for the parties ``senders`` that speak in the protocol); True when that
    bound does not apply (the caller asks only where the paper gives a count)."""
    bound = reduction.length_bound(simulator, N, senders=senders)
    if not bound.applies or bound.bits is None:
        return True
    if own_form:    # the count as the paper writes it (a real log N), where the simulator declares one
        return simulator.paper_form_bits(Shape(width, precision, heads, {"dim": dim}), N) >= bound.bits
    return paper_count(simulator, reduction, width, precision, heads, N, dim)[0] >= bound.bits


def paper_lengths(reduction, simulator, width: int, precision: int, heads: int,
                  senders: frozenset | None = None, dim: int = 8,
                  own_form: bool = False) -> tuple[int | None, int | None]:
    """(paper_max_n, the smallest valid N the paper's inequality rules out): the inequality, not the plan, so
    searched up to :data:`MAX_SEARCH` whatever the plan's limit (None, None: nothing ruled out there).  The bound
    is the one for the parties ``senders`` that speak in the protocol (who speaks depends on the split, not N)."""
    length = reduction.length_for_size
    last_fit, first_out = search_sizes(
        reduction, lambda n: paper_fits(reduction, simulator, width, precision, heads, length(n), senders, dim,
                                        own_form), MAX_SEARCH)
    if first_out is None:
        return None, None
    return (length(last_fit) if last_fit is not None else None), length(first_out)


def paper_count_text(d: dict) -> str:
    """The paper's count with its formula (a report's ``to_dict``), or why the papers give none for this
    reduction's protocol."""
    if d["bits_formula"] is None:
        return d["bits_formula_text"]
    return f"{d['bits_formula']}  ({d['bits_formula_text']})"


def paper_max_n_text(d: dict) -> str:
    """The paper's max N (its inequality) with the line on why it differs from the protocol's, or the line alone."""
    if d["paper_max_n"] is None and d["paper_first_ruled_out"] is None:
        return d["paper_note"]
    own = d.get("paper_own_form")
    if own:     # the paper's count rounds nothing: its own form first, commsim's whole-bit form labelled as such
        return (f"{own['max_n']} (first ruled out: {own['first_ruled_out']}) with the paper's {own['form']}; "
                f"{d['paper_max_n']} (first ruled out: {d['paper_first_ruled_out']}) with commsim's whole-bit "
                f"form (log N rounded up to ceil(log2 N), as the exact messages are); {d['paper_note']}")
    return f"{d['paper_max_n']} (first ruled out: {d['paper_first_ruled_out']}); {d['paper_note']}"
