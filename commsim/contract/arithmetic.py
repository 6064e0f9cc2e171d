"""Exact finite-precision arithmetic shared by every model: fixed-point and IEEE kernels, dense products.

:class:`FixedArithmetic` and :class:`FloatArithmetic` are the semantics of the attention models
(Appendix B.2 of [BHBK24]: round down and saturate, or IEEE round to nearest even): linear maps
and dot products exact and rounded once, exact sums in units, one division (or, the per-weight
semantics of Appendix D, each weight a_i = [e_i / Z] rounded and the sum of [a_i v_i] rounded).  :class:`Dense`,
:func:`sigmoid` and :func:`label_dtype` are the batch-independent pieces of the recurrent models
and the torch adapters, whose values are rounded in place by :class:`Quantizer`.
"""
from __future__ import annotations

import numpy as np

from commsim.core.bits import Bits
from commsim.core.ordered import ordered_dot
from commsim.core.precision import BitFormat, FixedPoint, FloatFormat, FormatError, NumberFormat
from commsim.core.sums import pack_signed, unpack_signed


def _store_dtype(bits: int) -> np.dtype:
    """The narrowest signed integer type that holds codes of ``bits`` bits."""
    for width, dt in ((8, np.int8), (16, np.int16), (32, np.int32)):
        if bits <= width:
            return np.dtype(dt)
    return np.dtype(np.int64)


