"""Few values: the bit matrix.  For messages of at most :data:`SMALL_BITS` bits, one row of bits per value
and numpy's own ``packbits``/``unpackbits`` take fewer numpy calls than the grouping tree, whose fixed
cost per call (20-35 µs, measured) would dominate a short message."""
from __future__ import annotations

import numpy as np

#: messages of at most this many bits take the bit matrix (about 5-10 µs a call, measured up to here)
SMALL_BITS = 4096


def pack_small(arr: np.ndarray, width: int) -> np.ndarray:
    """The low ``width`` bits of each value (two's-complement codes wrap), MSB first, packed."""
    shifts = np.arange(width - 1, -1, -1, dtype=np.uint64)
    bits = (arr.astype(np.uint64)[:, None] >> shifts) & np.uint64(1)
    return np.packbits(bits.astype(np.uint8).reshape(-1))


def unpack_small(packed: np.ndarray, width: int, count: int, first_byte: int, out: np.ndarray) -> None:
    """Inverse of :func:`pack_small`: ``count`` values from byte ``first_byte`` into ``out`` (their container
    type): each row of bits right-aligned in its container's bytes, packed, read big-endian."""
    size = out.dtype.itemsize
    bits = np.unpackbits(packed[first_byte:first_byte + (count * width + 7) // 8], count=count * width)
    rows = np.zeros((count, 8 * size), dtype=np.uint8)
    rows[:, 8 * size - width:] = bits.reshape(count, width)
    out[:] = np.packbits(rows.reshape(-1)).view(out.dtype.newbyteorder(">"))
