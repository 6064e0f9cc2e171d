"""Bits: construction, concatenation, slicing, equality, hashing; pack_uints / unpack_uints."""
from __future__ import annotations

import numpy as np
import pytest
from bit_reference import bit_matrix, through_the_tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.core.bits import Bits, BitsError, pack_low_bits, pack_uints, unpack_uints
from commsim.core.errors import CommsimError

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

bit_text = st.text(alphabet="01", max_size=80)


def ref_uints(values, width: int) -> str:
    """The reference encoding: each value as ``width`` binary digits, most significant first."""
    return "".join(format(int(v), f"0{width}b") for v in values)


@st.composite
def uints(draw, max_count: int = 40):
    width = draw(st.integers(1, 64))
    values = draw(st.lists(st.integers(0, (1 << width) - 1), max_size=max_count))
    return width, values


# ---- construction and round trips -----------------------------------------
@FAST
@given(bit_text)
def test_str_round_trip_and_views(text):
    b = Bits.from_str(text)
    assert len(b) == len(text)
    assert str(b) == text
    assert Bits.from_str(str(b)) == b
    assert b.to_array().tolist() == [int(c) for c in text]
    assert list(b) == [int(c) for c in text]
    assert b.to_array().dtype == np.uint8
    assert Bits.from_array([int(c) for c in text]) == b
    assert Bits.from_array(np.array([c == "1" for c in text], dtype=bool)) == b
    assert Bits.from_bytes(b.to_bytes(), len(b)) == b
    assert len(b.to_bytes()) == (len(text) + 7) // 8
    assert f"{len(text)}:" in repr(b)


@FAST
@given(st.binary(max_size=12), st.data())
def test_garbage_tail_bits_are_cleared(data, draw):
    """Bytes past the length never matter: equal bit strings have equal storage and hash."""
    length = draw.draw(st.integers(max(0, 8 * len(data) - 7), 8 * len(data)))
    b = Bits(data, length)
    full = "".join(format(byte, "08b") for byte in data)
    assert str(b) == full[:length]
    clean = Bits.from_str(full[:length])
    assert b == clean and hash(b) == hash(clean)
    assert b.to_bytes() == clean.to_bytes()
    tail = length % 8
    if tail:
        assert b.to_bytes()[-1] & ((1 << (8 - tail)) - 1) == 0


def test_zeros_and_empty():
    assert str(Bits.zeros(11)) == "0" * 11
    assert len(Bits()) == 0 and str(Bits()) == ""
    assert Bits() == Bits.from_str("") == Bits.zeros(0) == Bits.concat([])
    assert Bits(np.array([0xA5], dtype=np.uint8)) == Bits.from_str("10100101")


def test_malformed_construction_refused():
    for bad in ("012", "1 0", "x", "1a"):
        with pytest.raises(BitsError):
            Bits.from_str(bad)
    with pytest.raises(BitsError):
        Bits.from_array([0, 1, 2])
    with pytest.raises(BitsError):
        Bits.from_array([0.5])
    with pytest.raises(BitsError):
        Bits(b"\x00", 9)  # one byte cannot hold 9 bits
    with pytest.raises(BitsError):
        Bits(b"\x00\x00", 8)  # ... and two bytes do not hold exactly 8
    with pytest.raises(BitsError):
        Bits(b"", -1)
    assert issubclass(BitsError, CommsimError)  # which exit status (bad input or internal fault): errors.py


def test_immutable_storage():
    b = Bits.from_str("1011")
    with pytest.raises(ValueError):
        b.packed[0] = 0
    source = np.array([0xFF], dtype=np.uint8)
    c = Bits(source, 8)
    source[0] = 0  # the Bits keeps its own copy
    assert str(c) == "11111111"


# ---- concatenation ----------------------------------------------------------
@FAST
@given(st.lists(bit_text, max_size=6))
def test_concat_matches_string_join(parts):
    bits = [Bits.from_str(p) for p in parts]
    joined = Bits.concat(bits)
    assert str(joined) == "".join(parts)
    assert len(joined) == sum(map(len, parts))
    total = Bits()
    for b in bits:
        total = total + b
    assert total == joined


