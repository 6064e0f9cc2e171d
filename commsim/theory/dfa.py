"""Deterministic finite automata: a complete DFA as a transition table, and its minimization.

* :class:`DFA` -- states x symbols transition table, start state, accepting states; a networkx view
  (:meth:`DFA.graph`) and DOT text;
* :func:`hopcroft_partition` / :meth:`DFA.minimize` -- Hopcroft's O(|Σ| n log n) partition refinement
  (after removing unreachable states): the minimal complete DFA, whose state count Lemma 4 of [BHBK24]
  turns into a bound on recurrent models (:mod:`commsim.theory.automaton`).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from commsim.core.errors import InputError

if TYPE_CHECKING:  # imported by DFA.graph() only, to keep CLI start-up fast
    import networkx as nx


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
