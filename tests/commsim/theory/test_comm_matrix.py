"""Communication matrices, ranks and fooling-set search, cross-checked by brute force for n <= 8."""
from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from commsim.core.errors import InputError
from commsim.theory.comm_matrix import (
    MAX_MATRIX_CELLS,
    analyze_matrix,
    communication_matrix,
    distinct_rows,
    is_fooling_set,
    largest_matrix_n,
    log_rank_bits,
    one_way_bits,
    rank_gf2,
    rank_mod_p,
    rank_real,
    search_fooling_set,
)


# ---- independent brute force ------------------------------------------------------
def brute_rank_gf2(M) -> int:
    """Elimination on Python integers used as bit rows (independent of the packed numpy version)."""
    rows = [int("".join(str(int(v)) for v in row) or "0", 2) for row in np.asarray(M)]
    rank = 0
    while rows:
        pivot = max(rows)
        rows.remove(pivot)
        if pivot == 0:
            break
        rank += 1
        top = pivot.bit_length() - 1
        rows = [r ^ pivot if (r >> top) & 1 else r for r in rows]
    return rank


def brute_rank_rational(M) -> int:
    """Exact rank over Q with Fractions."""
    A = [[Fraction(int(v)) for v in row] for row in np.asarray(M)]
    rank, cols = 0, len(A[0]) if A else 0
    for c in range(cols):
        pivot = next((r for r in range(rank, len(A)) if A[r][c] != 0), None)
        if pivot is None:
            continue
        A[rank], A[pivot] = A[pivot], A[rank]
        for r in range(len(A)):
            if r != rank and A[r][c] != 0:
                factor = A[r][c] / A[rank][c]
                A[r] = [a - factor * b for a, b in zip(A[r], A[rank])]
        rank += 1
    return rank


def brute_matrix(name: str, n: int) -> np.ndarray:
    cm = communication_matrix(name, n)
    p = cm.problem
    return np.array([[p.evaluate(a, b.item() if np.ndim(b) == 0 else b) for b in cm.bob_inputs]
                     for a in cm.alice_inputs], dtype=np.uint8)


SMALL = [("index", n) for n in (1, 2, 3, 5)] + [("eq", n) for n in (1, 2, 3)] + [("disj", n) for n in (1, 2, 3)] \
    + [("dyck22", N) for N in (2, 4)]


@pytest.mark.parametrize("name,n", SMALL)
def test_matrix_matches_pointwise_evaluation(name, n):
    assert np.array_equal(communication_matrix(name, n).matrix, brute_matrix(name, n))


def is_dyck22(text: str) -> bool:
    """A plain stack check for Dyck-(2,2)."""
    stack = []
    for c in text:
        if c in "([":
            stack.append(c)
            if len(stack) > 2:
                return False
        elif not stack or stack.pop() != {")": "(", "]": "["}[c]:
            return False
    return not stack


def test_dyck_matrix_entries_match_independent_stack_check():
    cm = communication_matrix("dyck22", 6)
    lang = cm.problem.language
    for i in range(0, 64, 7):
        for j in range(64):
            s = "".join(a + b for a, b in zip(lang.decode(cm.alice_inputs[i]), lang.decode(cm.bob_inputs[j])))
            assert cm.matrix[i, j] == is_dyck22(s)


CASES = [("index", n) for n in range(1, 9)] + [("eq", n) for n in range(1, 9)] + \
    [("disj", n) for n in range(1, 9)] + [("dyck22", N) for N in (2, 4, 6, 8)]


@pytest.mark.parametrize("name,n", CASES)
def test_ranks_against_brute_force_and_known_values(name, n):
    M = communication_matrix(name, n).matrix
    known = {"index": n, "eq": 2 ** n, "disj": 2 ** n - 1, "dyck22": 2 ** (n - 1)}[name]
    assert rank_real(M) == known
    assert rank_gf2(M) == brute_rank_gf2(M) == known          # these matrices have equal ranks over GF(2)
    assert rank_mod_p(M) == known
    if M.size <= 32 * 32:
        assert brute_rank_rational(M) == known
    rows = len({tuple(r) for r in M.tolist()})
    assert distinct_rows(M) == rows
    one_way = {"index": n, "eq": n, "disj": n, "dyck22": n}[name]  # Dyck: 2^(N-1) + 1 distinct rows -> N bits
    assert one_way_bits(M) == one_way


