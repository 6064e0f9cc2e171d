"""Numpy forms of the small torch pieces an adapter needs: number formats from dtypes, a
batch-independent dense product, and heads / output maps (``f`` of Theorem 2, ``psi`` of
Theorem 4 of [BHBK24]) built from ``nn.Linear`` and pointwise layers.

Determinism.  A protocol run (batch 1), a vectorized sweep (large batches) and the direct forward
must give the same bits.  A BLAS matrix product does not promise that across batch sizes, so every
product here is either exact (fixed point whose products and sums fit in float64's 53 bits, any
order gives the same value) or summed term by term in a fixed order, and elementwise numpy
functions are batch-independent.  A head that is not made of known layers runs through torch one
row at a time (same shapes every call, hence the same kernel and the same bits).
"""
from __future__ import annotations

import math

import numpy as np

from commsim.core.errors import InputError
from commsim.core.precision import FixedPoint, FloatFormat, NumberFormat

#: torch dtype name -> the commsim number format of the same width (p = the format's bits)
_DTYPE_FORMAT = {"float32": "float32", "float64": "float64", "bfloat16": "bfloat16", "float16": "float16"}


#: documented agreement with the torch module's own forward: |commsim - torch| <= atol + rtol * |torch|
#: on the output values.  commsim computes every step in float64 and rounds the state (and the
#: output) to the format once per step; torch rounds every operation in its dtype, so the two differ
#: by a few units in the last place per step of the format.
TOLERANCE = {"float64": (1e-9, 1e-9), "float32": (2e-4, 2e-4), "float16": (5e-2, 5e-2),
             "bfloat16": (1.5e-1, 1e-1)}


_BLAS_ROWS = 512


class AdapterError(InputError):
    """A torch object cannot be wrapped as a commsim model (unsupported type, bad file, ...)."""

    def __init__(self, message: str, param: str | None = "--model"):
        super().__init__(message, param)


def dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def format_for_dtype(dtype) -> NumberFormat:
    """float32 -> p = 32, bfloat16 -> 16, float64 -> 64, float16 -> 16 (IEEE semantics)."""
    name = dtype_name(dtype)
    if name not in _DTYPE_FORMAT:
        raise AdapterError(f"parameters of dtype {name} have no commsim number format; "
                           f"use float32, float64, bfloat16 or float16 (or override with precision=)")
    return FloatFormat(_DTYPE_FORMAT[name])


def tensor(x) -> np.ndarray:
    """A torch tensor (or array) as a float64 numpy array (exact for every float dtype)."""
    if hasattr(x, "detach"):
        x = x.detach().to("cpu")
        if not x.is_floating_point() or x.dtype.itemsize < 4:  # bfloat16 / float16 have no numpy view
            import torch
            x = x.to(torch.float64)
        x = x.numpy()
    return np.array(x, dtype=np.float64)


def quantizer(fmt: NumberFormat):
    """An in-place rounding to ``fmt`` that saturates at the largest finite value (no infinities)."""
    if isinstance(fmt, FixedPoint):
        scale, inverse = 2.0 ** fmt.frac, 2.0 ** -fmt.frac
        lo, hi = float(fmt.min_code), float(fmt.max_code)

        def fixed(x: np.ndarray) -> np.ndarray:
            np.multiply(x, scale, out=x)
            np.floor(x, out=x)
            np.clip(x, lo, hi, out=x)
            np.multiply(x, inverse, out=x)
            return x
        return fixed
    if isinstance(fmt, FloatFormat):
        top = fmt.max_value

        def floating(x: np.ndarray) -> np.ndarray:
            np.clip(x, -top, top, out=x)
            if fmt.dtype != "float64":
                x[...] = fmt.quantize(x)
            return x
        return floating

    def generic(x: np.ndarray) -> np.ndarray:
        x[...] = fmt.quantize(x)
        return x
    return generic


def _dot_is_exact(fmt: NumberFormat, terms: int) -> bool:
    if not isinstance(fmt, FixedPoint):
        return False
    return 2 * fmt.bits - 2 + max(terms, 1).bit_length() + 1 <= 53


