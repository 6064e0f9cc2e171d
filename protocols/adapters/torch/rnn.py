"""PyTorch ``nn.RNN`` (tanh, relu), ``nn.LSTM`` and ``nn.GRU`` as commsim recurrent models.

The model of Theorem 2 of [BHBK24] is any recurrence ``h_t = g(x_t, h_{t-1})``, ``y_t = f(h_t)``
whose state is m numbers of p bits.  A stacked torch core is such a recurrence if its state is
*every* layer's state: layer by layer ``h^l`` (and ``c^l`` for an LSTM), so an L-layer LSTM of
hidden size m hands off ``2 m L`` numbers, ``2 m L p`` bits.  The token embedding is folded into
the first layer's input term (one row per token); the head (``f``) is any torch module or callable
applied to the top layer's ``h``.

Semantics (those of :class:`protocols.models.recurrent.RecurrentModel`): every step computes in float64
and rounds the state to the format once per step (an LSTM's ``c`` before ``h = o tanh(c)``; each
layer's ``h`` before the next layer reads it); the parameters are numbers of the format.  The
protocol therefore reproduces the commsim model bit for bit, and the commsim model agrees with the
torch module's own forward within :data:`~protocols.adapters.torch.layers.TOLERANCE`.
"""
from __future__ import annotations

import numpy as np

from commsim.contract import Dense, sigmoid
from commsim.core.precision import NumberFormat
from protocols.adapters.torch.layers import (
    AdapterError,
    Head,
    embedding_weights,
    format_for_dtype,
    numpy_head,
    tensor,
    without_unpicklable_forward,
)
from protocols.adapters.torch.trust import TorchTrust
from protocols.models.cells import gru_cell
from protocols.models.recurrent import RecurrentModel

#: torch ``mode`` -> (commsim cell, gates)
CELLS = {"RNN_TANH": ("rnn-tanh", 1), "RNN_RELU": ("rnn-relu", 1), "LSTM": ("lstm", 4), "GRU": ("gru", 3)}


CELLS_GATES = dict(CELLS.values())


