"""Integers of any width as message payloads: two's complement and unsigned counts.

The partial-softmax exchange (Theorem 4 of [BHBK24]) sends exact sums: the sum U of rounded
products is a signed integer in units of the format's smallest step, and the sum Z of
attention weights a non-negative one.  Their widths (p + ceil(log2 N) bits and more for IEEE
formats) exceed 64 bits, so they are coded here: :func:`pack_signed` / :func:`unpack_signed`
(two's complement of any width; fixed-point codes are the case width = p) and
:func:`pack_count` / :func:`unpack_count` (unsigned, any width).  Fixed-width unsigned fields
of at most 64 bits are :mod:`commsim.core.bits`' primitives, which these build on.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from commsim.core.bits import Bits, BitsError, field_count, pack_low_bits, pack_uints, unpack_uints

#: widths whose big-endian two's-complement bytes are a numpy integer type
SIGNED_BYTE_DTYPES = {8: ">i1", 16: ">i2", 32: ">i4", 64: ">i8"}


def pack_signed(values: np.ndarray | Iterable[int], width: int) -> Bits:
    """Two's-complement integers in exactly ``width`` bits each (any width >= 1; Python ints beyond int64)."""
    if width < 1:
        raise BitsError(f"two's-complement width must be at least 1, got {width}")
    arr = np.asarray(values, dtype=object if width > 64 else None).reshape(-1)
    if arr.dtype.kind == "f" and not isinstance(values, np.ndarray):
        arr = np.asarray(values, dtype=object).reshape(-1)  # Python ints beyond int64 stay exact
    if arr.dtype.kind == "f":
        if not (np.isfinite(arr).all() and np.array_equal(np.floor(arr), arr)):
            raise BitsError("two's-complement encoding needs integer values")
    elif arr.dtype == object:
        try:
            if any(int(v) != v for v in arr):
                raise BitsError("two's-complement encoding needs integer values")
        except (TypeError, ValueError, OverflowError):
            raise BitsError("two's-complement encoding needs integer values") from None
    elif arr.dtype.kind not in "iub":
        raise BitsError(f"two's-complement encoding needs integer values, got {arr.dtype}")
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    if arr.size:
        mn, mx = int(arr.min()), int(arr.max())
        if mn < lo or mx > hi:
            raise BitsError(f"value {mn if mn < lo else mx} does not fit in {width}-bit two's complement")
    if arr.dtype.kind == "f" and width <= 64:
        arr = arr.astype(np.int64)
    if width in SIGNED_BYTE_DTYPES:
        return Bits._own(arr.astype(SIGNED_BYTE_DTYPES[width]).view(np.uint8), arr.size * width)
    if width < 64:
        # the low ``width`` bits of the 64-bit two's complement are the width-bit two's complement
        return pack_low_bits(arr.astype(np.int64, copy=False), width)
    nbytes = (width + 7) // 8
    raw = b"".join(int(v).to_bytes(nbytes, "big", signed=True) for v in arr)
    rows = np.unpackbits(np.frombuffer(raw, dtype=np.uint8).reshape(arr.size, nbytes), axis=1)
    return Bits(np.packbits(rows[:, 8 * nbytes - width:]), arr.size * width)


def sign_extend(codes: np.ndarray, width: int) -> np.ndarray:
    """``width``-bit two's-complement codes held as unsigned integers (any container of at least ``width``
    bits, as :func:`~commsim.core.bits.unpack_uints` returns them), sign-extended in place; returns the
    signed view of the same memory."""
    signed = codes.view(np.dtype(f"i{codes.dtype.itemsize}"))
    shift = 8 * codes.dtype.itemsize - width
    if shift:
        np.left_shift(codes, codes.dtype.type(shift), out=codes)      # the sign bit to the top (unsigned: no overflow)
        np.right_shift(signed, signed.dtype.type(shift), out=signed)  # arithmetic: copies the sign bit down
    return signed


def unpack_signed(bits: Bits, width: int, count: int | None = None, offset: int = 0) -> np.ndarray:
    """Inverse of :func:`pack_signed`: int64 for width <= 64, Python ints (object array) beyond."""
    if width in SIGNED_BYTE_DTYPES and offset % 8 == 0:
        count = field_count(bits, width, count, offset)
        return np.frombuffer(bits.packed, dtype=SIGNED_BYTE_DTYPES[width], count=count,
                             offset=offset // 8).astype(np.int64)
    if width < 64:
        return sign_extend(unpack_uints(bits, width, count, offset), width).astype(np.int64)
    if width == 64:
        return unpack_uints(bits, 64, count, offset).view(np.int64)
    count = field_count(bits, width, count, offset)
    flat = bits.to_array()[offset:offset + count * width].reshape(count, width)
    nbytes = (width + 7) // 8
    padded = np.concatenate([np.repeat(flat[:, :1], 8 * nbytes - width, axis=1), flat], axis=1)
    raw = np.packbits(padded, axis=1)
    return np.array([int.from_bytes(r.tobytes(), "big", signed=True) for r in raw], dtype=object)


def pack_count(value, width: int) -> Bits:
    """A non-negative integer (an exact sum of non-negative terms) in ``width`` bits, unsigned."""
    v = int(value)
    if v < 0 or v >> width:
        raise BitsError(f"{v} does not fit in {width} unsigned bits")
    if width <= 64:
        return pack_uints(np.array([v], dtype=np.uint64), width)
    return Bits.from_array([(v >> (width - 1 - i)) & 1 for i in range(width)])


def unpack_count(bits: Bits, width: int) -> int:
    """Inverse of :func:`pack_count`: the count in the first ``width`` bits of ``bits``."""
    if width <= 64:
        return int(unpack_uints(bits, width, 1)[0])
    field_count(bits, width, 1, 0)
    return int(str(bits[:width]), 2)

