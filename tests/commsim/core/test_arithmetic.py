"""The shared arithmetic: the in-place Quantizer, batch-independent dense products, the in-place
sigmoid, label types.

Protocol runs (batch 1), vectorized sweeps and the direct forward must give the same bits, so a
product's row may not depend on the other rows of its batch (the determinism every exactness check
of Theorems 2 and 4 of [BHBK24] relies on)."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.contract.arithmetic import Dense, Quantizer, arithmetic_for, dot_is_exact, label_dtype, sigmoid
from commsim.core.precision import FLOAT_DTYPES, BitFormat, FixedPoint, FloatFormat

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def same_floats(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


fixed_formats = st.integers(2, 53).flatmap(
    lambda bits: st.integers(0, bits - 1).map(lambda frac: FixedPoint(bits, frac)))


# ---- the Quantizer: the in-place rounding of every model ------------------------------------
any_floats = st.lists(st.one_of(st.floats(allow_nan=False), st.floats(-3, 3, allow_nan=False),
                                st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1e-30, -1e-30, 65520.0, -65520.0,
                                                 3.4e38, -3.4e38, math.inf, -math.inf])),
                      min_size=1, max_size=40)
float_formats = st.sampled_from(FLOAT_DTYPES).map(FloatFormat)


def quantized_in_place(fmt, xs) -> np.ndarray:
    x = np.array(xs, dtype=np.float64)
    with np.errstate(over="ignore"):  # huge values overflow to inf when scaled: saturated all the same
        out = Quantizer(fmt)(x)
    assert out is x  # in place
    return out


@FAST
@given(fixed_formats, any_floats)
def test_quantizer_is_fixed_point_quantize(fmt, xs):
    """Round down to the grid, saturate at both ends, and -0.0 becomes +0.0: exactly ``fmt.quantize``,
    which is the value of the codes the encoder sends."""
    got = quantized_in_place(fmt, xs)
    assert same_floats(got, fmt.quantize(xs))
    assert same_floats(got, fmt.from_codes(fmt.to_codes(xs, on_saturate="ignore")))
    assert not np.signbit(got[got == 0]).any()
    assert (got >= fmt.min_value).all() and (got <= fmt.max_value).all()


@FAST
@given(float_formats, any_floats)
def test_quantizer_is_ieee_quantize_saturating_at_the_largest_finite_value(fmt, xs):
    """Round to nearest even as ``fmt.quantize``, signed zeros kept, but an overflow saturates at
    +-max_value instead of becoming infinite (no step of a model can then produce inf - inf)."""
    got = quantized_in_place(fmt, xs)
    want = fmt.quantize(xs)
    finite = np.isfinite(want)
    assert same_floats(got[finite], want[finite])
    assert same_floats(got[~finite], np.copysign(fmt.max_value, want[~finite]))
    assert same_floats(got, np.clip(want, -fmt.max_value, fmt.max_value))


@FAST
@given(any_floats)
def test_quantizer_is_bit_quantize(xs):
    assert same_floats(quantized_in_place(BitFormat(), xs), BitFormat().quantize(xs))


@pytest.mark.parametrize("fmt", [FixedPoint(8, 4), FixedPoint(53, 20), FloatFormat("float16"),
                                 FloatFormat("bfloat16"), FloatFormat("float64"), BitFormat()])
def test_quantizer_examples_and_pickling(fmt):
    x = [-0.0, -1e-300, 0.3, 1e300, -math.inf]
    with np.errstate(over="ignore"):
        got = Quantizer(fmt)(np.array(x))
    if isinstance(fmt, FixedPoint):
        step = fmt.step
        assert same_floats(got, [0.0, -step, math.floor(0.3 / step) * step, fmt.max_value, fmt.min_value])
    elif isinstance(fmt, FloatFormat):
        assert same_floats(got[[0, 4]], [-0.0, -fmt.max_value])  # the sign of zero is a bit of IEEE formats
        assert got[3] == min(float(fmt.quantize(1e300)), fmt.max_value)
    else:
        assert same_floats(got, [0.0, 0.0, 0.0, 1.0, 0.0])
    again = pickle.loads(pickle.dumps(Quantizer(fmt)))  # models travel to other processes (audit mode)
    assert isinstance(again, Quantizer) and again.format == fmt
    with np.errstate(over="ignore"):
        assert same_floats(again(np.array(x)), got)


def test_dot_is_exact_counts_the_bits_of_a_sum_of_products():
    # codes of p bits: products of 2p - 2 bits, a sum of K of them ceil(log2 K) more, plus one: <= 53
    assert dot_is_exact(FixedPoint(12, 6), 7) and dot_is_exact(FixedPoint(26, 6), 3)
    assert not dot_is_exact(FixedPoint(26, 6), 4) and not dot_is_exact(FixedPoint(30, 15), 7)
    assert not dot_is_exact(FloatFormat("float32"), 1)  # IEEE products round: never exact


def test_exact_and_ordered_products_agree_on_the_grid():
    rng = np.random.default_rng(1)
    fmt = FixedPoint(12, 6)
    w = fmt.quantize(rng.normal(size=(7, 5)))
    x = fmt.quantize(rng.normal(size=(300, 7)))
    exact, ordered = Dense(w, exact=True)(x), Dense(w, exact=False)(x)
    assert Dense.for_format(w, None, fmt).exact and not Dense.for_format(w, None, FixedPoint(30, 15)).exact
    assert np.array_equal(exact, ordered)  # exact sums: every order gives the same bits
    assert np.array_equal(exact, x @ w)


@FAST
@given(st.integers(1, 9), st.integers(1, 6), st.integers(1, 1100), st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_a_row_does_not_depend_on_its_batch(inputs, outputs, rows, with_bias, seed):
    """Alone or inside a batch of any size (past the BLAS chunk of 512 rows), a row gets the same bits."""
    rng = np.random.default_rng(seed)
    bias = rng.normal(size=outputs) if with_bias else None
    fmt = FixedPoint(16, 8)
    grid_w, grid_x = fmt.quantize(rng.normal(size=(inputs, outputs))), fmt.quantize(rng.normal(size=(rows, inputs)))
    for dense, x in ((Dense(rng.normal(size=(inputs, outputs)), bias), rng.normal(size=(rows, inputs))),
                     (Dense.for_format(grid_w, None if bias is None else fmt.quantize(bias), fmt), grid_x)):
        whole = dense(x)
        assert whole.shape == (rows, outputs) == (rows, dense.outputs)
        for i in {0, rows // 2, rows - 1}:
            assert same_floats(dense(x[i:i + 1])[0], whole[i])


def test_ordered_product_sums_left_to_right():
    w = np.array([[1e16], [1.0], [-1e16]])
    x = np.array([[1.0, 1.0, 1.0]])
    assert Dense(w)(x)[0, 0] == (1e16 + 1.0) - 1e16  # == 0.0: each sum rounded in index order
    assert Dense(np.zeros((0, 3)), np.array([1.0, 2.0, 3.0]))(np.zeros((2, 0))).tolist() == [[1.0, 2.0, 3.0]] * 2


def test_sigmoid_in_place_is_the_logistic_function():
    rng = np.random.default_rng(0)
    z = np.concatenate([rng.normal(size=10_000) * 30, [0.0, -0.0, 800.0, -800.0, 1e308, -1e308, np.inf, -np.inf]])
    with np.errstate(over="ignore"):
        want = 1.0 / (1.0 + np.exp(-z))
    x = z.copy()
    got = sigmoid(x)
    assert got is x and same_floats(got, want)
    assert got[-1] == 0.0 and got[-2] == 1.0  # exp overflow gives exactly 0 (no warning, no NaN)


@pytest.mark.parametrize("classes,dtype", [(2, np.int8), (127, np.int8), (128, np.int16), (32767, np.int16),
                                           (32768, np.int32)])
def test_label_dtype_holds_every_class(classes, dtype):
    assert label_dtype(classes) == np.dtype(dtype)
    assert np.iinfo(label_dtype(classes)).max >= classes - 1


@FAST
@given(fixed_formats, st.integers(1, 3), st.integers(1, 5), st.integers(1, 5), st.integers(1, 4), st.data())
def test_fixed_matmul_is_the_exact_product_rounded_once(fmt, batch, rows, inner, cols, data):
    """[a @ b] of codes: the exact integer sum of products, floored to the grid once, saturated (the
    semantics of every linear map of the multi-layer constructions, Appendix B.2 of [BHBK24])."""
    code = st.integers(fmt.min_code, fmt.max_code) | st.sampled_from([fmt.min_code, fmt.max_code, 0, -1])
    a = np.array(data.draw(st.lists(code, min_size=batch * rows * inner, max_size=batch * rows * inner)),
                 dtype=np.int64).reshape(batch, rows, inner)
    b = np.array(data.draw(st.lists(code, min_size=inner * cols, max_size=inner * cols)),
                 dtype=np.int64).reshape(inner, cols)
    got = arithmetic_for(fmt).matmul(a, b)
    for i in range(batch):
        for r in range(rows):
            for c in range(cols):
                exact = sum(int(a[i, r, j]) * int(b[j, c]) for j in range(inner))  # units of 2^-2F
                assert got[i, r, c] == min(max(exact >> fmt.frac, fmt.min_code), fmt.max_code)
    assert got.dtype == np.int64


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.integers(1, 500), k=st.integers(1, 9), out=st.integers(600, 1500), seed=st.integers(0, 2 ** 32 - 1),
       specials=st.booleans())
def test_ordered_dot_blocks_give_each_row_its_own_index_order_sum(rows, k, out, seed, specials):
    """The blocked ordered dot product (over a contiguous copy of the weight) is, row by row, the float64 sum in
    index order from 0 of rounded products -- the same bits as one row alone, infinities and -0.0 included."""
    from commsim.contract import arithmetic
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, k)) * rng.choice([1e-300, 1.0, 1e300], size=(rows, k))
    W = rng.normal(size=(out, k))
    if specials:
        X[rng.random(X.shape) < 0.1] = -0.0
        W[rng.random(W.shape) < 0.05] = np.inf
    got = arithmetic.FloatArithmetic._ordered_dot(X, W)
    want = np.zeros((rows, out))
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(k):
            want = want + X[:, j:j + 1] * W[:, j]
    assert same_floats(got, want)
    one = arithmetic.FloatArithmetic._ordered_dot(X[-1:], W)                  # a row alone: the same bits
    assert same_floats(one[0], got[-1])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dtype=st.sampled_from(["float32", "bfloat16"]), shape=st.tuples(st.integers(1, 4), st.integers(0, 40)),
       seed=st.integers(0, 2 ** 32 - 1), scale=st.sampled_from([1e-44, 1e-30, 1.0, 1e30]))
def test_vectorized_exact_sum_is_the_format_s_exact_sum(dtype, shape, seed, scale):
    """The limb-wise exact sum (float32, bfloat16) equals the format's own exact sum, subnormals and wide
    exponent spreads included."""
    fmt = FloatFormat(dtype)
    ar = arithmetic_for(fmt)
    rng = np.random.default_rng(seed)
    x = fmt.quantize(rng.normal(size=shape) * scale * rng.choice([1.0, 2.0 ** -60, 2.0 ** 40], size=shape))
    x = np.clip(np.nan_to_num(x, posinf=fmt.max_value, neginf=-fmt.max_value), -fmt.max_value, fmt.max_value)
    got = ar.exact_sum(x, axis=-1)
    want = fmt.exact_sum(x, axis=-1)
    assert [int(v) for v in np.ravel(got)] == [int(v) for v in np.ravel(want)]
