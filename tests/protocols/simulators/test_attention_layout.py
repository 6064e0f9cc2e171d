"""The attention exchange's plan from the partition's counts (make_layout, what ``commsim budget`` plans) is
the plan laid out position by position (make_plan), and partition_counts refuses exactly what
validate_partition refuses."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.contract import InputError, NotApplicable, Shape
from commsim.core.precision import FloatFormat
from commsim.plugins import load_plugins
from protocols.models.attention_config import AttentionConfig
from protocols.simulators.attention import (
    ATTENTION_EXCHANGE,
    PartitionError,
    make_plan,
    theorem_count,
)
from protocols.simulators.attention.exchange import _assumptions, _message_plan
from protocols.simulators.attention.partition import (
    partition_counts,
    validate_partition,
)
from protocols.simulators.attention.plan import ExchangeLayout, make_layout
from protocols.simulators.attention.public_query import (
    PUBLIC_QUERY,
    PublicQueryLayout,
    public_query_layout,
    public_query_plan,
)

RANGES = st.builds(range, st.integers(-4, 70), st.integers(-4, 70), st.integers(-4, 4).filter(bool))
LISTS = st.one_of(st.lists(st.integers(-3, 70), max_size=40),
                  st.lists(st.sampled_from([0.0, 1.0, 2.5, 3.0, 7.0]), max_size=6))
PARTITIONS = st.one_of(RANGES, LISTS)


def _outcome(f, *args):
    """What ``f(*args)`` gives, or the refusal it raises (its class and message)."""
    try:
        return f(*args)
    except InputError as exc:              # PartitionError, or the shape's refusal of the length
        return ("refused", type(exc).__name__, str(exc), exc.param)


@settings(max_examples=400, deadline=None)
@given(seq_len=st.integers(1, 64), alice=PARTITIONS, data=st.data())
def test_partition_counts_are_the_listed_partitions(seq_len, alice, data):
    query = data.draw(st.integers(0, seq_len - 1), label="query")
    listed = _outcome(validate_partition, seq_len, alice)
    counted = _outcome(partition_counts, seq_len, alice, query)
    if isinstance(listed[0], str):
        assert counted == listed
    else:
        a, b = listed
        assert counted == (query in a, len(a), len(b))


CONFIGS = st.builds(
    lambda heads, width, fmt, dim, attend_self, residual, division: (
        AttentionConfig.fixed(heads, width, fmt, dim=dim, attend_self=attend_self, division=division,
                              residual=residual) if isinstance(fmt, int) else
        AttentionConfig(heads, width, FloatFormat(fmt), dim=dim, attend_self=attend_self, division=division,
                        residual=residual)),
    st.integers(1, 3), st.integers(1, 5), st.one_of(st.integers(2, 53), st.sampled_from(["float16", "float32"])),
    st.integers(6, 12), st.booleans(), st.sampled_from([None, (0,), (1, 3)]), st.sampled_from(["once", "per-weight"]))


def _layout_fields(plan) -> dict:
    return {f.name: getattr(plan, f.name) for f in dataclasses.fields(ExchangeLayout)}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=CONFIGS, seq_len=st.integers(1, 64), alice=PARTITIONS, data=st.data())
def test_layout_is_the_built_plan_without_its_positions(cfg, seq_len, alice, data):
    """Every message, width, mode and owner of make_layout is make_plan's, and so are the engine's view of it
    (bits per direction, rounds, text) and the papers' count; a refusal is the same refusal."""
    query = data.draw(st.one_of(st.none(), st.integers(-1, seq_len)), label="query")
    built = _outcome(make_plan, cfg, seq_len, alice, query)
    laid = _outcome(make_layout, cfg, seq_len, alice, query)
    if isinstance(built, tuple):
        assert laid == built
        return
    assert type(laid) is ExchangeLayout
    assert _layout_fields(laid) == _layout_fields(built)
    assert (laid.total_bits, laid.alice_to_bob, laid.bob_to_alice, laid.rounds, laid.itemize()) == \
        (built.total_bits, built.alice_to_bob, built.bob_to_alice, built.rounds, built.itemize())
    assert _message_plan(laid) == _message_plan(built) and theorem_count(laid) == theorem_count(built)


