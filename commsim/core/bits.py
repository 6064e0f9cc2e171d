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

import functools
import math
from typing import Iterable

import numpy as np

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


def _word_group(width: int) -> int:
    """Narrow widths (< 8): values per group, where ``group * width`` bits fill whole bytes of one 64-bit word."""
    return 8 // math.gcd(width, 8) if width < 8 else 0


def _group_values(arr: np.ndarray, g0: int, m: int, group: int) -> np.ndarray:
    """The values of groups g0..g0+m-1 as a (m, group) uint64 array; a partial last group is padded with 0."""
    block = arr[g0 * group:(g0 + m) * group].astype(np.uint64)
    if block.size < m * group:
        block = np.concatenate([block, np.zeros(m * group - block.size, dtype=np.uint64)])
    return block.reshape(m, group)


def _group_bytes(packed: np.ndarray, first_byte: int, end_byte: int, g0: int, m: int, nbytes: int) -> np.ndarray:
    """The bytes of groups g0..g0+m-1 (``nbytes`` each) as a (m, nbytes) array; bytes past ``end_byte``
    (the missing part of a partial last group) read as 0."""
    lo = first_byte + g0 * nbytes
    raw = packed[lo:min(lo + m * nbytes, end_byte)]
    if raw.size < m * nbytes:
        raw = np.concatenate([raw, np.zeros(m * nbytes - raw.size, dtype=np.uint8)])
    return raw.reshape(m, nbytes)


