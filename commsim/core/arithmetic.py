"""Exact finite-precision arithmetic shared by every model: fixed-point and IEEE kernels, dense products."""
from __future__ import annotations

import numpy as np

from commsim.core.bits import Bits
from commsim.core.precision import (
    FixedPoint,
    FloatFormat,
    FormatError,
    NumberFormat,
    pack_signed,
    unpack_signed,
)


def _store_dtype(bits: int) -> np.dtype:
    for width, dt in ((8, np.int8), (16, np.int16), (32, np.int32)):
        if bits <= width:
            return np.dtype(dt)
    return np.dtype(np.int64)


# ---- arithmetic: fixed point (integer codes) ------------------------------------------------
class FixedArithmetic:
    """Fixed-point semantics on int64 codes (value = code * 2^-F): round down, saturate."""

    is_fixed = True

    def __init__(self, fmt: FixedPoint):
        self.fmt = fmt
        self.p, self.F = fmt.bits, fmt.frac
        self.lo, self.hi = fmt.min_code, fmt.max_code
        self.dtype = np.dtype(np.int64)
        self.store = _store_dtype(fmt.bits)
        #: units of the largest attention weight e (the rounding of 1)
        self.one_units = min(1 << self.F, self.hi)
        #: largest |rounded product e * v| in units
        self.value_units = 1 << (self.p - 1)

    # conversions
    def from_values(self, x) -> np.ndarray:
        """Codes of x rounded down and saturated, in the narrowest integer type of the format."""
        return self.fmt.to_codes(np.asarray(x, dtype=np.float64), on_saturate="ignore").astype(self.store)

    def to_values(self, r) -> np.ndarray:
        return self.fmt.from_codes(np.asarray(r, dtype=np.int64))

    def _clip(self, acc) -> np.ndarray:
        return np.clip(acc, self.lo, self.hi).astype(np.int64)

    def add(self, a, b) -> np.ndarray:
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
        return np.asarray(e, dtype=np.int64).sum(axis=-1)

    def sum_products(self, e, v) -> np.ndarray:
        """sum_i [e_i v_i] for e (B, H, n) and v (B, n, H, m): exact integers (B, H, m)."""
        vt = np.asarray(v).transpose(0, 2, 1, 3)
        if 2 * self.p - 2 < 62:
            prod = np.asarray(e, dtype=np.int64)[..., None] * vt.astype(np.int64)
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
        return np.maximum(r, 0)

    def sum_range(self, n_terms: int) -> tuple[int, int]:
        """The range of an exact sum of n rounded products [e v] (e <= 1), in units."""
        return -n_terms * self.value_units, n_terms * (self.value_units - 1)

    # messages
    def encode(self, r) -> Bits:
        return pack_signed(np.asarray(r, dtype=np.int64).reshape(-1), self.p)

    def decode(self, bits: Bits, count: int) -> np.ndarray:
        return unpack_signed(bits, self.p, count).astype(np.int64)

    def key(self, r) -> np.ndarray:
        return np.asarray(r, dtype=np.int64)


