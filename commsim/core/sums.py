"""Exact sums as message payloads: signed and unsigned integers of a given width."""
from __future__ import annotations

import numpy as np

from commsim.core.bits import Bits, pack_uints, unpack_uints
from commsim.core.precision import FormatError, pack_signed, unpack_signed


# ---- exact sums as message payloads -----------------------------------------------------------
def pack_sum(values, width: int) -> Bits:
    """Exact signed sums (Python or numpy ints) in ``width``-bit two's complement each."""
    return pack_signed(np.array([int(v) for v in np.asarray(values).reshape(-1)], dtype=object), width)


def unpack_sum(bits: Bits, width: int, count: int) -> np.ndarray:
    out = unpack_signed(bits, width, count)
    return out if out.dtype == object else out.astype(np.int64)


def pack_count(value, width: int) -> Bits:
    """A non-negative exact sum in ``width`` bits, unsigned."""
    v = int(value)
    if v < 0 or v >> width:
        raise FormatError(f"{v} does not fit in {width} unsigned bits")
    if width <= 64:
        return pack_uints(np.array([v], dtype=np.uint64), width)
    return Bits.from_array([(v >> (width - 1 - i)) & 1 for i in range(width)])


def unpack_count(bits: Bits, width: int) -> int:
    if width <= 64:
        return int(unpack_uints(bits, width, 1)[0])
    return int(str(bits), 2)
