"""Recurrent models as finite-precision RNNs (the models of Theorem 2 of [BHBK24]).

A recurrent model has a state of ``state_units`` numbers in a :class:`~commsim.core.precision.NumberFormat`
(so ``state_units * p`` state bits), an initial state, a step ``h_t = g_t(x_t, h_{t-1})`` and a readout
``y_t = f(h_t)``.  The step computes in float64 and the state is quantized to the format after every
step (fixed point: round down, saturate; IEEE formats: round to nearest even, saturating at the largest
finite value, so a state is never inf or NaN); the readout is quantized too, and so are the weights.  The model therefore *is* a finite-precision RNN, and the
hidden-state handoff (``protocols.simulators.rnn_handoff``) reproduces its outputs bit for bit.

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
batch runs (large batches) and the direct forward agree bit for bit either way.
"""
from __future__ import annotations

import math

import numpy as np

from commsim.core.arithmetic import Dense, Quantizer, label_dtype, sigmoid
from commsim.core.errors import InternalError, ModelError
from commsim.core.precision import FixedPoint, FormatError, NumberFormat, parse_format
from protocols.models import prefix_trie
from protocols.models.cells import gru_cell
from protocols.models.decides import Decides
from protocols.models.npz import numeric_array, read_npz

#: rows per chunk of a batched forward (bounds the temporaries)
_CHUNK_VALUES = 1 << 20


