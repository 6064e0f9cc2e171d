"""Number formats: p-bit binary fixed point and IEEE-style floats.

The papers' finite-precision semantics (Appendix B.2 of [BHBK24]) put every
value on a fixed-point grid: round *down* to the grid, saturate at the range
ends.  Real models use IEEE formats.  Both are :class:`NumberFormat` objects
with a width ``bits`` (the papers' p), ``quantize`` for arrays, exact
``encode``/``decode`` to :class:`~commsim.core.bits.Bits`, and exact accumulation:
a sum is carried as an integer count of the format's smallest unit, so any
split of a sum into partial sums gives the same total (this is what makes the
attention protocol's output independent of the partition).

Every spelling of a format -- an int P, ``"16"``, ``"fixed16.8"``, ``"float32"``, a torch dtype, the keywords
``precision=``/``frac=``/``dtype=`` of a spec, of ``make_model`` and of ``commsim.run`` -- is read by one
parser, :func:`parse_format`, with the rules on conflicting spellings in one place.  The base class and the
one-bit format are in :mod:`commsim.core.format_base` (re-exported here).
"""
from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass

import numpy as np

from commsim.core.bits import Bits, field_count, pack_low_bits, pack_uints, unpack_uints
from commsim.core.format_base import BitFormat, FormatError, NumberFormat, SaturationWarning  # noqa: F401
from commsim.core.bitpack import lane_bits
from commsim.core.sums import SIGNED_BYTE_DTYPES, sign_extend


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
        """P-bit fixed point with ``frac`` fraction bits (default: half of them, P // 2)."""
        return cls(bits, bits // 2 if frac is None else frac)

    @property
    def name(self) -> str:
        """``fixedP.F``."""
        return f"fixed{self.bits}.{self.frac}"

    @property
    def spec_keys(self) -> str:
        """The spec keys that name this format, ``precision=P,frac=F`` (:func:`parse_format` reads them back)."""
        return f"precision={self.bits},frac={self.frac}"

    @property
    def unit_exponent(self) -> int:  # type: ignore[override]
        """-frac: values and exact sums are integers in units of 2**-frac."""
        return -self.frac

    @property
    def step(self) -> float:
        """The grid spacing 2**-frac."""
        return 2.0 ** -self.frac

    @property
    def min_code(self) -> int:
        """The smallest code, -2**(bits-1)."""
        return -(1 << (self.bits - 1))

    @property
    def max_code(self) -> int:
        """The largest code, 2**(bits-1) - 1."""
        return (1 << (self.bits - 1)) - 1

    @property
    def min_value(self) -> float:
        """The smallest value, min_code * step."""
        return self.min_code * self.step

    @property
    def max_value(self) -> float:
        """The largest value, max_code * step."""
        return self.max_code * self.step

    @property
    def max_abs_units(self) -> int:
        """The largest |value| in units: |min_code| = 2**(bits-1)."""
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
        """Codes as float64 values code * 2**-frac (exact)."""
        return np.multiply(np.asarray(codes, dtype=np.float64), 2.0 ** -self.frac)

    def quantize(self, x, on_saturate: str = "ignore") -> np.ndarray:
        """Round down to the grid and saturate (the codes' values); NaN is refused."""
        return self.from_codes(self.to_codes(x, on_saturate))

    def to_units(self, x) -> np.ndarray:
        """Values on the grid as their int64 codes (off the grid or out of range: FormatError)."""
        a = np.asarray(x, dtype=np.float64)
        codes = self.to_codes(a, on_saturate="raise")
        if not np.array_equal(self.from_codes(codes), a):
            raise FormatError(f"values are not on the {self.name} grid; quantize them first")
        return codes

    def encode(self, x, on_saturate: str = "warn") -> Bits:
        """Values rounded down and saturated, as ``bits``-bit two's-complement codes."""
        a = np.asarray(x, dtype=np.float64).reshape(-1)
        if self.bits in SIGNED_BYTE_DTYPES:  # the big-endian two's-complement bytes are the encoding
            codes = self._codes(a, np.dtype(SIGNED_BYTE_DTYPES[self.bits]), on_saturate)
            return Bits._own(codes.view(np.uint8), a.size * self.bits)
        # the codes in their container's signed type, then their low ``bits`` bits (two's complement) in place
        codes = self._codes(a, np.dtype(f"i{lane_bits(self.bits) // 8}"), on_saturate)
        low = codes.view(np.dtype(f"u{codes.dtype.itemsize}"))
        np.bitwise_and(low, low.dtype.type((1 << self.bits) - 1), out=low)
        return pack_low_bits(low, self.bits)

    def decode(self, bits: Bits, count: int | None = None, offset: int = 0) -> np.ndarray:
        """Inverse of :meth:`encode`: the values of the two's-complement codes."""
        if self.bits in SIGNED_BYTE_DTYPES and offset % 8 == 0:
            count = field_count(bits, self.bits, count, offset)
            codes = np.frombuffer(bits.packed, dtype=SIGNED_BYTE_DTYPES[self.bits], count=count, offset=offset // 8)
            return np.multiply(codes, 2.0 ** -self.frac, dtype=np.float64)  # exact: a power-of-two scale
        count = field_count(bits, self.bits, count, offset)
        out = np.empty(count, dtype=np.float64)
        chunk = 1 << 18  # a multiple of 8: every chunk starts on the same bit phase
        for start in range(0, count, chunk):
            m = min(chunk, count - start)
            codes = sign_extend(unpack_uints(bits, self.bits, m, offset + start * self.bits), self.bits)
            np.multiply(codes, 2.0 ** -self.frac, out=out[start:start + m])
        return out


# IEEE-style binary floating point: (total bits, exponent bits, mantissa bits)
_FLOAT_LAYOUT = {"float16": (16, 5, 10), "bfloat16": (16, 8, 7), "float32": (32, 8, 23), "float64": (64, 11, 52)}


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
        """The dtype name."""
        return self.dtype

    @property
    def spec_keys(self) -> str:
        """The spec key that names this format, ``dtype=NAME`` (:func:`parse_format` reads it back)."""
        return f"dtype={self.dtype}"

    @property
    def bits(self) -> int:  # type: ignore[override]
        """p: 16, 32 or 64."""
        return _FLOAT_LAYOUT[self.dtype][0]

    @property
    def exponent_bits(self) -> int:
        """Bits of the exponent field."""
        return _FLOAT_LAYOUT[self.dtype][1]

    @property
    def mantissa_bits(self) -> int:
        """Bits of the fraction (mantissa) field."""
        return _FLOAT_LAYOUT[self.dtype][2]

    @property
    def _bias(self) -> int:
        """The exponent bias, 2**(exponent_bits - 1) - 1."""
        return (1 << (self.exponent_bits - 1)) - 1

    @property
    def unit_exponent(self) -> int:  # type: ignore[override]
        # the smallest subnormal: 2**(1 - bias - mantissa_bits)
        """Exponent of the smallest subnormal: every value is an integer multiple of it."""
        return 1 - self._bias - self.mantissa_bits

    @property
    def max_value(self) -> float:
        """The largest finite value."""
        return float((2 - 2.0 ** -self.mantissa_bits) * 2.0 ** self._bias)

    @property
    def max_abs_units(self) -> int:
        """The largest finite value in units of the smallest subnormal."""
        return ((1 << (self.mantissa_bits + 1)) - 1) << (self._bias - self.mantissa_bits - self.unit_exponent)

    def _check_nan(self, a: np.ndarray) -> None:
        """Refuse NaN (it has no place in an exact computation)."""
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
        """Unsigned bit patterns of the format -> float64 values (exact)."""
        if self.dtype == "float64":
            return u.astype(np.uint64).view(np.float64).copy()
        if self.dtype == "float32":
            return u.astype(np.uint32).view(np.float32).astype(np.float64)
        if self.dtype == "float16":
            return u.astype(np.uint16).view(np.float16).astype(np.float64)
        return (u.astype(np.uint32) << 16).view(np.float32).astype(np.float64)

    def quantize(self, x) -> np.ndarray:
        """Round to nearest even (bfloat16: via float32, as PyTorch does); overflow gives inf, NaN stays NaN."""
        a = np.asarray(x, dtype=np.float64)
        if self.dtype == "float64":
            return a.copy()
        nan = np.isnan(a)
        out = self._from_patterns(self._to_patterns(np.where(nan, 0.0, a)))
        return np.where(nan, np.nan, out)

    def encode(self, x) -> Bits:
        """The values' bit patterns after rounding to the format (NaN refused)."""
        a = np.asarray(x, dtype=np.float64).reshape(-1)
        self._check_nan(a)
        return pack_uints(self._to_patterns(a), self.bits)

    def decode(self, bits: Bits, count: int | None = None, offset: int = 0) -> np.ndarray:
        """Inverse of :meth:`encode` (signed zeros and infinities included)."""
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


# ---- the one parser: every spelling of a format ------------------------------------------------------
#: the keyword spellings of a format: ``precision=P[,frac=F]`` (fixed point, or any other spelling) or ``dtype=NAME``
FORMAT_KEYS = ("precision", "frac", "dtype")

_FIXED_RE = re.compile(r"^fixed(\d+)(?:\.(\d+))?$")


def dtype_name(dtype) -> str:
    """A dtype's name as commsim spells it: a torch dtype (``torch.float16``, or its text) without the ``torch.``
    prefix, anything else as its text (``"float32"``, ``numpy.float32``'s name)."""
    name = getattr(dtype, "__name__", None) if isinstance(dtype, type) else None
    return str(name or dtype).strip().removeprefix("torch.")


def _integer(value) -> int | None:
    """``value`` as an int when it spells a non-negative integer (``8``, ``"8"``, ``" 08 "``), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    text = str(value).strip() if isinstance(value, str) else ""
    return int(text) if text.isdigit() and text.isascii() else None


def _one_spelling(value, param: str) -> NumberFormat:
    """A format from one value: a NumberFormat itself, an int P (P-bit fixed point, P // 2 fraction bits), or text
    -- ``P``, ``fixedP``, ``fixedP.F``, a float dtype name, a torch dtype or its name (``torch.bfloat16``)."""
    if isinstance(value, NumberFormat):
        return value
    if isinstance(value, bool) or not (isinstance(value, (int, str)) or type(value).__module__ == "torch"):
        raise FormatError(f"{param} must be an int (fixed-point bits) or a format name such as 'fixed16.8' or "
                          f"'bfloat16'; got {value!r}", param)
    if isinstance(value, int):
        return FixedPoint.with_bits(value)
    text = dtype_name(value).lower()
    if text in _FLOAT_LAYOUT:
        return FloatFormat(text)
    if text.isdigit() and text.isascii():
        return FixedPoint.with_bits(int(text))
    m = _FIXED_RE.match(text)
    if m:
        return FixedPoint.with_bits(int(m.group(1)), int(m.group(2)) if m.group(2) else None)
    raise FormatError(f"unknown number format {value!r}: use P (fixed point), fixedP.F, or one of "
                      f"{', '.join(FLOAT_DTYPES)}", param)


def _refused(exc: FormatError, param: str) -> FormatError:
    """``exc`` naming ``param`` (the argument whose value it is about)."""
    return FormatError(str(exc), param)


def parse_format(spelling=None, *, precision=None, frac=None, dtype=None) -> NumberFormat | None:
    """The one parser of number formats, from any of their spellings; None when none is given.

    ``spelling`` (or ``precision=``, the same thing under its keyword name): a :class:`NumberFormat`, an int P,
    ``"P"``, ``"fixedP"``, ``"fixedP.F"`` (P bits, F of them after the point; F = P // 2 when not said), a float
    dtype name (``"bfloat16"``, any case) or a torch dtype (``torch.float16``) or its name.  ``frac=F``: the
    fraction bits of an integer ``precision``.  ``dtype=``: a float format, by name, torch dtype or
    :class:`FloatFormat`.  The conflict rules, the same for a spec's keys, ``make_model``/``commsim.run``'s
    keywords and the command line: ``dtype`` goes with neither ``precision`` nor ``frac``; ``frac`` needs an
    integer ``precision``.  Every refusal is a :class:`FormatError` (an InputError) whose ``param`` is the
    argument at fault: ``precision`` for the width, ``frac`` for the fraction bits, ``dtype`` for the dtype."""
    if spelling is not None and precision is not None:
        raise FormatError(f"the format is given twice: {spelling!r} and precision={precision!r}", "precision")
    precision = spelling if precision is None else precision
    if dtype is not None and (precision is not None or frac is not None):
        raise FormatError("give either precision= (fixed point) or dtype=, not both", "dtype")
    if frac is not None:
        if precision is None:
            raise FormatError("frac= needs precision= (the fixed-point width)", "frac")
        if _integer(precision) is None:
            raise FormatError(f"frac= needs an integer precision= (the fixed-point width); got "
                              f"precision={precision!r}", "frac")
        if _integer(frac) is None:
            raise FormatError(f"frac must be a non-negative int (fraction bits); got {frac!r}", "frac")
    if dtype is not None:
        if isinstance(dtype, FloatFormat):
            return dtype
        try:
            return FloatFormat(dtype_name(dtype))
        except FormatError as exc:
            raise _refused(exc, "dtype") from None
    if precision is None:
        return None
    if frac is None:
        try:
            return _one_spelling(precision, "precision")
        except FormatError as exc:
            raise _refused(exc, "precision") from None
    bits = _integer(precision)
    try:
        FixedPoint.with_bits(bits)   # the width alone first: an error there is precision's, the rest is frac's
    except FormatError as exc:
        raise _refused(exc, "precision") from None
    try:
        return FixedPoint.with_bits(bits, _integer(frac))
    except FormatError as exc:
        raise _refused(exc, "frac") from None