def test_ranks_on_random_matrices():
    rng = np.random.default_rng(7)
    for trial in range(60):
        r, c = rng.integers(1, 14, size=2)
        M = (rng.random((r, c)) < rng.choice([0.2, 0.5, 0.8])).astype(np.uint8)
        if trial % 3 == 0:                                           # force dependencies
            M = np.concatenate([M, M[: max(1, r // 2)] ^ M[-max(1, r // 2):]], axis=0)
        assert rank_gf2(M) == brute_rank_gf2(M)
        assert rank_mod_p(M) == brute_rank_rational(M) == rank_real(M)
        big = rng.integers(-5, 6, size=(r, c))
        assert rank_mod_p(big) == brute_rank_rational(big)
    wide = (rng.random((3, 150)) < 0.5).astype(np.uint8)
    assert rank_gf2(wide) == brute_rank_gf2(wide)
    assert rank_gf2(np.zeros((0, 0))) == rank_real(np.zeros((4, 0))) == 0


def brute_is_fooling(M, rows, cols, value) -> bool:
    cells = list(zip(rows, cols))
    if any(M[x, y] != value for x, y in cells):
        return False
    return all(M[x1, y2] != value or M[x2, y1] != value for (x1, y1), (x2, y2) in itertools.combinations(cells, 2))


def test_is_fooling_set_matches_definition():
    rng = np.random.default_rng(3)
    for _ in range(200):
        M = (rng.random((6, 6)) < 0.5).astype(np.uint8)
        k = int(rng.integers(1, 6))
        rows, cols = rng.integers(0, 6, size=k), rng.integers(0, 6, size=k)
        for value in (0, 1):
            assert is_fooling_set(M, rows, cols, value) == brute_is_fooling(M, rows, cols, value)


@pytest.mark.parametrize("name,n,expected", [("eq", 6, 64), ("disj", 6, 64), ("dyck22", 6, 32), ("index", 6, 6),
                                             ("eq", 8, 256), ("dyck22", 8, 128)])
def test_search_finds_a_verified_large_fooling_set(name, n, expected):
    M = communication_matrix(name, n).matrix
    found = search_fooling_set(M, restarts=2, seed=1)
    assert found.verified and is_fooling_set(M, found.rows, found.cols, found.value)
    if found.size <= 64:
        assert brute_is_fooling(M, found.rows.tolist(), found.cols.tolist(), found.value)
    assert found.size >= expected
    # members of a fooling set sit in distinct rows and distinct columns
    assert len(set(found.rows.tolist())) == len(set(found.cols.tolist())) == found.size <= min(M.shape)
    again = search_fooling_set(M, restarts=2, seed=1)
    assert np.array_equal(again.rows, found.rows) and np.array_equal(again.cols, found.cols)


def test_fooling_search_respects_the_log_rank_sandwich():
    """A 1-fooling set S has |S| <= rank(M)^2: on S the entrywise product of the submatrix and its
    transpose is the identity (Dietzfelbinger, Hromkovič, Schnitger 1996)."""
    for name, n in [("eq", 5), ("disj", 5), ("dyck22", 6)]:
        M = communication_matrix(name, n).matrix
        found = search_fooling_set(M, restarts=2, seed=0, values=(1,))
        assert found.size <= rank_real(M) ** 2


def test_analyze_matrix_report():
    report = analyze_matrix("dyck22", 6)
    d = report.to_dict()
    assert (d["rows"], d["cols"], d["ones"]) == (64, 64, 32)
    assert d["rank_real"] == d["rank_gf2"] == d["rank_mod_p"] == 32
    assert d["log_rank_bits"] == 5 and d["one_way_bits"] == 6 and d["distinct_rows"] == 33
    assert d["fooling_search"]["size"] == 32 and d["known_fooling_size"] == 32
    assert d["two_way_lower_bound_bits"] == 5
    assert log_rank_bits(1) == 0 and log_rank_bits(5) == 3


def test_size_limits_name_the_largest_n():
    assert largest_matrix_n("eq") == 10 and largest_matrix_n("dyck22") == 10 and largest_matrix_n("index") == 16
    with pytest.raises(InputError, match="largest n that runs is 10"):
        communication_matrix("eq", 11)
    with pytest.raises(InputError, match="even"):
        communication_matrix("dyck22", 5)
    with pytest.raises(InputError, match="unknown problem"):
        communication_matrix("xor", 3)
    with pytest.raises(InputError):
        communication_matrix("eq", 0)
    assert MAX_MATRIX_CELLS == 1 << 20