class TorchRecurrent(TorchTrust, RecurrentModel):
    """A (stacked) torch RNN/LSTM/GRU with a token embedding and a head, as a recurrent model.

    State layout: for each layer in order, ``h^l`` (``proj_size`` or m units) then, for an LSTM,
    ``c^l`` (m units).  ``width`` is m (the hidden size), ``layers`` the number of layers.
    ``torch_forward(tokens)`` runs the original torch parts (for the agreement check,
    :class:`~protocols.adapters.torch.trust.TorchTrust`).
    """

    kind = "torch-rnn"

    def __init__(self, cell: str, layers: list[dict], input_table: np.ndarray, head: Head, fmt: NumberFormat,
                 spec: str = "", torch_forward=None, source: str = ""):
        if cell not in {c for c, _ in CELLS.values()}:
            raise AdapterError(f"unknown recurrent cell {cell!r}")
        self.cell = cell
        self.num_layers = len(layers)
        m = int(layers[0]["w_hh"].shape[1] // CELLS_GATES[cell])
        self.hidden = m
        self.h_units = int(layers[0]["w_hh"].shape[0])  # proj_size or m
        per_layer = self.h_units + (m if cell == "lstm" else 0)
        super().__init__(fmt, m, per_layer * self.num_layers, input_table.shape[0], head.outputs,
                         spec or f"torch:{cell}")
        self.per_layer = per_layer
        self.kind = {"rnn-tanh": "elman", "rnn-relu": "elman"}.get(cell, cell)  # lstm / gru / elman
        self.head = head
        self.output_probability = head.probability
        self.source = source
        self.torch_forward = torch_forward
        q = self.quantize
        self._table = np.ascontiguousarray(input_table, dtype=np.float64)
        self._layers = []
        for i, lay in enumerate(layers):
            entry = {"hh": Dense.for_format(q(lay["w_hh"]), None, fmt)}
            if cell == "gru":
                entry["b_hh"] = q(lay["b_hh"])
            if i > 0:
                bias = q(lay["b_ih"]) + (0.0 if cell == "gru" else q(lay["b_hh"]))
                entry["ih"] = Dense.for_format(q(lay["w_ih"]), bias, fmt)
            if lay.get("w_hr") is not None:
                entry["hr"] = Dense.for_format(q(lay["w_hr"]), None, fmt)
            self._layers.append(entry)

    @property
    def layers(self) -> int:
        """The number of stacked layers (every layer's state is handed off)."""
        return self.num_layers

    def describe_state(self) -> str:
        """The state per layer, in words."""
        part = f"(h, c) = {self.h_units} + {self.hidden}" if self.cell == "lstm" else f"h = {self.h_units}"
        layers = f"{self.num_layers} layers x " if self.num_layers > 1 else ""
        return f"{layers}{part} units of {self.format.name}"

    def _step(self, h, x, t):
        """One step of every layer, bottom to top, each layer's h rounded before the next reads it."""
        m, hs = self.hidden, self.h_units
        out = np.empty_like(h)
        a = self._table[x]  # fancy indexing: a fresh (batch, gates * m) array
        below = None
        for i, lay in enumerate(self._layers):
            off = i * self.per_layer
            prev = h[:, off:off + hs]
            if i > 0:
                a = lay["ih"](below)
            if self.cell in ("rnn-tanh", "rnn-relu"):
                pre = lay["hh"](prev)
                pre += a
                new = np.tanh(pre, out=pre) if self.cell == "rnn-tanh" else np.maximum(pre, 0.0, out=pre)
            elif self.cell == "lstm":
                z = lay["hh"](prev)
                z += a
                ig = sigmoid(z[:, :m])
                fg = sigmoid(z[:, m:2 * m])
                gg = np.tanh(z[:, 2 * m:3 * m], out=z[:, 2 * m:3 * m])
                og = sigmoid(z[:, 3 * m:])
                c = out[:, off + hs:off + hs + m]
                np.multiply(fg, h[:, off + hs:off + hs + m], out=c)
                c += ig * gg
                self._q(c)
                new = np.tanh(c) * og
                if "hr" in lay:
                    new = lay["hr"](self._q(new))
            else:  # gru: r, z, n (PyTorch's form)
                u = lay["hh"](prev)
                u += lay["b_hh"]
                new = gru_cell(a, u, prev, m)
            out[:, off:off + hs] = new
            below = self._q(out[:, off:off + hs])
        return out

    def __getstate__(self):
        """Picklable state (``--audit`` sends the model to spawned processes): plain arrays and
        module-level callables; an unpicklable ``torch_forward`` is left behind."""
        return without_unpicklable_forward(self.__dict__)

    def _readout(self, h):
        """The head on the top layer's h."""
        off = (self.num_layers - 1) * self.per_layer
        return self.head(h[:, off:off + self.h_units])


def _embedding_matrix(embedding, vocab_size: int | None, input_size: int) -> tuple[np.ndarray, str]:
    """(vocab, input_size) rows: an nn.Embedding's weight, a given matrix, or one-hot tokens."""
    import torch.nn as nn
    if embedding is None:
        vocab = vocab_size if vocab_size is not None else input_size
        if vocab > input_size:
            raise AdapterError(f"no token embedding was given and the core reads {input_size} inputs, fewer than "
                               f"the {vocab} tokens: pass embedding= (an nn.Embedding or a (vocab, {input_size}) "
                               f"matrix) or return a wrapping module that has one")
        return np.eye(vocab, input_size), f"one-hot({vocab})"
    what = "nn.Embedding" if isinstance(embedding, nn.Embedding) else "matrix"
    return embedding_weights(embedding, "token embedding", input_size), what


class TorchPartsForward:
    """tokens (batch, length) -> the torch parts' outputs (batch, length, classes) as float64;
    picklable when the parts are.  A core given alone (one-hot tokens, no head) is the user's module itself;
    with an embedding or a head it is the parts composed, not a module of the user's (the agreement with it is
    not judged: :func:`~protocols.adapters.torch.trust.judge`)."""

    def __init__(self, embedding, core, head):
        self.embedding, self.core, self.head = embedding, core, head
        name = type(core).__name__
        self.whole_model = embedding is None and head is None
        self.reference = (f"{name}'s own forward on one-hot tokens" if self.whole_model else
                          f"the given parts composed in torch (embedding -> {name} -> head)")

    def __call__(self, tokens):
        """The torch parts' outputs on token ids, as float64."""
        import torch
        import torch.nn as nn
        core, embedding, head = self.core, self.embedding, self.head
        dtype = next(core.parameters()).dtype
        with torch.no_grad():
            t = torch.as_tensor(np.asarray(tokens), dtype=torch.long)
            if embedding is None:
                x = nn.functional.one_hot(t, core.input_size).to(dtype)
            elif isinstance(embedding, nn.Module):
                x = embedding(t)
            else:
                x = torch.as_tensor(np.asarray(tensor(embedding)), dtype=dtype)[t]
            if not core.batch_first:
                x = x.transpose(0, 1)
            y = core(x.to(dtype))[0]
            if not core.batch_first:
                y = y.transpose(0, 1)
            if head is not None:
                y = head(y)
                if isinstance(y, (tuple, list)):
                    y = y[0]
            return tensor(y)


def _torch_parts_forward(embedding, core, head) -> TorchPartsForward:
    """tokens (batch, length) -> the torch parts' outputs (batch, length, classes) as float64."""
    return TorchPartsForward(embedding, core, head)


def wrap_recurrent(core, embedding=None, head=None, fmt: NumberFormat | None = None, *,
                   vocab_size: int | None = None, spec: str = "", source: str = "") -> TorchRecurrent:
    """Wrap ``core`` (nn.RNN / nn.LSTM / nn.GRU, any number of layers, batch_first either way).

    ``embedding``: an ``nn.Embedding``, a (vocab, input_size) matrix, or None (one-hot tokens);
    ``head``: a torch module or callable on the top layer's h (None: the h values themselves);
    ``fmt``: the number format (default: from the core's dtype, float32 -> p = 32).
    """
    import torch.nn as nn
    if not isinstance(core, nn.RNNBase):
        raise AdapterError(f"expected nn.RNN, nn.LSTM or nn.GRU, got {type(core).__name__}")
    if core.mode not in CELLS:
        raise AdapterError(f"unsupported recurrent mode {core.mode!r}")
    if core.bidirectional:
        raise AdapterError(f"a bidirectional {type(core).__name__} reads the sequence backwards too: it is not a "
                           f"left-to-right recurrence, so the hidden-state handoff (Theorem 2 of [BHBK24]) does not "
                           f"apply")
    params = dict(core.named_parameters())
    dtype = next(iter(params.values())).dtype
    fmt = format_for_dtype(dtype) if fmt is None else fmt
    cell, gates = CELLS[core.mode]
    m, proj = core.hidden_size, getattr(core, "proj_size", 0) or 0
    matrix, emb_what = _embedding_matrix(embedding, vocab_size, core.input_size)
    if vocab_size is not None and matrix.shape[0] < vocab_size:
        raise AdapterError(f"the token embedding has {matrix.shape[0]} rows but the task uses {vocab_size} tokens")
    q = fmt.quantize
    layers = []
    for i in range(core.num_layers):
        lay = {}
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"):
            p = params.get(f"{name}_l{i}")
            lay[name] = None if p is None else tensor(p)
        rows = gates * m
        lay["b_ih"] = lay["bias_ih"] if lay["bias_ih"] is not None else np.zeros(rows)
        lay["b_hh"] = lay["bias_hh"] if lay["bias_hh"] is not None else np.zeros(rows)
        lay["w_ih"] = lay["weight_ih"].T
        lay["w_hh"] = lay["weight_hh"].T
        lay["w_hr"] = None if lay["weight_hr"] is None else lay["weight_hr"].T
        layers.append(lay)
    # layer 0's input term per token: q(E) q(W_ih)^T + q(b_ih) (+ q(b_hh) outside a GRU), in float64
    first = layers[0]
    table = Dense(q(first["w_ih"]))(q(matrix))
    table += q(first["b_ih"])
    if cell != "gru":
        table += q(first["b_hh"])
    head_fn = numpy_head(head, proj or m, fmt, dtype)
    what = f"{type(core).__name__}({core.input_size}, {m}, layers={core.num_layers}" + \
           (f", proj={proj}" if proj else "") + f") with {emb_what} embedding and {head_fn.description} head"
    return TorchRecurrent(cell, layers, table, head_fn, fmt, spec=spec or f"torch:{cell}",
                          torch_forward=_torch_parts_forward(embedding, core, head), source=source or what)