class Dense:
    """``x @ W + b`` with W stored as (inputs, outputs); batch-independent (see the module docstring)."""

    def __init__(self, weight: np.ndarray, bias: np.ndarray | None = None, exact: bool = False):
        self.weight = np.ascontiguousarray(weight, dtype=np.float64)
        self.bias = None if bias is None else np.asarray(bias, dtype=np.float64)
        self.exact = exact

    @classmethod
    def for_format(cls, weight, bias, fmt: NumberFormat) -> "Dense":
        return cls(weight, bias, _dot_is_exact(fmt, np.shape(weight)[0]))

    @property
    def outputs(self) -> int:
        return int(self.weight.shape[1])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        rows, inputs = x.shape
        out = np.zeros((rows, self.weight.shape[1]))
        if inputs and self.exact:
            for s in range(0, rows, _BLAS_ROWS):
                np.matmul(x[s:s + _BLAS_ROWS], self.weight, out=out[s:s + _BLAS_ROWS])
        elif inputs:
            np.multiply(x[:, 0:1], self.weight[0], out=out)
            tmp = np.empty_like(out)
            for j in range(1, inputs):
                np.multiply(x[:, j:j + 1], self.weight[j], out=tmp)
                out += tmp
        if self.bias is not None:
            out += self.bias
        return out


def _row_sum(x: np.ndarray) -> np.ndarray:
    """Sum along the last axis, term by term (batch-independent)."""
    out = np.zeros(x.shape[:-1])
    for j in range(x.shape[-1]):
        out += x[..., j]
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


class Head:
    """A map from vectors (batch, inputs) to output values (batch, outputs), numpy or torch-backed."""

    def __init__(self, steps: list, inputs: int, outputs: int, description: str):
        self.steps = steps
        self.inputs = int(inputs)
        self.outputs = int(outputs)
        self.description = description

    def __call__(self, x: np.ndarray) -> np.ndarray:
        y = np.array(x, dtype=np.float64)
        for step in self.steps:
            y = step(y)
        return y

    def __repr__(self) -> str:
        return f"<Head {self.description}: {self.inputs} -> {self.outputs}>"


def _gelu(approximate: str):
    if approximate == "tanh":
        c = math.sqrt(2.0 / math.pi)
        return lambda x: 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x ** 3)))
    return lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _softmax(x):
    z = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / _row_sum(e)[..., None]


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def layer_norm(weight=None, bias=None, eps: float = 1e-5, *, center: bool = True):
    """LayerNorm (``center``) or RMSNorm over the last axis, as a numpy function (batch-independent)."""
    def apply(x):
        d = x.shape[-1]
        centred = x - (_row_sum(x) / d)[..., None] if center else x
        var = _row_sum(centred * centred) / d
        y = centred / np.sqrt(var + eps)[..., None]
        if weight is not None:
            y = y * weight
        if bias is not None:
            y = y + bias
        return y
    return apply


ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0.0),
    "tanh": np.tanh,
    "sigmoid": lambda x: _sigmoid(x),
    "gelu": lambda x: _gelu("none")(x),
    "gelu_new": lambda x: _gelu("tanh")(x),
    "gelu_pytorch_tanh": lambda x: _gelu("tanh")(x),
    "gelu_fast": lambda x: _gelu("tanh")(x),
    "silu": lambda x: x * _sigmoid(x),
    "swish": lambda x: x * _sigmoid(x),
}


def activation(name: str):
    key = (name or "").lower()
    if key not in ACTIVATIONS:
        raise AdapterError(f"activation {name!r} is not supported; supported: {', '.join(sorted(ACTIVATIONS))}")
    return ACTIVATIONS[key]