@FAST
@given(st.lists(st.integers(0, 5), max_size=5).map(lambda ks: ["10110011" * k for k in ks]))
def test_concat_byte_aligned_fast_path(parts):
    assert str(Bits.concat(Bits.from_str(p) for p in parts)) == "".join(parts)


def test_add_refuses_non_bits():
    with pytest.raises(TypeError):
        Bits.from_str("1") + "1"


# ---- slicing and indexing ------------------------------------------------------
@FAST
@given(bit_text, st.integers(-90, 90) | st.none(), st.integers(-90, 90) | st.none(),
       st.sampled_from([None, 1, 2, 3, -1, -2, 8]))
def test_slicing_matches_str_slicing(text, start, stop, step):
    b = Bits.from_str(text)
    sliced = b[start:stop:step]
    assert isinstance(sliced, Bits)
    assert str(sliced) == text[start:stop:step]
    assert sliced == Bits.from_str(text[start:stop:step])
    assert hash(sliced) == hash(Bits.from_str(text[start:stop:step]))


@FAST
@given(bit_text.filter(len), st.data())
def test_indexing(text, data):
    b = Bits.from_str(text)
    i = data.draw(st.integers(-len(text), len(text) - 1))
    assert b[i] == int(text[i])
    with pytest.raises(IndexError):
        b[len(text)]
    with pytest.raises(IndexError):
        b[-len(text) - 1]


# ---- equality and hashing -------------------------------------------------------
@FAST
@given(bit_text, bit_text)
def test_equality_and_hash_follow_the_string(s, t):
    a, b = Bits.from_str(s), Bits.from_str(t)
    assert (a == b) == (s == t)
    if s == t:
        assert hash(a) == hash(b)
    assert len({a, b, Bits.from_str(s)}) == len({s, t})


def test_length_matters_and_foreign_types_differ():
    assert Bits.from_str("0") != Bits.from_str("00")
    assert Bits.from_str("") != Bits.from_str("0")
    assert Bits.from_str("1") != 1 and Bits.from_str("1") != "1"
    assert Bits.from_str("0000000") != Bits.from_str("00000000")


# ---- pack_uints / unpack_uints -------------------------------------------------
@FAST
@given(uints())
def test_pack_uints_matches_reference_and_round_trips(wv):
    width, values = wv
    b = pack_uints(values, width)
    assert len(b) == width * len(values)
    assert str(b) == ref_uints(values, width)
    decoded = unpack_uints(b, width)
    assert [int(v) for v in decoded] == values
    # the same values given as a numpy array
    arr = np.array(values, dtype=np.uint64)
    assert pack_uints(arr, width) == b


@FAST
@given(uints(max_count=12), bit_text, bit_text)
def test_unpack_at_any_offset(wv, prefix, suffix):
    width, values = wv
    whole = Bits.from_str(prefix) + pack_uints(values, width) + Bits.from_str(suffix)
    got = unpack_uints(whole, width, count=len(values), offset=len(prefix))
    assert [int(v) for v in got] == values
    # without a count, the rest of the string must be whole integers
    rest = unpack_uints(Bits.from_str(prefix) + pack_uints(values, width), width, offset=len(prefix))
    assert [int(v) for v in rest] == values


@pytest.mark.parametrize("width", range(1, 65))
def test_every_width(width):
    """Every width 1..64: extremes and random values, long enough to cross the chunked paths."""
    rng = np.random.default_rng(width)
    top = (1 << width) - 1
    values = [0, top, 1, top >> 1, (top >> 1) + 1] + \
        [int(v) for v in rng.integers(0, 1 << min(width, 62), size=150)]
    values = [v & top for v in values]
    b = pack_uints(values, width)
    assert str(b) == ref_uints(values, width)
    assert [int(v) for v in unpack_uints(b, width)] == values
    for off in (1, 3, 7, 8, 13):
        padded = Bits.from_str("1" * off) + b + Bits.from_str("1" * 5)
        assert [int(v) for v in unpack_uints(padded, width, count=len(values), offset=off)] == values
    # a long array exercises the chunked vectorized paths against the per-value reference
    big = rng.integers(0, 1 << min(width, 63), size=70_001, dtype=np.uint64)
    if width == 64:
        big[::7] |= np.uint64(1 << 63)
    packed = pack_uints(big, width)
    assert len(packed) == 70_001 * width
    assert str(packed[:width * 50]) == ref_uints(big[:50], width)
    assert str(packed[-width * 50:]) == ref_uints(big[-50:], width)
    assert np.array_equal(unpack_uints(packed, width).astype(np.uint64), big)
    shifted = Bits.from_str("101") + packed
    assert np.array_equal(unpack_uints(shifted, width, offset=3).astype(np.uint64), big)
    # unpack uses the narrowest unsigned dtype that holds the width
    assert unpack_uints(b, width).dtype.itemsize * 8 >= width


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(width=st.integers(1, 64), count=st.integers(0, (1 << 18) + 70), seed=st.integers(0, 2**32 - 1),
       data=st.data())
