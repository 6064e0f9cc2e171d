"""Source problems against brute-force definitions: INDEX, EQ, DISJ, Dyck-(k, D)."""
from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.core.errors import InputError
from commsim.theory.dyck import DyckLanguage
from commsim.theory.problems import (
    MAX_EXHAUSTIVE_BITS,
    PROBLEM_NAMES,
    Disjointness,
    DyckProblem,
    Equality,
    Index,
    ProblemInputError,
    all_bit_strings,
    make_problem,
)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- brute-force definitions ----------------------------------------------------------
def brute_index(a, b) -> int:
    return int(a[b])


def brute_eq(a, b) -> int:
    return int(list(a) == list(b))


def brute_disj(a, b) -> int:
    """The papers' convention: 1 when the sets intersect."""
    return int(any(x == 1 and y == 1 for x, y in zip(a, b)))


def brute_dyck(tokens, types: int = 2, depth: int = 2) -> int:
    """A plain stack check: token 2t opens bracket type t, 2t + 1 closes it."""
    stack = []
    for tok in tokens:
        kind, closes = divmod(int(tok), 2)
        if kind >= types:
            return 0
        if not closes:
            stack.append(kind)
            if len(stack) > depth:
                return 0
        elif not stack or stack.pop() != kind:
            return 0
    return int(not stack)


BRUTE = {"index": brute_index, "eq": brute_eq, "disj": brute_disj}


def brute_members(length: int, types: int = 2, depth: int = 2) -> list[tuple[int, ...]]:
    return [s for s in itertools.product(range(2 * types), repeat=length) if brute_dyck(s, types, depth)]


bitvec = st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.integers(0, 1), min_size=n,
                                                                                 max_size=n)))


# ---- truth functions -------------------------------------------------------------------
@FAST
@given(bitvec, st.data())
def test_truth_functions_match_brute_force(na, data):
    n, a = na
    b_bits = data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    b_index = data.draw(st.integers(0, n - 1))
    assert Index(n).evaluate(np.array(a), b_index) == brute_index(a, b_index)
    assert Equality(n).evaluate(np.array(a), np.array(b_bits)) == brute_eq(a, b_bits)
    assert Equality(n).evaluate(np.array(a), np.array(a)) == 1
    assert Disjointness(n).evaluate(np.array(a), np.array(b_bits)) == brute_disj(a, b_bits)
    complement = [1 - x for x in a]
    assert Disjointness(n).evaluate(np.array(a), np.array(complement)) == 0


@pytest.mark.parametrize("name", ["index", "eq", "disj"])
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_batch_evaluation_over_all_pairs(name, n):
    problem = make_problem(name, n)
    A, B = problem.all_pairs()
    expected = [BRUTE[name](a, int(b) if name == "index" else b) for a, b in zip(A.tolist(), B.tolist())]
    assert problem.evaluate_batch(A, B).tolist() == expected
    assert problem.evaluate(A[-1], B[-1]) == expected[-1]


@pytest.mark.parametrize("N", [2, 4, 6, 8])
def test_dyck_problem_over_all_pairs(N):
    problem = DyckProblem(N)
    A, B = problem.all_pairs()
    strings = DyckProblem.interleave(A, B)
    assert strings.shape == (4 ** N, N)
    got = problem.evaluate_batch(A, B)
    expected = [brute_dyck(s) for s in strings.tolist()]
    assert got.tolist() == expected
    assert sum(expected) == 2 ** (N - 1)
    # Alice holds positions 1, 3, 5, ... (1-based), Bob 2, 4, 6, ...
    assert np.array_equal(strings[:, 0::2], A) and np.array_equal(strings[:, 1::2], B)
    a, b = DyckProblem.split(strings)
    assert np.array_equal(a, A) and np.array_equal(b, B)
    i = int(np.flatnonzero(got)[0])
    assert problem.evaluate(A[i], B[i]) == 1


def test_dyck_examples():
    lang = DyckLanguage()
    assert lang.alphabet == "()[]"
    members = ["()", "[]", "(())", "([])", "[()]", "()[]", "[[]]", "(()[])"]
    others = ["(", ")(", "(]", "((()))", "([)]", "", "[[[]]]"]
    assert lang.is_member(np.array([lang.encode(s) for s in members[:2]])).tolist() == [1, 1]
    for s in members:
        assert lang.is_member(lang.encode(s)[None]).tolist() == [1], s
    for s in others:
        assert lang.is_member(lang.encode(s)[None]).tolist() == [int(s == "")], s
    assert DyckLanguage(2, 3).is_member(lang.encode("[[[]]]")[None]).tolist() == [1]


