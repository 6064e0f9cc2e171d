"""``fnn``: a fully-connected network over the whole flattened input, in fixed point (the kind [SHT23] bounds by
width for q-sparse averaging).

The network reads the N x d input X flattened row by row (N·d numbers) and outputs N·d' numbers, read as N
rows of d'.  ``depth`` Linear layers: the first maps N·d -> ``width``, the middle ones width -> width, the last
width -> N·d'; between two layers the ``activation`` (``relu``, ``tanh`` or ``identity``).

Arithmetic.  Weights and biases are fixed-point codes (the format's grid, rounded down as every commsim model
rounds its parameters).  The input is read *exactly*: qSA's inputs are real vectors (the values z_i in the unit
ball), so the first layer computes W_1 x + b_1 as an exact rational and rounds it down to the format -- two
inputs with W_1 x = W_1 x' therefore give bit-identical first-layer outputs, which is what the width bound's
argument uses.  Every later layer works on codes: exact integer products and sums, rounded down once per layer
and saturated to the format's range.
"""
from __future__ import annotations

from fractions import Fraction
import math

import numpy as np

from commsim.contract import ModelError
from commsim.core.precision import FixedPoint

ACTIVATIONS = ("relu", "tanh", "identity")

__all__ = ["FullyConnected", "ACTIVATIONS", "make_fnn", "register"]


def _activate(codes: list[int], name: str, fmt: FixedPoint) -> list[int]:
    """The activation on codes: ReLU and the identity exactly, tanh through float64 then rounded down."""
    if name == "identity":
        return codes
    if name == "relu":
        return [c if c > 0 else 0 for c in codes]
    step = 2.0 ** -fmt.frac
    return [int(v) for v in fmt.to_codes(np.tanh(np.asarray(codes, dtype=np.float64) * step), on_saturate="ignore")]