def test_fast_kernels_round_trip_exactly_at_every_width(width, count, seed, data):
    """The grouping, window and word kernels (commsim.core.bitpack) against the bit-by-bit reference, at every
    width 1..64 and counts that end anywhere inside or across their chunks; any byte-aligned run of fields
    decodes alone; two's-complement codes, in int64 or in their own container type, pack as their low
    ``width`` bits; values already in their container type (read in place) pack the same."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 1 << min(width, 63), size=count, dtype=np.uint64)
    if width == 64 and count:
        values[::3] |= np.uint64(1 << 63)
    packed = pack_uints(values, width)
    assert np.array_equal(np.unpackbits(packed.packed, count=len(packed)), bit_matrix(values, width))
    assert np.array_equal(unpack_uints(packed, width).astype(np.uint64), values)
    start = data.draw(st.integers(0, count), "start")
    start -= start % (8 // np.gcd(width, 8))        # a field that starts on a byte
    stop = data.draw(st.integers(start, count), "stop")
    got = unpack_uints(packed, width, count=stop - start, offset=start * width)
    assert np.array_equal(got.astype(np.uint64), values[start:stop])
    container = unpack_uints(packed, width).dtype
    assert pack_uints(values.astype(container), width) == packed
    if width < 64:
        codes = rng.integers(-(1 << (width - 1)), 1 << (width - 1), size=min(count, 5000))
        low = (codes & ((1 << width) - 1)).astype(np.uint64)
        assert pack_low_bits(codes, width) == pack_uints(low, width)
        narrow = codes.astype(np.dtype(f"i{container.itemsize}"))
        assert pack_low_bits(narrow, width) == pack_uints(low, width)


@settings(max_examples=200, deadline=None)
@given(width=st.integers(2, 63).filter(lambda w: w not in (8, 16, 32)), count=st.integers(0, 3000),
       chunk_bytes=st.sampled_from([64, 128, 512]), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_kernels_across_many_chunks(width, count, chunk_bytes, seed, data):
    """With chunks of a few dozen values, every chunk boundary of every plan (grouping levels, byte windows
    whose last window reaches into the next chunk, spread words) is crossed many times; short messages
    are sent through the tree too (not the bit matrix that normally takes them)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 1 << width, size=count, dtype=np.uint64)
    stop = data.draw(st.integers(0, count), "stop")
    with through_the_tree(values, width, chunk_bytes) as packed:
        assert np.array_equal(unpack_uints(packed, width, count=stop).astype(np.uint64), values[:stop])


@pytest.mark.parametrize("width", [w for w in range(1, 33) if w not in (8, 16, 32)])
def test_compact_levels_are_checked_on_every_group(width):
    """A grouping level that multiplies (values narrow enough to merge in their own lane) was run on every
    group of values it can see when its plan was made; the plans of widths 1, 2, 3 and 4 use one."""
    from commsim.core.bitpack.tree import _check_compact, tree_plan
    plan = tree_plan(width)
    compact = [level for level in plan.levels if level.compact]
    assert bool(compact) == (width <= 4)
    for level in compact:
        _check_compact(level)  # raises on any inexact group


