"""The grouping tree: ``width``-bit values in their container lanes merged, a few whole-array operations per
level, into fields of whole bytes (or 64-bit lanes), then written by :mod:`~commsim.core.bitpack.windows`
(or as single bytes, or by :mod:`~commsim.core.bitpack.spread`).

Each level reads two neighbouring lanes as one lane of twice the size and merges them with shifts into one
field, the earlier value most significant.  When the merged field still fits in one lane (arity * bits <=
lane), one multiply and one shift merge the group (of four 2-bit values, or of two) and the field is stored
back at the same lane size, so the data shrinks at that level.  The tree stops at the first level whose
field is a whole number of bytes (width 4: one level, one byte per pair; width 12: one level, three bytes
per 32-bit lane), or at 64-bit lanes.

Work is done in cache-sized chunks with scratch arrays reused from chunk to chunk and from call to call:
fresh memory costs a page fault per 4 KiB on first touch, which on some machines (measured on the
development VM) is most of the time of a temporary.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from commsim.core.bitpack.bytegroups import BYTE_GROUP_WIDTHS, pack_byte_groups, unpack_byte_groups
from commsim.core.bitpack.lanes import Scratch, lane_bits, thread_scratch, uint_type
from commsim.core.bitpack.spread import pack_spread, unpack_spread
from commsim.core.bitpack.windows import fits_windows, read_windows, write_windows
from commsim.core.errors import InternalError

#: input bytes per chunk (the lanes of one chunk); the chunk's scratch arrays stay in cache
_CHUNK_BYTES = 1 << 19

#: bytes of slack after the packed output: the last chunk's padding (less than one field) and one window
SLACK = 16


class _Level(NamedTuple):
    """One level of the grouping tree: an array of ``size``-bit lanes holding ``bits``-bit values, read
    ``arity`` lanes at a time (one wider lane, the earliest value lowest), becomes one lane per group
    holding an ``arity * bits``-bit field, the earliest value first.  ``compact``: the field fits in
    ``size`` bits and is stored back in ``size``-bit lanes, so the data shrinks ``arity``-fold; otherwise a
    pair stays in a ``2 * size``-bit lane.  The numpy constants are made once, in :func:`_level`."""
    size: int
    bits: int
    compact: bool
    arity: int
    wide: np.dtype          # the lane type that holds one group
    narrow: np.dtype        # the ``size``-bit lane type
    multiplier: np.generic  # compact levels: see :func:`_level`
    gather: np.generic      # the shift after the multiply, packing (compact) / the shift of the earlier value
    spread: np.generic      # the shift after the multiply, unpacking (compact) / of the later value
    field: np.generic       # the mask of the merged field
    lanes: np.generic       # the mask of the values in their lanes
    keys: tuple             # names of this level's scratch arrays


def _level(index: int, size: int, bits: int, arity: int) -> _Level:
    """A level with its constants.  Compact levels multiply by copies of the group ``size + bits`` bits
    apart: value i (at bit size * i) lands at (size + bits) * (arity - 1 - i) + size * i = K + bits * (arity -
    1 - i) with K = size * (arity - 1), so from bit K lies the field, in order; every other product lands below
    K without carrying into it, or above the ``size`` bits kept.  Multiplying a field by the same number and
    shifting right by bits * (arity - 1) puts value i at size * i (the inverse).  :func:`_check_compact`
    runs both on every possible group."""
    compact = arity * bits <= size
    wide = uint_type(arity * size)
    t = wide.type
    level = _Level(
        size, bits, compact, arity, wide, uint_type(size),
        t(sum(1 << (size + bits) * i for i in range(arity))),
        t(size * (arity - 1)) if compact else t(bits),
        t(bits * (arity - 1)) if compact else t(size),
        t((1 << arity * bits) - 1),
        t(sum(((1 << bits) - 1) << (size * i) for i in range(arity))),
        tuple(f"{name}{index}" for name in ("wide", "level", "unwide", "unlevel")))
    if compact:
        _check_compact(level)
    return level


def _check_compact(level: _Level) -> None:
    """Run a compact level's multiply on every group of values it can see, both ways (at most 256 groups)."""
    k, b = level.arity, level.bits
    groups = np.array(np.meshgrid(*[np.arange(1 << b)] * k, indexing="ij")).reshape(k, -1).T
    x = np.ascontiguousarray(groups.astype(level.narrow)).view(level.wide).reshape(-1)
    field = ((x * level.multiplier) >> level.gather).astype(level.narrow)
    expect = sum(groups[:, i].astype(np.int64) << (b * (k - 1 - i)) for i in range(k))
    back = ((field.astype(level.wide) * level.multiplier) >> level.spread) & level.lanes
    if not (np.array_equal(field, expect) and np.array_equal(back, x)):
        raise InternalError(f"bit packing: the compact level {level[:4]} is not exact")


