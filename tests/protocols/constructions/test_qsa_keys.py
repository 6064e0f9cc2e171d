"""construct:qsa:keys=rip: sign keys searched until every q-set has its w_S, the property re-checked here in
exact rational arithmetic (independently of the module's integer check), the layer against qSA and through
the attention protocol."""
from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commsim.core.errors import InputError
from commsim.runs.run import run_reduction
from commsim.plugins import make_model
from protocols.constructions.qsa import all_qsa, build_qsa, qsa_average, sample_qsa
from protocols.constructions.qsa_keys import (
    RIP_MAX_Q,
    closed_form_failures,
    exact_check,
    find_rip_keys,
    solve_integer,
    verify_keys,
)


def _fraction_solve(M, b):
    """M x = b over the rationals (the test's own elimination): Gauss-Jordan on the augmented rows scaled to
    integers (each row kept divided by the gcd of its entries), x_i = row i's last entry over its pivot."""
    n = len(b)
    scale = math.lcm(*(Fraction(v).denominator for v in b))
    rows = [[int(v) * scale for v in M[i]] + [int(Fraction(b[i]) * scale)] for i in range(n)]
    for c in range(n):
        p = next(r for r in range(c, n) if rows[r][c] != 0)
        rows[c], rows[p] = rows[p], rows[c]
        for r in range(n):
            if r != c and rows[r][c] != 0:
                f, g = rows[c][c], rows[r][c]
                rows[r] = [f * a - g * v for a, v in zip(rows[r], rows[c])]
                d = math.gcd(*rows[r])
                if d > 1:
                    rows[r] = [a // d for a in rows[r]]
    return [Fraction(rows[i][n], rows[i][i]) for i in range(n)]


def assert_key_property(keys) -> None:
    """For every q-set S: <w_S, u_j> = 1 on S, |<w_S, u_j>| <= 1/2 off S and ||w_S||^2 <= 4q, exactly; and the
    float w_S the layer embeds matches the exact one."""
    s = keys.signs.astype(np.int64)
    N, k, q = keys.N, keys.k, keys.q
    assert set(np.unique(s)) <= {-1, 1}
    P = s @ s.T
    U = keys.keys
    for S in combinations(range(N), q):
        A, b = keys.extra.get(S, (S, (Fraction(1),) * q))
        x = _fraction_solve(P[np.ix_(A, A)].tolist(), list(b))
        # <w_S, u_j> = (P[j, A] . X) / D exactly, X = D x integers over the common denominator D (Python ints)
        D = math.lcm(*(xa.denominator for xa in x))
        X = np.array([int(xa * D) for xa in x], dtype=object)
        inner = P[:, list(A)].astype(object) @ X
        assert all(inner[j] == D for j in S), S
        assert all(2 * abs(inner[j]) <= D for j in range(N) if j not in S), S
        norm2 = k * sum(Fraction(bi) * xi for bi, xi in zip(b, x))
        assert norm2 <= 4 * q, S
        w = keys.query(S)
        assert np.allclose(U @ w, [int(v) / D for v in inner], atol=1e-9)
        assert abs(float(w @ w) - float(norm2)) < 1e-9


@settings(max_examples=25, deadline=None)
@given(q=st.integers(1, 3), extra=st.integers(1, 10), seed=st.integers(0, 1000))
def test_found_keys_have_the_property_on_every_set(q, extra, seed):
    keys = find_rip_keys(q + extra, q, seed)
    assert keys.sets_verified == math.comb(keys.N, q)
    assert_key_property(keys)


@pytest.mark.parametrize("N,q", [(64, 1), (64, 2), (24, 3), pytest.param(32, 3, marks=pytest.mark.slow),
                                 pytest.param(64, 3, marks=pytest.mark.slow)])
def test_keys_at_64_are_verified_and_far_narrower_than_lemma2(N, q):
    keys = find_rip_keys(N, q, 0)
    assert keys.sets_verified == math.comb(N, q)
    assert verify_keys(keys.signs, q) is not None
    if keys.sets_verified <= 5000:                     # the test's own rational re-check of every set
        assert_key_property(keys)
    assert 3 * keys.k < build_qsa(N, q).width
    assert keys.tried[-1][1] is True or any(ok and k == keys.k for k, ok in keys.tried)


def test_the_check_rejects_keys_without_the_property():
    rng = np.random.default_rng(0)
    s = rng.choice([-1, 1], size=(6, 12))
    s[3] = s[1]                                        # u_3 = u_1: S = {1} cannot have |<w, u_3>| <= 1/2
    assert verify_keys(s, 1) is None
    P = s @ s.T
    assert exact_check(P, (1,), (1,), (Fraction(1),), 12) is False
    s[3] = -s[1]
    assert verify_keys(s, 2) is None                   # S = {1, 3}: <w, u_1> = 1 = -<w, u_3> impossible
    narrow = rng.choice([-1, 1], size=(40, 4))         # 40 keys in 4 dimensions: many repeat up to sign
    repeated = [i for i in range(40) if any(j != i and abs(narrow[i] @ narrow[j]) == 4 for j in range(40))]
    assert repeated and list(closed_form_failures(narrow @ narrow.T, np.arange(40)[:, None], 4)) == repeated
    assert verify_keys(narrow, 1) is None


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5).flatmap(lambda n: st.tuples(
    st.lists(st.lists(st.integers(-9, 9), min_size=n, max_size=n), min_size=n, max_size=n),
    st.lists(st.integers(-3, 3), min_size=n, max_size=n))))