# ---- arithmetic: fixed point (integer codes) ------------------------------------------------
class FixedArithmetic:
    """Fixed-point semantics on int64 codes (value = code * 2^-F): round down, saturate."""

    is_fixed = True

    def __init__(self, fmt: FixedPoint):
        self.format = fmt
        self.p, self.F = fmt.bits, fmt.frac
        self.lo, self.hi = fmt.min_code, fmt.max_code
        self.dtype = np.dtype(np.int64)
        self.store = _store_dtype(fmt.bits)
        #: units of the largest attention weight e (the rounding of 1)
        self.one_units = min(1 << self.F, self.hi)
        #: largest |rounded product e * v| in units
        self.value_units = fmt.max_abs_units

    # conversions
    def from_values(self, x) -> np.ndarray:
        """Codes of x rounded down and saturated, in the narrowest integer type of the format."""
        return self.format.to_codes(np.asarray(x, dtype=np.float64), on_saturate="ignore").astype(self.store)

    def to_values(self, r) -> np.ndarray:
        """Codes as float64 values (exact)."""
        return self.format.from_codes(np.asarray(r, dtype=np.int64))

    def _clip(self, acc) -> np.ndarray:
        """Saturate integers to the code range, as int64."""
        return np.clip(acc, self.lo, self.hi).astype(np.int64)

    def add(self, a, b) -> np.ndarray:
        """[a + b]: the exact sum of two codes, saturated."""
        wide = np.int32 if self.p <= 30 else np.int64
        total = np.asarray(a).astype(wide) + np.asarray(b).astype(wide)
        return np.clip(total, self.lo, self.hi, out=total).astype(self.store)

    # exact linear algebra, rounded once
    def _round_products(self, acc) -> np.ndarray:
        """Exact integer sums of products (units 2^-2F) rounded down to the grid, saturated; the
        codes come back in the narrowest integer type of the format (in place where possible)."""
        if acc.dtype == np.float64:  # exact integers below 2^53: scaling and floor are exact
            acc *= 2.0 ** -self.F
            np.floor(acc, out=acc)
            np.clip(acc, self.lo, self.hi, out=acc)
            return acc.astype(self.store)
        return np.clip(acc >> self.F, self.lo, self.hi).astype(self.store)

    def linear(self, X, W, bias=None) -> np.ndarray:
        """[W x + b] for each row x of X (..., K); W (out, K) and b (out,) are codes."""
        X = np.asarray(X)
        shape = X.shape[:-1]
        X2 = X.reshape(-1, X.shape[-1])
        wmax = int(np.abs(W.astype(np.int64)).max()) if W.size else 0
        bmax = (int(np.abs(bias.astype(np.int64)).max()) << self.F) if bias is not None and bias.size else 0
        bound = X.shape[-1] * wmax * self.value_units + bmax
        if bound < (1 << 53):
            acc = X2.astype(np.float64) @ W.T.astype(np.float64)
            if bias is not None:
                acc += bias.astype(np.float64) * float(1 << self.F)
        elif bound < (1 << 62):
            acc = X2.astype(np.int64) @ W.T.astype(np.int64)
            if bias is not None:
                acc += bias.astype(np.int64) << self.F
        else:
            acc = X2.astype(object) @ W.T.astype(object)
            if bias is not None:
                acc = acc + np.array([int(b) << self.F for b in bias], dtype=object)
        return self._round_products(acc).reshape(shape + (W.shape[0],))

    def matmul(self, a, b) -> np.ndarray:
        """[a @ b] for integer codes, batched as ``np.matmul``: the exact integer sums of products
        (float64 BLAS while they stay below 2^53, int64 or Python integers beyond), rounded down to
        the grid once and saturated; int64 codes.  Every query of a multi-layer model at once."""
        a, b = np.asarray(a), np.asarray(b)
        largest_a = max(-int(a.min(initial=0)), int(a.max(initial=0)))
        largest_b = max(-int(b.min(initial=0)), int(b.max(initial=0)))
        bound = largest_a * largest_b * max(a.shape[-1], 1)
        if bound < (1 << 53):
            acc = np.matmul(a.astype(np.float64), b.astype(np.float64))
        elif bound < (1 << 62):
            acc = np.matmul(a.astype(np.int64), b.astype(np.int64))
        else:
            acc = np.matmul(a.astype(object), b.astype(object))
        return self._round_products(acc).astype(np.int64)

    def logits(self, q, k) -> np.ndarray:
        """A[b, h, i] = [<q[b, h], k[b, i, h]>] for q (B, H, m), k (B, n, H, m)."""
        B, n, H, m = k.shape
        bound = m * self.value_units * self.value_units
        if bound < (1 << 53) and B <= 16:  # exact in float64 whatever the order: BLAS per row and head
            acc = np.empty((B, n, H))
            kf, qf = k.astype(np.float64), q.astype(np.float64)
            for b in range(B):
                for h in range(H):
                    acc[b, :, h] = kf[b, :, h] @ qf[b, h]
        elif bound < (1 << 53):
            acc = (k.astype(np.float64) * q.astype(np.float64)[:, None]).sum(axis=-1)
        elif bound < (1 << 62):
            acc = (k.astype(np.int64) * q.astype(np.int64)[:, None]).sum(axis=-1)
        else:
            acc = (k.astype(object) * q.astype(object)[:, None]).sum(axis=-1)
        return self._round_products(acc).transpose(0, 2, 1)

    def exp_weights(self, A, M) -> np.ndarray:
        """e = [exp(A - M)] (A - M <= 0): floor(exp(delta) * 2^F), at most the rounding of 1."""
        delta = (np.asarray(A, dtype=np.int64) - np.asarray(M, dtype=np.int64)[..., None]).astype(np.float64)
        e = np.floor(np.exp(delta * (2.0 ** -self.F)) * (2.0 ** self.F))
        return np.minimum(e, self.hi).astype(np.int64)

    def sum_weights(self, e) -> np.ndarray:
        """Z = sum_i e_i along the last axis: exact integers in units 2^-F."""
        return np.asarray(e, dtype=np.int64).sum(axis=-1)

    def sum_products(self, e, v) -> np.ndarray:
        """sum_i [e_i v_i] for e (B, H, n) and v (B, n, H, m): exact integers (B, H, m)."""
        vt = np.asarray(v).transpose(0, 2, 1, 3)
        if 2 * self.p - 2 < 62:
            prod = np.asarray(e, dtype=np.int64)[..., None] * vt.astype(np.int64, copy=False)
            return (prod >> self.F).sum(axis=2)
        prod = np.asarray(e).astype(object)[..., None] * vt.astype(object)
        return (prod >> self.F).sum(axis=2)

    def divide(self, U, Z) -> np.ndarray:
        """o = [U / Z] = floor(U * 2^F / Z), saturated (U, Z exact sums in units 2^-F; Z > 0)."""
        U = np.asarray(U)
        Zc = np.asarray(Z)[..., None]
        big = U.dtype == object or Zc.dtype == object or \
            (int(np.abs(U).max(initial=0)) << self.F) >= (1 << 62)
        if big:
            out = (U.astype(object) * (1 << self.F)) // Zc.astype(object)
        else:
            out = np.floor_divide(U.astype(np.int64) << self.F, Zc.astype(np.int64))
        return self._clip(out)

    def relu(self, r) -> np.ndarray:
        """max(r, 0) (exact on codes)."""
        return np.maximum(r, 0)

    def sum_range(self, n_terms: int) -> tuple[int, int]:
        """The range of an exact sum of n rounded products [e v] (e <= 1), in units."""
        return -n_terms * self.value_units, n_terms * (self.value_units - 1)

    # messages
    def encode(self, r) -> Bits:
        """Codes as ``p``-bit two's complement: the message form of a number."""
        return pack_signed(np.asarray(r, dtype=np.int64).reshape(-1), self.p)

    def decode(self, bits: Bits, count: int) -> np.ndarray:
        """Inverse of :meth:`encode`: ``count`` codes."""
        return unpack_signed(bits, self.p, count).astype(np.int64)

    def key(self, r) -> np.ndarray:
        """The values as int64 keys whose equality is bit equality (for collision searches)."""
        return np.asarray(r, dtype=np.int64)


