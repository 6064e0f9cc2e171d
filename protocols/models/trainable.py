"""Elman, LSTM and GRU recurrent models with their own weights (random, or a weights file): the ``elman``,
``lstm`` and ``gru`` kinds of :mod:`protocols.models.recurrent_spec`, finite-precision RNNs under the semantics
of :class:`~protocols.models.recurrent.RecurrentModel` (Theorem 2 of [BHBK24] counts their state).
"""
from __future__ import annotations

import math

import numpy as np

from commsim.contract import Dense, ModelError, sigmoid
from commsim.core.precision import FixedPoint, FormatError, NumberFormat, parse_format
from protocols.models import children
from protocols.models.cells import gru_cell
from protocols.models.npz import numeric_array, read_npz
from protocols.models.recurrent import RecurrentModel


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

    #: the trie steps every child from its parent's product (:meth:`_parent_terms`), however few children it has
    shared_terms_children = 1
    #: how :mod:`protocols.models.children` groups the gates' terms, and which groups it takes negated (sigmoids)
    _GROUPS, _NEGATED = children.ELMAN_GROUPS, children.ELMAN_NEGATED

    def _token_terms(self) -> tuple:
        """The input term of every gate per token, split and negated as :meth:`_parent_terms` (computed once)."""
        cached = self.__dict__.get("_token_gates")
        if cached is None:
            cached = children.split_gates(self._embed, self.width, self._GROUPS, self._NEGATED)
            self.__dict__["_token_gates"] = cached
        return cached

    def _parent_terms(self, h):
        """The parents' recurrent products, per gate (:class:`protocols.models.children.GateTerms`)."""
        return children.GateTerms(children.split_gates(self._product(h), self.width, self._GROUPS, self._NEGATED),
                                  self._parent_state(h))

    def _parent_state(self, h):  # what the update reads of a parent's state besides its product (Elman: nothing)
        return None

    def _child_steps(self, h, terms, parents, x, t):
        """The children's steps from their parents' products (:mod:`protocols.models.children`: the same bits as
        :meth:`step`)."""
        out = np.empty((len(parents), self.state_units))
        self._children(terms, np.asarray(parents, dtype=np.intp), np.asarray(x, dtype=np.intp), out)
        return out

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

    def __init__(self, params, fmt, spec: str = "", activation: str = "tanh"):
        if activation not in ("tanh", "relu"):
            raise ModelError(f"elman activation must be tanh or relu, got {activation!r}")
        super().__init__(params, fmt, spec, activation=activation)
        self.activation = activation

    def _children(self, terms, parents, x, out):
        children.elman_children(terms, self._token_terms(), parents, x, out, self._q, self.activation == "relu")

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
    _GROUPS, _NEGATED = children.LSTM_GROUPS, children.LSTM_NEGATED

    def _parent_state(self, h):  # the parents' cells
        return np.ascontiguousarray(h[:, self.width:])

    def _children(self, terms, parents, x, out):
        children.lstm_children(terms, self._token_terms(), parents, x, out, self._q,
                               self._q.mode in ("fixed", "bit"))

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
    _GROUPS, _NEGATED = children.GRU_GROUPS, children.GRU_NEGATED

    def _parent_state(self, h):  # the parents' states, which h' = (1 - z) n + z h reads
        return np.ascontiguousarray(h)

    def _children(self, terms, parents, x, out):
        children.gru_children(terms, self._token_terms(), parents, x, out, self._q)

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
