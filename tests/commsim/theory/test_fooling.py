"""Fooling sets and Dyck counting, cross-checked against brute force (Dyck for N <= 14)."""
from __future__ import annotations

import itertools
import time
from functools import lru_cache

import numpy as np
import pytest

from commsim.core.errors import InputError
from commsim.theory.dyck import DyckLanguage, count_dyck, dyck_counts
from commsim.theory.fooling import (
    DYCK_STRUCTURAL_MAX_N,
    INDEX_TABLE_MAX_N,
    DisjointComplements,
    DyckMembers,
    EqualityDiagonal,
    cross,
    fooling_set,
    largest_verifiable_n,
)
from commsim.theory.problems import DyckProblem, make_problem


# ---- independent brute force ------------------------------------------------------
def is_dyck(text: str, types: int, depth: int) -> bool:
    """A plain stack check, independent of the engine's automaton."""
    brackets = "()[]{}<>"[:2 * types]
    stack = []
    for c in text:
        i = brackets.index(c)
        if i % 2 == 0:
            stack.append(c)
            if len(stack) > depth:
                return False
        else:
            if not stack or stack[-1] != brackets[i - 1]:
                return False
            stack.pop()
    return not stack


def grammar_dyck(length: int, types: int = 2, depth: int = 2) -> list[str]:
    """Every Dyck-(types, depth) string by its first-return decomposition: ε | o_t A c_t B."""
    brackets = "()[]{}<>"[:2 * types]

    @lru_cache(maxsize=None)
    def gen(n: int, room: int) -> tuple[str, ...]:
        if n == 0:
            return ("",)
        if room == 0:
            return ()
        out = []
        for inner in range(0, n - 1, 2):
            for t in range(types):
                for a in gen(inner, room - 1):
                    for b in gen(n - 2 - inner, room):
                        out.append(brackets[2 * t] + a + brackets[2 * t + 1] + b)
        return tuple(out)

    return list(gen(length, depth))


def brute_count(length: int, types: int, depth: int) -> int:
    alphabet = "()[]{}<>"[:2 * types]
    return sum(is_dyck("".join(s), types, depth) for s in itertools.product(alphabet, repeat=length))


# ---- counting ------------------------------------------------------------------------
@pytest.mark.parametrize("N", range(0, 9))
def test_count_dyck22_matches_exhaustive_enumeration(N):
    assert count_dyck(N) == brute_count(N, 2, 2)


@pytest.mark.parametrize("N", range(2, 15, 2))
def test_count_dyck22_matches_grammar_and_members_up_to_14(N):
    strings = grammar_dyck(N)
    assert len(strings) == len(set(strings))
    assert all(is_dyck(s, 2, 2) for s in strings)
    lang = DyckLanguage(2, 2)
    members = {lang.decode(row) for row in lang.members(N)}
    assert members == set(strings)
    assert count_dyck(N) == count_dyck(N, method="depth") == len(strings) == 2 ** (N - 1)


@pytest.mark.parametrize("types,depth,max_len", [(1, 1, 10), (1, 3, 10), (2, 1, 8), (2, 3, 8), (3, 2, 6),
                                                 (3, 1, 6)])
def test_count_other_dyck_languages_brute_force(types, depth, max_len):
    counts = dyck_counts(max_len, types, depth)
    for N in range(max_len + 1):
        assert counts[N] == brute_count(N, types, depth)
        assert count_dyck(N, types, depth) == counts[N]


@pytest.mark.parametrize("types,depth", [(1, 5), (2, 2), (2, 4), (3, 3), (4, 2)])
def test_stack_dp_equals_depth_lumped_dp(types, depth):
    assert dyck_counts(60, types, depth, method="stacks") == dyck_counts(60, types, depth, method="depth")
    grammar = [len(grammar_dyck(N, types, depth)) for N in range(0, 11, 2)]
    assert grammar == dyck_counts(10, types, depth)[0::2]


def test_count_dyck22_is_two_to_n_minus_one_and_fast():
    for N in range(2, 400, 2):
        assert count_dyck(N) == 1 << (N - 1)
    start = time.perf_counter()
    value = count_dyck(10 ** 4)
    elapsed = time.perf_counter() - start
    assert value == 1 << 9999
    assert elapsed < 2.0, f"count_dyck(10^4) took {elapsed:.2f} s"
    assert count_dyck(7) == 0


def test_count_rejects_bad_arguments():
    with pytest.raises(InputError):
        count_dyck(-2)
    with pytest.raises(InputError):
        dyck_counts(4, method="magic")