class FullyConnected:
    """A fixed-point multilayer perceptron over the flattened N x d input (module docstring).

    ``weights[k]`` is (out, in) int codes, ``biases[k]`` (out,) int codes, ``activations[k]`` the activation after
    layer k (for k < depth - 1); ``rows``, ``in_dim``, ``out_dim``: N, d and d'."""

    no_protocol_reason = ("a fully-connected network reads the whole input through its first layer: it has no "
                          "two-party protocol here; run it with qsa-approx, whose bound is on its width")

    def __init__(self, weights, biases, activations, fmt: FixedPoint, rows: int, in_dim: int, out_dim: int,
                 spec: str = "fnn"):
        if not isinstance(fmt, FixedPoint):
            raise ModelError(f"fnn computes in fixed point; got {fmt.name}", "model")
        if len(weights) < 2:
            raise ModelError(f"model spec {spec!r}: depth must be >= 2 (a hidden layer between input and output)",
                             "model")
        self.weights = [np.asarray(w, dtype=np.int64) for w in weights]
        self.biases = [np.asarray(b, dtype=np.int64) for b in biases]
        self.activations = tuple(activations)
        self.format, self.rows, self.in_dim, self.out_dim, self.spec = fmt, rows, in_dim, out_dim, spec
        if self.weights[0].shape[1] != rows * in_dim or self.weights[-1].shape[0] != rows * out_dim:
            raise ModelError(f"model {spec!r}: its first layer reads {self.weights[0].shape[1]} numbers and its last "
                             f"writes {self.weights[-1].shape[0]}; the task needs N·d = {rows * in_dim} in and "
                             f"N·d' = {rows * out_dim} out", "model")
        for k in range(1, len(self.weights)):
            if self.weights[k].shape[1] != self.weights[k - 1].shape[0]:
                raise ModelError(f"model {spec!r}: layer {k + 1} reads {self.weights[k].shape[1]} numbers but layer "
                                 f"{k} writes {self.weights[k - 1].shape[0]}", "model")

    @property
    def width(self) -> int:
        """The first layer's width (the number of its outputs)."""
        return int(self.weights[0].shape[0])

    @property
    def depth(self) -> int:
        """The number of Linear layers."""
        return len(self.weights)

    @property
    def precision(self) -> int:
        """Bits per number."""
        return self.format.bits

    def for_task(self, rows: int, in_dim: int, out_dim: int) -> "FullyConnected":
        """The same network read as N = ``rows`` rows of d = ``in_dim`` in and d' = ``out_dim`` out (a torch MLP is
        read as one row of its in_features); a ModelError when its sizes are not N·d in and N·d' out."""
        return FullyConnected(self.weights, self.biases, self.activations, self.format, rows, in_dim, out_dim,
                              self.spec)

    def first_layer(self) -> tuple[list[list[int]], list[int], int]:
        """(W_1 as int codes, b_1 as int codes, the fraction bits F): W_1 = codes · 2^-F."""
        return self.weights[0].tolist(), self.biases[0].tolist(), self.format.frac

    # ---- the forward ----------------------------------------------------------------------------------
    def _saturate(self, code: int) -> int:
        return min(max(code, self.format.min_code), self.format.max_code)

    def hidden(self, X) -> list[int]:
        """The first layer's outputs W_1 x + b_1 (x: X flattened, exact rationals), rounded down to codes and
        saturated -- before the activation."""
        x = [Fraction(v) for v in np.asarray(X, dtype=object).reshape(-1)]
        if len(x) != self.rows * self.in_dim:
            raise ModelError(f"model {self.spec!r} reads {self.rows} x {self.in_dim} inputs, got {len(x)} numbers",
                             "model")
        denominator = 1
        for v in x:
            denominator = denominator * v.denominator // math.gcd(denominator, v.denominator)
        numerators = [int(v * denominator) for v in x]
        out = []
        for row, bias in zip(self.weights[0].tolist(), self.biases[0].tolist()):
            units = sum(w * n for w, n in zip(row, numerators)) + bias * denominator  # (W x + b)·2^F·denominator
            out.append(self._saturate(units // denominator))                           # floor to the 2^-F grid
        return out

    def forward_codes(self, X) -> list[int]:
        """The output codes (N·d' of them) of a direct forward on one input X (N x d exact numbers)."""
        codes = _activate(self.hidden(X), self.activations[0], self.format)
        frac = self.format.frac
        for k in range(1, self.depth):
            W, b = self.weights[k].tolist(), self.biases[k].tolist()
            codes = [self._saturate((sum(w * c for w, c in zip(row, codes)) + (bias << frac)) >> frac)
                     for row, bias in zip(W, b)]
            if k < self.depth - 1:
                codes = _activate(codes, self.activations[k], self.format)
        return codes

    def forward(self, X) -> list[list[Fraction]]:
        """The output as N rows of d' exact values (code · 2^-F)."""
        codes = self.forward_codes(X)
        unit = Fraction(1, 1 << self.format.frac)
        return [[c * unit for c in codes[i * self.out_dim:(i + 1) * self.out_dim]] for i in range(self.rows)]

    @classmethod
    def random(cls, rows: int, in_dim: int, out_dim: int, width: int, depth: int, activation: str, fmt: FixedPoint,
               seed: int, spec: str = "fnn") -> "FullyConnected":
        """Uniform weights in ±1/sqrt(fan-in), rounded down to the format."""
        rng = np.random.default_rng(seed)
        sizes = [rows * in_dim] + [width] * (depth - 1) + [rows * out_dim]
        weights, biases = [], []
        for fan_in, fan_out in zip(sizes, sizes[1:]):
            bound = 1.0 / math.sqrt(fan_in)
            weights.append(fmt.to_codes(rng.uniform(-bound, bound, size=(fan_out, fan_in)), on_saturate="ignore"))
            biases.append(fmt.to_codes(rng.uniform(-bound, bound, size=fan_out), on_saturate="ignore"))
        return cls(weights, biases, [activation] * (depth - 1), fmt, rows, in_dim, out_dim, spec)


def make_fnn(spec, shape=None, **context):
    """``fnn:width=W,depth=L,activation=relu|tanh|identity,precision=P[,frac=F],seed=S``, sized to the task by the
    ``shape`` the reduction hands over (rows N, in d, out d')."""
    if shape is None:
        raise ModelError(f"model spec {spec.text!r}: fnn is sized by its task; run it with qsa-approx", "model")
    width = spec.int("width", 8, minimum=1, maximum=4096)
    depth = spec.int("depth", 2, minimum=2, maximum=16)
    activation = spec.str("activation", "relu", choices=ACTIVATIONS)
    fmt = spec.format(FixedPoint.with_bits(32))
    if not isinstance(fmt, FixedPoint):
        raise ModelError(f"model spec {spec.text!r}: fnn computes in fixed point (precision=P), not {fmt.name}",
                         "model")
    seed = spec.int("seed", 0, minimum=0)
    return FullyConnected.random(int(shape["rows"]), int(shape["in"]), int(shape["out"]), width, depth, activation,
                                 fmt, seed, spec.text)


def register(registry) -> None:
    """The ``fnn`` model kind."""
    registry.register("model", "fnn", make_fnn,
                      "fully-connected network over the flattened N x d input, outputs N x d' (width=W, depth=L >= 2, "
                      "activation=relu|tanh|identity, precision=P[,frac=F], seed=S); for qsa-approx")