def test_integer_cramer_matches_rational_elimination(system):
    M, b2 = system
    y, D = solve_integer(M, b2)
    det = D // 2
    if det == 0:
        return
    x = _fraction_solve(M, [Fraction(v, 2) for v in b2])
    assert [Fraction(v, D) for v in y] == x


@pytest.mark.parametrize("N,q", [(6, 1), (8, 2), (7, 3)])
def test_rip_layer_error_below_one_over_4q_on_every_input(N, q):
    model = build_qsa(N, q, keys="rip")
    T = all_qsa(N, q)
    assert np.abs(model.forward(T)[:, 0] - qsa_average(T, q, "generic")).max() < 1 / (4 * q)
    assert model.info["keys"] == "rip" and model.info["sets_verified"] == math.comb(N, q)
    assert model.width == model.info["k"] < build_qsa(N, q).width


@pytest.mark.parametrize("q", [1, 2, pytest.param(3, marks=pytest.mark.slow)])
def test_rip_layer_on_seeded_samples_at_64(q):
    model = build_qsa(64, q, keys="rip")
    T = sample_qsa(np.random.default_rng(q), 64, 64, q)
    assert np.abs(model.forward(T)[:, 0] - qsa_average(T, q, "generic")).max() < 1 / (4 * q)


@pytest.mark.parametrize("q", [1, 2, 3])
def test_disj_qsa_with_rip_keys_through_the_attention_protocol(q):
    report = run_reduction("disj-qsa", f"construct:qsa:q={q},keys=rip", q).to_dict()
    assert report["model_correct"] is True and report["protocol_matches_model"] is True
    assert f"all C({2 * q + 1}, {q}) = {math.comb(2 * q + 1, q)} q-sets verified" in report["model"]
    assert report["bits_used"] >= report["lower_bound_bits"] == q


def test_spec_reads_keys_and_refuses_bad_ones():
    model = make_model("construct:qsa:q=2,length=9,keys=rip")
    assert model.info["keys"] == "rip" and model.info["seq_len"] == 9
    assert make_model("construct:qsa:q=2,length=9").info["keys"] == "lemma2"
    with pytest.raises(InputError, match="keys"):
        make_model("construct:qsa:q=2,length=9,keys=candes")
    with pytest.raises(InputError, match="keys=rip"):
        build_qsa(RIP_MAX_Q + 3, RIP_MAX_Q + 1, keys="rip")
    with pytest.raises(InputError, match="C\\(4096, 3\\)"):
        find_rip_keys(4096, 3, 0)
