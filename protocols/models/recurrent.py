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


import numpy as np

from commsim.contract import InternalError, ModelError, Quantizer, label_dtype
from commsim.core.precision import NumberFormat
from protocols.models import prefix_trie
from protocols.models.decides import Decides

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

    #: :func:`prefix_trie.forward_shared` computes the parents' shared terms (:meth:`_parent_terms`) once a level has
    #: at least this many children per parent (None: :data:`prefix_trie.SHARED_TERMS_CHILDREN`)
    shared_terms_children: int | None = None

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
        return self.decide_raw(raw, label_dtype(raw.shape[-1]))

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
        if h.size and np.isnan(h.max()):       # (the maximum is NaN exactly when a value is: NaN propagates)
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

    def forward_shared(self, tokens, output_positions, keep: int | None = None, memo=None):
        """:meth:`forward_batch` over a prefix trie, each distinct prefix's state once (the same bits; row by
        row for a model whose own ``run`` computes outputs another way): :func:`prefix_trie.forward_shared`
        (``memo``: a :class:`~protocols.models.state_merge.ReadoutMemo` shared by the calls of one batch run)."""
        return prefix_trie.forward_shared(self, tokens, output_positions, keep, type(self).run is RecurrentModel.run,
                                          memo)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}: {self.describe_state()}, {self.state_bits} state bits>"