# ---- the interface ----------------------------------------------------------------------------------
class RecurrentModel(Decides):
    """A finite-precision recurrent model: ``h_t = q(g_t(x_t, h_{t-1}))``, ``y_t = q(f(h_t))``.

    Subclasses implement ``_step(h, x, t)`` (float64, not yet quantized; may work in place on a
    fresh array but must not modify ``h``) and ``_readout(h)``; they may override
    :meth:`initial_state`.  Everything else -- quantization, runs from any state, batched and
    single-sequence forwards, labels -- is here.

    Attributes: ``format`` (the state's number format; p = :attr:`precision`), ``width`` (the m of
    the theorems), ``state_units`` (numbers in the state: m, or 2m for an LSTM), ``vocab_size``,
    ``num_classes``, ``kind`` and ``spec`` (the spec it was built from).
    """

    kind = "rnn"

    #: may the step or the readout read the position t?  (False: only the state and the token, so a run resumed
    #: from a state gives what the direct forward gives from an equal state, whatever position it starts at)
    reads_position = True

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
        self._q = Quantizer(fmt)

    # ---- what the theorems count ------------------------------------------------------------
    @property
    def precision(self) -> int:
        """p: bits per number."""
        return int(self.format.bits)

    @property
    def state_bits(self) -> int:
        """m * p (2m * p for an LSTM): the length of the hidden-state message."""
        return self.state_units * self.precision

    def describe_state(self) -> str:
        """What the state is, in words (units and format)."""
        return f"{self.state_units} unit{'s' if self.state_units != 1 else ''} of {self.format.name}"

    # ---- subclass hooks ---------------------------------------------------------------------
    def initial_state(self, batch: int = 1) -> np.ndarray:
        """h_0 for a batch: zeros unless a subclass says otherwise."""
        return np.zeros((batch, self.state_units))

    def _step(self, h: np.ndarray, x: np.ndarray, t: int) -> np.ndarray:  # pragma: no cover - abstract
        """g_t(x_t, h_{t-1}) in float64, before rounding (subclasses)."""
        raise NotImplementedError

    def _readout(self, h: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """f(h_t) in float64, before rounding (subclasses)."""
        raise NotImplementedError

    # ---- quantized step and readout ---------------------------------------------------------
    def quantize(self, values) -> np.ndarray:
        """A copy of ``values`` rounded to the model's format (as the state is after every step)."""
        return self._q(np.array(values, dtype=np.float64))

    def step(self, h: np.ndarray, x: np.ndarray, t: int) -> np.ndarray:
        """One step on a batch: the new (quantized) state after token ``x`` at position ``t`` (0-based)."""
        return self._q(self._step(h, x, t))

    def _parent_terms(self, h: np.ndarray):
        """What every step from a state of ``h`` shares whatever the token (None: nothing; :meth:`_child_steps`)."""
        return None

    def _child_steps(self, h: np.ndarray, terms, parents: np.ndarray, x: np.ndarray, t: int) -> np.ndarray:
        """``step(h[parents], x, t)`` given ``terms = _parent_terms(h)``: the same operations, the same bits."""
        return self.step(h[parents], x, t)

    def readout(self, h: np.ndarray) -> np.ndarray:
        """The quantized readout values (batch, classes) of a batch of states."""
        return self._q(self._readout(h))

    def readout_at(self, h: np.ndarray, x: np.ndarray, t: int) -> np.ndarray:
        """The readout after token ``x`` at position ``t``: f(h_t); a subclass may also read x_t (linear attention's
        query), which the party computing the output holds."""
        return self.readout(h)

    @property
    def output_width(self) -> int:
        """The readout's values (the classes, or one logit)."""
        return self.num_classes

    def labels(self, raw: np.ndarray) -> np.ndarray:
        """Decisions from the readout values, by the model's decision rule (:class:`Decides`)."""
        raw = np.asarray(raw)
        return self.decide(raw, label_dtype(raw.shape[-1]))

    def check_tokens(self, tokens) -> np.ndarray:
        """Tokens as a (batch, length) integer array inside the vocabulary (else ModelError: the caller's
        tokens are bad input; commsim's own reductions always give 2-D integer tokens in the vocabulary)."""
        arr = np.asarray(tokens)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2:
            raise ModelError(f"tokens must be a (batch, length) array, got shape {arr.shape}", "tokens")
        if arr.size:
            if arr.dtype.kind not in "iu":
                raise ModelError(f"tokens must be integers, got {arr.dtype}", "tokens")
            lo, hi = int(arr.min()), int(arr.max())
            if lo < 0 or hi >= self.vocab_size:
                raise ModelError(f"token {lo if lo < 0 else hi} is outside the model's vocabulary "
                                 f"of {self.vocab_size} tokens", "tokens")
        return arr

    # ---- runs ------------------------------------------------------------------------------
    def _run_start(self, tokens, state, start: int, outputs):
        """What :meth:`run` starts from: the checked tokens, the state (h_0 when None), the output slots by
        relative position, and the empty readouts (batch, outputs, classes)."""
        toks = self.check_tokens(tokens)
        batch, length = toks.shape
        h = self.initial_state(batch) if state is None else \
            np.array(state, dtype=np.float64).reshape(batch, self.state_units)
        where: dict[int, list[int]] = {}
        for k, pos in enumerate(outputs):
            rel = int(pos) - start
            if not 0 <= rel < length:
                raise InternalError(f"output position {pos} is outside the positions {start}..{start + length - 1} "
                                    f"run: the caller of {self.kind}.run broke its contract")
            where.setdefault(rel, []).append(k)
        return toks, h, where, np.empty((batch, len(outputs), self.num_classes))

    def _run_end(self, h: np.ndarray, last: int) -> np.ndarray:
        """The final state of :meth:`run`, once checked not to have overflowed into NaN by position ``last``."""
        if h.size and np.isnan(h).any():
            raise ModelError(f"the {self.kind} state became NaN by position {last} "
                             f"(its values overflowed {self.format.name}); use smaller weights or fixed point",
                             "model")
        return h

    def run(self, tokens, state: np.ndarray | None = None, start: int = 0,
            outputs: tuple[int, ...] | list[int] = ()) -> tuple[np.ndarray, np.ndarray]:
        """Run a batch from ``state`` (default h_0) over ``tokens`` (batch, L) at positions
        ``start .. start+L-1``; returns the final states and the readouts (batch, len(outputs), classes)
        at the absolute positions ``outputs``.  The handoff protocol is two calls of this.

        A low-level step for simulators: ``outputs`` must lie in ``start .. start+L-1`` (the public
        :meth:`forward_batch` checks its caller's positions first, the handoff's split puts them in Bob's
        suffix), so one outside is a fault in the calling code (InternalError), not bad input."""
        toks, h, where, raw = self._run_start(tokens, state, start, outputs)
        length = toks.shape[1]
        for j in range(length):
            h = self.step(h, toks[:, j], start + j)
            if j in where:
                r = self.readout_at(h, toks[:, j], start + j)
                for k in where[j]:
                    raw[:, k] = r
        return self._run_end(h, start + length - 1), raw

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
            raise ModelError("cannot run a model on empty sequences", "tokens")
        outs = (length - 1,) if output_positions is None else tuple(int(p) for p in output_positions)
        bad = [p for p in outs if not 0 <= p < length]
        if bad:
            raise ModelError(f"output position {bad[0]} is outside a sequence of length {length}", "output_positions")
        raw = np.empty((batch, len(outs), self.num_classes))
        rows = self.chunk_rows()
        for s in range(0, batch, rows):
            raw[s:s + rows] = self.run(toks[s:s + rows], outputs=outs)[1]
        return raw

    def forward(self, tokens, output_positions=None) -> np.ndarray:
        """The direct forward of one sequence: readouts (outputs, classes)."""
        toks = np.asarray(tokens)
        if toks.ndim != 1:
            raise ModelError(f"forward takes one sequence (1-D tokens), got shape {toks.shape}", "tokens")
        return self.forward_batch(toks[None, :], output_positions)[0]

    def final_states(self, tokens) -> np.ndarray:
        """States after running each row of ``tokens`` from h_0 (batch, state_units)."""
        toks = self.check_tokens(tokens)
        rows = self.chunk_rows()
        out = np.empty((toks.shape[0], self.state_units))
        for s in range(0, toks.shape[0], rows):
            out[s:s + rows] = self.run(toks[s:s + rows])[0]
        return out

    def forward_shared(self, tokens, output_positions, keep: int | None = None):
        """:meth:`forward_batch` over a prefix trie, each distinct prefix's state once (the same bits; row by
        row for a model whose own ``run`` computes outputs another way): :func:`prefix_trie.forward_shared`."""
        return prefix_trie.forward_shared(self, tokens, output_positions, keep, type(self).run is RecurrentModel.run)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}: {self.describe_state()}, {self.state_bits} state bits>"


