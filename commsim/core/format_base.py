"""The number-format base: what every format of :mod:`commsim.core.precision` is (:class:`NumberFormat`), its
errors, the exact integer sum the formats share, and the one-bit format (:class:`BitFormat`, p = 1)."""
from __future__ import annotations

import numpy as np

from commsim.core.bits import Bits, pack_uints, unpack_uints
from commsim.core.errors import InputError


class FormatError(InputError):
    """A value cannot be represented, or a format is malformed."""


class SaturationWarning(UserWarning):
    """Fixed-point quantization clipped values at the ends of the range."""


def _int_sum(units: np.ndarray, axis: int, max_abs_unit: int) -> np.ndarray:
    """Exact integer sum along ``axis``: int64 when it cannot overflow, Python ints otherwise."""
    n = units.shape[axis] if units.ndim else 1
    if units.dtype != object and max_abs_unit * max(n, 1) < (1 << 62):
        return units.astype(np.int64).sum(axis=axis)
    return units.astype(object).sum(axis=axis)


class NumberFormat:
    """A number format of ``bits`` bits per value (the papers' p)."""

    bits: int
    #: every representable value, and every exact sum, is an integer multiple of 2**unit_exponent
    unit_exponent: int
    #: the largest |value| of the format, in units of 2**unit_exponent
    max_abs_units: int

    @property
    def name(self) -> str:  # pragma: no cover - overridden
        """The format's name (``fixed16.8``, ``bfloat16``, ``bit``): what :func:`parse_format` reads back."""
        raise NotImplementedError

    def quantize(self, x) -> np.ndarray:
        """Round an array to the format; returns float64 values that are exactly representable."""
        raise NotImplementedError

    def to_units(self, x) -> np.ndarray:
        """Representable values as exact integer multiples of 2**unit_exponent."""
        raise NotImplementedError

    def encode(self, x) -> Bits:
        """Values of the format as exactly ``bits`` bits each."""
        raise NotImplementedError

    def decode(self, bits: Bits, count: int | None = None, offset: int = 0) -> np.ndarray:
        """Inverse of :meth:`encode`: ``count`` values from bit ``offset`` on (all the rest by default)."""
        raise NotImplementedError

    # ---- exact accumulation -------------------------------------------
    def exact_sum(self, values, axis: int = -1) -> np.ndarray:
        """The exact sum along ``axis`` of representable values, in units of 2**unit_exponent.

        Integer arithmetic, so ``exact_sum(a) + exact_sum(b) == exact_sum(a ++ b)`` for any
        split: the result does not depend on how the terms are partitioned.
        """
        units = self.to_units(np.asarray(values, dtype=np.float64))
        return _int_sum(units, axis, self.max_abs_units)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)


# ---- a one-bit number format ---------------------------------------------------------------------
class BitFormat(NumberFormat):
    """One unsigned bit per unit: values {0, 1}; quantization rounds down and saturates (p = 1).

    The state format of the automaton and memorizing models: m units of this format are exactly
    m state bits, so their hidden-state message is exactly m bits long.
    """

    bits = 1
    unit_exponent = 0
    name = "bit"
    max_abs_units = 1

    def quantize(self, x) -> np.ndarray:
        """Round down to 0 or 1; NaN is refused."""
        a = np.asarray(x, dtype=np.float64)
        if np.isnan(a).any():
            raise FormatError("NaN has no one-bit representation")
        return np.clip(np.floor(a), 0.0, 1.0) + 0.0

    def to_units(self, x) -> np.ndarray:
        """Bits as int64 0/1 (anything else: FormatError)."""
        a = np.asarray(x, dtype=np.float64)
        if not np.array_equal(self.quantize(a), a):
            raise FormatError("values are not bits (0 or 1); quantize them first")
        return a.astype(np.int64)

    def encode(self, x) -> Bits:
        """One bit per value, after rounding down to 0 or 1."""
        return pack_uints(self.quantize(np.asarray(x, dtype=np.float64).reshape(-1)).astype(np.uint8), 1)

    def decode(self, bits: Bits, count: int | None = None, offset: int = 0) -> np.ndarray:
        """Inverse of :meth:`encode`."""
        return unpack_uints(bits, 1, count, offset).astype(np.float64)

    def __reduce__(self):
        return (BitFormat, ())