def _pack_words(arr: np.ndarray, width: int, group: int) -> np.ndarray:
    """Pack ``group`` values at a time into one 64-bit word (vectorized shifts), keep its leading bytes."""
    n, nbytes = arr.size, group * width // 8
    ngroups = -(-n // group)
    out = np.empty(ngroups * nbytes, dtype=np.uint8)
    mask = np.uint64((1 << width) - 1)
    step = _CHUNK // group
    word, term = np.empty(step, dtype=np.uint64), np.empty(step, dtype=np.uint64)
    for g0 in range(0, ngroups, step):
        m = min(step, ngroups - g0)
        block = _group_values(arr, g0, m, group)
        np.bitwise_and(block, mask, out=block)  # keep the low bits: two's complement codes pack as is
        w, t = word[:m], term[:m]
        np.left_shift(block[:, 0], np.uint64(64 - width), out=w)
        for j in range(1, group):
            np.left_shift(block[:, j], np.uint64(64 - width * (j + 1)), out=t)
            np.bitwise_or(w, t, out=w)
        out[g0 * nbytes:(g0 + m) * nbytes] = w.astype(">u8").view(np.uint8).reshape(m, 8)[:, :nbytes].reshape(-1)
    return out[:(n * width + 7) // 8]


def _unpack_words(packed: np.ndarray, width: int, count: int, first_byte: int, group: int,
                  out: np.ndarray) -> None:
    """Inverse of :func:`_pack_words` for ``count`` values starting at byte ``first_byte``."""
    nbytes = group * width // 8
    ngroups = -(-count // group)
    flat_out = np.empty(ngroups * group, dtype=np.uint64)
    mask = np.uint64((1 << width) - 1)
    step = _CHUNK // group
    words = np.zeros((min(step, ngroups), 8), dtype=np.uint8)  # bytes past nbytes stay 0
    end_byte = first_byte + (count * width + 7) // 8
    for g0 in range(0, ngroups, step):
        m = min(step, ngroups - g0)
        w = words[:m]
        w[:, :nbytes] = _group_bytes(packed, first_byte, end_byte, g0, m, nbytes)
        value = w.view(">u8").reshape(-1).astype(np.uint64)
        block = flat_out[g0 * group:(g0 + m) * group].reshape(m, group)
        for j in range(group):
            block[:, j] = (value >> np.uint64(64 - width * (j + 1))) & mask
    out[:] = flat_out[:count]


@functools.lru_cache(maxsize=None)
def _spread_plan(width: int) -> tuple[int, int, tuple]:
    """Wider widths: ``group`` values fill ``words`` whole 64-bit words (group * width = 64 * words).

    For each value j of a group: (j, word, shift, None, None) when it lies inside one word, ending
    ``shift`` bits before the word's end; (j, word, None, next word, low) when it straddles two words
    with its ``low`` last bits at the start of the next one.
    """
    group = 64 // math.gcd(width, 64)
    steps = []
    for j in range(group):
        start, end = width * j, width * (j + 1)
        word = start // 64
        if end <= 64 * (word + 1):
            steps.append((j, word, 64 * (word + 1) - end, None, None))
        else:
            steps.append((j, word, None, word + 1, end - 64 * (word + 1)))
    return group, group * width // 64, tuple(steps)


def _pack_spread(arr: np.ndarray, width: int) -> np.ndarray:
    """Pack values into 64-bit words with vectorized shifts, one row per position in the group."""
    group, nwords, steps = _spread_plan(width)
    n = arr.size
    ngroups = -(-n // group)
    out = np.empty(ngroups * nwords * 8, dtype=np.uint8)
    mask = np.uint64((1 << width) - 1)
    step = max(1, (1 << 16) // group)
    tmp = np.empty(min(step, ngroups), dtype=np.uint64)
    for g0 in range(0, ngroups, step):
        m = min(step, ngroups - g0)
        values = _group_values(arr, g0, m, group).T.copy()  # row j: the j-th value of every group
        np.bitwise_and(values, mask, out=values)  # keep the low bits: two's complement codes pack as is
        words = np.zeros((nwords, m), dtype=np.uint64)
        t = tmp[:m]
        for j, word, shift, nxt, low in steps:
            if nxt is None:
                np.left_shift(values[j], np.uint64(shift), out=t)
                np.bitwise_or(words[word], t, out=words[word])
            else:
                np.right_shift(values[j], np.uint64(low), out=t)
                np.bitwise_or(words[word], t, out=words[word])
                np.left_shift(values[j], np.uint64(64 - low), out=t)
                np.bitwise_or(words[nxt], t, out=words[nxt])
        out[g0 * nwords * 8:(g0 + m) * nwords * 8] = words.T.astype(">u8", order="C").view(np.uint8).reshape(-1)
    return out[:(n * width + 7) // 8]


def _unpack_spread(packed: np.ndarray, width: int, count: int, first_byte: int, out: np.ndarray) -> None:
    """Inverse of :func:`_pack_spread` for ``count`` values starting at byte ``first_byte``."""
    group, nwords, steps = _spread_plan(width)
    ngroups = -(-count // group)
    group_bytes = nwords * 8
    mask = np.uint64((1 << width) - 1)
    step = max(1, (1 << 16) // group)
    end_byte = first_byte + (count * width + 7) // 8
    tmp = np.empty(min(step, ngroups), dtype=np.uint64)
    for g0 in range(0, ngroups, step):
        m = min(step, ngroups - g0)
        raw = _group_bytes(packed, first_byte, end_byte, g0, m, group_bytes).reshape(-1)
        words = raw.view(">u8").reshape(m, nwords).T.astype(np.uint64, order="C")  # row t: word t of each group
        values = np.empty((group, m), dtype=np.uint64)
        t = tmp[:m]
        for j, word, shift, nxt, low in steps:
            if nxt is None:
                np.right_shift(words[word], np.uint64(shift), out=values[j])
            else:
                np.left_shift(words[word], np.uint64(low), out=values[j])
                np.right_shift(words[nxt], np.uint64(64 - low), out=t)
                np.bitwise_or(values[j], t, out=values[j])
        np.bitwise_and(values, mask, out=values)
        first = g0 * group
        full = min(m, (count - first) // group)  # complete groups (all but perhaps the very last)
        out[first:first + full * group].reshape(full, group)[...] = values[:, :full].T
        if full < m:
            out[first + full * group:count] = values[:count - first - full * group, full]


def pack_uints(values: np.ndarray | Iterable[int], width: int) -> Bits:
    """Encode unsigned integers, each in exactly ``width`` bits (MSB first).

    Values outside ``[0, 2**width)`` (and non-integers) are refused.  Widths of 8, 16, 32 and 64
    bits are a byte view; any other width is packed into 64-bit words with vectorized shifts
    (``64 / gcd(width, 64)`` values fill whole words), in cache-sized chunks.
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
    group = _word_group(width)
    if group:
        return Bits._own(_pack_words(arr, width, group), n * width)
    return Bits._own(_pack_spread(arr, width), n * width)


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
    group = _word_group(width)
    if offset % 8 == 0:
        if group:
            _unpack_words(bits.packed, width, count, offset // 8, group, out)
        else:
            _unpack_spread(bits.packed, width, count, offset // 8, out)
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
