"""Recurrent models as finite-precision RNNs (the models of Theorem 2 of [BHBK24]).

A recurrent model has a state of ``state_units`` numbers in a :class:`~commsim.precision.NumberFormat`
(so ``state_units * p`` state bits), an initial state, a step ``h_t = g_t(x_t, h_{t-1})`` and a readout
``y_t = f(h_t)``.  The step computes in float64 and the state is quantized to the format after every
step (fixed point: round down, saturate; IEEE formats: round to nearest even, saturating at the largest
finite value, so a state is never inf or NaN); the readout is quantized too, and so are the weights.  The model therefore *is* a finite-precision RNN, and the
hidden-state handoff (``protocols.rnn_handoff``) reproduces its outputs bit for bit.

Built-in kinds (registry kind ``model``; spec keys in brackets):

``elman``       Elman RNN, tanh or ReLU   [width, precision|dtype (frac), seed, activation, weights, vocab, classes]
``lstm``        LSTM; its state is (h, c): 2m units          [width, precision|dtype, seed, weights, vocab, classes]
``gru``         GRU                                           [width, precision|dtype, seed, weights, vocab, classes]
``dfa:dyck22``  the Dyck-(2,2) automaton as an RNN: 3 one-bit units (8 states: 7 stacks and a reject sink)
``memorize``    stores the bits of Alice's input that the task needs (one bit per unit) [capacity]

Determinism.  Elementwise numpy functions give the same bits whatever the batch size (numpy's vector
and scalar loops agree here, and every run checks protocol against direct forward); a matrix product
does not in general (BLAS kernels sum in different orders).  Every dot product here is therefore either
*exact* -- fixed point whose products and sums fit in float64's 53 bits, so any order gives the same
value, and BLAS is used -- or summed term by term in a fixed order.  Protocol runs (batch 1), the
vectorized sweeps (large batches) and the direct forward agree bit for bit either way.
"""
from __future__ import annotations

import math

import numpy as np

from commsim.bits import Bits, pack_uints, unpack_uints
from commsim.errors import InputError, NotApplicable
from commsim.precision import FixedPoint, FloatFormat, FormatError, NumberFormat, parse_format

__all__ = [
    "BitFormat", "RecurrentModel", "Elman", "LSTM", "GRU", "DyckAutomaton", "Memorize",
    "MemoryProgram", "StoreAndLookup", "StoreAndCompare", "StoreAndRecall",
    "random_model", "load_model", "register", "ModelError", "label_dtype",
]

#: rows per BLAS call: small enough that OpenBLAS stays single-threaded (its thread hand-off costs
#: far more than it saves on these thin products, and much more on a busy machine)
_BLAS_ROWS = 512
#: rows per chunk of a batched forward (bounds the temporaries)
_CHUNK_VALUES = 1 << 20


class ModelError(InputError):
    """A model cannot be built or run as asked (bad weights file, overflow to NaN, bad tokens)."""


def label_dtype(classes: int) -> np.dtype:
    """The smallest signed integer type that holds class labels ``0..classes-1``."""
    return np.dtype(np.int8 if classes <= 127 else np.int16 if classes <= 32767 else np.int32)


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