# ---- arithmetic: IEEE formats ---------------------------------------------------------------
class FloatArithmetic:
    """IEEE semantics on float64 arrays holding format values: round to nearest even; overflow
    saturates to the largest finite value; dot products accumulate in float64 in index order."""

    is_fixed = False

    def __init__(self, fmt: FloatFormat):
        self.format = fmt
        self.p = fmt.bits
        self.max = fmt.max_value
        self.dtype = np.dtype(np.float64)
        self.store = np.dtype(np.float64)
        self.one_units = 1 << (-fmt.unit_exponent)
        self.value_units = fmt.max_abs_units  # max_value, in units

    def from_values(self, x) -> np.ndarray:
        """Values rounded to the format, overflow saturating at +-max_value (NaN refused)."""
        a = np.asarray(x, dtype=np.float64)
        if np.isnan(a).any():
            raise FormatError(f"NaN in a {self.format.name} computation (commsim refuses NaN)")
        q = self.format.quantize(a)
        return np.clip(q, -self.max, self.max)

    def to_values(self, r) -> np.ndarray:
        """The values as float64 (they are stored as such)."""
        return np.asarray(r, dtype=np.float64)

    def add(self, a, b) -> np.ndarray:
        """[a + b], rounded once."""
        with np.errstate(over="ignore"):
            return self.from_values(np.asarray(a) + np.asarray(b))

    @staticmethod
    def _ordered_dot(X, W) -> np.ndarray:
        """sum_k X[..., k] W[:, k], accumulated in float64 in index order (:func:`~commsim.core.ordered.ordered_dot`)."""
        return ordered_dot(X, W)

    def linear(self, X, W, bias=None) -> np.ndarray:
        """[W x + b] for each row x of X: products summed in float64 in index order, rounded once."""
        acc = self._ordered_dot(np.asarray(X, dtype=np.float64), W)
        if bias is not None:
            with np.errstate(over="ignore"):
                acc = acc + bias
        return self.from_values(acc)

    def logits(self, q, k) -> np.ndarray:
        """A[b, h, i] = [<q[b, h], k[b, i, h]>], accumulated in float64 in index order."""
        acc = np.zeros(k.shape[:-1])
        qq = q[:, None]
        with np.errstate(over="ignore", invalid="ignore"):
            for j in range(k.shape[-1]):
                acc += k[..., j] * qq[..., j]
        return self.from_values(acc).transpose(0, 2, 1)

    def exp_weights(self, A, M) -> np.ndarray:
        """e = [exp(A - M)] (A - M <= 0), rounded to the format."""
        return self.from_values(np.exp(np.asarray(A) - np.asarray(M)[..., None]))

    def exact_sum(self, x, axis: int) -> np.ndarray:
        """The exact sum along ``axis`` in units of the smallest subnormal, as ``fmt.exact_sum`` —
        vectorized for formats of at most 24 significant bits (bfloat16, float32): each value is
        m * 2^s units with |m| < 2^24, split as (m << (s mod 16)) into 16-bit-aligned limbs that
        are summed in int64 and joined into Python integers."""
        if self.format.dtype not in ("bfloat16", "float32"):
            return self.format.exact_sum(x, axis=axis)
        x = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
        if x.shape[-1] >= (1 << 22):
            return self.format.exact_sum(x, axis=-1)
        mant, ex = np.frexp(x)
        M = (mant * float(1 << 24)).astype(np.int64)                  # exact: <= 24 significant bits
        shift = ex.astype(np.int64) - 24 - self.format.unit_exponent
        low = shift < 0                                                # subnormals: trailing zeros
        M = np.where(low, M >> np.where(low, -shift, 0), M)
        shift = np.where(low, 0, shift)
        limb, rest = shift >> 4, shift & 15
        term = M << rest                                               # |term| < 2^40
        total = np.zeros(x.shape[:-1], dtype=object)
        first = int(limb.min(initial=0))
        # the limbs present, ascending (a count per limb: np.unique would sort or hash the whole array)
        for j in np.flatnonzero(np.bincount((limb - first).reshape(-1))) + first:
            part = np.where(limb == j, term, 0).sum(axis=-1)          # < n 2^40: fits in int64
            total = total + part.astype(object) * (1 << (16 * int(j)))
        return total

    def sum_weights(self, e) -> np.ndarray:
        """Z = sum_i e_i exactly, in units of the smallest subnormal."""
        return self.exact_sum(e, axis=-1)

    def sum_products(self, e, v) -> np.ndarray:
        """U = sum_i [e_i v_i] exactly (each product rounded), in units of the smallest subnormal."""
        vt = np.asarray(v).transpose(0, 2, 1, 3)
        prod = self.from_values(np.asarray(e)[..., None] * vt)
        return self.exact_sum(prod, axis=2)

    def divide(self, U, Z) -> np.ndarray:
        """o = [U / Z]: Python's correctly rounded integer division, then rounded to the format."""
        U = np.asarray(U).astype(object)
        Zc = np.broadcast_to(np.asarray(Z).astype(object)[..., None], U.shape)
        ratio = np.frompyfunc(lambda u, z: int(u) / int(z), 2, 1)(U, Zc).astype(np.float64)
        return self.from_values(ratio)

    def relu(self, r) -> np.ndarray:
        """max(r, 0)."""
        return np.maximum(r, 0.0)

    def sum_range(self, n_terms: int) -> tuple[int, int]:
        """The range of an exact sum of n rounded products [e v] (e <= 1), in units."""
        return -n_terms * self.value_units, n_terms * self.value_units

    def encode(self, r) -> Bits:
        """Values as the format's bit patterns."""
        return self.format.encode(np.asarray(r, dtype=np.float64).reshape(-1))

    def decode(self, bits: Bits, count: int) -> np.ndarray:
        """Inverse of :meth:`encode`: ``count`` values."""
        return self.format.decode(bits, count)

    def key(self, r) -> np.ndarray:
        """The float64 bit patterns as int64 keys (equality is bit equality, -0.0 != 0.0)."""
        return np.ascontiguousarray(np.asarray(r, dtype=np.float64)).view(np.int64)


