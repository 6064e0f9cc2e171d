"""Immutable bit strings and exact, vectorized encoders.

A message in commsim is a :class:`Bits` value: an exact number of bits held
packed (eight to a byte, most significant bit first).  Its length is what the
channel counts, so every encoder here produces exactly the bits it claims and
every decoder inverts it exactly.

Numbers are encoded by :mod:`commsim.core.precision` formats, and integers of any
width (two's complement, exact sums) by :mod:`commsim.core.sums`, on top of the
primitives below, :func:`pack_uints` and :func:`unpack_uints`, which turn
arrays of unsigned integers of a fixed width into bits and back without any
per-bit Python loop.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from commsim.core.bitpack import LITTLE, pack_spread, pack_tree, unpack_spread, unpack_tree
from commsim.core.bitpack.small import SMALL_BITS, pack_small, unpack_small
from commsim.core.errors import InternalError


class BitsError(InternalError):
    """A bit string or an encoding request is malformed: an internal fault (exit status 1), since every
    codec here is fed by commsim's own code (simulators, runner, certificates), never by the user directly."""


def _readonly(a: np.ndarray) -> np.ndarray:
    """Mark an array read-only and return it."""
    a.flags.writeable = False
    return a


class Bits:
    """An immutable string of ``len(self)`` bits, stored packed in bytes.

    Bits past the length in the last byte are always zero, so two equal bit
    strings have equal storage and the same hash.
    """

    __slots__ = ("_packed", "_length")

    def __init__(self, packed: np.ndarray | bytes = b"", length: int | None = None):
        data = np.frombuffer(bytes(packed), dtype=np.uint8) if isinstance(packed, (bytes, bytearray)) \
            else np.asarray(packed, dtype=np.uint8).reshape(-1)
        if length is None:
            length = 8 * data.size
        if length < 0 or (length + 7) // 8 != data.size:
            raise BitsError(f"{data.size} bytes cannot hold exactly {length} bits")
        data = data.copy()
        tail = length % 8
        if tail:
            data[-1] &= np.uint8((0xFF << (8 - tail)) & 0xFF)
        self._packed = _readonly(data)
        self._length = int(length)

    @classmethod
    def _own(cls, packed: np.ndarray, length: int) -> "Bits":
        """Wrap a freshly made uint8 array without copying (internal: the caller gives it up,
        and its bits past ``length`` are already zero)."""
        self = object.__new__(cls)
        self._packed = _readonly(packed.reshape(-1))
        self._length = int(length)
        return self

    # ---- construction -------------------------------------------------
    @classmethod
    def from_array(cls, bits: Iterable[int] | np.ndarray) -> "Bits":
        """From a sequence of 0/1 values (anything else is refused)."""
        arr = np.asarray(bits).reshape(-1)
        if arr.size and not np.isin(arr, (0, 1)).all():
            raise BitsError("a bit array may hold only 0 and 1")
        return cls(np.packbits(arr.astype(np.uint8)), arr.size)

    @classmethod
    def from_str(cls, text: str) -> "Bits":
        """From a string of '0' and '1' characters, e.g. ``Bits.from_str('1011')``."""
        if any(c not in "01" for c in text):
            raise BitsError(f"not a bit string: {text!r}")
        return cls.from_array(np.frombuffer(text.encode(), dtype=np.uint8) - ord("0"))

    @classmethod
    def from_bytes(cls, data: bytes, length: int) -> "Bits":
        """The first ``length`` bits of ``data``."""
        return cls(data, length)

    @classmethod
    def zeros(cls, length: int) -> "Bits":
        """``length`` zero bits."""
        return cls(np.zeros((length + 7) // 8, dtype=np.uint8), length)

    @classmethod
    def concat(cls, parts: Iterable["Bits"]) -> "Bits":
        """The bit strings one after the other."""
        parts = list(parts)
        if not parts:
            return cls()
        if all(p._length % 8 == 0 for p in parts):
            return cls(np.concatenate([p._packed for p in parts]), sum(p._length for p in parts))
        return cls.from_array(np.concatenate([p.to_array() for p in parts]))

    # ---- views ---------------------------------------------------------
    def __len__(self) -> int:
        return self._length

    @property
    def packed(self) -> np.ndarray:
        """The packed bytes (read-only view)."""
        return self._packed

    def to_bytes(self) -> bytes:
        """The packed bytes (the bits past the length in the last byte are 0)."""
        return self._packed.tobytes()

    def to_array(self) -> np.ndarray:
        """The bits as a uint8 array of 0/1 values."""
        return np.unpackbits(self._packed, count=self._length)

    def __str__(self) -> str:
        return (self.to_array() + ord("0")).astype(np.uint8).tobytes().decode()

    def __repr__(self) -> str:
        shown = str(self) if self._length <= 64 else str(self[:64]) + "..."
        return f"Bits({self._length}: {shown})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Bits) and self._length == other._length \
            and np.array_equal(self._packed, other._packed)

    def __hash__(self) -> int:
        return hash((self._length, self._packed.tobytes()))

    def __add__(self, other: "Bits") -> "Bits":
        if not isinstance(other, Bits):
            return NotImplemented
        return Bits.concat([self, other])

    def __getitem__(self, key: int | slice) -> "Bits | int":
        if isinstance(key, slice):
            start, stop, step = key.indices(self._length)
            if step == 1 and start % 8 == 0 and (stop % 8 == 0 or stop == self._length):
                stop = max(stop, start)
                return Bits(self._packed[start // 8:(stop + 7) // 8], stop - start)
            return Bits.from_array(self.to_array()[key])
        i = int(key)
        if i < 0:
            i += self._length
        if not 0 <= i < self._length:
            raise IndexError("bit index out of range")
        return int((self._packed[i // 8] >> (7 - i % 8)) & 1)

    def __iter__(self):
        return iter(self.to_array().tolist())


# ---- fixed-width unsigned integers --------------------------------------
#: values per step of the chunked paths (a multiple of 8, so every chunk fills whole bytes;
#: small enough that the temporaries stay in cache)
_CHUNK = 1 << 15


def _container(width: int) -> np.dtype:
    """The big-endian unsigned numpy type of the smallest byte width holding ``width`` bits."""
    for bytes_, dt in ((1, ">u1"), (2, ">u2"), (4, ">u4"), (8, ">u8")):
        if width <= 8 * bytes_:
            return np.dtype(dt)
    raise BitsError(f"integer width {width} exceeds 64 bits")


def _check_width(width: int) -> None:
    """Refuse field widths outside 1..64."""
    if not 1 <= width <= 64:
        raise BitsError(f"integer width must be in 1..64, got {width}")


def field_count(bits: Bits, width: int, count: int | None, offset: int) -> int:
    """Validate a request for ``count`` ``width``-bit fields at bit ``offset``; return the count."""
    if offset < 0:
        raise BitsError(f"offset must be >= 0, got {offset}")
    available = len(bits) - offset
    if count is None:
        if available < 0 or available % width:
            raise BitsError(f"{available} bits are not a whole number of {width}-bit integers")
        return available // width
    if count < 0 or count * width > available:
        raise BitsError(f"need {count * width} bits at offset {offset}, have {len(bits)}")
    return count


def _as_uints(values, width: int) -> np.ndarray:
    """A 1-D integer array of the values, each checked to lie in [0, 2**width)."""
    arr = np.asarray(values)
    if arr.dtype.kind == "f" and not isinstance(values, np.ndarray):
        arr = np.asarray(values, dtype=object)  # Python ints beyond int64 would be rounded to floats
    if arr.dtype.kind == "b":
        arr = arr.astype(np.uint8)
    if arr.dtype == object or arr.dtype.kind not in "ui":
        flat = arr.reshape(-1).tolist()
        try:
            ints = [int(v) for v in flat]
        except (TypeError, ValueError, OverflowError):
            raise BitsError("unsigned encoding needs integer values") from None
        if any(i != v for i, v in zip(ints, flat)):
            raise BitsError("unsigned encoding got a non-integer value")
        if ints and min(ints) < 0:
            raise BitsError("unsigned encoding got a negative value")
        if ints and max(ints) >= (1 << width):
            raise BitsError(f"value {max(ints)} does not fit in {width} bits")
        return np.asarray(ints, dtype=np.uint64)
    arr = arr.reshape(-1)
    if arr.size:
        if arr.dtype.kind == "i" and arr.min() < 0:
            raise BitsError("unsigned encoding got a negative value")
        if width < 64 and int(arr.max()) >= (1 << width):
            raise BitsError(f"value {int(arr.max())} does not fit in {width} bits")
    return arr


def pack_uints(values: np.ndarray | Iterable[int], width: int) -> Bits:
    """Encode unsigned integers, each in exactly ``width`` bits (MSB first).

    Values outside ``[0, 2**width)`` (and non-integers) are refused.  Widths of 8, 16, 32 and 64
    bits are a byte view, width 1 is ``numpy.packbits``; any other width goes through the kernels of
    :mod:`commsim.core.bitpack`: a bit matrix for short messages, else a grouping tree of whole-array
    shifts, then byte windows or 64-bit words, in cache-sized chunks.
    """
    _check_width(width)
    return pack_low_bits(_as_uints(values, width), width)


def pack_low_bits(arr: np.ndarray, width: int) -> Bits:
    """:func:`pack_uints` for a 1-D integer array already known to lie in [0, 2**width).

    Every path keeps only the low ``width`` bits of each value, so int64 two's-complement codes in
    [-2**(width-1), 2**(width-1)) are packed as their ``width``-bit two's complement.
    """
    n = arr.size
    dt = _container(width)
    if width == 8 * dt.itemsize:
        return Bits._own(arr.astype(dt).view(np.uint8), n * width)
    if width == 1:  # one bit per value: numpy's own packing
        return Bits._own(np.packbits(np.bitwise_and(arr, 1, dtype=np.uint8, casting="unsafe")), n)
    if n * width <= SMALL_BITS:  # a short message: the bit matrix costs fewer numpy calls
        return Bits._own(pack_small(arr, width), n * width)
    if LITTLE:
        return Bits._own(pack_tree(arr, width), n * width)
    return Bits._own(pack_spread(arr, width), n * width)


def unpack_uints(bits: Bits, width: int, count: int | None = None, offset: int = 0) -> np.ndarray:
    """Decode ``count`` unsigned integers of ``width`` bits starting at bit ``offset``.

    With ``count`` omitted, the whole rest of the string must be a whole number
    of integers.  Returns uint64 (uint8/16/32 for narrower widths).
    """
    _check_width(width)
    count = field_count(bits, width, count, offset)
    dt = _container(width)
    native = dt.newbyteorder("=")
    if offset % 8 == 0 and width == 8 * dt.itemsize:
        return np.frombuffer(bits.packed, dtype=dt, count=count, offset=offset // 8).astype(native)
    out = np.empty(count, dtype=native)
    if offset % 8 == 0:
        if width == 1:
            return np.unpackbits(bits.packed[offset // 8:], count=count)
        if count * width <= SMALL_BITS:
            unpack_small(bits.packed, width, count, offset // 8, out)
        elif LITTLE:
            unpack_tree(bits.packed, width, count, offset // 8, out)
        else:
            unpack_spread(bits.packed, width, count, offset // 8, out)
        return out
    # an offset inside a byte: go through one uint8 per bit, in chunks
    pad = 8 * dt.itemsize - width
    rows_buffer = np.zeros((min(_CHUNK, count), 8 * dt.itemsize), dtype=np.uint8)  # pad columns stay 0
    for start in range(0, count, _CHUNK):
        m = min(_CHUNK, count - start)
        first_bit = offset + start * width
        skip, nbits = first_bit % 8, m * width
        raw = bits.packed[first_bit // 8:(first_bit + nbits + 7) // 8]
        rows = rows_buffer[:m]
        rows[:, pad:] = np.unpackbits(raw, count=skip + nbits)[skip:].reshape(m, width)
        out[start:start + m] = np.packbits(rows.reshape(-1)).view(dt)  # rows are whole bytes
    return out
