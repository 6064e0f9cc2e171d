"""Number formats: p-bit binary fixed point and IEEE-style floats.

The papers' finite-precision semantics (Appendix B.2 of [BHBK24]) put every
value on a fixed-point grid: round *down* to the grid, saturate at the range
ends.  Real models use IEEE formats.  Both are :class:`NumberFormat` objects
with a width ``bits`` (the papers' p), ``quantize`` for arrays, exact
``encode``/``decode`` to :class:`~commsim.core.bits.Bits`, and exact accumulation:
a sum is carried as an integer count of the format's smallest unit, so any
split of a sum into partial sums gives the same total (this is what makes the
attention protocol's output independent of the partition).
"""
from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from commsim.core.bits import Bits, _pack_valid, _span, pack_uints, unpack_uints
from commsim.core.errors import InputError


class FormatError(InputError):
    """A value cannot be represented, or a format is malformed."""


class SaturationWarning(UserWarning):
    """Fixed-point quantization clipped values at the ends of the range."""


# ---- wide two's-complement integers --------------------------------------
_BYTE_SIGNED = {8: ">i1", 16: ">i2", 32: ">i4", 64: ">i8"}


def pack_signed(values: np.ndarray | Iterable[int], width: int) -> Bits:
    """Two's-complement integers in exactly ``width`` bits each (any width >= 1)."""
    if width < 1:
        raise FormatError(f"two's-complement width must be at least 1, got {width}")
    arr = np.asarray(values, dtype=object if width > 64 else None).reshape(-1)
    if arr.dtype.kind == "f" and not isinstance(values, np.ndarray):
        arr = np.asarray(values, dtype=object).reshape(-1)  # Python ints beyond int64 stay exact
    if arr.dtype.kind == "f":
        if not (np.isfinite(arr).all() and np.array_equal(np.floor(arr), arr)):
            raise FormatError("two's-complement encoding needs integer values")
    elif arr.dtype == object:
        try:
            if any(int(v) != v for v in arr):
                raise FormatError("two's-complement encoding needs integer values")
        except (TypeError, ValueError, OverflowError):
            raise FormatError("two's-complement encoding needs integer values") from None
    elif arr.dtype.kind not in "iub":
        raise FormatError(f"two's-complement encoding needs integer values, got {arr.dtype}")
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    if arr.size:
        mn, mx = int(arr.min()), int(arr.max())
        if mn < lo or mx > hi:
            raise FormatError(f"value {mn if mn < lo else mx} does not fit in {width}-bit two's complement")
    if arr.dtype.kind == "f" and width <= 64:
        arr = arr.astype(np.int64)
    if width in _BYTE_SIGNED:
        return Bits._own(arr.astype(_BYTE_SIGNED[width]).view(np.uint8), arr.size * width)
    if width < 64:
        # the low ``width`` bits of the 64-bit two's complement are the width-bit two's complement
        return _pack_valid(arr.astype(np.int64, copy=False), width)  # keeps the low ``width`` bits
    nbytes = (width + 7) // 8
    raw = b"".join(int(v).to_bytes(nbytes, "big", signed=True) for v in arr)
    rows = np.unpackbits(np.frombuffer(raw, dtype=np.uint8).reshape(arr.size, nbytes), axis=1)
    return Bits(np.packbits(rows[:, 8 * nbytes - width:]), arr.size * width)