def arithmetic_for(fmt: NumberFormat):
    """The exact arithmetic of a number format: :class:`FixedArithmetic` or :class:`FloatArithmetic`."""
    return FixedArithmetic(fmt) if isinstance(fmt, FixedPoint) else FloatArithmetic(fmt)


# ---- the in-place rounding of every model ------------------------------------------------------
class Quantizer:
    """Rounding to a number format, in place on float64 arrays: the one quantizer of every model
    (recurrent states and readouts, the torch adapters).  ``fmt.quantize`` defines the rounding;
    this is its fast in-place form.

    Fixed point: floor to the grid 2**-frac and saturate (Appendix B.2 of [BHBK24]), with -0.0
    made +0.0 (a code has no signed zero); one bit: floor and clip to {0, 1}; IEEE formats: round
    to nearest even, saturating at the largest finite value instead of overflowing to infinity,
    so no step of a model can produce inf - inf = NaN.  Elementwise it equals ``fmt.quantize``
    (the same values and bit patterns; for IEEE formats clipped to the finite range), which the
    tests check.  NaN is not checked here (``fmt.quantize`` refuses it).  A class, not a closure,
    so that models pickle (the audit mode sends them to other processes).
    """

    def __init__(self, fmt: NumberFormat):
        self.format = fmt
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
        """Round the float64 array ``x`` in place and return it."""
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
            if self.format.dtype != "float64":
                x[...] = self.format.quantize(x)
        else:
            x[...] = self.format.quantize(x)
        return x

    def __repr__(self) -> str:
        return f"<Quantizer {self.format.name}>"