def numpy_steps(module, fmt: NumberFormat | None = None) -> list | None:
    """Numpy steps for ``module`` when it is made of known pieces (Linear, pointwise activations,
    LayerNorm, Dropout/Identity, Sequential of those); None otherwise.  Weights are rounded to
    ``fmt`` when given (every parameter is a number of the format)."""
    import torch.nn as nn
    q = (lambda a: a) if fmt is None else (lambda a: fmt.quantize(a))
    if isinstance(module, nn.Sequential):
        steps = []
        for child in module:
            sub = numpy_steps(child, fmt)
            if sub is None:
                return None
            steps += sub
        return steps
    if isinstance(module, nn.Linear):
        w = q(tensor(module.weight)).T
        b = None if module.bias is None else q(tensor(module.bias))
        return [Dense.for_format(w, b, fmt) if fmt is not None else Dense(w, b)]
    if isinstance(module, (nn.Identity, nn.Dropout, nn.Flatten)):
        return []
    if isinstance(module, nn.ReLU):
        return [lambda x: np.maximum(x, 0.0)]
    if isinstance(module, nn.Tanh):
        return [np.tanh]
    if isinstance(module, nn.Sigmoid):
        return [_sigmoid]
    if isinstance(module, nn.GELU):
        return [_gelu(module.approximate)]
    if isinstance(module, nn.LeakyReLU):
        slope = float(module.negative_slope)
        return [lambda x: np.where(x >= 0, x, slope * x)]
    if isinstance(module, nn.Softmax) and module.dim in (-1, None):
        return [_softmax]
    if isinstance(module, nn.LayerNorm) and len(module.normalized_shape) == 1:
        w = None if module.weight is None else q(tensor(module.weight))
        b = None if module.bias is None else q(tensor(module.bias))
        return [layer_norm(w, b, float(module.eps))]
    return None


def _torch_rows(module, dtype):
    """Run an arbitrary torch callable one row at a time (batch-independent), in ``dtype``."""
    import torch

    def apply(x):
        out = []
        with torch.no_grad():
            for row in np.asarray(x, dtype=np.float64):
                t = torch.from_numpy(row[None, :].copy()).to(dtype)
                y = module(t)
                if isinstance(y, (tuple, list)):
                    y = y[0]
                out.append(tensor(y).reshape(-1))
        return np.stack(out) if out else np.zeros((0, 0))
    return apply


def numpy_head(module, inputs: int, fmt: NumberFormat | None, dtype=None, name: str = "head") -> Head:
    """A :class:`Head` for a torch module (or None: the identity) taking vectors of ``inputs`` values."""
    if module is None:
        return Head([], inputs, inputs, "identity")
    steps = numpy_steps(module, fmt) if _is_module(module) else None
    if steps is None:
        if not callable(module):
            raise AdapterError(f"the {name} must be a torch module or a callable, got {type(module).__name__}")
        import torch
        steps = [_torch_rows(module, dtype or torch.float32)]
        description = f"{type(module).__name__} (torch, row by row)"
    else:
        description = type(module).__name__
    probe = np.zeros((1, inputs))
    for step in steps:
        probe = step(probe)
    return Head(steps, inputs, probe.shape[-1], description)


def _is_module(obj) -> bool:
    try:
        import torch.nn as nn
    except ImportError:  # pragma: no cover - torch is present whenever a head is built
        return False
    return isinstance(obj, nn.Module)


def unwrap(module):
    """The module a TransformerLens bridge component wraps (the module itself otherwise)."""
    seen = 0
    while getattr(module, "_original_component", None) is not None and seen < 8:
        module = module._original_component
        seen += 1
    return module


def within_tolerance(ours: np.ndarray, theirs: np.ndarray, fmt_name: str) -> tuple[bool, float, float]:
    """(agrees, max |difference|, max allowed) under :data:`TOLERANCE` for the format's name."""
    atol, rtol = TOLERANCE.get(fmt_name, (1e-1, 1e-1))
    ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    if ours.shape != theirs.shape:
        return False, float("inf"), 0.0
    diff = np.abs(ours - theirs)
    allowed = atol + rtol * np.abs(theirs)
    ok = bool(np.all(diff <= allowed))
    return ok, float(diff.max(initial=0.0)), float(allowed.max(initial=atol))