TASKS = ["dyck22-fooling", "eq-ineq", "index-idxl", "disj-match3", "disj-qsa", "index-assoc", "compose-index"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(task=st.sampled_from(TASKS), size=st.integers(1, 3000), m=st.integers(1, 6), p=st.integers(2, 53),
       heads=st.integers(1, 4), dtype=st.sampled_from([None, "float16", "bfloat16", "float32", "float64"]))
def test_budget_plan_is_the_plan_laid_out_position_by_position(task, size, m, p, heads, dtype):
    """The simulator's plan (what budget judges) equals the message plan of make_plan on the task's split."""
    reduction = load_plugins().get("reduction", task)
    size = max(size, reduction.min_size)
    split = reduction.split(reduction.length_for_size(size))
    fmt = p if dtype is None else FloatFormat(dtype)
    got = ATTENTION_EXCHANGE.plan(Shape(m, fmt, heads, {"dim": 8}), split)
    config = (AttentionConfig.fixed(heads, m, p, dim=8) if dtype is None else
              AttentionConfig(heads, m, FloatFormat(dtype), dim=8))
    built = make_plan(config, split.seq_len, split.alice_positions, int(split.output_positions[0]))
    assert got == _message_plan(built, assumptions={**_assumptions(config), "mode": built.mode,
                                                    "plan_formula": theorem_count(built)[0]})


def test_a_range_past_the_length_is_refused_without_listing_it():
    """A range of Alice's positions is checked from its ends: one far past N is refused at once."""
    with pytest.raises(PartitionError, match=r"position 1152921504606846975 is outside 0\.\.9"):
        partition_counts(10, range(1 << 60), 3)
    assert partition_counts(1 << 20, range(0, 1 << 20, 2), (1 << 20) - 1) == (False, 1 << 19, 1 << 19)


def _refusal(f, *args):
    """What ``f(*args)`` gives, or its NotApplicable refusal."""
    try:
        return f(*args)
    except NotApplicable as exc:
        return ("not applicable", str(exc), exc.param)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(heads=st.integers(1, 3), width=st.integers(1, 4), p=st.integers(2, 9), dim=st.integers(1, 5),
       fmt=st.sampled_from([None] * 4 + ["float16"]), division=st.sampled_from(["once"] * 4 + ["per-weight"]),
       seq_len=st.integers(1, 16), data=st.data())
def test_public_query_layout_is_the_built_plan_without_its_positions(heads, width, p, dim, fmt, division, seq_len,
                                                                     data):
    """public_query_layout's message is public_query_plan's (as budget built it: Alice's distinct positions,
    Bob the rest), and so is every refusal."""
    config = (AttentionConfig.fixed(heads, width, p, dim=dim, division=division) if fmt is None else
              AttentionConfig(heads, width, FloatFormat(fmt), dim=dim, division=division))
    query = data.draw(st.integers(0, seq_len - 1), label="query")
    alice = data.draw(st.one_of(st.builds(range, st.integers(0, seq_len), st.integers(0, seq_len)),
                                st.lists(st.integers(0, seq_len - 1), max_size=2 * seq_len)), label="alice")
    public = data.draw(st.sampled_from([(query,), (query,), (), tuple(range(seq_len))]), label="public")
    held = set(alice)
    built = _refusal(public_query_plan, config, seq_len, sorted(held),
                     [i for i in range(seq_len) if i not in held], query, public)
    laid = _refusal(public_query_layout, config, seq_len, alice, query, public)
    if isinstance(built, tuple):
        assert laid == built
        return
    assert type(laid) is PublicQueryLayout
    assert {f.name: getattr(laid, f.name) for f in dataclasses.fields(PublicQueryLayout)} == \
        {f.name: getattr(built, f.name) for f in dataclasses.fields(PublicQueryLayout)}
    assert PUBLIC_QUERY._message_plan(laid) == PUBLIC_QUERY._message_plan(built)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(size=st.integers(1, 3000), m=st.integers(1, 4), p=st.integers(2, 12), heads=st.integers(1, 3),
       dim=st.integers(1, 8))
def test_budget_public_query_plan_is_the_built_plan(size, m, p, heads, dim):
    """For composition (the public-query variant budget plans), the simulator's plan is the message of
    public_query_plan on the task's split, listed position by position."""
    reduction = load_plugins().get("reduction", "compose-index")
    split = reduction.split(reduction.length_for_size(max(size, reduction.min_size)))
    got = _refusal(PUBLIC_QUERY.plan, Shape(m, p, heads, {"dim": dim}), split)
    held, N = set(split.alice_positions), split.seq_len
    built = _refusal(public_query_plan, AttentionConfig.fixed(heads, m, p, dim=dim), N, sorted(held),
                     [i for i in range(N) if i not in held], int(split.output_positions[0]), split.public_positions)
    assert got == (built if isinstance(built, tuple) else PUBLIC_QUERY._message_plan(built))