# ---- dense products and pointwise functions of the recurrent models and the torch adapters ------
#: rows per BLAS call: small enough that OpenBLAS stays single-threaded (its thread hand-off costs
#: far more than it saves on these thin products, and much more on a busy machine)
_BLAS_ROWS = 512


def label_dtype(classes: int) -> np.dtype:
    """The smallest signed integer type that holds class labels ``0..classes-1``."""
    return np.dtype(np.int8 if classes <= 127 else np.int16 if classes <= 32767 else np.int32)


def dot_is_exact(fmt: NumberFormat, terms: int) -> bool:
    """Is every sum of ``terms`` products of two values of ``fmt`` exact in float64 (any order)?"""
    if not isinstance(fmt, FixedPoint):
        return False
    # codes up to 2**(P-1) in magnitude: products up to 2**(2P-2) units of 2**-2F, sums times `terms`;
    # one more bit of headroom for the addition of the (grid-valued) input term.
    return 2 * fmt.bits - 2 + max(terms, 1).bit_length() + 1 <= 53


class Dense:
    """``x @ W + b`` (W stored as (inputs, outputs)) whose rows do not depend on the batch.

    A protocol run (batch 1), a batch run (large batches) and the direct forward must give
    the same bits, and a BLAS product does not promise that across batch sizes.  So the product
    is either *exact* (fixed point whose products and sums fit in float64's 53 bits,
    :func:`dot_is_exact`: any order gives the same value, and BLAS is used) or summed term by
    term, left to right, each product and each sum rounded once in a fixed order.
    """

    def __init__(self, weight: np.ndarray, bias: np.ndarray | None = None, exact: bool = False):
        self.weight = np.ascontiguousarray(weight, dtype=np.float64)
        self.bias = None if bias is None else np.asarray(bias, dtype=np.float64)
        self.exact = exact

    @classmethod
    def for_format(cls, weight, bias, fmt: NumberFormat) -> "Dense":
        """A product over weights of ``fmt``: exact (BLAS) when :func:`dot_is_exact` says so."""
        return cls(weight, bias, dot_is_exact(fmt, np.shape(weight)[0]))

    @property
    def outputs(self) -> int:
        """The number of output columns."""
        return int(self.weight.shape[1])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The product of the rows of the float64 array ``x`` (rows, inputs) with the weight, plus the bias."""
        rows, inputs = x.shape
        out = np.empty((rows, self.weight.shape[1]))
        if inputs == 0:
            out.fill(0.0)
        elif self.exact:
            for s in range(0, rows, _BLAS_ROWS):
                np.matmul(x[s:s + _BLAS_ROWS], self.weight, out=out[s:s + _BLAS_ROWS])
        else:  # term by term, left to right: each product and each sum rounded once, in a fixed order
            np.multiply(x[:, 0:1], self.weight[0], out=out)
            tmp = np.empty_like(out)
            for j in range(1, inputs):
                np.multiply(x[:, j:j + 1], self.weight[j], out=tmp)
                out += tmp
        if self.bias is not None:
            out += self.bias
        return out


def sigmoid(z: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-z)), in place on the float64 array ``z`` (exp overflow gives exactly 0)."""
    np.negative(z, out=z)
    with np.errstate(over="ignore"):
        np.exp(z, out=z)
    z += 1.0
    np.divide(1.0, z, out=z)     # the correctly rounded 1/z, as np.reciprocal (twice as fast for float64)
    return z
