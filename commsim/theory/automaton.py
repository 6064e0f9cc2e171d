"""Automaton lower bounds for recurrent models (Lemma 4 of [BHBK24]).

Lemma 4: if an RNN whose hidden state has m numbers of p bits agrees with a DFA on every string,
the DFA built from the RNN's 2^(mp) states accepts the same language, so m*p >= log2 n where n is
the number of states of the *minimal* DFA.  This module supplies the minimal DFAs:

* :class:`~commsim.theory.dfa.DFA` and its minimization (:func:`~commsim.theory.dfa.hopcroft_partition`,
  Hopcroft's partition refinement) live in :mod:`commsim.theory.dfa`;
* :func:`dyck_dfa` — Dyck-(k, D) from :attr:`commsim.theory.dyck.DyckLanguage.transitions`; for
  Dyck-(2,2), over all lengths, 7 live states (the stacks of depth <= 2) plus the reject sink
  (Appendix E of [BHBK24]), so a 3-bit state suffices and Lemma 4 asks for only 3 bits;
* :func:`ineq_dfa` — INEQ restricted to {0,1}^N (first half != second half) as the trie of all
  prefixes, minimized; its minimal DFA has 3 * 2^(N/2) + N/2 - 2 states (see :func:`ineq_min_states`);
* :func:`distinguishable_prefixes` — the Myhill–Nerode argument of Theorem 11 (proof 2): the 2^(N/2)
  prefixes of length N/2 are pairwise distinguished by suffixes of length N/2 (x1 vs x2: the suffix x1),
  so *any* DFA agreeing with INEQ on {0,1}^N — however it behaves on other lengths — has >= 2^(N/2)
  states, and m*p >= N/2.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commsim.core.errors import InputError
from commsim.core.limits import check_size, show_size
from commsim.theory.bounds import Conditions, LowerBound, ceil_log2
from commsim.theory.comm_matrix import distinct_rows
from commsim.theory.dfa import DFA
from commsim.theory.dyck import DyckLanguage
from commsim.theory.problems import all_bit_strings

__all__ = ["AUTOMATON_LANGUAGES", "INEQ_MAX_N", "dyck_dfa", "ineq_dfa", "ineq_min_states", "distinguishable_prefixes",
           "ineq", "AutomatonReport", "automaton_report"]


AUTOMATON_LANGUAGES = ("ineq", "dyck22")


#: largest N for which the INEQ trie (2^(N+1) states) is built and minimized
INEQ_MAX_N = 16


#: largest N for which the 2^(N/2) x 2^(N/2) table of distinguishing suffixes is checked exhaustively
DISTINGUISH_EXHAUSTIVE_MAX_N = 20


# ---- the languages ---------------------------------------------------------------
def dyck_dfa(types: int = 2, depth: int = 2) -> DFA:
    """The stack automaton of Dyck-(types, depth) over all lengths (Appendix E of [BHBK24]).

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
        raise InputError(f"n must be an integer, got {n!r}", "n")
    n = int(n)
    if n < 2 or n % 2:
        raise InputError(f"n must be an even length >= 2 for ineq (first half vs second half), got {show_size(n)}",
                         "n")
    if cap is not None:
        check_size(n, "n", 2, cap, "the INEQ trie has 2^(N+1) states", noun="N")
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
            raise InputError(f"n must be an even length >= 2 for dyck22 (Dyck strings have even length), "
                             f"got {show_size(n) if isinstance(n, (int, np.integer)) else n!r}", "n")
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
    raise InputError(f"unknown language {language!r}; expected one of {', '.join(AUTOMATON_LANGUAGES)}", "language")