# ---- the fooling sets ------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_bit_string_sets_are_the_constructions(n):
    eq, disj, index = fooling_set("eq", n), fooling_set("disj", n), fooling_set("index", n)
    everything = np.array(list(itertools.product([0, 1], repeat=n)), dtype=np.uint8)
    A, B = eq.pairs()
    assert np.array_equal(A, everything) and np.array_equal(B, everything)
    A, B = disj.pairs()
    assert np.array_equal(A, everything) and np.array_equal(B, 1 - everything)
    A, B = index.pairs()
    assert np.array_equal(A, everything) and B is None
    assert eq.size == disj.size == index.size == 2 ** n
    assert (eq.value, disj.value, index.value) == (1, 0, None)
    assert eq.lower_bound.bits == disj.lower_bound.bits == index.lower_bound.bits == n


@pytest.mark.parametrize("N", [2, 4, 6, 8, 10])
def test_dyck_set_is_every_member_split_odd_even(N):
    fs = fooling_set("dyck22", N)
    strings = sorted(grammar_dyck(N))
    lang = fs.language
    assert [lang.decode(s) for s in fs.strings()] == strings         # lexicographic in token order ( ) [ ]
    A, B = fs.pairs()
    for a, b, s in zip(A, B, strings):
        assert lang.decode(a) == s[0::2] and lang.decode(b) == s[1::2]
    assert fs.size == 2 ** (N - 1) and fs.lower_bound.bits == N - 1
    assert fs.lower_bound.conditions.partition == "odd-even"
    assert "Lemma 1" in fs.lower_bound.source


@pytest.mark.parametrize("N", [2, 4, 8, 12, 14])
def test_dyck_unranking_equals_engine_enumeration(N):
    fs = fooling_set("dyck22", N)
    assert np.array_equal(fs._unrank(0, fs.size), fs.language.members(N))
    assert np.array_equal(fs._unrank(3 % fs.size, fs.size), fs.language.members(N)[3 % fs.size:])


def test_lazy_chunks_and_huge_indices():
    fs = fooling_set("eq", 9)
    chunks = list(fs.members(chunk=100))
    assert sum(len(a) for a, _ in chunks) == 512
    assert np.array_equal(np.concatenate([a for a, _ in chunks]), fs.pairs()[0])
    big = fooling_set("eq", 100)
    x, y = big.member(2 ** 99 + 5)
    assert x.tolist() == [1] + [0] * 96 + [1, 0, 1] and np.array_equal(x, y)
    dyck = fooling_set("dyck22", 200)
    S = dyck.strings(0, 50)
    assert dyck.language.is_member(S).all()
    assert all(tuple(a) < tuple(b) for a, b in zip(S[:-1], S[1:]))
    last = dyck.strings(dyck.size - 1, dyck.size)[0]
    assert dyck.language.decode(last) == "[]" * 100
    first = dyck.strings(0, 1)[0]
    assert dyck.language.decode(first) == "(" + "()" * 99 + ")"
    A, B = dyck.member(12345)
    assert dyck.problem.evaluate(A, B) == 1


def brute_fooling(problem, A, B, value) -> bool:
    """Definition 1 of [BHBK24], pair by pair (Dyck: the independent stack check on the interleaving)."""
    f = problem.evaluate
    if isinstance(problem, DyckProblem):
        decode = problem.language.decode

        def f(x, y):
            return int(is_dyck(decode(DyckProblem.interleave(x, y)[0]), problem.types, problem.depth))
    items = list(zip(A, B))
    if any(f(x, y) != value for x, y in items):
        return False
    return all(f(x1, y2) != value or f(x2, y1) != value
               for (i, (x1, y1)), (j, (x2, y2)) in itertools.combinations(enumerate(items), 2))


@pytest.mark.parametrize("name,n", [("eq", 3), ("eq", 4), ("disj", 3), ("disj", 4), ("dyck22", 4), ("dyck22", 6),
                                    ("dyck22", 8)])
def test_verify_agrees_with_brute_force(name, n):
    fs = fooling_set(name, n)
    A, B = fs.pairs()
    result = fs.verify()
    assert result.ok and brute_fooling(fs.problem, A, B, fs.value)
    assert "pairwise" in result.method
    if name == "dyck22":
        assert "structural" in result.method


def test_index_one_way_rows_are_distinct_brute_force():
    fs = fooling_set("index", 4)
    A, _ = fs.pairs()
    rows = {tuple(fs.problem.evaluate(a, b) for b in range(4)) for a in A}
    assert len(rows) == 16 and fs.verify().ok


