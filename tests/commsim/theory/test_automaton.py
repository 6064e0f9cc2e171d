"""Minimal DFAs (Hopcroft) against brute-force Myhill–Nerode; Dyck-(2,2) and INEQ (Lemma 4, Theorem 11)."""
from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from commsim.core.errors import InputError
from commsim.theory.automaton import (
    INEQ_MAX_N,
    automaton_report,
    distinguishable_prefixes,
    dyck_dfa,
    ineq,
    ineq_dfa,
    ineq_min_states,
)
from commsim.theory.dfa import DFA, hopcroft_partition
from commsim.theory.dyck import DyckLanguage


# ---- brute force ------------------------------------------------------------------
def words(alphabet_size: int, max_len: int):
    for L in range(max_len + 1):
        yield from itertools.product(range(alphabet_size), repeat=L)


def all_strings(symbols: int, length: int) -> np.ndarray:
    """Every string of the length as rows of symbol indices (one empty row for length 0)."""
    if length == 0:
        return np.zeros((1, 0), dtype=np.uint8)
    return np.array(list(itertools.product(range(symbols), repeat=length)), dtype=np.uint8)


def accepts_from(dfa: DFA, state: int, word) -> bool:
    for a in word:
        state = int(dfa.table[state, a])
    return bool(dfa.accepting[state])


def brute_myhill_nerode(dfa: DFA) -> int:
    """Number of classes of reachable states, two states equal iff they accept the same words of
    length < number of states (enough to separate any two inequivalent states)."""
    reachable = {dfa.start}
    frontier = [dfa.start]
    while frontier:
        q = frontier.pop()
        for t in dfa.table[q]:
            if int(t) not in reachable:
                reachable.add(int(t))
                frontier.append(int(t))
    probe = list(words(len(dfa.alphabet), max(dfa.num_states - 1, 0)))
    return len({tuple(accepts_from(dfa, q, w) for w in probe) for q in reachable})


def random_dfa(rng, states: int, symbols: int) -> DFA:
    table = rng.integers(0, states, size=(states, symbols))
    accepting = rng.random(states) < rng.choice([0.2, 0.5])
    return DFA(tuple("abc"[:symbols]), table, int(rng.integers(0, states)), accepting)


def same_language(a: DFA, b: DFA, max_len: int) -> bool:
    return all(accepts_from(a, a.start, w) == accepts_from(b, b.start, w) for w in words(len(a.alphabet), max_len))


# ---- Hopcroft ------------------------------------------------------------------------
def test_hopcroft_matches_brute_force_myhill_nerode_on_random_dfas():
    rng = np.random.default_rng(2024)
    for _ in range(120):
        dfa = random_dfa(rng, int(rng.integers(1, 8)), int(rng.integers(1, 4)))
        minimal = dfa.minimize()
        assert minimal.num_states == brute_myhill_nerode(dfa)
        assert same_language(dfa, minimal, dfa.num_states + 1)
        assert minimal.minimize().num_states == minimal.num_states
        assert minimal.reachable().all()


def test_hopcroft_partition_on_a_textbook_example():
    # states 0..5 over {a, b}; 1 and 2 are equivalent, 3, 4 equivalent (classic example shape)
    table = np.array([[1, 2], [3, 4], [4, 3], [5, 5], [5, 5], [5, 5]])
    accepting = np.array([False, False, False, True, True, False])
    blocks = hopcroft_partition(table, accepting)
    assert blocks[1] == blocks[2] and blocks[3] == blocks[4]
    assert len(set(blocks.tolist())) == 4


def test_minimize_is_canonical():
    rng = np.random.default_rng(5)
    dfa = random_dfa(rng, 8, 2)
    perm = rng.permutation(8)
    inverse = np.argsort(perm)
    shuffled = DFA(dfa.alphabet, perm[dfa.table[inverse]], int(perm[dfa.start]), dfa.accepting[inverse])
    a, b = dfa.minimize(), shuffled.minimize()
    assert np.array_equal(a.table, b.table) and np.array_equal(a.accepting, b.accepting)


# ---- Dyck-(2,2) ------------------------------------------------------------------------
def test_dyck22_minimal_dfa_has_seven_live_states_and_a_sink():
    dfa = dyck_dfa(2, 2)
    minimal = dfa.minimize()
    assert minimal.num_states == 8 == brute_myhill_nerode(dfa)
    assert minimal.live_states == 7
    assert set(minimal.names) == {"ε", "(", "[", "((", "([", "[(", "[[", "reject"}
    assert minimal.accepts_text("([])[()]") and not minimal.accepts_text("((()))") and not minimal.accepts_text("(]")
    lang = DyckLanguage(2, 2)
    for L in range(0, 9):
        strings = all_strings(4, L)
        assert np.array_equal(minimal.accepts(strings), lang.is_member(strings).astype(bool))