# ---- arithmetic: IEEE formats ---------------------------------------------------------------
class FloatArithmetic:
    """IEEE semantics on float64 arrays holding format values: round to nearest even; overflow
    saturates to the largest finite value; dot products accumulate in float64 in index order."""

    is_fixed = False

    def __init__(self, fmt: FloatFormat):
        self.fmt = fmt
        self.p = fmt.bits
        self.max = fmt.max_value
        self.dtype = np.dtype(np.float64)
        self.store = np.dtype(np.float64)
        self.one_units = 1 << (-fmt.unit_exponent)
        bias = (1 << (fmt.exponent_bits - 1)) - 1
        mant = fmt.mantissa_bits
        self.value_units = ((1 << (mant + 1)) - 1) << (bias - mant - fmt.unit_exponent)  # max_value, in units

    def from_values(self, x) -> np.ndarray:
        a = np.asarray(x, dtype=np.float64)
        if np.isnan(a).any():
            raise FormatError(f"NaN in a {self.fmt.name} computation (commsim refuses NaN)")
        q = self.fmt.quantize(a)
        return np.clip(q, -self.max, self.max)

    def to_values(self, r) -> np.ndarray:
        return np.asarray(r, dtype=np.float64)

    def add(self, a, b) -> np.ndarray:
        with np.errstate(over="ignore"):
            return self.from_values(np.asarray(a) + np.asarray(b))

    @staticmethod
    def _ordered_dot(X, W) -> np.ndarray:
        """sum_k X[..., k] W[:, k], accumulated in float64 in index order k = 0, 1, ..."""
        acc = np.zeros(X.shape[:-1] + (W.shape[0],))
        with np.errstate(over="ignore", invalid="ignore"):
            for j in range(X.shape[-1]):
                acc += X[..., j:j + 1] * W[:, j]
        return acc

    def linear(self, X, W, bias=None) -> np.ndarray:
        acc = self._ordered_dot(np.asarray(X, dtype=np.float64), W)
        if bias is not None:
            with np.errstate(over="ignore"):
                acc = acc + bias
        return self.from_values(acc)

    def logits(self, q, k) -> np.ndarray:
        acc = np.zeros(k.shape[:-1])
        qq = q[:, None]
        with np.errstate(over="ignore", invalid="ignore"):
            for j in range(k.shape[-1]):
                acc += k[..., j] * qq[..., j]
        return self.from_values(acc).transpose(0, 2, 1)

    def exp_weights(self, A, M) -> np.ndarray:
        return self.from_values(np.exp(np.asarray(A) - np.asarray(M)[..., None]))

    def exact_sum(self, x, axis: int) -> np.ndarray:
        """The exact sum along ``axis`` in units of the smallest subnormal, as ``fmt.exact_sum`` —
        vectorized for formats of at most 24 significant bits (bfloat16, float32): each value is
        m * 2^s units with |m| < 2^24, split as (m << (s mod 16)) into 16-bit-aligned limbs that
        are summed in int64 and joined into Python integers."""
        if self.fmt.dtype not in ("bfloat16", "float32"):
            return self.fmt.exact_sum(x, axis=axis)
        x = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
        if x.shape[-1] >= (1 << 22):
            return self.fmt.exact_sum(x, axis=-1)
        mant, ex = np.frexp(x)
        M = (mant * float(1 << 24)).astype(np.int64)                  # exact: <= 24 significant bits
        shift = ex.astype(np.int64) - 24 - self.fmt.unit_exponent
        low = shift < 0                                                # subnormals: trailing zeros
        M = np.where(low, M >> np.where(low, -shift, 0), M)
        shift = np.where(low, 0, shift)
        limb, rest = shift >> 4, shift & 15
        term = M << rest                                               # |term| < 2^40
        total = np.zeros(x.shape[:-1], dtype=object)
        for j in np.unique(limb):
            part = np.where(limb == j, term, 0).sum(axis=-1)          # < n 2^40: fits in int64
            total = total + part.astype(object) * (1 << (16 * int(j)))
        return total

    def sum_weights(self, e) -> np.ndarray:
        return self.exact_sum(e, axis=-1)

    def sum_products(self, e, v) -> np.ndarray:
        vt = np.asarray(v).transpose(0, 2, 1, 3)
        prod = self.from_values(np.asarray(e)[..., None] * vt)
        return self.exact_sum(prod, axis=2)

    def divide(self, U, Z) -> np.ndarray:
        U = np.asarray(U).astype(object)
        Zc = np.broadcast_to(np.asarray(Z).astype(object)[..., None], U.shape)
        ratio = np.frompyfunc(lambda u, z: int(u) / int(z), 2, 1)(U, Zc).astype(np.float64)
        return self.from_values(ratio)

    def relu(self, r) -> np.ndarray:
        return np.maximum(r, 0.0)

    def sum_range(self, n_terms: int) -> tuple[int, int]:
        return -n_terms * self.value_units, n_terms * self.value_units

    def encode(self, r) -> Bits:
        return self.fmt.encode(np.asarray(r, dtype=np.float64).reshape(-1))

    def decode(self, bits: Bits, count: int) -> np.ndarray:
        return self.fmt.decode(bits, count)

    def key(self, r) -> np.ndarray:
        return np.ascontiguousarray(np.asarray(r, dtype=np.float64)).view(np.int64)


def arithmetic_for(fmt: NumberFormat):
    return FixedArithmetic(fmt) if isinstance(fmt, FixedPoint) else FloatArithmetic(fmt)


#: rows per BLAS call: small enough that OpenBLAS stays single-threaded (its thread hand-off costs
#: far more than it saves on these thin products, and much more on a busy machine)
_BLAS_ROWS = 512


def label_dtype(classes: int) -> np.dtype:
    """The smallest signed integer type that holds class labels ``0..classes-1``."""
    return np.dtype(np.int8 if classes <= 127 else np.int16 if classes <= 32767 else np.int32)


def _dot_is_exact(fmt: NumberFormat, terms: int) -> bool:
    """Is every sum of ``terms`` products of two values of ``fmt`` exact in float64 (any order)?"""
    if not isinstance(fmt, FixedPoint):
        return False
    # codes up to 2**(P-1) in magnitude: products up to 2**(2P-2) units of 2**-2F, sums times `terms`;
    # one more bit of headroom for the addition of the (grid-valued) input term.
    return 2 * fmt.bits - 2 + max(terms, 1).bit_length() + 1 <= 53


class _Dense:
    """x @ W (W stored as (inputs, outputs)) with batch-independent results (see module docstring)."""

    def __init__(self, weight: np.ndarray, exact: bool):
        self.weight = np.ascontiguousarray(weight, dtype=np.float64)
        self.exact = exact

    def __call__(self, x: np.ndarray) -> np.ndarray:
        rows, inputs = x.shape
        out = np.empty((rows, self.weight.shape[1]))
        if inputs == 0:
            out.fill(0.0)
            return out
        if self.exact:
            for s in range(0, rows, _BLAS_ROWS):
                np.matmul(x[s:s + _BLAS_ROWS], self.weight, out=out[s:s + _BLAS_ROWS])
            return out
        # term by term, left to right: each product and each sum rounded once, in a fixed order
        np.multiply(x[:, 0:1], self.weight[0], out=out)
        tmp = np.empty_like(out)
        for j in range(1, inputs):
            np.multiply(x[:, j:j + 1], self.weight[j], out=tmp)
            out += tmp
        return out


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-z)) in place (exp overflow gives exactly 0)."""
    np.negative(z, out=z)
    with np.errstate(over="ignore"):
        np.exp(z, out=z)
    z += 1.0
    np.reciprocal(z, out=z)
    return z
