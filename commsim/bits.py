"""Immutable bit strings and exact, vectorized encoders.

A message in commsim is a :class:`Bits` value: an exact number of bits held
packed (eight to a byte, most significant bit first).  Its length is what the
channel counts, so every encoder here produces exactly the bits it claims and
every decoder inverts it exactly.

Numbers are encoded by :mod:`commsim.precision` formats on top of the two
primitives below, :func:`pack_uints` and :func:`unpack_uints`, which turn
arrays of unsigned integers of a fixed width into bits and back without any
per-bit Python loop.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from .errors import InputError

__all__ = ["Bits", "pack_uints", "unpack_uints", "BitsError"]


class BitsError(InputError):
    """A bit string or an encoding request is malformed."""


def _readonly(a: np.ndarray) -> np.ndarray:
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
        return cls(data, length)

    @classmethod
    def zeros(cls, length: int) -> "Bits":
        return cls(np.zeros((length + 7) // 8, dtype=np.uint8), length)

    @classmethod
    def concat(cls, parts: Iterable["Bits"]) -> "Bits":
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
def _container(width: int) -> np.dtype:
    for bytes_, dt in ((1, ">u1"), (2, ">u2"), (4, ">u4"), (8, ">u8")):
        if width <= 8 * bytes_:
            return np.dtype(dt)
    raise BitsError(f"integer width {width} exceeds 64 bits")


def pack_uints(values: np.ndarray | Iterable[int], width: int) -> Bits:
    """Encode unsigned integers, each in exactly ``width`` bits (MSB first).

    Values outside ``[0, 2**width)`` are refused.  Widths that fill whole bytes
    are a byte view; other widths go through one ``unpackbits``/``packbits``.
    """
    if not 1 <= width <= 64:
        raise BitsError(f"integer width must be in 1..64, got {width}")
    arr = np.asarray(values)
    if arr.dtype == object or arr.dtype.kind not in "ui":
        arr = np.asarray([int(v) for v in arr.reshape(-1)], dtype=np.uint64) if arr.size else \
            np.zeros(0, dtype=np.uint64)
    arr = arr.reshape(-1)
    if arr.size:
        if arr.dtype.kind == "i" and arr.min() < 0:
            raise BitsError("unsigned encoding got a negative value")
        if width < 64 and arr.max() >= (1 << width):
            raise BitsError(f"value {int(arr.max())} does not fit in {width} bits")
    dt = _container(width)
    raw = arr.astype(dt, copy=False).view(np.uint8)
    if width == 8 * dt.itemsize:
        return Bits(raw, arr.size * width)
    rows = np.unpackbits(raw.reshape(arr.size, dt.itemsize), axis=1)[:, 8 * dt.itemsize - width:]
    return Bits(np.packbits(rows), arr.size * width)


def unpack_uints(bits: Bits, width: int, count: int | None = None, offset: int = 0) -> np.ndarray:
    """Decode ``count`` unsigned integers of ``width`` bits starting at bit ``offset``.

    With ``count`` omitted, the whole rest of the string must be a whole number
    of integers.  Returns uint64 (uint8/16/32 for narrower widths).
    """
    if not 1 <= width <= 64:
        raise BitsError(f"integer width must be in 1..64, got {width}")
    available = len(bits) - offset
    if count is None:
        if available % width:
            raise BitsError(f"{available} bits are not a whole number of {width}-bit integers")
        count = available // width
    if count * width > available or offset < 0:
        raise BitsError(f"need {count * width} bits at offset {offset}, have {len(bits)}")
    dt = _container(width)
    if offset % 8 == 0 and width == 8 * dt.itemsize:
        raw = bits.packed[offset // 8: offset // 8 + count * dt.itemsize]
        return np.frombuffer(raw.tobytes(), dtype=dt).astype(dt.newbyteorder("="))
    flat = np.unpackbits(bits.packed, count=len(bits))[offset:offset + count * width]
    rows = flat.reshape(count, width)
    pad = 8 * dt.itemsize - width
    if pad:
        rows = np.concatenate([np.zeros((count, pad), dtype=np.uint8), rows], axis=1)
    return np.packbits(rows, axis=1).reshape(-1).view(dt).astype(dt.newbyteorder("="))