def unpack_signed(bits: Bits, width: int, count: int | None = None, offset: int = 0) -> np.ndarray:
    """Inverse of :func:`pack_signed`: int64 for width <= 64, Python ints (object array) beyond."""
    if width in _BYTE_SIGNED and offset % 8 == 0:
        count = _span(bits, width, count, offset)
        return np.frombuffer(bits.packed, dtype=_BYTE_SIGNED[width], count=count,
                             offset=offset // 8).astype(np.int64)
    if width < 64:
        s = unpack_uints(bits, width, count, offset).astype(np.int64)
        sign = np.int64(1 << (width - 1))
        return (s ^ sign) - sign  # sign-extend
    if width == 64:
        return unpack_uints(bits, 64, count, offset).view(np.int64)
    count = _span(bits, width, count, offset)
    flat = bits.to_array()[offset:offset + count * width].reshape(count, width)
    nbytes = (width + 7) // 8
    padded = np.concatenate([np.repeat(flat[:, :1], 8 * nbytes - width, axis=1), flat], axis=1)
    raw = np.packbits(padded, axis=1)
    return np.array([int.from_bytes(r.tobytes(), "big", signed=True) for r in raw], dtype=object)


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

    @property
    def name(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def is_fixed_point(self) -> bool:
        return isinstance(self, FixedPoint)

    def quantize(self, x) -> np.ndarray:
        """Round an array to the format; returns float64 values that are exactly representable."""
        raise NotImplementedError

    def to_units(self, x) -> np.ndarray:
        """Representable values as exact integer multiples of 2**unit_exponent."""
        raise NotImplementedError

    def encode(self, x) -> Bits:
        raise NotImplementedError

    def decode(self, bits: Bits, count: int | None = None, offset: int = 0) -> np.ndarray:
        raise NotImplementedError

    # ---- exact accumulation -------------------------------------------
    def exact_sum(self, values, axis: int = -1) -> np.ndarray:
        """The exact sum along ``axis`` of representable values, in units of 2**unit_exponent.

        Integer arithmetic, so ``exact_sum(a) + exact_sum(b) == exact_sum(a ++ b)`` for any
        split: the result does not depend on how the terms are partitioned.
        """
        units = self.to_units(np.asarray(values, dtype=np.float64))
        return _int_sum(units, axis, self._max_abs_unit)

    def sum_width(self, n_terms: int, max_abs: float | None = None) -> int:
        """Bits that carry an exact sum of ``n_terms`` values with |value| <= ``max_abs`` (default: the range)."""
        bound = self._max_abs_unit if max_abs is None else \
            math.ceil(abs(max_abs) * 2.0 ** (-self.unit_exponent))
        total = bound * max(n_terms, 1)
        return total.bit_length() + 1  # sign bit

    def encode_sum(self, units, n_terms: int, max_abs: float | None = None) -> Bits:
        return pack_signed(np.asarray(units).reshape(-1), self.sum_width(n_terms, max_abs))

    def decode_sum(self, bits: Bits, n_terms: int, count: int | None = None, offset: int = 0,
                   max_abs: float | None = None) -> np.ndarray:
        return unpack_signed(bits, self.sum_width(n_terms, max_abs), count, offset)

    def round_units(self, units) -> np.ndarray:
        """Round exact sums (in units) to the format, as float64 values (rounding per the format)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)


@dataclass(frozen=True, eq=False, repr=False)
class FixedPoint(NumberFormat):
    """Two's-complement binary fixed point: ``bits`` in all, ``frac`` of them after the point.

    A value is ``code * 2**-frac`` with ``code`` in ``[-2**(bits-1), 2**(bits-1) - 1]``.
    Quantization rounds **down** (floor) and saturates at both ends (Appendix B.2 of [BHBK24]).
    """

    bits: int
    frac: int

    def __post_init__(self):
        if not 2 <= self.bits <= 53:
            raise FormatError(f"fixed-point width must be 2..53 bits (values are exact in float64), got {self.bits}")
        if not 0 <= self.frac < self.bits:
            raise FormatError(f"fixed-point fraction bits must be 0..{self.bits - 1}, got {self.frac}")

    @classmethod
    def with_bits(cls, bits: int, frac: int | None = None) -> "FixedPoint":
        return cls(bits, bits // 2 if frac is None else frac)

    @property
    def name(self) -> str:
        return f"fixed{self.bits}.{self.frac}"

    @property
    def unit_exponent(self) -> int:  # type: ignore[override]
        return -self.frac

    @property
    def step(self) -> float:
        return 2.0 ** -self.frac

    @property
    def min_code(self) -> int:
        return -(1 << (self.bits - 1))

    @property
    def max_code(self) -> int:
        return (1 << (self.bits - 1)) - 1

    @property
    def min_value(self) -> float:
        return self.min_code * self.step

    @property
    def max_value(self) -> float:
        return self.max_code * self.step

    @property
    def _max_abs_unit(self) -> int:
        return 1 << (self.bits - 1)

    def to_codes(self, x, on_saturate: str = "warn") -> np.ndarray:
        """Round down to the grid and saturate; returns int64 codes.

        ``on_saturate``: ``"warn"`` (a :class:`SaturationWarning` saying how many values
        were clipped), ``"raise"`` or ``"ignore"``.
        """
        a = np.asarray(x, dtype=np.float64)
        return self._codes(a.reshape(-1), np.dtype(np.int64), on_saturate).reshape(a.shape)

    def _codes(self, a: np.ndarray, dtype: np.dtype, on_saturate: str, stacklevel: int = 3) -> np.ndarray:
        """floor(a * 2**frac), saturated, as ``dtype`` (1-D).  Scaling by a power of two is exact."""
        if not a.size:
            return np.empty(0, dtype=dtype)
        scale = 2.0 ** self.frac
        lo, hi = a.min(), a.max()  # NaN propagates through min and max
        if np.isnan(lo) or np.isnan(hi):
            raise FormatError("NaN has no fixed-point representation")
        with np.errstate(over="ignore"):
            saturates = math.floor(lo * scale) < self.min_code if math.isfinite(lo * scale) else True
            saturates |= math.floor(hi * scale) > self.max_code if math.isfinite(hi * scale) else True
        if saturates:
            with np.errstate(over="ignore"):
                scaled = np.floor(a * scale)
            clipped = int(np.count_nonzero(scaled < self.min_code) + np.count_nonzero(scaled > self.max_code))
            msg = (f"{clipped} value(s) saturated to the {self.name} range "
                   f"[{self.min_value}, {self.max_value}]")
            if on_saturate == "raise":
                raise FormatError(msg)
            if on_saturate == "warn":
                warnings.warn(msg, SaturationWarning, stacklevel=stacklevel)
            np.clip(scaled, self.min_code, self.max_code, out=scaled)
            return scaled.astype(dtype)
        # in range: floor in cache-sized chunks straight into the output (no full-size temporaries)
        out = np.empty(a.size, dtype=dtype)
        chunk = 1 << 16
        tmp = np.empty(min(chunk, a.size))
        for start in range(0, a.size, chunk):
            t = tmp[:min(chunk, a.size - start)]
            np.multiply(a[start:start + chunk], scale, out=t)
            np.floor(t, out=t)
            out[start:start + chunk] = t
        return out

    def from_codes(self, codes) -> np.ndarray:
        # |code| < 2**52 and frac <= 52: the product is exact (no rounding, no underflow)
        return np.multiply(np.asarray(codes, dtype=np.float64), 2.0 ** -self.frac)

    def quantize(self, x, on_saturate: str = "ignore") -> np.ndarray:
        return self.from_codes(self.to_codes(x, on_saturate))

    def to_units(self, x) -> np.ndarray:
        a = np.asarray(x, dtype=np.float64)
        codes = self.to_codes(a, on_saturate="raise")
        if not np.array_equal(self.from_codes(codes), a):
            raise FormatError(f"values are not on the {self.name} grid; quantize them first")
        return codes

    def encode(self, x, on_saturate: str = "warn") -> Bits:
        a = np.asarray(x, dtype=np.float64).reshape(-1)
        if self.bits in _BYTE_SIGNED:  # the big-endian two's-complement bytes are the encoding
            codes = self._codes(a, np.dtype(_BYTE_SIGNED[self.bits]), on_saturate)
            return Bits._own(codes.view(np.uint8), a.size * self.bits)
        codes = self._codes(a, np.dtype(np.int64), on_saturate)  # in range by construction
        return _pack_valid(codes, self.bits)  # two's complement: the low ``bits`` bits of each code

    def decode(self, bits: Bits, count: int | None = None, offset: int = 0) -> np.ndarray:
        if self.bits in _BYTE_SIGNED and offset % 8 == 0:
            count = _span(bits, self.bits, count, offset)
            codes = np.frombuffer(bits.packed, dtype=_BYTE_SIGNED[self.bits], count=count, offset=offset // 8)
            return np.multiply(codes, 2.0 ** -self.frac, dtype=np.float64)  # exact: a power-of-two scale
        count = _span(bits, self.bits, count, offset)
        out = np.empty(count, dtype=np.float64)
        chunk = 1 << 16  # a multiple of 8: every chunk starts on the same bit phase
        for start in range(0, count, chunk):
            m = min(chunk, count - start)
            codes = unpack_signed(bits, self.bits, m, offset + start * self.bits)
            np.multiply(codes, 2.0 ** -self.frac, out=out[start:start + m])
        return out

    def round_units(self, units) -> np.ndarray:
        """A sum in units is already on the grid; saturate it to the range."""
        arr = np.asarray(units, dtype=object).reshape(-1)
        clipped = [min(max(int(u), self.min_code), self.max_code) for u in arr]
        return self.from_codes(np.array(clipped, dtype=np.int64)).reshape(np.shape(units))


# IEEE-style binary floating point: (total bits, exponent bits, mantissa bits)
_FLOAT_LAYOUT = {
    "float16": (16, 5, 10),
    "bfloat16": (16, 8, 7),
    "float32": (32, 8, 23),
    "float64": (64, 11, 52),
}


FLOAT_DTYPES = tuple(_FLOAT_LAYOUT)


@dataclass(frozen=True, eq=False, repr=False)
class FloatFormat(NumberFormat):
    """IEEE binary16, bfloat16, binary32 or binary64, round to nearest even.

    bfloat16 is emulated: round to float32, then to the top 16 bits with
    round-to-nearest-even, as PyTorch does.  Bit patterns are exact, including
    signed zero and infinities; NaN is refused.
    """

    dtype: str

    def __post_init__(self):
        if self.dtype not in _FLOAT_LAYOUT:
            raise FormatError(f"unknown float dtype {self.dtype!r}; expected one of {', '.join(FLOAT_DTYPES)}")

    @property
    def name(self) -> str:
        return self.dtype

    @property
    def bits(self) -> int:  # type: ignore[override]
        return _FLOAT_LAYOUT[self.dtype][0]

    @property
    def exponent_bits(self) -> int:
        return _FLOAT_LAYOUT[self.dtype][1]

    @property
    def mantissa_bits(self) -> int:
        return _FLOAT_LAYOUT[self.dtype][2]

    @property
    def _bias(self) -> int:
        return (1 << (self.exponent_bits - 1)) - 1

    @property
    def unit_exponent(self) -> int:  # type: ignore[override]
        # the smallest subnormal: 2**(1 - bias - mantissa_bits)
        return 1 - self._bias - self.mantissa_bits

    @property
    def max_value(self) -> float:
        return float((2 - 2.0 ** -self.mantissa_bits) * 2.0 ** self._bias)

    @property
    def _max_abs_unit(self) -> int:
        return ((1 << (self.mantissa_bits + 1)) - 1) << (self._bias - self.mantissa_bits - self.unit_exponent)

    def _check_nan(self, a: np.ndarray) -> None:
        if np.isnan(a).any():
            raise FormatError(f"NaN cannot be encoded in {self.dtype} (commsim refuses NaN)")

    def _to_patterns(self, a: np.ndarray) -> np.ndarray:
        """float64 array -> unsigned bit patterns of the format (rounding to nearest even)."""
        if self.dtype == "float64":
            return a.astype(np.float64).view(np.uint64)
        if self.dtype == "float32":
            with np.errstate(over="ignore"):
                return a.astype(np.float32).view(np.uint32)
        if self.dtype == "float16":
            with np.errstate(over="ignore"):
                return a.astype(np.float16).view(np.uint16)
        with np.errstate(over="ignore"):
            u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
        rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        return rounded.astype(np.uint16)

    def _from_patterns(self, u: np.ndarray) -> np.ndarray:
        if self.dtype == "float64":
            return u.astype(np.uint64).view(np.float64).copy()
        if self.dtype == "float32":
            return u.astype(np.uint32).view(np.float32).astype(np.float64)
        if self.dtype == "float16":
            return u.astype(np.uint16).view(np.float16).astype(np.float64)
        return (u.astype(np.uint32) << 16).view(np.float32).astype(np.float64)

    def quantize(self, x) -> np.ndarray:
        a = np.asarray(x, dtype=np.float64)
        if self.dtype == "float64":
            return a.copy()
        nan = np.isnan(a)
        out = self._from_patterns(self._to_patterns(np.where(nan, 0.0, a)))
        return np.where(nan, np.nan, out)

    def encode(self, x) -> Bits:
        a = np.asarray(x, dtype=np.float64).reshape(-1)
        self._check_nan(a)
        return pack_uints(self._to_patterns(a), self.bits)

    def decode(self, bits: Bits, count: int | None = None, offset: int = 0) -> np.ndarray:
        return self._from_patterns(unpack_uints(bits, self.bits, count, offset))

    def to_units(self, x) -> np.ndarray:
        """Exact integer multiples of the smallest subnormal (Python ints for wide formats)."""
        a = np.asarray(x, dtype=np.float64)
        self._check_nan(a)
        if np.isinf(a).any():
            raise FormatError("an infinity has no exact finite sum")
        if not np.array_equal(self.quantize(a), a):
            raise FormatError(f"values are not representable in {self.dtype}; quantize them first")
        mant, exp = np.frexp(a)  # a = mant * 2**exp, 0.5 <= |mant| < 1
        # mant * 2**53 is an exact integer; units = mant*2**53 * 2**(exp - 53 - unit_exponent)
        m = np.ldexp(mant, 53).astype(np.int64)
        shift = exp.astype(np.int64) - 53 - self.unit_exponent
        if self.dtype == "float16":  # shift in [-53, 40]: int64 suffices
            neg = shift < 0
            out = np.where(neg, m >> np.where(neg, -shift, 0), m << np.where(neg, 0, np.minimum(shift, 62)))
            return out.astype(np.int64)
        flat_m, flat_s = m.reshape(-1), shift.reshape(-1)
        out = np.empty(flat_m.size, dtype=object)
        for i, (mi, si) in enumerate(zip(flat_m.tolist(), flat_s.tolist())):
            out[i] = mi << si if si >= 0 else mi >> -si
        return out.reshape(a.shape)

    def round_units(self, units) -> np.ndarray:
        """Round exact sums to the format with one round-to-nearest-even step (no double rounding)."""
        arr = np.asarray(units, dtype=object).reshape(-1)
        out = np.array([self._round_int(int(u)) for u in arr], dtype=np.float64)
        return out.reshape(np.shape(units))

    def _round_int(self, u: int) -> float:
        if u == 0:
            return 0.0
        sign, mag = (-1.0 if u < 0 else 1.0), abs(u)
        # keep mantissa_bits + 1 significant bits, but never below the subnormal unit (2**0 in units)
        drop = max(mag.bit_length() - (self.mantissa_bits + 1), 0)
        if drop:
            q, r = divmod(mag, 1 << drop)
            half = 1 << (drop - 1)
            if r > half or (r == half and q & 1):
                q += 1
            mag = q << drop
        try:
            value = math.ldexp(float(mag >> drop), drop + self.unit_exponent) if drop else \
                math.ldexp(float(mag), self.unit_exponent)
        except OverflowError:  # beyond float64 itself (float64 sums): overflows to infinity
            return sign * math.inf
        if value > self.max_value:
            return sign * math.inf
        return sign * value


_FIXED_RE = re.compile(r"^fixed(\d+)(?:\.(\d+))?$")


def parse_format(text: str) -> NumberFormat:
    """``fixed16`` / ``fixed16.8`` / ``16`` (fixed point, half fraction bits) or a float dtype name."""
    t = str(text).strip().lower()
    if t in _FLOAT_LAYOUT:
        return FloatFormat(t)
    if t.isdigit():
        return FixedPoint.with_bits(int(t))
    m = _FIXED_RE.match(t)
    if m:
        return FixedPoint.with_bits(int(m.group(1)), int(m.group(2)) if m.group(2) else None)
    raise FormatError(f"unknown number format {text!r}: use P (fixed point), fixedP.F, or one of {', '.join(FLOAT_DTYPES)}")


# ---- a one-bit number format ---------------------------------------------------------------------
class BitFormat(NumberFormat):
    """One unsigned bit per unit: values {0, 1}; quantization rounds down and saturates (p = 1).

    The state format of the automaton and memorizing models: m units of this format are exactly
    m state bits, so their hidden-state message is exactly m bits long.
    """

    bits = 1
    unit_exponent = 0
    name = "bit"
    _max_abs_unit = 1

    def quantize(self, x) -> np.ndarray:
        a = np.asarray(x, dtype=np.float64)
        if np.isnan(a).any():
            raise FormatError("NaN has no one-bit representation")
        return np.clip(np.floor(a), 0.0, 1.0) + 0.0

    def to_units(self, x) -> np.ndarray:
        a = np.asarray(x, dtype=np.float64)
        if not np.array_equal(self.quantize(a), a):
            raise FormatError("values are not bits (0 or 1); quantize them first")
        return a.astype(np.int64)

    def encode(self, x) -> Bits:
        return pack_uints(self.quantize(np.asarray(x, dtype=np.float64).reshape(-1)).astype(np.uint8), 1)

    def decode(self, bits: Bits, count: int | None = None, offset: int = 0) -> np.ndarray:
        return unpack_uints(bits, 1, count, offset).astype(np.float64)

    def round_units(self, units) -> np.ndarray:
        return np.clip(np.asarray(units, dtype=np.float64), 0.0, 1.0)

    def __reduce__(self):
        return (BitFormat, ())


class _Quantizer:
    """An in-place quantizer for float64 arrays that gives exactly ``fmt.quantize`` (tested), with
    one change for IEEE formats: values saturate at the largest finite number instead of becoming
    infinite, so no step can produce inf - inf = NaN.  A class, not a closure: models must pickle
    (the audit mode sends them to other processes)."""

    def __init__(self, fmt: NumberFormat):
        self.fmt = fmt
        if isinstance(fmt, FixedPoint):
            self.mode = "fixed"
            self.scale, self.inverse = 2.0 ** fmt.frac, 2.0 ** -fmt.frac
            self.lo, self.hi = float(fmt.min_code), float(fmt.max_code)
        elif isinstance(fmt, BitFormat):
            self.mode, self.lo, self.hi = "bit", 0.0, 1.0
        elif isinstance(fmt, FloatFormat):
            self.mode, self.lo, self.hi = "float", -fmt.max_value, fmt.max_value
        else:
            self.mode = "generic"

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if self.mode == "fixed":  # scaling by a power of two is exact
            np.multiply(x, self.scale, out=x)
            np.floor(x, out=x)
            np.clip(x, self.lo, self.hi, out=x)
            np.add(x, 0.0, out=x)  # -0.0 -> +0.0: a code has no signed zero
            np.multiply(x, self.inverse, out=x)
        elif self.mode == "bit":
            np.floor(x, out=x)
            np.clip(x, 0.0, 1.0, out=x)
            np.add(x, 0.0, out=x)
        elif self.mode == "float":
            np.clip(x, self.lo, self.hi, out=x)
            if self.fmt.dtype != "float64":
                x[...] = self.fmt.quantize(x)
        else:
            x[...] = self.fmt.quantize(x)
        return x


def _quantizer(fmt: NumberFormat) -> _Quantizer:
    return _Quantizer(fmt)