def test_unpack_dtype_is_native_unsigned():
    out = unpack_uints(pack_uints([1, 2, 3], 16), 16)
    assert out.dtype == np.uint16 and out.dtype.isnative
    assert out.tolist() == [1, 2, 3]


@FAST
@given(st.integers(1, 64), st.data())
def test_out_of_range_values_refused(width, data):
    too_big = data.draw(st.integers(1 << width, (1 << width) + 1000))
    negative = data.draw(st.integers(-1000, -1))
    ok = data.draw(st.lists(st.integers(0, (1 << width) - 1), max_size=5))
    for bad in (too_big, negative):
        with pytest.raises(BitsError):
            pack_uints(ok + [bad], width)
    if width < 64:
        with pytest.raises(BitsError):
            pack_uints(np.array(ok + [(1 << width)], dtype=np.uint64), width)
    with pytest.raises(BitsError):
        # an int64 array cannot hold values >= 2**63
        pack_uints(np.array([v for v in ok if v < (1 << 63)] + [-1], dtype=np.int64), width)


def test_bad_widths_and_non_integers_refused():
    for width in (0, -1, 65):
        with pytest.raises(BitsError):
            pack_uints([0], width)
        with pytest.raises(BitsError):
            unpack_uints(Bits.zeros(64), width)
    with pytest.raises(BitsError):
        pack_uints([1.5], 4)  # would silently truncate to 1
    with pytest.raises(BitsError):
        pack_uints([float("nan")], 4)
    with pytest.raises(BitsError):
        pack_uints([2 ** 64], 64)
    assert str(pack_uints([3.0], 4)) == "0011"  # an integral float is an integer


def test_unpack_span_checked():
    b = pack_uints([5, 6, 7], 4)
    with pytest.raises(BitsError):
        unpack_uints(b, 5)  # 12 bits are not whole 5-bit integers
    with pytest.raises(BitsError):
        unpack_uints(b, 4, count=4)
    with pytest.raises(BitsError):
        unpack_uints(b, 4, count=3, offset=1)
    with pytest.raises(BitsError):
        unpack_uints(b, 4, count=1, offset=-1)
    with pytest.raises(BitsError):
        unpack_uints(b, 4, count=-1)
    assert unpack_uints(b, 4, count=0).size == 0
    assert unpack_uints(b, 4, count=2, offset=4).tolist() == [6, 7]
    assert unpack_uints(pack_uints([], 7), 7).size == 0


def _reaching_widths() -> list[int]:
    """The widths whose plan writes windows that reach past the next field into the one after it."""
    from commsim.core.bitpack.tree import tree_plan
    from commsim.core.bitpack.windows import window_plan
    out = []
    for width in range(2, 64):
        plan = tree_plan(width)
        if plan.writer == "window" and any(t > plan.bits for *_, t in window_plan(plan.bits, plan.lane)[2]):
            out.append(width)
    return out


def test_some_plan_reaches_past_the_next_field():
    assert 31 in _reaching_widths()          # its 62-bit pairs would need whole words; its windows hold 4 fields


@settings(max_examples=120, deadline=None)
@given(width=st.sampled_from(_reaching_widths()), count=st.integers(0, 5000), chunk_bytes=st.sampled_from([64, 136, 1 << 19]),
       seed=st.integers(0, 2**32 - 1), data=st.data())
def test_windows_reaching_two_fields_ahead_round_trip(width, count, chunk_bytes, seed, data):
    """Windows that hold the tail of the previous field, the field, all of the next one and the head of the one
    after it: against the bit-by-bit reference, across chunk boundaries, at any byte-aligned start, and for
    two's-complement codes (their low ``width`` bits)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 1 << width, size=count, dtype=np.uint64)
    with through_the_tree(values, width, chunk_bytes) as packed:
        start = data.draw(st.integers(0, count), "start")
        start -= start % (8 // np.gcd(width, 8))
        got = unpack_uints(packed, width, count=count - start, offset=start * width)
        assert np.array_equal(got.astype(np.uint64), values[start:])
        codes = rng.integers(-(1 << (width - 1)), 1 << (width - 1), size=count)
        assert pack_low_bits(codes, width) == pack_uints((codes & ((1 << width) - 1)).astype(np.uint64), width)