class _Plan(NamedTuple):
    """How :func:`pack_tree` lays ``width``-bit values out: from lanes of ``first`` bits, ``levels`` groupings
    up to lanes of ``lane`` bits, each holding one right-aligned field of ``bits`` bits (``group`` values),
    written by ``writer``: "byte" (one byte per lane), "window" or "spread"."""
    first: int
    levels: tuple
    lane: int
    bits: int
    writer: str

    @property
    def group(self) -> int:
        return math.prod(level.arity for level in self.levels)

    @property
    def chunk(self) -> int:
        """Values per chunk: a multiple of 64, so that every chunk starts on a byte and a field boundary."""
        return max(64, _CHUNK_BYTES // (self.first // 8) // 64 * 64)


@functools.lru_cache(maxsize=None)
def tree_plan(width: int) -> _Plan:
    """Group neighbouring values until a lane's field is a whole number of bytes (or the lanes are 64 bits):
    width 2 becomes one-byte fields in one level of four, 4 in one level of two, 3 and 6 three-byte fields,
    12 three-byte fields after one level; 33..64 are not grouped.  (Widths 5 and 7 do not use their plan:
    :func:`pack_tree` sends them to :mod:`~commsim.core.bitpack.bytegroups`.)"""
    first = lane = lane_bits(width)
    levels, bits = [], width
    while lane < 64 and bits % 8:
        level = _level(len(levels), lane, bits, 4 if 4 * bits <= lane <= 16 else 2)
        levels.append(level)
        lane, bits = (lane if level.compact else 2 * lane), level.arity * bits
    if bits == 8 and lane == 8:
        writer = "byte"
    elif fits_windows(bits, lane):
        writer = "window"
    elif fits_windows(width, 64):   # (31: pairs of 62 bits would need whole words) the values in 64-bit windows
        return _Plan(64, (), 64, width, "window")
    else:
        writer = "spread"
    return _Plan(first, tuple(levels), lane, bits, writer)


def _pair(lanes: np.ndarray, level: _Level, scratch: Scratch) -> np.ndarray:
    """One level (``lanes``: clean values, a multiple of ``level.arity`` of them; ``lanes`` is not changed)."""
    x = lanes.view(level.wide)                # one group per lane, the earliest value in the low bits
    wide, out, _, _ = level.keys
    if level.compact:
        y = np.multiply(x, level.multiplier, out=scratch(wide, x.size, level.wide))
        # keep the low ``size`` bits of the shifted product: the field
        return np.right_shift(y, level.gather, out=scratch(out, x.size, level.narrow), casting="unsafe")
    # a pair a (low half), c (high half): (x << bits) | (x >> size) holds a*2**bits + c below bit 2 * bits
    y = np.left_shift(x, level.gather, out=scratch(out, x.size, level.wide))
    np.bitwise_or(y, np.right_shift(x, level.spread, out=scratch(wide, x.size, level.wide)), out=y)
    np.bitwise_and(y, level.field, out=y)
    return y


def _unpair(fields: np.ndarray, level: _Level, scratch: Scratch, out: np.ndarray | None = None) -> np.ndarray:
    """Inverse of :func:`_pair`: each field back to ``arity`` clean ``size``-bit lanes (into ``out``, an
    array of ``level.wide`` lanes of the right size, when given)."""
    _, _, wide, lanes = level.keys
    y = out if out is not None else scratch(lanes, fields.size, level.wide)
    if level.compact:
        np.multiply(fields, level.multiplier, out=y, dtype=level.wide)
        np.right_shift(y, level.spread, out=y)
    else:
        x = fields                            # a*2**bits + c: c to the high half, a to the low half
        np.left_shift(x, level.spread, out=y)
        np.bitwise_or(y, np.right_shift(x, level.gather, out=scratch(wide, fields.size, level.wide)), out=y)
    np.bitwise_and(y, level.lanes, out=y)
    return y.view(level.narrow)


def _write_fields(fields: np.ndarray, plan: _Plan, out: np.ndarray, first_byte: int, scratch: Scratch) -> None:
    """Store the chunk's right-aligned fields (clean, ``plan.lane``-bit lanes) as bits from byte
    ``first_byte`` of ``out``."""
    if plan.writer == "window":
        write_windows(fields, plan.bits, plan.lane, out, first_byte, scratch)
        return
    packed = fields if plan.writer == "byte" else pack_spread(fields, plan.bits)
    out[first_byte:first_byte + packed.size] = packed


def _read_fields(packed: np.ndarray, plan: _Plan, count: int, first_byte: int, lanes: np.ndarray,
                 scratch: Scratch) -> np.ndarray:
    """Inverse of :func:`_write_fields`: ``count`` fields into ``lanes`` (clean ``plan.lane``-bit lanes) from
    byte ``first_byte`` (bytes past the end read as 0)."""
    if plan.writer == "window":
        read_windows(packed, plan.bits, plan.lane, count, first_byte, lanes[:count])
    elif plan.writer == "spread":
        unpack_spread(packed, plan.bits, count, first_byte, lanes)
    else:  # one byte per field
        raw = packed[first_byte:first_byte + count]
        lanes[:raw.size] = raw
        lanes[raw.size:] = 0
    return lanes


def pack_tree(arr: np.ndarray, width: int) -> np.ndarray:
    """Pack ``width``-bit values (2..64, not 8/16/32/64) MSB first; the result is a view of an array with
    :data:`SLACK` bytes past its end.

    Unsigned input must lie in [0, 2**width); signed input may carry sign bits above the width (two's
    complement codes), which are dropped."""
    n = arr.size
    nbytes = (n * width + 7) // 8
    out = np.empty(nbytes + SLACK, dtype=np.uint8)
    if width in BYTE_GROUP_WIDTHS:   # eight values in one 64-bit lane: fewer passes (see its module)
        pack_byte_groups(arr, width, out)
        return out[:nbytes]
    plan = tree_plan(width)
    group = plan.group
    scratch = thread_scratch()
    lane_type = uint_type(plan.first)
    clean = arr.dtype.kind == "u"
    direct = clean and arr.dtype.itemsize == lane_type.itemsize and arr.flags.c_contiguous
    step = plan.chunk
    for start in range(0, n, step):
        block = arr[start:start + step]
        size = -(-block.size // group) * group
        if direct and size == block.size:
            lanes = block.view(lane_type)                            # read in place: _pair writes elsewhere
        else:
            lanes = scratch("lanes", size, lane_type)
            np.copyto(lanes[:block.size], block, casting="unsafe")   # the low ``first`` bits of each value
            lanes[block.size:] = 0
            if not clean and width < plan.first:
                np.bitwise_and(lanes, lane_type.type((1 << width) - 1), out=lanes)   # drop the sign bits
        for level in plan.levels:
            lanes = _pair(lanes, level, scratch)
        _write_fields(lanes, plan, out, start * width // 8, scratch)
    return out[:nbytes]


def unpack_tree(packed: np.ndarray, width: int, count: int, first_byte: int, out: np.ndarray) -> None:
    """Inverse of :func:`pack_tree` for ``count`` values from byte ``first_byte`` into ``out`` (of their
    container type); the last level (or the field reader, when there are no levels) writes into ``out``
    directly (widths 5 and 7: :mod:`~commsim.core.bitpack.bytegroups`)."""
    if width in BYTE_GROUP_WIDTHS:
        unpack_byte_groups(packed, width, count, first_byte, out)
        return
    plan = tree_plan(width)
    group = plan.group
    scratch = thread_scratch()
    direct = out.flags.c_contiguous
    for start in range(0, count, plan.chunk):
        m = min(plan.chunk, count - start)
        into = out[start:start + m] if direct and m % group == 0 and out.itemsize * 8 == plan.first else None
        nfields = -(-m // group)
        lanes = into if into is not None and not plan.levels else scratch("fields", nfields, uint_type(plan.lane))
        lanes = _read_fields(packed, plan, nfields, first_byte + start * width // 8, lanes, scratch)
        for i in reversed(range(len(plan.levels))):
            level = plan.levels[i]
            target = into.view(level.wide) if i == 0 and into is not None else None
            lanes = _unpair(lanes, level, scratch, target)
        if into is None:   # (lanes wider than the values' container: converted, the fields are clean)
            out[start:start + m] = lanes.view(out.dtype)[:m] if lanes.itemsize == out.itemsize else lanes[:m]