@FAST
@given(st.text(alphabet="()[]", max_size=20))
def test_dyck_membership_and_encoding_match_brute_force(text):
    lang = DyckLanguage()
    tokens = lang.encode(text)
    assert lang.decode(tokens) == text
    assert int(lang.is_member(tokens[None])[0]) == brute_dyck(tokens.tolist())


@FAST
@given(st.integers(1, 4), st.integers(1, 4), st.data())
def test_general_dyck_languages_match_brute_force(types, depth, data):
    lang = DyckLanguage(types, depth)
    strings = data.draw(st.lists(st.lists(st.integers(0, 2 * types - 1), min_size=6, max_size=6),
                                 min_size=1, max_size=10))
    assert lang.is_member(np.array(strings)).tolist() == [brute_dyck(s, types, depth) for s in strings]
    assert lang.count(4) == len(brute_members(4, types, depth))
    assert lang.members(4).tolist() == [list(s) for s in brute_members(4, types, depth)]


# ---- counting and enumerating Dyck-(2,2) -------------------------------------------------
@pytest.mark.parametrize("N", range(2, 15, 2))
def test_dyck22_count_is_two_to_the_n_minus_one(N):
    """Lemma 1 of [BHBK24]: exactly 2^(N-1) members of each even length N."""
    assert DyckLanguage(2, 2).count(N) == 2 ** (N - 1)


@pytest.mark.parametrize("N", range(0, 9))
def test_dyck22_count_and_members_equal_brute_force(N):
    lang = DyckLanguage(2, 2)
    brute = brute_members(N)  # all 4^N strings, in lexicographic order
    assert lang.count(N) == len(brute)
    members = lang.members(N)
    assert members.shape == (len(brute), N)
    assert [tuple(m) for m in members.tolist()] == brute
    if N % 2:
        assert len(brute) == 0


@pytest.mark.parametrize("N", [2, 4, 6, 8])
def test_dyck22_members_are_a_fooling_set(N):
    """Appendix E of [BHBK24]: a member's odd-position symbols determine its even-position symbols."""
    members = DyckLanguage(2, 2).members(N)
    odd = Counter(tuple(m[0::2]) for m in members.tolist())
    assert set(odd.values()) == {1}
    problem = DyckProblem(N)
    A, B = DyckProblem.split(members)
    crossed = problem.evaluate_batch(A, np.roll(B, 1, axis=0))  # swap in another member's even half
    assert len(members) == 1 or crossed.sum() == 0


def test_sample_members_are_uniform_members():
    lang = DyckLanguage(2, 2)
    rng = np.random.default_rng(12)
    for N in (2, 6, 12, 30):
        sample = lang.sample_members(rng, N, 40)
        assert sample.shape == (40, N)
        assert all(brute_dyck(s) for s in sample.tolist())
    draws = lang.sample_members(np.random.default_rng(5), 4, 4000)
    counts = Counter(map(tuple, draws.tolist()))
    assert set(counts) == set(brute_members(4))
    assert all(400 <= c <= 600 for c in counts.values()), counts  # 8 members, 500 expected each
    again = lang.sample_members(np.random.default_rng(5), 4, 4000)
    assert np.array_equal(draws, again)
    with pytest.raises(ProblemInputError):
        lang.sample_members(rng, 5, 1)


# ---- samplers ---------------------------------------------------------------------------
@pytest.mark.parametrize("name,n", [("index", 9), ("eq", 7), ("disj", 10), ("dyck22", 12)])
def test_samplers_are_seeded_deterministic_and_valid(name, n):
    problem = make_problem(name, n)
    A1, B1 = problem.sample(np.random.default_rng(3), 400)
    A2, B2 = problem.sample(np.random.default_rng(3), 400)
    A3, B3 = problem.sample(np.random.default_rng(4), 400)
    assert np.array_equal(A1, A2) and np.array_equal(B1, B2)
    assert not (np.array_equal(A1, A3) and np.array_equal(B1, B3))
    assert len(A1) == len(B1) == 400
    for a, b in zip(A1[:50], B1[:50]):
        problem.validate(a, b if name != "index" else int(b))
    values = problem.evaluate_batch(A1, B1)
    if name == "index":
        assert B1.min() >= 0 and B1.max() < n
    if name in ("eq", "disj", "dyck22"):  # the samplers mix in the rare answer on purpose
        share = values.mean() if name != "disj" else 1 - values.mean()
        assert 0.35 <= share <= 0.65, share