# ---- the interface ----------------------------------------------------------------------------------
class RecurrentModel:
    """A finite-precision recurrent model: ``h_t = q(g_t(x_t, h_{t-1}))``, ``y_t = q(f(h_t))``.

    Subclasses implement ``_step(h, x, t)`` (float64, not yet quantized; may work in place on a
    fresh array but must not modify ``h``) and ``_readout(h)``; they may override
    :meth:`initial_state`.  Everything else -- quantization, runs from any state, batched and
    single-sequence forwards, labels -- is here.

    Attributes: ``format`` (the state's number format; p = ``format.bits``), ``width`` (the m of
    the theorems), ``state_units`` (numbers in the state: m, or 2m for an LSTM), ``vocab_size``,
    ``num_classes``, ``kind`` and ``spec`` (the spec it was built from).
    """

    kind = "rnn"

    def __init__(self, fmt: NumberFormat, width: int, state_units: int, vocab_size: int, num_classes: int,
                 spec: str = ""):
        if width < 1 or state_units < 1:
            raise ModelError(f"a recurrent model needs at least one state unit, got width {width}")
        if vocab_size < 1:
            raise ModelError(f"vocabulary size must be at least 1, got {vocab_size}")
        if num_classes < 1:
            raise ModelError(f"number of classes must be at least 1, got {num_classes}")
        self.format = fmt
        self.width = int(width)
        self.state_units = int(state_units)
        self.vocab_size = int(vocab_size)
        self.num_classes = int(num_classes)
        self.spec = spec or self.kind
        self._q = _quantizer(fmt)

    # ---- what the theorems count ------------------------------------------------------------
    @property
    def precision_bits(self) -> int:
        """p: bits per number."""
        return int(self.format.bits)

    @property
    def state_bits(self) -> int:
        """m * p (2m * p for an LSTM): the length of the hidden-state message."""
        return self.state_units * self.precision_bits

    def describe_state(self) -> str:
        return f"{self.state_units} unit{'s' if self.state_units != 1 else ''} of {self.format.name}"

    # ---- subclass hooks ---------------------------------------------------------------------
    def initial_state(self, batch: int = 1) -> np.ndarray:
        return np.zeros((batch, self.state_units))

    def _step(self, h: np.ndarray, x: np.ndarray, t: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _readout(self, h: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    # ---- quantized step and readout ---------------------------------------------------------
    def quantize(self, values) -> np.ndarray:
        """A copy of ``values`` rounded to the model's format (as the state is after every step)."""
        return self._q(np.array(values, dtype=np.float64))

    def step(self, h: np.ndarray, x: np.ndarray, t: int) -> np.ndarray:
        """One step on a batch: the new (quantized) state after token ``x`` at position ``t`` (0-based)."""
        return self._q(self._step(h, x, t))

    def readout(self, h: np.ndarray) -> np.ndarray:
        """The quantized readout values (batch, classes) of a batch of states."""
        return self._q(self._readout(h))

    @staticmethod
    def labels(raw: np.ndarray) -> np.ndarray:
        """Decisions: the argmax of the readout values (ties go to the lowest class)."""
        raw = np.asarray(raw)
        return np.argmax(raw, axis=-1).astype(label_dtype(raw.shape[-1]))

    def check_tokens(self, tokens) -> np.ndarray:
        arr = np.asarray(tokens)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2:
            raise ModelError(f"tokens must be a (batch, length) array, got shape {arr.shape}")
        if arr.size:
            if arr.dtype.kind not in "iu":
                raise ModelError(f"tokens must be integers, got {arr.dtype}")
            lo, hi = int(arr.min()), int(arr.max())
            if lo < 0 or hi >= self.vocab_size:
                raise ModelError(f"token {lo if lo < 0 else hi} is outside the model's vocabulary "
                                 f"of {self.vocab_size} tokens")
        return arr

    # ---- runs ------------------------------------------------------------------------------
    def run(self, tokens, state: np.ndarray | None = None, start: int = 0,
            outputs: tuple[int, ...] | list[int] = ()) -> tuple[np.ndarray, np.ndarray]:
        """Run a batch from ``state`` (default h_0) over ``tokens`` (batch, L) at positions
        ``start .. start+L-1``; returns the final states and the readouts (batch, len(outputs), classes)
        at the absolute positions ``outputs``.  The handoff protocol is two calls of this."""
        toks = self.check_tokens(tokens)
        batch, length = toks.shape
        if state is None:
            h = self.initial_state(batch)
        else:
            h = np.array(state, dtype=np.float64).reshape(batch, self.state_units)
        where: dict[int, list[int]] = {}
        for k, pos in enumerate(outputs):
            rel = int(pos) - start
            if not 0 <= rel < length:
                raise ModelError(f"output position {pos} is outside the positions {start}..{start + length - 1} run")
            where.setdefault(rel, []).append(k)
        raw = np.empty((batch, len(outputs), self.num_classes))
        for j in range(length):
            h = self.step(h, toks[:, j], start + j)
            if j in where:
                r = self.readout(h)
                for k in where[j]:
                    raw[:, k] = r
        if h.size and np.isnan(h).any():
            raise ModelError(f"the {self.kind} state became NaN by position {start + length - 1} "
                             f"(its values overflowed {self.format.name}); use smaller weights or fixed point")
        return h, raw

    def chunk_rows(self) -> int:
        """Rows per chunk of a batched run (about a million state values at a time)."""
        per_row = max(self.state_units * 4, self.num_classes, 1)
        return max(256, min(1 << 16, _CHUNK_VALUES // per_row))

    def forward_batch(self, tokens, output_positions=None) -> np.ndarray:
        """The direct forward of many sequences at once: readouts (batch, outputs, classes) at
        ``output_positions`` (default: the last position), in row chunks that bound memory."""
        toks = self.check_tokens(tokens)
        batch, length = toks.shape
        if length == 0:
            raise ModelError("cannot run a model on empty sequences")
        outs = (length - 1,) if output_positions is None else tuple(int(p) for p in output_positions)
        raw = np.empty((batch, len(outs), self.num_classes))
        rows = self.chunk_rows()
        for s in range(0, batch, rows):
            raw[s:s + rows] = self.run(toks[s:s + rows], outputs=outs)[1]
        return raw

    def forward(self, tokens, output_positions=None) -> np.ndarray:
        """The direct forward of one sequence: readouts (outputs, classes)."""
        toks = np.asarray(tokens)
        if toks.ndim != 1:
            raise ModelError(f"forward takes one sequence (1-D tokens), got shape {toks.shape}")
        return self.forward_batch(toks[None, :], output_positions)[0]

    def final_states(self, tokens) -> np.ndarray:
        """States after running each row of ``tokens`` from h_0 (batch, state_units)."""
        toks = self.check_tokens(tokens)
        rows = self.chunk_rows()
        out = np.empty((toks.shape[0], self.state_units))
        for s in range(0, toks.shape[0], rows):
            out[s:s + rows] = self.run(toks[s:s + rows])[0]
        return out

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}: {self.describe_state()}, {self.state_bits} state bits>"


# ---- Elman, LSTM, GRU --------------------------------------------------------------------------------
class _Trainable(RecurrentModel):
    """A recurrent model with weight arrays (stored in the model's format) and ``.npz`` save/load."""

    #: names of the weight arrays, each (rows, cols) as a function of (vocab, width, classes)
    _SHAPES: dict = {}
    _GATES = 1

    def __init__(self, params: dict[str, np.ndarray], fmt: NumberFormat, spec: str = "", **extra):
        vocab, width = params["input"].shape[0], params["recurrent"].shape[0]
        classes = params["readout"].shape[1]
        units = self._units(width)
        super().__init__(fmt, width, units, vocab, classes, spec)
        self.extra = dict(extra)
        for name, shape in self._shapes(vocab, width, classes).items():
            arr = np.asarray(params.get(name))
            if arr.shape != shape:
                raise ModelError(f"{self.kind} weights: {name!r} has shape {arr.shape}, expected {shape}")
        # parameters are numbers of the format too ("every parameter is a p-bit number")
        self.params = {k: self.quantize(np.asarray(params[k], dtype=np.float64)) for k in self._shapes(vocab, width, classes)}
        exact_rec = _dot_is_exact(fmt, width)
        self._rec = _Dense(self.params["recurrent"], exact_rec)
        self._out = _Dense(self.params["readout"], exact_rec)
        # the input term of every gate: the token's input row plus the bias, one float64 sum
        self._embed = self.params["input"] + self.params["bias"]

    @classmethod
    def _units(cls, width: int) -> int:
        return width

    @classmethod
    def _shapes(cls, vocab: int, width: int, classes: int) -> dict:
        g = cls._GATES
        return {"input": (vocab, g * width), "recurrent": (width, g * width), "bias": (g * width,),
                "readout": (width, classes), "readout_bias": (classes,)}

    @classmethod
    def random(cls, fmt: NumberFormat, width: int, vocab: int, classes: int, seed: int = 0, spec: str = "",
               **extra) -> "_Trainable":
        """Seeded random weights: inputs uniform in [-1, 1], recurrent and readout weights uniform in
        [-1/sqrt(m), 1/sqrt(m)] (PyTorch's default range), biases in [-1/sqrt(m), 1/sqrt(m)]."""
        rng = np.random.default_rng(seed)
        k = 1.0 / math.sqrt(width)
        params = {}
        for name, shape in cls._shapes(vocab, width, classes).items():
            scale = 1.0 if name == "input" else k
            params[name] = rng.uniform(-scale, scale, size=shape)
        return cls(params, fmt, spec, **extra)

    def _readout(self, h: np.ndarray) -> np.ndarray:
        y = self._out(h[:, :self.width])
        y += self.params["readout_bias"]
        return y

    # ---- weights files ----------------------------------------------------------------------
    def save(self, path: str) -> None:
        """Write the weights (already in the model's format) and what they mean to an ``.npz`` file."""
        meta = {"kind": self.kind, "format": self.format.name, **{k: str(v) for k, v in self.extra.items()}}
        np.savez(path, **{f"meta_{k}": np.array(v) for k, v in meta.items()}, **self.params)


class Elman(_Trainable):
    """Elman RNN: h_t = act(W_rec h_{t-1} + W_in[x_t] + b), act = tanh or ReLU; y_t = W_out h_t + b_out."""

    kind = "elman"

    def __init__(self, params, fmt, spec: str = "", activation: str = "tanh"):
        if activation not in ("tanh", "relu"):
            raise ModelError(f"elman activation must be tanh or relu, got {activation!r}")
        super().__init__(params, fmt, spec, activation=activation)
        self.activation = activation

    def _step(self, h, x, t):
        pre = self._rec(h)
        pre += self._embed[x]
        if self.activation == "tanh":
            np.tanh(pre, out=pre)
        else:
            np.maximum(pre, 0.0, out=pre)
        return pre


class LSTM(_Trainable):
    """LSTM (gates i, f, g, o); the state is (h, c), 2m units, so its message is 2m*p bits.

    c_t = q(f * c + i * g) is quantized before h_t = o * tanh(c_t) is computed: both halves of the
    state are numbers of the format."""

    kind = "lstm"
    _GATES = 4

    @classmethod
    def _units(cls, width: int) -> int:
        return 2 * width

    def describe_state(self) -> str:
        return f"2 x {self.width} unit{'s' if self.width != 1 else ''} of {self.format.name}"

    def _step(self, h, x, t):
        m = self.width
        z = self._rec(h[:, :m])
        z += self._embed[x]
        # each gate on its own contiguous array, so every elementwise loop sees the same layout
        i = _sigmoid(z[:, :m].copy())
        f = _sigmoid(z[:, m:2 * m].copy())
        g = np.tanh(z[:, 2 * m:3 * m].copy())
        o = _sigmoid(z[:, 3 * m:].copy())
        c = f * h[:, m:]
        c += i * g
        self._q(c)
        h_new = np.tanh(c)
        h_new *= o
        return np.concatenate([h_new, c], axis=1)


class GRU(_Trainable):
    """GRU (PyTorch's form): r, z gates; n = tanh(W_n[x] + r * (U_n h + b_n)); h' = (1 - z) n + z h."""

    kind = "gru"
    _GATES = 3

    @classmethod
    def _shapes(cls, vocab, width, classes):
        shapes = super()._shapes(vocab, width, classes)
        shapes["recurrent_bias"] = (3 * width,)
        return shapes

    def _step(self, h, x, t):
        m = self.width
        u = self._rec(h)
        u += self.params["recurrent_bias"]
        return gru_cell(self._embed[x], u, h, m)


def gru_cell(a: np.ndarray, u: np.ndarray, h: np.ndarray, m: int) -> np.ndarray:
    """PyTorch's GRU update from the input part ``a = W_i x + b_i`` and the recurrent part
    ``u = W_h h + b_h`` (3m columns each, gates r, z, n): (1 - z) * n + z * h."""
    r = _sigmoid(a[:, :m] + u[:, :m])
    z = _sigmoid(a[:, m:2 * m] + u[:, m:2 * m])
    n = u[:, 2 * m:] * r
    n += a[:, 2 * m:]
    np.tanh(n, out=n)
    out = (1.0 - z) * n
    out += z * h
    return out


_TRAINABLE = {"elman": Elman, "lstm": LSTM, "gru": GRU}


def random_model(kind: str, width: int = 8, fmt: NumberFormat | str = "16", vocab: int = 2, classes: int = 2,
                 seed: int = 0, activation: str = "tanh") -> _Trainable:
    """A seeded random Elman/LSTM/GRU (the Python form of ``KIND:width=M,precision=P,seed=S``)."""
    fmt = parse_format(fmt) if isinstance(fmt, str) else fmt
    cls = _TRAINABLE[kind]
    extra = {"activation": activation} if kind == "elman" else {}
    spec = f"{kind}:width={width},{_format_spec(fmt)},seed={seed}" + (f",activation={activation}" if extra else "")
    return cls.random(fmt, width, vocab, classes, seed, spec, **extra)


def load_model(path: str, fmt: NumberFormat | None = None, spec: str = "") -> _Trainable:
    """Load weights saved by ``model.save``; ``fmt`` overrides the stored format (weights are re-rounded)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: np.array(data[k]) for k in data.files}
    except FileNotFoundError:
        raise ModelError(f"weights file {path!r} does not exist", "--model") from None
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read weights file {path!r}: {exc}", "--model") from None
    meta = {k[5:]: str(v) for k, v in arrays.items() if k.startswith("meta_")}
    kind = meta.get("kind")
    if kind not in _TRAINABLE:
        raise ModelError(f"weights file {path!r} does not name a model kind (elman, lstm, gru)", "--model")
    if fmt is None:
        try:
            fmt = parse_format(meta.get("format", "16"))
        except FormatError as exc:
            raise ModelError(f"weights file {path!r}: {exc}", "--model") from None
    params = {k: v for k, v in arrays.items() if not k.startswith("meta_")}
    missing = [k for k in ("input", "recurrent", "bias", "readout", "readout_bias") if k not in params]
    if missing:
        raise ModelError(f"weights file {path!r} lacks {', '.join(missing)}", "--model")
    extra = {"activation": meta.get("activation", "tanh")} if kind == "elman" else {}
    return _TRAINABLE[kind](params, fmt, spec or f"{kind}:weights={path}", **extra)


def _format_spec(fmt: NumberFormat) -> str:
    if isinstance(fmt, FixedPoint):
        return f"precision={fmt.bits},frac={fmt.frac}"
    return f"dtype={fmt.name}"


# ---- the Dyck-(2,2) automaton --------------------------------------------------------------------------
class DyckAutomaton(RecurrentModel):
    """The Dyck-(2,2) DFA as an RNN: its 8 states (7 stacks of depth <= 2 and a reject sink) in
    3 one-bit units; the step is the transition table, the readout says "accept" in the empty-stack
    state (REFERENCE section 7: a constant-size recurrence recognizes bounded Dyck)."""

    kind = "dfa:dyck22"

    def __init__(self, spec: str = "dfa:dyck22"):
        from commsim.problems import DyckLanguage
        language = DyckLanguage(2, 2)
        table = language.transitions
        units = max(1, (table.shape[0] - 1).bit_length())
        super().__init__(BitFormat(), units, units, table.shape[1], 2, spec)
        self.table = table
        self._weights = 2.0 ** np.arange(units - 1, -1, -1)

    def _index(self, h: np.ndarray) -> np.ndarray:
        return (h * self._weights).sum(axis=1).astype(np.int64)  # small exact integers

    def _step(self, h, x, t):
        nxt = self.table[self._index(h), x]
        return ((nxt[:, None] >> np.arange(self.state_units - 1, -1, -1)) & 1).astype(np.float64)

    def _readout(self, h):
        accept = (self._index(h) == 0).astype(np.float64)
        return np.stack([1.0 - accept, accept], axis=1)


# ---- memorizing recurrences ---------------------------------------------------------------------------
class MemoryProgram:
    """How a memorizing recurrence handles one task's tokens (REFERENCE section 7).

    ``slots`` is the number of bits of Alice's input the task needs.  :meth:`step` updates a batch
    of memories (batch, capacity) of 0/1 values after the tokens at position ``t``; a capacity
    below ``slots`` must drop bits.  The readout is the bit in :meth:`answer_slot`.  Reductions
    provide their program through ``memory_program(n)``.
    """

    slots: int = 0

    def step(self, mem: np.ndarray, tokens: np.ndarray, t: int) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def answer_slot(self, capacity: int) -> int:
        return 0

    def describe(self) -> str:
        return type(self).__name__


class _Storing(MemoryProgram):
    """Data bits arrive at known positions: ``store_slot[t]`` is the slot of position t's bit (or -1)
    and ``token_bit[token]`` the bit a data token carries.  Bits whose slot is beyond the capacity
    are dropped."""

    def __init__(self, slots: int, store_slot, token_bit, query_slot):
        self.slots = int(slots)
        self.store_slot = np.asarray(store_slot, dtype=np.int64)
        self.token_bit = np.asarray(token_bit, dtype=np.int64)
        self.query_slot = np.asarray(query_slot, dtype=np.int64)

    def _store(self, mem, tokens, t) -> None:
        if t < len(self.store_slot):
            slot = int(self.store_slot[t])
            if 0 <= slot < mem.shape[1]:
                mem[:, slot] = np.clip(self.token_bit[tokens], 0, 1)

    def _lookup(self, mem, tokens) -> tuple[np.ndarray, np.ndarray]:
        slot = self.query_slot[tokens]
        ok = (slot >= 0) & (slot < mem.shape[1])
        got = mem[np.arange(mem.shape[0]), np.clip(slot, 0, mem.shape[1] - 1)]
        return np.where(ok, got, 0.0), slot


class StoreAndLookup(_Storing):
    """Store the data bits; at ``query_position`` write the queried bit (0 if it was dropped) into
    slot 0, the answer slot.  Index lookup, associative recall, q-sparse averaging with q = 1."""

    def __init__(self, slots, store_slot, token_bit, query_slot, query_position: int):
        super().__init__(slots, store_slot, token_bit, query_slot)
        self.query_position = int(query_position)

    def step(self, mem, tokens, t):
        self._store(mem, tokens, t)
        if t == self.query_position:
            mem[:, 0] = self._lookup(mem, tokens)[0]
        return mem

    def describe(self) -> str:
        return "stores the data bits, then looks up the queried one"


class StoreAndRecall(_Storing):
    """Store the data bits; at every position from ``query_start`` on, bring the queried bit to slot 0
    by swapping slots 0 and i (a bijection: nothing is lost).  With the queries in increasing order --
    as the MQAR reduction feeds them -- slot 0 holds each queried bit in turn.  A query for a dropped
    slot reads 0."""

    def __init__(self, slots, store_slot, token_bit, query_slot, query_start: int):
        super().__init__(slots, store_slot, token_bit, query_slot)
        self.query_start = int(query_start)

    def step(self, mem, tokens, t):
        self._store(mem, tokens, t)
        if t >= self.query_start:
            rows = np.arange(mem.shape[0])
            slot = self.query_slot[tokens]
            ok = (slot >= 0) & (slot < mem.shape[1])
            s = np.clip(slot, 0, mem.shape[1] - 1)
            queried = mem[rows, s]
            first = mem[:, 0].copy()
            mem[rows[ok], s[ok]] = first[ok]
            mem[:, 0] = np.where(ok, queried, 0.0)
        return mem

    def describe(self) -> str:
        return "stores the data bits, then swaps each queried bit into the answer slot"


class StoreAndCompare(MemoryProgram):
    """INEQ on {0,1}^(2n): store the first half; at second-half position n + j compare with slot j
    and keep the running "differs" flag in slot j (freed by the comparison).  The flag after the last
    comparison is the answer.  With capacity K < n only the first K positions are compared."""

    def __init__(self, n: int):
        self.slots = int(n)

    def step(self, mem, tokens, t):
        n, k = self.slots, mem.shape[1]
        bit = np.clip(np.asarray(tokens, dtype=np.float64), 0.0, 1.0)
        if t < n:
            if t < k:
                mem[:, t] = bit
        else:
            j = t - n
            if j < min(n, k):
                differs = np.abs(mem[:, j] - bit)
                if j > 0:
                    differs = np.maximum(differs, mem[:, j - 1])
                mem[:, j] = differs
        return mem

    def answer_slot(self, capacity: int) -> int:
        return min(self.slots, capacity) - 1

    def describe(self) -> str:
        return "stores the first half, then compares the second half bit by bit"


class Memorize(RecurrentModel):
    """A recurrence whose state simply stores the input bits the task needs: ``capacity`` one-bit
    units (m = capacity, p = 1).  With capacity n it solves the task with exactly the lower bound's
    budget (the bound is tight); with capacity < n it drops bits and must fail somewhere."""

    kind = "memorize"

    def __init__(self, program: MemoryProgram, capacity: int | None = None, vocab_size: int = 2, spec: str = ""):
        capacity = program.slots if capacity is None else int(capacity)
        if capacity < 1:
            raise ModelError(f"memorize capacity must be at least 1 bit, got {capacity}", "--model")
        super().__init__(BitFormat(), capacity, capacity, vocab_size, 2, spec or f"memorize:capacity={capacity}")
        self.program = program
        self.capacity = capacity

    def describe_state(self) -> str:
        return f"{self.capacity} one-bit unit{'s' if self.capacity != 1 else ''} (the task needs {self.program.slots})"

    def _step(self, h, x, t):
        return self.program.step(np.array(h, dtype=np.float64), np.asarray(x), t)

    def _readout(self, h):
        v = h[:, self.program.answer_slot(self.capacity)]
        return np.stack([1.0 - v, v], axis=1)


# ---- specs and registration ------------------------------------------------------------------------------
def _vocab_and_classes(spec, vocab_size) -> tuple[int, int, int | None]:
    """(vocab, classes, the task's vocabulary) from the spec and the context."""
    task_vocab = None if vocab_size is None else int(vocab_size)
    vocab = spec.int("vocab", task_vocab or 2, minimum=1)
    classes = spec.int("classes", 2, minimum=1)
    return vocab, classes, task_vocab


def _refuse_small_vocab(spec_text: str, vocab: int, task_vocab: int | None, context: dict) -> None:
    if task_vocab is not None and vocab < task_vocab:
        task = context.get("reduction") or context.get("task") or "the task"
        raise NotApplicable(f"model {spec_text!r} reads {vocab} input tokens but {task} (n = {context.get('n')}) "
                            f"uses {task_vocab}: the model cannot take this task's input", "--model")


def _trainable_factory(kind: str):
    cls = _TRAINABLE[kind]

    def factory(spec, vocab_size=None, **context):
        weights = spec.str("weights")
        fmt_given = any(spec.has(k) for k in ("precision", "dtype", "frac"))
        fmt = spec.format()
        activation = spec.str("activation", None, choices=("tanh", "relu")) if kind == "elman" else None
        if weights is not None:
            model = load_model(weights, fmt if fmt_given else None, spec.text)
            for key, have in (("width", model.width), ("vocab", model.vocab_size), ("classes", model.num_classes)):
                want = spec.int(key)
                if want is not None and want != have:
                    raise ModelError(f"model spec {spec.text!r}: {key}={want} but the weights file has {have}",
                                     "--model")
            if activation is not None and activation != model.activation:
                raise ModelError(f"model spec {spec.text!r}: activation={activation} but the weights file "
                                 f"has {model.activation}", "--model")
            if spec.has("seed"):
                raise ModelError(f"model spec {spec.text!r}: seed= has no effect with weights=", "--model")
            _refuse_small_vocab(spec.text, model.vocab_size, vocab_size, context)
            return model
        width = spec.int("width", 8, minimum=1, maximum=4096)
        seed = spec.int("seed", 0, minimum=0)
        vocab, classes, task_vocab = _vocab_and_classes(spec, vocab_size)
        _refuse_small_vocab(spec.text, vocab, task_vocab, context)
        extra = {"activation": activation or "tanh"} if kind == "elman" else {}
        return cls.random(fmt, width, vocab, classes, seed, spec.text, **extra)

    factory.__doc__ = (f"{cls.__doc__.splitlines()[0]} Keys: width=M, precision=P[,frac=F] or dtype=, seed=S, "
                       + ("activation=tanh|relu, " if kind == "elman" else "")
                       + "weights=FILE.npz, vocab=V, classes=C.")
    return factory


def _dfa_factory(spec, vocab_size=None, **context):
    """The Dyck-(2,2) automaton as an RNN: 3 one-bit state units, 4 input tokens ( ) [ ]."""
    model = DyckAutomaton(spec.text)
    _refuse_small_vocab(spec.text, model.vocab_size, vocab_size, context)
    return model


def _memorize_factory(spec, vocab_size=None, n=None, reduction=None, **context):
    """Stores the input bits the task needs, one bit per unit; capacity=K keeps only K of them."""
    from commsim.plugins import load_plugins
    capacity = spec.int("capacity", None, minimum=1)
    if reduction is None or n is None:
        raise ModelError(f"model spec {spec.text!r}: memorize is built for a task; use it with `commsim run "
                         f"REDUCTION` (or build protocols.recurrent.Memorize from a MemoryProgram)", "--model")
    red = load_plugins().get("reduction", reduction)
    make_program = getattr(red, "memory_program", None)
    if make_program is None:
        raise NotApplicable(f"memorize has no memory layout for {reduction}: its reduction does not say which "
                            f"input bits to store", "--model")
    program = make_program(int(n))
    return Memorize(program, capacity, vocab_size or 2, spec.text)


_DESCRIPTIONS = {
    "elman": "Elman RNN, tanh or ReLU (width=M, precision=P[,frac=F]|dtype=, seed=, activation=, weights=FILE.npz, "
             "vocab=, classes=)",
    "lstm": "LSTM; state (h, c) = 2m units (width=M, precision=P[,frac=F]|dtype=, seed=, weights=FILE.npz, vocab=, "
            "classes=)",
    "gru": "GRU (width=M, precision=P[,frac=F]|dtype=, seed=, weights=FILE.npz, vocab=, classes=)",
}


def register(registry) -> None:
    for kind in _TRAINABLE:
        registry.register("model", kind, _trainable_factory(kind), _DESCRIPTIONS[kind])
    registry.register("model", "dfa:dyck22", _dfa_factory,
                      "The Dyck-(2,2) automaton as an RNN: 3 one-bit state units (no keys)")
    registry.register("model", "memorize", _memorize_factory,
                      "Stores the input bits the task needs, one bit per unit (capacity=K keeps only K)")
    from protocols import rnn_handoff
    registry.register("model-protocol", rnn_handoff.RnnHandoff.name, rnn_handoff.RNN_HANDOFF,
                      "Hidden-state handoff (Theorem 2 of [BHBK24]): Alice sends h_t, m*p bits, one-way")
