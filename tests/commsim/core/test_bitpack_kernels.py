"""Byte groups (commsim.core.bitpack.bytegroups: widths whose eight values are whole bytes, built in one 64-bit
lane) and field pairs (commsim.core.bitpack.windows.write_pairs), against the bit-by-bit reference."""
from __future__ import annotations

import numpy as np
import pytest
from bit_reference import bit_matrix, through_the_tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.core.bits import pack_low_bits, pack_uints, unpack_uints
from commsim.core.bitpack.bytegroups import BYTE_GROUP_WIDTHS, byte_group_plan

WIDTHS = sorted(BYTE_GROUP_WIDTHS)


def test_the_served_widths_are_byte_groups():
    assert WIDTHS == [5, 7]
    for width in WIDTHS:
        levels, top, back = byte_group_plan(width)   # raises if the levels do not invert
        assert len(levels) == len(back) == 3 and 0 <= top < 64 - 8 * width + 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(width=st.sampled_from(WIDTHS), count=st.integers(0, 2000), chunk=st.sampled_from([8, 64, 136, 1 << 19]),
       dtype=st.sampled_from(["u1", "u8", "i8"]), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_byte_groups_round_trip_exactly(width, count, chunk, dtype, seed, data):
    """Any count (partial last groups), chunks of a group or a few (every chunk boundary crossed), input in
    the container type (read in place), in uint64 or as int64 two's-complement codes (their low ``width``
    bits), short messages too (not the bit matrix), and any run of fields that starts on a byte."""
    from commsim.core import bits as bits_module
    from commsim.core.bitpack import bytegroups
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 1 << width, size=count, dtype=np.uint64)
    if dtype == "i8":
        given_values = rng.integers(-(1 << (width - 1)), 1 << (width - 1), size=count)
        values = (given_values & ((1 << width) - 1)).astype(np.uint64)
    else:
        given_values = values.astype(dtype)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bytegroups, "_CHUNK", chunk)
        mp.setattr(bits_module, "SMALL_BITS", 0)
        packed = pack_low_bits(given_values, width) if dtype == "i8" else pack_uints(given_values, width)
        assert len(packed) == count * width
        assert np.array_equal(np.unpackbits(packed.packed, count=len(packed)), bit_matrix(values, width))
        assert packed.packed[-1:].size == 0 or not packed.packed[-1] & ((1 << (-len(packed) % 8)) - 1)
        assert np.array_equal(unpack_uints(packed, width).astype(np.uint64), values)
        start = data.draw(st.integers(0, count), "start") // 8 * 8
        stop = data.draw(st.integers(start, count), "stop")
        got = unpack_uints(packed, width, count=stop - start, offset=start * width)
        assert got.dtype == np.uint8 and np.array_equal(got.astype(np.uint64), values[start:stop])


@settings(max_examples=40, deadline=None)
@given(width=st.sampled_from(WIDTHS), count=st.integers(1, 300), seed=st.integers(0, 2**32 - 1))
def test_byte_groups_read_strided_input(width, count, seed):
    """A strided view of the values packs the same as a contiguous copy."""
    values = np.random.default_rng(seed).integers(0, 1 << width, size=2 * count, dtype=np.uint8)
    assert pack_uints(values[::2], width) == pack_uints(values[::2].copy(), width)
    assert np.array_equal(unpack_uints(pack_uints(values[::2], width), width), values[::2])


def _pair_widths() -> list[int]:
    """The widths whose plan ends in fields of two bit phases in 64-bit lanes: written a pair at a time."""
    from commsim.core.bitpack.tree import tree_plan
    from commsim.core.bitpack.windows import window_plan
    return [w for w in range(2, 64) if w not in BYTE_GROUP_WIDTHS | {8, 16, 32}
            and tree_plan(w).writer == "window" and tree_plan(w).lane == 64
            and window_plan(tree_plan(w).bits, 64)[0] == 2]


def test_pair_widths():
    assert _pair_widths() == [9, 11, 13, 15, 18, 22, 26, 30, 36, 44, 52, 60]


@pytest.mark.parametrize("width", _pair_widths())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=st.integers(0, 400), extra=st.integers(0, 3), chunk_bytes=st.sampled_from([64, 136, 512, 1 << 19]),
       seed=st.integers(0, 2**32 - 1), data=st.data())
def test_field_pairs_round_trip_exactly(width, fields, extra, chunk_bytes, seed, data):
    """Fields written a pair at a time (the rest of each pair before its first window): odd field counts (a
    last pair without its second field), partial groups, chunk boundaries every few pairs, against the
    bit-by-bit reference; any run of fields that starts on a byte decodes alone."""
    from commsim.core.bitpack import tree
    group = tree.tree_plan(width).group
    count = max(0, fields * group - extra)
    values = np.random.default_rng(seed).integers(0, 1 << width, size=count, dtype=np.uint64)
    with through_the_tree(values, width, chunk_bytes) as packed:
        start = data.draw(st.integers(0, count), "start") // 2 * 2
        got = unpack_uints(packed, width, count=count - start, offset=start * width)
        assert np.array_equal(got.astype(np.uint64), values[start:])
