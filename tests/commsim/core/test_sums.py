"""Integers of any width as messages: two's complement (exact sums, fixed-point codes) and unsigned
counts.  The reference is Python's own ``format`` of an integer's two's complement."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.contract.arithmetic import arithmetic_for
from commsim.core.bits import Bits, BitsError
from commsim.core.precision import FixedPoint, FloatFormat
from commsim.core.sums import pack_count, pack_signed, unpack_count, unpack_signed

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def twos_complement(value: int, width: int) -> str:
    return format(value & ((1 << width) - 1), f"0{width}b")


@st.composite
def signed_fields(draw, max_width: int = 200):
    """A width and integers of that width, the extremes included."""
    width = draw(st.integers(1, max_width))
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    values = draw(st.lists(st.integers(lo, hi) | st.sampled_from([lo, hi, 0, max(lo, -1)]), max_size=12))
    return width, values


@FAST
@given(signed_fields(), st.text("01", max_size=11))
def test_signed_round_trip_at_any_width_and_offset(field, prefix):
    width, values = field
    b = pack_signed(values, width)
    assert str(b) == "".join(twos_complement(v, width) for v in values)
    assert [int(v) for v in unpack_signed(b, width)] == values
    shifted = Bits.from_str(prefix) + b + Bits.from_str("1")
    assert [int(v) for v in unpack_signed(shifted, width, count=len(values), offset=len(prefix))] == values
    if width <= 64:  # int64 when it fits, exact Python integers beyond
        assert unpack_signed(b, width).dtype == np.int64
    as_numpy = np.array(values, dtype=object if width > 63 else np.int64)
    assert pack_signed(as_numpy, width) == b


@pytest.mark.parametrize("width", list(range(1, 80)))
def test_pack_signed_every_width(width):
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    values = sorted({lo, hi, 0, max(lo, -1), min(hi, 1), lo // 3, hi // 3})
    b = pack_signed(values, width)
    assert str(b) == "".join(twos_complement(v, width) for v in values)
    assert [int(v) for v in unpack_signed(b, width)] == values
    assert [int(v) for v in unpack_signed(Bits.from_str("1") + b, width, offset=1)] == values
    for bad in (lo - 1, hi + 1):
        with pytest.raises(BitsError):
            pack_signed([bad], width)


def test_pack_signed_refuses_non_integers():
    for bad in ([1.5], [math.inf], np.array([0.5]), ["a"]):
        with pytest.raises(BitsError):
            pack_signed(bad, 12)
    with pytest.raises(BitsError):
        pack_signed([0], 0)


@FAST
@given(st.integers(1, 200), st.data())
def test_count_round_trip(width, data):
    value = data.draw(st.integers(0, (1 << width) - 1) | st.sampled_from([0, (1 << width) - 1]))
    b = pack_count(value, width)
    assert str(b) == format(value, f"0{width}b")
    assert unpack_count(b, width) == value
    assert unpack_count(b + Bits.from_str("101"), width) == value  # the count is the first ``width`` bits
    with pytest.raises(BitsError):
        pack_count(1 << width, width)
    with pytest.raises(BitsError):
        pack_count(-1, width)


def signed_width(lo: int, hi: int) -> int:
    """The fewest two's-complement bits holding every integer of [lo, hi]."""
    width = 1
    while not (-(1 << (width - 1)) <= lo and hi <= (1 << (width - 1)) - 1):
        width += 1
    return width


@pytest.mark.parametrize("fmt,terms", [(FixedPoint(53, 0), 512), (FixedPoint(53, 0), 1024), (FixedPoint(53, 0), 4000),
                                       (FixedPoint(40, 20), 2 ** 20), (FixedPoint(16, 8), 2 ** 40), (FixedPoint(8, 4), 3),
                                       (FloatFormat("float16"), 1000), (FloatFormat("bfloat16"), 7),
                                       (FloatFormat("float32"), 2 ** 20), (FloatFormat("float64"), 2)])
def test_exact_sums_of_a_partial_softmax_round_trip(fmt, terms):
    """Theorem 4 of [BHBK24]: a party sends the exact sum U of its N rounded products e_i v_i; under p-bit
    fixed point that is p + ceil(log2 N) bits.  The extremes of the range (63..70-bit words for the widest
    fixed formats, hundreds of bits for IEEE units) must come back exactly."""
    lo, hi = arithmetic_for(fmt).sum_range(terms)
    width = signed_width(lo, hi)
    if isinstance(fmt, FixedPoint):
        assert width <= fmt.bits + math.ceil(math.log2(terms))
    sums = [lo, hi, 0, -1, 1]
    b = pack_signed(sums, width)
    assert len(b) == width * len(sums)
    assert [int(v) for v in unpack_signed(b, width)] == sums
    with pytest.raises(BitsError):
        pack_signed([lo - 1 - (1 << width)], width)