# ---- Elman, LSTM, GRU --------------------------------------------------------------------------------
class _Trainable(RecurrentModel):
    """A recurrent model with weight arrays (stored in the model's format) and ``.npz`` save/load."""

    #: names of the weight arrays, each (rows, cols) as a function of (vocab, width, classes)
    _SHAPES: dict = {}
    _GATES = 1
    reads_position = False      # Elman, LSTM, GRU: the same weights at every position

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
        self._rec = Dense.for_format(self.params["recurrent"], None, fmt)  # (width, gates * width)
        self._out = Dense.for_format(self.params["readout"], None, fmt)    # (width, classes)
        # the input term of every gate: the token's input row plus the bias, one float64 sum
        self._embed = self.params["input"] + self.params["bias"]

    @classmethod
    def _units(cls, width: int) -> int:
        """State units for a width m: m (an LSTM: 2m)."""
        return width

    @classmethod
    def _shapes(cls, vocab: int, width: int, classes: int) -> dict:
        """The weight arrays' shapes for (vocab, width, classes)."""
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

    def _step(self, h, x, t):
        """The step: its product of the state, then the rest (:meth:`_after_product`)."""
        return self._after_product(h, self._product(h), x)

    def _product(self, h: np.ndarray) -> np.ndarray:  # the recurrent product (a fresh array): what steps share
        return self._rec(h[:, :self.width])

    #: does ``_after_product(h, u, x)`` -- the step from the product ``u`` (a fresh array, used in place) and the
    #: tokens, in each subclass -- read the state ``h`` itself (else it is given None)?
    _AFTER_READS_STATE = True

    def _parent_terms(self, h):  # the recurrent products of the parents' states
        return self._product(h)

    def _child_steps(self, h, terms, parents, x, t):  # the children's steps from their parents' products
        return self._q(self._after_product(h[parents] if self._AFTER_READS_STATE else None, terms[parents], x))

    def _readout(self, h: np.ndarray) -> np.ndarray:
        """y = W_out h + b_out, on the h part of the state."""
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
    _AFTER_READS_STATE = False     # act(W_rec h + W_in[x] + b) reads h only through its product

    def __init__(self, params, fmt, spec: str = "", activation: str = "tanh"):
        if activation not in ("tanh", "relu"):
            raise ModelError(f"elman activation must be tanh or relu, got {activation!r}")
        super().__init__(params, fmt, spec, activation=activation)
        self.activation = activation

    def _after_product(self, h, pre, x):
        """act(W_rec h + W_in[x] + b) from the product W_rec h."""
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
        """(h, c): 2m units."""
        return 2 * width

    def describe_state(self) -> str:
        """The two halves of the state, in words."""
        return f"2 x {self.width} unit{'s' if self.width != 1 else ''} of {self.format.name}"

    def _after_product(self, h, z, x):
        """The gates i, f, g, o from the product z; c rounded before h = o tanh(c); the new state (h, c)."""
        m = self.width
        z += self._embed[x]
        # each gate on its own contiguous array, so every elementwise loop sees the same layout
        i = sigmoid(z[:, :m].copy())
        f = sigmoid(z[:, m:2 * m].copy())
        g = np.tanh(z[:, 2 * m:3 * m].copy())
        o = sigmoid(z[:, 3 * m:].copy())
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
        """The trainable shapes plus the recurrent bias b_hh of PyTorch's GRU."""
        shapes = super()._shapes(vocab, width, classes)
        shapes["recurrent_bias"] = (3 * width,)
        return shapes

    def _product(self, h):
        """U h + b_hh."""
        u = self._rec(h)
        u += self.params["recurrent_bias"]
        return u

    def _after_product(self, h, u, x):
        """PyTorch's GRU update (:func:`gru_cell`) from the recurrent part u."""
        return gru_cell(self._embed[x], u, h, self.width)


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
    arrays = read_npz(path)
    meta = {k[5:]: str(v) for k, v in arrays.items() if k.startswith("meta_")}
    kind = meta.get("kind")
    if kind not in _TRAINABLE:
        raise ModelError(f"weights file {path!r} does not name a model kind (elman, lstm, gru)", "model")
    if fmt is None:
        try:
            fmt = parse_format(meta.get("format", "16"))
        except FormatError as exc:
            raise ModelError(f"weights file {path!r}: {exc}", "model") from None
    params = {k: v for k, v in arrays.items() if not k.startswith("meta_")}
    dims = {k: len(shape) for k, shape in _TRAINABLE[kind]._shapes(1, 1, 1).items()}  # the arrays it needs
    missing = [k for k in dims if k not in params]
    if missing:
        raise ModelError(f"weights file {path!r} lacks {', '.join(missing)}", "model")
    params = {k: numeric_array(params, k, ndim, path) for k, ndim in dims.items()}
    extra = {"activation": meta.get("activation", "tanh")} if kind == "elman" else {}
    try:
        return _TRAINABLE[kind](params, fmt, spec or f"{kind}:weights={path}", **extra)
    except ModelError as exc:  # shapes that do not fit together: name the file
        raise ModelError(f"weights file {path!r}: {exc}", "model") from None


def _format_spec(fmt: NumberFormat) -> str:
    """The spec keys of a format: ``precision=P,frac=F`` or ``dtype=NAME``."""
    if isinstance(fmt, FixedPoint):
        return f"precision={fmt.bits},frac={fmt.frac}"
    return f"dtype={fmt.name}"
