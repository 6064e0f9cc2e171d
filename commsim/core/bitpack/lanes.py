"""Lanes and scratch memory shared by the bit-packing kernels of :mod:`commsim.core.bitpack`."""
from __future__ import annotations

import threading

import numpy as np

#: the lanes are read as a little-endian view of the values (else the spread kernels are used)
LITTLE = np.little_endian


def lane_bits(width: int) -> int:
    """The container size (8, 16, 32 or 64 bits) of a ``width``-bit value."""
    return max(8, 1 << (width - 1).bit_length())


def uint_type(bits: int, order: str = "=") -> np.dtype:
    """The unsigned type of a ``bits``-bit lane, in byte order ``order``."""
    return np.dtype(f"{order}u{bits // 8}")


class Scratch:
    """Arrays reused from chunk to chunk and from call to call (one set per thread: :func:`thread_scratch`), one
    per name, grown when a larger one is asked for: a few chunks' worth, a few megabytes per thread."""

    def __init__(self):
        self._arrays: dict[str, np.ndarray] = {}

    def __call__(self, name: str, size: int, dtype: np.dtype) -> np.ndarray:
        a = self._arrays.get(name)
        if a is None or a.size < size or a.dtype != dtype:
            a = self._arrays[name] = np.empty(size, dtype=dtype)
        return a[:size]


_THREAD = threading.local()


def thread_scratch() -> Scratch:
    """This thread's scratch arrays (the kernels never call each other, so one set per thread suffices)."""
    scratch = getattr(_THREAD, "scratch", None)
    if scratch is None:
        scratch = _THREAD.scratch = Scratch()
    return scratch
