"""Randomized lower bounds: the INDEX formula, and every registered reduction's bound says whether it
survives randomness (``bound_randomized``) and why."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from commsim.core.errors import InputError, NotApplicable
from commsim.runs.stages import (
    encode_instances,
    lower_bound,
    prepare,
    select_instances,
)
from commsim.runs.run import run_reduction
from commsim.plugins import load_plugins
from commsim.theory.bounds import (
    RANDOMIZED,
    binary_entropy,
    index_one_way_randomized_bits,
    index_one_way_randomized_bound,
    randomness,
)
from commsim.theory.comm_matrix import communication_matrix
from commsim.theory.problems import make_problem
from protocols.baseline.randomized import SampledIndex


def test_binary_entropy():
    assert binary_entropy(0) == binary_entropy(1) == 0 and binary_entropy(0.5) == 1
    assert binary_entropy(0.11) == pytest.approx(0.4999, abs=1e-3)
    assert binary_entropy(0.2) == pytest.approx(binary_entropy(0.8))
    with pytest.raises(ValueError):
        binary_entropy(1.5)


def test_index_one_way_randomized_bits():
    assert index_one_way_randomized_bits(1000, 0.0) == 1000            # no error: the deterministic n bits
    assert index_one_way_randomized_bits(1000, 0.11) == math.ceil(1000 * (1 - binary_entropy(0.11)))
    assert index_one_way_randomized_bits(1024, 0.01) == 942            # (1 - H2(0.01))·1024 = 941.27
    values = [index_one_way_randomized_bits(256, e) for e in (0.0, 0.01, 0.05, 0.1, 0.25, 0.4, 0.49)]
    assert values == sorted(values, reverse=True) and values[-1] <= 1   # shrinks to nothing as eps -> 1/2
    with pytest.raises(ValueError):
        index_one_way_randomized_bits(8, 0.5)
    bound = index_one_way_randomized_bound(64, 0.1)
    assert bound.kind == "randomized" and bound.randomized is True and not bound.conditions.deterministic
    assert bound.satisfied_by(bound.bits) and not bound.satisfied_by(bound.bits - 1)


@given(n=st.integers(1, 4096), eps=st.floats(0.0, 0.49))
def test_the_sampling_protocol_never_beats_the_bound(n, eps):
    """The window protocol sends s = ceil(n(1 - 2 eps)) bits at error (1 - s/n)/2; as H2(x) >= 2x on [0, 1/2],
    it always meets (1 - H2(error))·n: the bound and the protocol are consistent for every n and eps."""
    proto = SampledIndex(make_problem("index", n), max(eps, 1e-9))
    assert proto.s >= proto.randomized_bound().bits
    assert proto.promised_error <= max(eps, 1e-9) + 1e-12


# ---- every registered reduction states whether its bound survives randomness ------------------------
SPECS = (None, "attention:heads=1,width=2,precision=8", "lstm:width=2,precision=4")


def _bounds():
    """(reduction id, spec, bound) for every registered reduction and every model kind it accepts."""
    registry = load_plugins()
    out = []
    for rid in registry.names("reduction"):
        reduction = registry.get("reduction", rid)
        if reduction.judged_directly:    # no protocol: the bound of its own run, below and at the width bound
            for spec in ("fnn:width=3,precision=16", "fnn:width=4,precision=16"):
                out.append((rid, spec, run_reduction(rid, spec, 8, instances=2, certify=False).lower_bound))
            continue
        for spec in SPECS:
            try:
                setup = prepare(rid, spec, reduction.default_n)
            except (NotApplicable, InputError):
                continue
            chosen = select_instances(setup.problem, 4, 0)
            try:
                encoded = encode_instances(setup, chosen)
            except NotApplicable:
                continue
            out.append((rid, spec, lower_bound(setup, encoded)))
            N = reduction.length_for_size(reduction.default_n)
            try:
                out.append((rid, f"{spec} (length bound)", reduction.length_bound(setup.simulator, N)))
            except NotImplementedError:   # a reduction without a bound as a function of N (not for budget)
                pass
            for senders in ({"alice"}, {"bob"}, {"alice", "bob"}):
                try:
                    out.append((rid, f"{spec} {sorted(senders)}", reduction.bound(reduction.default_n,
                                                                                    frozenset(senders))))
                except NotImplementedError:   # a reduction whose bound reads the model (it words lower_bound)
                    break
    return out


def test_every_registered_reduction_states_whether_its_bound_survives_randomness():
    bounds = _bounds()
    ids = {rid for rid, _, _ in bounds}
    assert {"index-idxl", "index-assoc", "index-qsa", "eq-ineq", "disj-mqar", "disj-match3", "disj-qsa",
            "dyck22-fooling"} <= ids and ids == set(load_plugins().names("reduction"))
    for rid, spec, bound in bounds:
        assert bound.randomized_reason, (rid, spec)
        if bound.applies:
            assert isinstance(bound.randomized, bool), (rid, spec, bound)
        d = bound.to_dict()
        assert d["randomized"] is bound.randomized and d["randomized_reason"] == bound.randomized_reason
    by_problem = {}
    for rid, spec, bound in bounds:
        if bound.applies:
            by_problem.setdefault(rid.split("-")[0], set()).add(bound.randomized)
    assert by_problem["eq"] == {False} and by_problem["dyck22"] == {False}
    assert by_problem["disj"] == {True} and by_problem["index"] == {True}


def test_the_randomness_table():
    assert set(RANDOMIZED) >= {"index", "index-bob", "index-two-way", "eq", "disj", "dyck22"}
    assert randomness("eq") == {"randomized": False, "randomized_reason": RANDOMIZED["eq"][1]}
    assert "Kalyanasundaram" in RANDOMIZED["disj"][1] and "Omega(n)" in RANDOMIZED["disj"][1]


@pytest.mark.parametrize("N", [4, 6, 8, 10])
def test_dyck22_odd_even_is_equality_in_disguise(N):
    """The reason given for dyck22: Bob's half of a member fixes Alice's half (at most one 1 per row and per
    column of the communication matrix), so membership is an equality test that fingerprints decide."""
    M = np.asarray(communication_matrix("dyck22", N).matrix)
    assert M.sum() == 2 ** (N - 1) and M.sum(axis=0).max() == 1 and M.sum(axis=1).max() == 1
