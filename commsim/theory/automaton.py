"""Automaton lower bounds for recurrent models (Lemma 4 of [BHBK24]).

Lemma 4: if an RNN whose hidden state has m numbers of p bits agrees with a DFA on every string,
the DFA built from the RNN's 2^(mp) states accepts the same language, so m*p >= log2 n where n is
the number of states of the *minimal* DFA.  This module supplies the minimal DFAs:

* :class:`DFA` — a complete DFA as a transition table (states x symbols), with a networkx view
  (:meth:`DFA.graph`) and DOT text;
* :func:`hopcroft_partition` / :meth:`DFA.minimize` — Hopcroft's O(|Σ| n log n) partition
  refinement (after removing unreachable states), the minimal complete DFA;
* :func:`dyck_dfa` — Dyck-(k, D) from :attr:`commsim.theory.dyck.DyckLanguage.transitions`; for
  Dyck-(2,2), over all lengths, 7 live states (the stacks of depth <= 2) plus the reject sink
  (REFERENCE section 2), so a 3-bit state suffices and Lemma 4 asks for only 3 bits;
* :func:`ineq_dfa` — INEQ restricted to {0,1}^N (first half != second half) as the trie of all
  prefixes, minimized; its minimal DFA has 3 * 2^(N/2) + N/2 - 2 states (see :func:`ineq_min_states`);
* :func:`distinguishable_prefixes` — the Myhill–Nerode argument of Theorem 11 (proof 2): the 2^(N/2)
  prefixes of length N/2 are pairwise distinguished by suffixes of length N/2 (x1 vs x2: the suffix x1),
  so *any* DFA agreeing with INEQ on {0,1}^N — however it behaves on other lengths — has >= 2^(N/2)
  states, and m*p >= N/2.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from commsim.core.errors import InputError
from commsim.theory.bounds import Conditions, LowerBound, ceil_log2
from commsim.theory.comm_matrix import distinct_rows
from commsim.theory.dyck import DyckLanguage
from commsim.theory.problems import all_bit_strings

if TYPE_CHECKING:  # imported by DFA.graph() only, to keep CLI start-up fast
    import networkx as nx


AUTOMATON_LANGUAGES = ("ineq", "dyck22")


#: largest N for which the INEQ trie (2^(N+1) states) is built and minimized
INEQ_MAX_N = 16


#: largest N for which the 2^(N/2) x 2^(N/2) table of distinguishing suffixes is checked exhaustively
DISTINGUISH_EXHAUSTIVE_MAX_N = 20


@dataclass(frozen=True)
class DFA:
    """A complete DFA: ``table[q, a]`` is the successor of state q on symbol ``alphabet[a]``."""

    alphabet: tuple[str, ...]
    table: np.ndarray
    start: int
    accepting: np.ndarray
    names: tuple[str, ...] = field(default=())

    def __post_init__(self):
        table = np.asarray(self.table, dtype=np.int64)
        if table.ndim != 2 or table.shape[1] != len(self.alphabet):
            raise ValueError(f"transition table must be (states, {len(self.alphabet)}), got {table.shape}")
        if table.size and (table.min() < 0 or table.max() >= table.shape[0]):
            raise ValueError("transition table points outside the states (the DFA must be complete)")
        accepting = np.asarray(self.accepting, dtype=bool)
        if accepting.shape != (table.shape[0],):
            raise ValueError("accepting must have one flag per state")
        if not 0 <= self.start < table.shape[0]:
            raise ValueError(f"start state {self.start} is not a state")
        object.__setattr__(self, "table", table)
        object.__setattr__(self, "accepting", accepting)

    @property
    def num_states(self) -> int:
        return int(self.table.shape[0])

    def name(self, q: int) -> str:
        return self.names[q] if self.names else str(q)

    # -- running
    def run(self, strings) -> np.ndarray:
        """Final state for each row of a (batch, length) array of symbol indices (vectorized)."""
        S = np.atleast_2d(np.asarray(strings, dtype=np.int64))
        state = np.full(S.shape[0], self.start, dtype=np.int64)
        for t in range(S.shape[1]):
            state = self.table[state, S[:, t]]
        return state

    def accepts(self, strings) -> np.ndarray:
        return self.accepting[self.run(strings)]

    def accepts_text(self, text: str) -> bool:
        index = {c: i for i, c in enumerate(self.alphabet)}
        state = self.start
        for c in text:
            if c not in index:
                raise InputError(f"symbol {c!r} is not in the alphabet {''.join(self.alphabet)!r}")
            state = int(self.table[state, index[c]])
        return bool(self.accepting[state])

    # -- structure
    def reachable(self) -> np.ndarray:
        """Mask of the states reachable from the start state."""
        seen = np.zeros(self.num_states, dtype=bool)
        seen[self.start] = True
        frontier = np.array([self.start])
        while frontier.size:
            nxt = np.unique(self.table[frontier].reshape(-1))
            frontier = nxt[~seen[nxt]]
            seen[frontier] = True
        return seen

    def live(self) -> np.ndarray:
        """Mask of the states from which some accepting state is reachable (co-reachable)."""
        alive = self.accepting.copy()
        while True:
            grown = alive | alive[self.table].any(axis=1)
            if (grown == alive).all():
                return alive
            alive = grown

    @property
    def live_states(self) -> int:
        return int((self.live() & self.reachable()).sum())

    def restrict(self, keep: np.ndarray) -> "DFA":
        """The sub-automaton on the states in ``keep`` (closed under transitions, contains the start)."""
        keep = np.asarray(keep, dtype=bool)
        old = np.flatnonzero(keep)
        new_id = np.full(self.num_states, -1, dtype=np.int64)
        new_id[old] = np.arange(len(old))
        table = new_id[self.table[old]]
        if (table < 0).any():
            raise ValueError("the kept states are not closed under transitions")
        names = tuple(self.names[q] for q in old) if self.names else ()
        return DFA(self.alphabet, table, int(new_id[self.start]), self.accepting[old], names)

    def minimize(self) -> "DFA":
        """The minimal complete DFA of the same language (unreachable states dropped, then Hopcroft).

        States are renumbered in breadth-first order from the start state (symbols in alphabet
        order), so two minimal DFAs of one language come out identical.  A merged state keeps the
        name of its first member in that order.
        """
        trimmed = self.restrict(self.reachable())
        block_of = hopcroft_partition(trimmed.table, trimmed.accepting)
        nblocks = int(block_of.max()) + 1
        _, rep = np.unique(block_of, return_index=True)                   # smallest member of each block
        quotient = block_of[trimmed.table[rep]]                            # (blocks, symbols)
        order, seen = [], np.zeros(nblocks, dtype=bool)
        queue = deque([int(block_of[trimmed.start])])
        seen[queue[0]] = True
        while queue:
            b = queue.popleft()
            order.append(b)
            for c in quotient[b]:
                if not seen[c]:
                    seen[c] = True
                    queue.append(int(c))
        renumber = np.empty(nblocks, dtype=np.int64)
        renumber[order] = np.arange(nblocks)
        table = np.empty((nblocks, len(self.alphabet)), dtype=np.int64)
        table[renumber] = renumber[quotient]
        accepting = np.empty(nblocks, dtype=bool)
        accepting[renumber] = trimmed.accepting[rep]
        names = ()
        if trimmed.names:
            first = np.full(nblocks, -1, dtype=np.int64)
            # name of the first member in a breadth-first walk of the original automaton
            for q in _bfs_order(trimmed):
                b = renumber[block_of[q]]
                if first[b] < 0:
                    first[b] = q
            names = tuple(trimmed.names[q] for q in first)
        return DFA(self.alphabet, table, 0, accepting, names)

    # -- views
    def graph(self) -> nx.DiGraph:
        """networkx view: nodes are states (``name``, ``accepting``, ``start``, ``live``); one edge per
        (source, target) with the list of ``symbols`` on it and a ``label``."""
        import networkx as nx

        g = nx.DiGraph()
        live = self.live()
        for q in range(self.num_states):
            g.add_node(q, name=self.name(q), accepting=bool(self.accepting[q]), start=q == self.start,
                       live=bool(live[q]))
        for q in range(self.num_states):
            for a, sym in enumerate(self.alphabet):
                t = int(self.table[q, a])
                if g.has_edge(q, t):
                    g.edges[q, t]["symbols"].append(sym)
                else:
                    g.add_edge(q, t, symbols=[sym])
        for _, _, data in g.edges(data=True):
            data["label"] = ",".join(data["symbols"])
        return g

    def to_dot(self, title: str = "dfa") -> str:
        """Graphviz DOT text of :meth:`graph` (accepting states double circles, the start marked)."""
        g = self.graph()
        lines = [f'digraph "{title}" {{', "  rankdir=LR;", '  node [fontname="monospace"];',
                 '  __start [shape=point];']
        for q, data in g.nodes(data=True):
            shape = "doublecircle" if data["accepting"] else "circle"
            style = "" if data["live"] else ", style=dashed"
            label = str(data["name"]).replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'  q{q} [shape={shape}{style}, label="{label}"];')
        lines.append(f"  __start -> q{self.start};")
        for u, v, data in g.edges(data=True):
            label = data["label"].replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'  q{u} -> q{v} [label="{label}"];')
        lines.append("}")
        return "\n".join(lines) + "\n"


def _bfs_order(dfa: DFA) -> list[int]:
    order, seen = [], np.zeros(dfa.num_states, dtype=bool)
    queue = deque([dfa.start])
    seen[dfa.start] = True
    while queue:
        q = queue.popleft()
        order.append(q)
        for t in dfa.table[q]:
            if not seen[t]:
                seen[t] = True
                queue.append(int(t))
    return order


def hopcroft_partition(table: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """Hopcroft's algorithm: the coarsest partition of the states compatible with acceptance and the
    transitions (Myhill–Nerode equivalence, for a DFA without unreachable states).

    Returns ``block_of`` (one block id per state).  Splitters (block, symbol) are kept in a
    worklist; a block split by a splitter puts only the smaller half back when the block itself is
    not waiting, which gives O(|Σ| n log n) time.  Blocks are sets, so a split costs the size of
    the part that moves.
    """
    table = np.asarray(table, dtype=np.int64)
    accepting = np.asarray(accepting, dtype=bool)
    Q, S = table.shape
    if Q == 0:
        return np.zeros(0, dtype=np.int64)
    inverse = []                                        # inverse[a]: (sources sorted by target, offsets)
    for a in range(S):
        order = np.argsort(table[:, a], kind="stable")
        offsets = np.searchsorted(table[order, a], np.arange(Q + 1))
        inverse.append((order.tolist(), offsets.tolist()))
    block_of = [0] * Q
    blocks: list[set] = []
    for part in (np.flatnonzero(accepting), np.flatnonzero(~accepting)):
        if part.size:
            for q in part.tolist():
                block_of[q] = len(blocks)
            blocks.append(set(part.tolist()))
    if len(blocks) == 2:
        smaller = 0 if len(blocks[0]) <= len(blocks[1]) else 1
        waiting = [(smaller, a) for a in range(S)]
        queued = set(waiting)
    else:
        waiting, queued = [], set()
    while waiting:
        splitter, a = waiting.pop()
        queued.discard((splitter, a))
        sources, offsets = inverse[a]
        touched: dict[int, list[int]] = {}
        for q in blocks[splitter]:
            for k in range(offsets[q], offsets[q + 1]):
                p = sources[k]
                touched.setdefault(block_of[p], []).append(p)
        for Y, moving in touched.items():
            if len(moving) == len(blocks[Y]):
                continue
            new = len(blocks)
            moved = set(moving)
            blocks[Y] -= moved
            blocks.append(moved)
            for p in moving:
                block_of[p] = new
            for c in range(S):
                if (Y, c) in queued:
                    waiting.append((new, c))
                    queued.add((new, c))
                else:
                    pick = new if len(moved) <= len(blocks[Y]) else Y
                    waiting.append((pick, c))
                    queued.add((pick, c))
    return np.asarray(block_of, dtype=np.int64)


# ---- the languages ---------------------------------------------------------------
def dyck_dfa(types: int = 2, depth: int = 2) -> DFA:
    """The stack automaton of Dyck-(types, depth) over all lengths (REFERENCE section 2).

    States: every stack of depth <= D (named by its open brackets, ``ε`` for the empty stack, the
    start and only accepting state) and the reject sink.
    """
    lang = DyckLanguage(types, depth)
    opens = lang.alphabet[0::2]
    names = tuple("".join(opens[t] for t in s) or "ε" for s in lang.stacks) + ("reject",)
    accepting = np.zeros(len(names), dtype=bool)
    accepting[0] = True
    return DFA(tuple(lang.alphabet), lang.transitions.astype(np.int64), 0, accepting, names)


def _check_ineq_n(n, cap: int | None) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise InputError(f"--n must be an integer, got {n!r}", "--n")
    n = int(n)
    if n < 2 or n % 2:
        raise InputError(f"--n must be an even length >= 2 for ineq (first half vs second half), got {n}", "--n")
    if cap is not None and n > cap:
        raise InputError(f"--n = {n}: the INEQ trie would have 2^{n + 1} states; the largest N that runs is {cap}",
                         "--n")
    return n


def ineq_dfa(n: int) -> DFA:
    """INEQ restricted to {0,1}^N (1 iff the first half differs from the second) as the trie of all
    2^(N+1) - 1 prefixes plus a sink for longer strings (not minimal; see :meth:`DFA.minimize`).

    Prefix w of length L is state 2^L - 1 + int(w); its children on 0 and 1 are 2v + 1 and 2v + 2.
    """
    n = _check_ineq_n(n, INEQ_MAX_N)
    leaves_from = (1 << n) - 1
    sink = (1 << (n + 1)) - 1
    v = np.arange(sink + 1, dtype=np.int64)
    table = np.stack([2 * v + 1, 2 * v + 2], axis=1)
    table[leaves_from:] = sink
    accepting = np.zeros(sink + 1, dtype=bool)
    k = np.arange(1 << n, dtype=np.int64)
    half = n // 2
    accepting[leaves_from:sink] = (k >> half) != (k & ((1 << half) - 1))
    lengths = np.floor(np.log2(v[:sink] + 1)).astype(np.int64)
    names = tuple(format(int(q) - ((1 << int(L)) - 1), f"0{int(L)}b") if L else "ε" for q, L in zip(v[:sink], lengths))
    return DFA(("0", "1"), table, 0, accepting, names + ("sink",))


def ineq_min_states(n: int) -> int:
    """States of the minimal complete DFA of INEQ ∩ {0,1}^N: 3 * 2^(N/2) + N/2 - 2.

    Count of the Myhill–Nerode classes: every prefix of length L <= N/2 is its own class
    (2^(N/2 + 1) - 1); at length N/2 + j, 1 <= j < N/2, the prefixes that already differ form one
    class ({0,1}^(N/2 - j)) and the undecided ones one class per remaining half 2^(N/2 - j); at
    length N the accepted strings form one class and the rest fall into the sink, as does every
    longer string (1 more).
    """
    n = _check_ineq_n(n, None)
    h = n // 2
    return 3 * (1 << h) + h - 2


@dataclass(frozen=True)
class DistinguishableCount:
    """How many prefixes of length N/2 are pairwise distinguishable for INEQ on {0,1}^N, and how we know."""

    count: int
    method: str
    verified: bool | None


def distinguishable_prefixes(n: int) -> DistinguishableCount:
    """Myhill–Nerode count for INEQ on {0,1}^N among the prefixes of length N/2 (Theorem 11, proof 2).

    Only suffixes of length N/2 land in {0,1}^N, so two prefixes are distinguishable iff their rows
    R[x, s] = INEQ(x s) differ.  For N <= :data:`DISTINGUISH_EXHAUSTIVE_MAX_N` the table is
    evaluated, its distinct rows counted, and the explicit witness — the suffix s = x1 gives
    INEQ(x1 x1) = 0 != 1 = INEQ(x2 x1) — checked for every pair.  Beyond, the count is 2^(N/2)
    by that witness argument.
    """
    n = _check_ineq_n(n, None)
    h = n // 2
    if n > DISTINGUISH_EXHAUSTIVE_MAX_N:
        return DistinguishableCount(1 << h, f"2^{h} by the witness argument: for x1 != x2 the suffix x1 "
                                            f"gives INEQ(x1 x1) = 0 and INEQ(x2 x1) = 1", None)
    X = all_bit_strings(h)
    m = len(X)
    whole = np.concatenate([np.repeat(X, m, axis=0), np.tile(X, (m, 1))], axis=1)   # every x s, x-major
    R = ineq(whole).reshape(m, m)                                                  # R[x, s] = INEQ(x s)
    classes = distinct_rows(R)
    # the witness of every ordered pair x1 != x2 is the suffix x1: R[x1, x1] = 0 and R[x2, x1] = 1
    witnesses_ok = bool(np.array_equal(R, 1 - np.eye(m, dtype=np.uint8)))
    return DistinguishableCount(classes, f"exhaustive: INEQ evaluated on all {m} x {m} strings x s with |x| = |s| "
                                         f"= {h}; the table has {classes} distinct rows, and every pair x1 != x2 is "
                                         f"separated by the suffix x1", classes == m and witnesses_ok)


def ineq(strings) -> np.ndarray:
    """INEQ on whole strings (rows of even length): 1 iff the first half differs from the second."""
    S = np.atleast_2d(np.asarray(strings))
    if S.shape[1] % 2:
        raise InputError(f"INEQ needs even-length strings, got length {S.shape[1]}")
    h = S.shape[1] // 2
    return (S[:, :h] != S[:, h:]).any(axis=1).astype(np.uint8)


# ---- the report ----------------------------------------------------------------------
@dataclass(frozen=True)
class AutomatonReport:
    """What ``commsim automaton`` reports (contract keys in :meth:`to_dict`)."""

    language: str
    n: int
    dfa: DFA
    input_states: int
    lower_bound: LowerBound
    method: str
    distinguishable: DistinguishableCount | None = None
    formula_states: int | None = None

    @property
    def states(self) -> int:
        return self.dfa.num_states

    @property
    def live_states(self) -> int:
        return self.dfa.live_states

    @property
    def state_bits(self) -> int:
        return ceil_log2(self.states)

    def to_dict(self) -> dict:
        d = {"language": self.language, "n": self.n, "states": self.states, "live_states": self.live_states,
             "state_bits": self.state_bits, "lower_bound_bits": self.lower_bound.bits,
             "input_states": self.input_states, "method": self.method, "lower_bound": self.lower_bound.to_dict()}
        if self.formula_states is not None:
            d["formula_states"] = self.formula_states
        if self.distinguishable is not None:
            d["distinguishable_prefixes"] = self.distinguishable.count
            d["distinguishable_method"] = self.distinguishable.method
            d["distinguishable_verified"] = self.distinguishable.verified
        if self.dfa.num_states <= 64:
            d["state_names"] = list(self.dfa.names) if self.dfa.names else None
            d["transitions"] = self.dfa.table.tolist()
            d["accepting"] = np.flatnonzero(self.dfa.accepting).tolist()
        return d


def automaton_report(language: str, n: int) -> AutomatonReport:
    """The minimal DFA of ``language`` (dyck22 over all lengths; ineq on {0,1}^N) and the Lemma 4 bound."""
    if language == "dyck22":
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2 or n % 2:
            raise InputError(f"--n must be an even length >= 2 for dyck22 (Dyck strings have even length), "
                             f"got {n}", "--n")
        full = dyck_dfa(2, 2)
        dfa = full.minimize()
        bits = ceil_log2(dfa.num_states)
        bound = LowerBound(bits, "Lemma 4 of [BHBK24]", Conditions("one-way", "contiguous"),
                           f"a recurrent model recognizing Dyck-(2,2) at every length has m*p >= log2 "
                           f"{dfa.num_states} = {bits} state bits (minimal DFA: {dfa.live_states} live states + "
                           f"reject sink); constant, so Lemma 1's N - 1 = {int(n) - 1} bits do not bind RNNs "
                           f"(the odd/even split is not contiguous)")
        return AutomatonReport("dyck22", int(n), dfa, full.num_states, bound,
                               f"Hopcroft minimization of the stack automaton ({full.num_states} states: stacks "
                               f"of depth <= 2 and the reject sink); no two states merge")
    if language == "ineq":
        n = _check_ineq_n(n, INEQ_MAX_N)
        trie = ineq_dfa(n)
        dfa = trie.minimize()
        count = distinguishable_prefixes(n)
        bound = LowerBound(ceil_log2(count.count), "Lemma 4 and Theorem 11 (proof 2) of [BHBK24]",
                           Conditions("one-way", "contiguous"),
                           f"any DFA agreeing with INEQ on {{0,1}}^{n} has >= {count.count} states (pairwise "
                           f"distinguishable prefixes of length {n // 2}), so a recurrent model computing it has "
                           f"m*p >= {n // 2}")
        return AutomatonReport("ineq", n, dfa, trie.num_states, bound,
                               f"Hopcroft minimization of the trie of {{0,1}}^<={n} ({trie.num_states} states with "
                               f"the sink); minimal DFA of the exact-length language", count, ineq_min_states(n))
    raise InputError(f"unknown language {language!r}; expected one of {', '.join(AUTOMATON_LANGUAGES)}", "LANGUAGE")