@pytest.mark.parametrize("types,depth", [(1, 1), (1, 4), (2, 1), (2, 3), (3, 2)])
def test_dyck_minimal_state_counts(types, depth):
    dfa = dyck_dfa(types, depth)
    minimal = dfa.minimize()
    assert minimal.num_states == sum(types ** i for i in range(depth + 1)) + 1
    if minimal.num_states <= 8:
        assert minimal.num_states == brute_myhill_nerode(dfa)


def test_graph_and_dot_views():
    minimal = dyck_dfa().minimize()
    g = minimal.graph()
    assert isinstance(g, nx.DiGraph) and g.number_of_nodes() == 8
    assert sum(len(d["symbols"]) for _, _, d in g.edges(data=True)) == 8 * 4
    sink = minimal.names.index("reject")
    assert not g.nodes[sink]["live"] and g.edges[sink, sink]["label"] == "(,),[,]"
    assert nx.has_path(g, 0, sink) and not nx.has_path(g, sink, 0)
    dot = minimal.to_dot("dyck22")
    assert dot.startswith('digraph "dyck22" {') and "doublecircle" in dot and dot.count("->") == g.number_of_edges() + 1


# ---- INEQ -----------------------------------------------------------------------------
@pytest.mark.parametrize("N", [2, 4, 6, 8])
def test_ineq_trie_accepts_exactly_ineq_on_the_length(N):
    trie = ineq_dfa(N)
    for L in range(N + 2):
        strings = all_strings(2, L)
        want = ineq(strings).astype(bool) if L == N else np.zeros(len(strings), dtype=bool)
        assert np.array_equal(trie.accepts(strings), want)
        assert np.array_equal(trie.minimize().accepts(strings), want)


@pytest.mark.parametrize("N", [2, 4, 6])
def test_ineq_minimal_dfa_matches_brute_force_myhill_nerode(N):
    trie = ineq_dfa(N)
    minimal = trie.minimize()
    # the trie is acyclic but for the sink: words of length <= N + 1 separate all its states
    probe = list(words(2, N + 1))
    reachable = range(trie.num_states)
    classes = {tuple(accepts_from(trie, q, w) for w in probe) for q in reachable}
    assert minimal.num_states == len(classes) == ineq_min_states(N)


@pytest.mark.parametrize("N", range(2, 15, 2))
def test_ineq_minimal_states_formula(N):
    minimal = ineq_dfa(N).minimize()
    assert minimal.num_states == ineq_min_states(N) == 3 * 2 ** (N // 2) + N // 2 - 2
    assert minimal.live_states == minimal.num_states - 1


@pytest.mark.parametrize("N", [2, 4, 6, 8])
def test_distinguishable_prefixes_brute_force(N):
    h = N // 2
    prefixes = list(itertools.product([0, 1], repeat=h))
    f = lambda s: int(s[:h] != s[h:])  # noqa: E731
    for x1, x2 in itertools.combinations(prefixes, 2):
        assert any(f(x1 + s) != f(x2 + s) for s in prefixes)
    got = distinguishable_prefixes(N)
    assert got.count == 2 ** h and got.verified is True and "exhaustive" in got.method


def test_distinguishable_prefixes_large_n_by_the_argument():
    got = distinguishable_prefixes(400)
    assert got.count == 2 ** 200 and got.verified is None and "suffix x1" in got.method


# ---- reports and errors --------------------------------------------------------------------
def test_reports():
    d = automaton_report("dyck22", 10).to_dict()
    assert (d["states"], d["live_states"], d["state_bits"], d["lower_bound_bits"]) == (8, 7, 3, 3)
    assert "Lemma 4" in d["lower_bound"]["source"]
    d = automaton_report("ineq", 8).to_dict()
    assert (d["states"], d["live_states"], d["state_bits"], d["lower_bound_bits"]) == (50, 49, 6, 4)
    assert d["distinguishable_prefixes"] == 16 and d["formula_states"] == 50 and d["input_states"] == 2 ** 9


@pytest.mark.parametrize("language,n,match", [("ineq", 7, "even"), ("ineq", INEQ_MAX_N + 2, f"largest N that runs "
                                                                                              f"is {INEQ_MAX_N}"),
                                              ("dyck22", 9, "even"), ("regex", 4, "unknown language"),
                                              ("ineq", 0, "even")])
def test_bad_input(language, n, match):
    with pytest.raises(InputError, match=match):
        automaton_report(language, n)


def test_dfa_validation():
    with pytest.raises(ValueError):
        DFA(("a",), np.array([[1]]), 0, np.array([True]))
    with pytest.raises(ValueError):
        DFA(("a", "b"), np.array([[0]]), 0, np.array([True]))
    with pytest.raises(InputError):
        dyck_dfa().accepts_text("(x)")