def test_all_pairs_sizes():
    for n in (1, 3, 6):
        assert len(Index(n).all_pairs()[0]) == Index(n).input_pairs == n * 2 ** n
        for cls in (Equality, Disjointness):
            A, B = cls(n).all_pairs()
            assert len(A) == len(B) == cls(n).input_pairs == 4 ** n
            assert len({(tuple(a), tuple(b)) for a, b in zip(A.tolist(), B.tolist())}) == 4 ** n
    A, B = Index(4).all_pairs()
    assert len({(tuple(a), int(b)) for a, b in zip(A.tolist(), B.tolist())}) == 4 * 16
    assert DyckProblem(6).input_pairs == len(DyckProblem(6).all_pairs()[0]) == 4 ** 6


def test_all_bit_strings_in_counting_order():
    rows = all_bit_strings(5)
    assert rows.shape == (32, 5) and rows.dtype == np.uint8
    assert ["".join(map(str, r)) for r in rows.tolist()] == [format(i, "05b") for i in range(32)]
    with pytest.raises(ProblemInputError):
        all_bit_strings(MAX_EXHAUSTIVE_BITS + 1)


# ---- validation ----------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda: Index(4).evaluate([0, 1, 1], 0),            # wrong length
    lambda: Index(4).evaluate([0, 1, 2, 1], 0),         # wrong alphabet
    lambda: Index(4).evaluate([[0, 1, 1, 0]], 0),       # wrong shape
    lambda: Index(4).evaluate([0, 1, 1, 0], 4),         # index out of range
    lambda: Index(4).evaluate([0, 1, 1, 0], -1),
    lambda: Index(4).evaluate([0, 1, 1, 0], True),      # a bool is not an index
    lambda: Index(4).evaluate([0, 1, 1, 0], 1.0),
    lambda: Index(4).evaluate([0, 1, 1, 0], "1"),
    lambda: Equality(3).evaluate([0, 1, 1], [0, 1]),
    lambda: Equality(3).evaluate([0, 1, 1], [0, 1, -1]),
    lambda: Disjointness(3).evaluate([0, 1], [0, 1, 0]),
    lambda: Disjointness(3).evaluate([0, 1, 0], [0, 3, 0]),
    lambda: DyckProblem(5),                              # odd length
    lambda: DyckProblem(4).evaluate([0, 1, 0], [1, 0]),  # Alice holds N/2 symbols
    lambda: DyckProblem(4).evaluate([0, 1], [1, 4]),     # tokens are 0..3
    lambda: DyckProblem(4).evaluate([0, -1], [1, 1]),
    lambda: DyckLanguage().encode("(a)"),
    lambda: DyckLanguage().is_member(np.array([[0, 4]])),
    lambda: DyckLanguage(0, 2),
    lambda: DyckLanguage(5, 2),
    lambda: DyckLanguage(2, 0),
    lambda: DyckLanguage().members(26),                 # 2^25 members: too many to list
    lambda: DyckProblem(26).alice_inputs(),
    lambda: make_problem("parity", 4),
    lambda: make_problem("eq", 0),
    lambda: Index(-2),
])
def test_bad_instances_are_refused(call):
    with pytest.raises(ProblemInputError):
        call()


def test_problem_errors_are_input_errors_with_clear_messages():
    assert issubclass(ProblemInputError, InputError)
    with pytest.raises(ProblemInputError, match="length 4"):
        Equality(4).evaluate([0, 1], [0, 1, 1, 1])
    with pytest.raises(ProblemInputError, match=r"out of range 0\.\.3"):
        Index(4).evaluate([0, 1, 1, 0], 7)
    with pytest.raises(ProblemInputError, match="unknown problem 'parity'"):
        make_problem("parity", 4)
    assert set(PROBLEM_NAMES) == {"index", "eq", "disj", "dyck22"}
    assert {make_problem(name, 4).name for name in PROBLEM_NAMES} == set(PROBLEM_NAMES)