def test_broken_sets_fail_verification():
    # (x, x) is not a fooling set for DISJ with value 1: f(0, 0) = 0
    fake = EqualityDiagonal(make_problem("disj", 3), 8, "two-way", 1, "fake", "test", "", "contiguous")
    result = fake.verify()
    assert not result.ok and result.counterexample["member"] == 0
    # (x, complement x) with value 0 for EQ: the crossings are 0 both ways for most pairs
    fake = DisjointComplements(make_problem("eq", 3), 8, "two-way", 0, "fake", "test", "", "contiguous")
    result = fake.verify()
    assert not result.ok and len(result.counterexample["members"]) == 2
    i, j = result.counterexample["members"]
    crossed = cross(fake, i, j)
    assert all(c.value == 0 for c in crossed)


def test_structural_check_catches_deeper_dyck():
    """Dyck-(2,3) members are not a fooling set: odd halves no longer fix the even half."""
    problem = DyckProblem(8, 2, 3)
    fake = DyckMembers(problem, count_dyck(8, 2, 3), "two-way", 1, "fake", "test", "", "odd-even")
    result = fake.verify()
    assert not result.ok and "completions" in result.method
    A, B = fake.pairs()
    assert not brute_fooling(problem, A, B, 1)


def test_structural_check_runs_member_by_member_at_larger_N():
    result = fooling_set("dyck22", 16).verify()
    assert result.ok and result.checks == 2 ** 15 and "structural" in result.method


def test_verification_limits_name_the_largest_size():
    with pytest.raises(InputError, match=r"largest n that runs is 12"):
        fooling_set("eq", 13).verify()
    with pytest.raises(InputError, match=r"largest n that runs is 12"):
        fooling_set("disj", 20).verify()
    with pytest.raises(InputError, match=rf"largest n that runs is {INDEX_TABLE_MAX_N}"):
        fooling_set("index", INDEX_TABLE_MAX_N + 1).verify()
    with pytest.raises(InputError, match=rf"largest N that runs is {DYCK_STRUCTURAL_MAX_N}"):
        fooling_set("dyck22", DYCK_STRUCTURAL_MAX_N + 2).verify()
    assert largest_verifiable_n("eq") == 12


@pytest.mark.parametrize("name,n,match", [("dyck22", 7, "even"), ("nope", 4, "unknown problem"),
                                          ("eq", 0, "at least 1"), ("dyck22", 0, "at least 2"),
                                          ("eq", 10 ** 6, "largest n that runs")])
def test_bad_input(name, n, match):
    with pytest.raises(InputError, match=match):
        fooling_set(name, n)


def test_bounds_and_not_applicable():
    index = fooling_set("index", 8)
    assert index.bound_for("one-way").bits == 8 and index.bound_for("one-way").applies
    two_way = index.bound_for("two-way")
    assert not two_way.applies and two_way.bits == 3 and "one-way" in two_way.reason
    assert two_way.satisfied_by(100) is None
    eq = fooling_set("eq", 8)
    assert eq.bound_for("two-way").applies and eq.lower_bound.conditions.direction == "two-way"
    d = fooling_set("dyck22", 10).to_dict()
    assert (d["size"], d["log2_size"], d["lower_bound_bits"], d["verified"]) == (512, 9.0, 9, None)


# ---- crossings ---------------------------------------------------------------------
def test_cross_gives_the_wrong_answers_a_collision_forces():
    eq = fooling_set("eq", 4)
    crossed = cross(eq, 3, 9)
    assert [c.value for c in crossed] == [0, 0]
    assert np.array_equal(crossed[0].alice, eq.member(3)[0]) and np.array_equal(crossed[0].bob, eq.member(9)[1])
    disj = fooling_set("disj", 4)
    assert any(c.value != 0 for c in cross(disj, 1, 2))
    dyck = fooling_set("dyck22", 8)
    for i, j in [(0, 1), (5, 100), (127, 3)]:
        a, b = cross(dyck, i, j)
        assert a.value == 0 and b.value == 0                     # Lemma 1: both crossings leave Dyck-(2,2)
    index = fooling_set("index", 5)
    (xa, b1, v1), (xb, b2, v2) = cross(index, 6, 7)
    assert b1 == b2 and v1 != v2 and xa[b1] != xb[b1]
    with pytest.raises(InputError):
        cross(eq, 2, 2)
