"""A diagonal linear state-space model (S4D / DSS style) as a finite-precision recurrence.

The recurrence is ``h_t = A ⊙ h_{t-1} + B[x_t]`` with a diagonal ``A`` of d entries (real, or complex as
in S4D/DSS), the input term ``B[x_t]`` the row of a (vocab, d) table for the token (``B x_t`` for the
one-hot token ``x_t``), and the readout ``y_t = Re(C h_t) + b`` with ``C`` (d, classes).  It is a recurrent
model in the sense of Theorem 2 of [BHBK24], so the hidden-state handoff applies; its state is

* real diagonal: d numbers, ``d·p`` bits;
* complex diagonal: d complex numbers stored as their real and imaginary parts, ``2·d·p`` bits
  (state layout: ``Re h_1..Re h_d, Im h_1..Im h_d``).

Finite precision: every parameter is a number of the format, and the state is rounded to the format after
every step by the shared quantizer (fixed point: round down and saturate; IEEE: round to nearest even);
the readout is rounded too.  The step is elementwise (each unit's products and sums in one fixed order),
so a protocol run, a batched sweep and the direct forward give the same bits.

Random weights (``seed``): S4D initialisations with a step size Δ drawn log-uniformly from [0.001, 0.1]
per unit: complex ``A = exp(Δ(-1/2 + iπn))`` (S4D-Lin), real ``A = exp(-Δ(n + 1))`` (S4D-Real);
``B`` entries uniform in [-1, 1], ``C`` entries uniform in [-1/sqrt(d), 1/sqrt(d)].
"""
from __future__ import annotations

import numpy as np

from commsim.contract import Dense, ModelError
from commsim.core.precision import NumberFormat, parse_format
from protocols.models.recurrent import RecurrentModel


class DiagonalSSM(RecurrentModel):
    """``h_t = A ⊙ h_{t-1} + B[x_t]``, ``y_t = Re(C h_t) + b`` with A diagonal, real or complex (module docstring).

    ``a`` (d,), ``b`` (vocab, d) and ``c`` (d, classes) may be complex arrays (then the state is complex:
    2d numbers); ``bias`` (classes,) is real.  ``width`` is d, ``state_units`` d or 2d."""

    kind = "ssm"

    def __init__(self, a, b, c, bias=None, fmt: NumberFormat | str = "16", *, complex_state: bool | None = None,
                 spec: str = ""):
        fmt = parse_format(fmt) if isinstance(fmt, str) else fmt
        a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
        if a.ndim != 1 or b.ndim != 2 or c.ndim != 2 or b.shape[1] != a.shape[0] or c.shape[0] != a.shape[0]:
            raise ModelError(f"ssm: A must be (d,), B (vocab, d) and C (d, classes); got A {a.shape}, B {b.shape}, "
                             f"C {c.shape}", "model")
        for name, arr in (("A", a), ("B", b), ("C", c)):
            if arr.dtype.kind not in "biufc" or not np.isfinite(arr).all():
                raise ModelError(f"ssm: {name} must hold finite numbers", "model")
        if complex_state is None:
            complex_state = any(np.iscomplexobj(x) for x in (a, b, c))
        d, classes = a.shape[0], c.shape[1]
        super().__init__(fmt, d, 2 * d if complex_state else d, b.shape[0], classes,
                         spec or f"ssm:width={d},complex={'true' if complex_state else 'false'}")
        self.complex = bool(complex_state)
        q = self.quantize
        self.a_re, self.b_re = q(a.real), q(b.real)
        self.a_im = q(a.imag) if self.complex else np.zeros(d)
        self.b_im = q(b.imag) if self.complex else np.zeros_like(self.b_re)
        self.c_re = q(c.real)
        self.c_im = q(c.imag) if self.complex else np.zeros_like(self.c_re)
        bias = np.zeros(classes) if bias is None else np.asarray(bias, dtype=np.float64).reshape(-1)
        if bias.shape != (classes,):
            raise ModelError(f"ssm: the readout bias must have {classes} entries, got {bias.shape[0]}", "model")
        self.bias = q(bias)
        # Re(C h) = Re(C) Re(h) - Im(C) Im(h): one real product over the state's 2d numbers (d when real)
        weight = np.concatenate([self.c_re, -self.c_im]) if self.complex else self.c_re
        self._out = Dense.for_format(weight, self.bias, fmt)

    @classmethod
    def random(cls, width: int, fmt: NumberFormat | str = "16", vocab: int = 2, classes: int = 2, seed: int = 0,
               complex_state: bool = True, spec: str = "") -> "DiagonalSSM":
        """Seeded S4D-style weights (module docstring)."""
        rng = np.random.default_rng(seed)
        n = np.arange(width)
        dt = np.exp(rng.uniform(np.log(1e-3), np.log(1e-1), size=width))
        scale = 1.0 / np.sqrt(width)
        if complex_state:
            a = np.exp(dt * (-0.5 + 1j * np.pi * n))
            b = rng.uniform(-1, 1, (vocab, width)) + 1j * rng.uniform(-1, 1, (vocab, width))
            c = rng.uniform(-scale, scale, (width, classes)) + 1j * rng.uniform(-scale, scale, (width, classes))
        else:
            a = np.exp(-dt * (n + 1.0))
            b = rng.uniform(-1, 1, (vocab, width))
            c = rng.uniform(-scale, scale, (width, classes))
        bias = rng.uniform(-scale, scale, classes)
        return cls(a, b, c, bias, fmt, complex_state=complex_state, spec=spec)

    def describe_state(self) -> str:
        """Real: d units; complex: d complex units as 2d numbers."""
        d, name = self.width, self.format.name
        if self.complex:
            return f"{d} complex unit{'s' if d != 1 else ''} (Re, Im) = {2 * d} numbers of {name}"
        return f"{d} real unit{'s' if d != 1 else ''} of {name}"

    def _step(self, h, x, t):
        """A ⊙ h + B[x], elementwise (complex: Re and Im parts, each a fixed sequence of products and sums)."""
        d = self.width
        if not self.complex:
            out = h * self.a_re
            out += self.b_re[x]
            return out
        re, im = h[:, :d], h[:, d:]
        out = np.empty_like(h)
        new_re, new_im = out[:, :d], out[:, d:]
        np.multiply(re, self.a_re, out=new_re)
        new_re -= im * self.a_im
        new_re += self.b_re[x]
        np.multiply(im, self.a_re, out=new_im)
        new_im += re * self.a_im
        new_im += self.b_im[x]
        return out

    def _readout(self, h):
        """Re(C h) + b."""
        return self._out(np.ascontiguousarray(h))
