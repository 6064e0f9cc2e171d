"""One attention layer from torch in folded form: the target of every attention wrapper
(:mod:`.mha` for ``nn.MultiheadAttention``, :mod:`.gpt2` for Hugging Face GPT-2 with one layer,
:mod:`.tlens` for TransformerLens), and the pieces they share.

The model of Theorem 4 of [BHBK24] is: embeddings x_i (token and position, arbitrary), per head
q = W_Q x_N, k_i = W_K x_i, v_i = W_V x_i, softmax attention at the query position N, heads
concatenated and projected by W_O, then an arbitrary output map psi.  A real layer is brought to
that form by folding, never by approximating:

* projection biases (b_Q, b_K, b_V) ride on a constant coordinate of every embedding (1, or in a fixed-point
  format without 1 another power of two that carries them exactly, else refused: :func:`bias_carrier`); a
  module without biases gets no such coordinate.  Both parties know the constant, so it is never sent nor
  counted in the d of x_N (:func:`embedding_message_coords`); the score scale (1/sqrt(d_head) or
  TransformerLens' ``attn_scale``) is folded into W_Q;
* a pre-attention LayerNorm or RMSNorm (GPT-2's ``ln_1``, the norm of a pre-LN block or of
  ``nn.TransformerEncoderLayer(norm_first=True)``) is a function of (position, token): the embedding is
  a table E(i, s) = ln_1(wte[s] + wpe[i]), one row per position and token (:func:`fold_pre_attention`);
* everything after the attention *at the query position* -- W_O's bias, the residual connection,
  ``ln_2`` and the MLP, the final LayerNorm and the unembedding -- is psi.  psi needs the query
  position's own residual stream e_N = [wte[s_N] + wpe[N]]: it is stored as extra coordinates of
  every position's embedding (zero weight in W_Q, W_K, W_V) and read by psi through the layer's
  residual path (:class:`protocols.models.attention.AttentionLayer`, ``residual=`` those coordinates).
  The output party gets it for free when it owns the query position; otherwise (the one-way
  exchange) the query owner sends it as the ``embedding`` message, d·p bits: e_N alone, as the norm's
  output is a function of e_N at the public position that the receiver looks up exactly (commsim's own
  refinement; the papers' message is x_N whole).  The reported width m is the real head width.

Refused, with the reason: more than one layer (Lemma 5 / Corollary 13.1 of [BHBK24]: no protocol
of this kind exists for two layers), position schemes other than absolute tables, RoPE and ALiBi, soft-capped
attention scores, ``add_bias_kv`` / ``add_zero_attn`` (a key that belongs to no party), and
parallel attention/MLP blocks.

The commsim model (:class:`TorchAttention`, a :class:`protocols.models.attention.AttentionLayer`) has the
exact finite-precision semantics of :mod:`protocols.models.attention`; the exchange reproduces it bit for
bit, and it agrees with the torch module's own forward within
:data:`~protocols.adapters.torch.layers.TOLERANCE`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from commsim.core.precision import NumberFormat
from commsim.contract import check_memory
from protocols.adapters.torch.grid import Grid, MappedGrid, StackedGrid, SumGrid, as_grid
from protocols.adapters.torch.layers import AdapterError, tensor, without_unpicklable_forward
from protocols.adapters.torch.trust import ModuleForward, TorchTrust
from protocols.models.attention import AttentionLayer

#: bytes of psi's outputs kept for rows asked again (:class:`FoldedPsi`)
PSI_KEPT_BYTES = 128 << 20

#: positions of the table of a position-free attention model when no sequence length is given
DEFAULT_POSITIONS = 64


#: largest (positions x tokens x dim) embedding table written out whole; a larger one computes the rows of the
#: (position, token) pairs asked (:mod:`.grid`)
MAX_TABLE = 20_000_000


TWO_LAYERS = ("the attention protocol wraps one attention layer: for two layers there are models whose output "
              "needs N/2 bits of communication on every balanced split (Lemma 5 and Corollary 13.1 of [BHBK24]), "
              "so no exchange of this kind exists (commsim teach two-layers shows why)")


class _NoTokenTable:
    """The token embedding handed to the base class when the rows are computed on demand: it only fixes the
    width (:meth:`TorchAttention.embed` never calls it)."""

    def __init__(self, dim: int):
        self.dim = dim

    def __call__(self, tokens):
        raise NotImplementedError("a TorchAttention computes x(i, s) from its grid")


class TorchAttention(TorchTrust, AttentionLayer):
    """A one-layer attention model folded from torch (module docstring).

    The embedding is a (positions, tokens, dim) table; ``residual`` (a sequence of its coordinates,
    or False) is what psi reads of the query position's embedding besides y = W_O o (the residual
    stream, :class:`~protocols.models.attention.AttentionLayer`).  ``torch_forward`` runs the original torch
    module (the agreement check, :class:`~protocols.adapters.torch.trust.TorchTrust`); ``source`` says what
    was wrapped.
    """

    def __init__(self, fmt: NumberFormat, table, W_Q, W_K, W_V, W_O, psi, *, residual=False,
                 spec: str = "", torch_forward=None, source: str = ""):
        grid = table if isinstance(table, Grid) else None
        if grid is None:
            table = np.asarray(table, dtype=np.float64)
        if len(table.shape) != 3:
            raise AdapterError(f"the embedding table must be (positions, tokens, dim), got shape {table.shape}")
        P, V, dim = (int(s) for s in table.shape)
        # the base class reads the shape from a token embedding: a function when the rows are computed on demand
        token = table[0] if grid is None else _NoTokenTable(dim)
        super().__init__(fmt, token, None, W_Q, W_K, W_V, W_O, psi, residual=residual, spec=spec)
        self.grid = grid                        # rows computed for the (position, token) pairs asked (:mod:`.grid`)
        self.table = None if grid is not None else self.arithmetic.from_values(table)
        self.vocab_size = V
        self.max_positions = P
        self.torch_forward = torch_forward
        self.source = source

    def embed(self, tokens, positions):
        """x = E(i, s): the table row of each (position, token); broadcasts like the base class."""
        positions, tokens = np.asarray(positions, dtype=np.int64), np.asarray(tokens, dtype=np.int64)
        if self.grid is not None:
            return self.arithmetic.from_values(self.grid.rows(positions, tokens))
        return self.table[positions, tokens]

    def embedding_from_message(self, values: np.ndarray, position: int) -> np.ndarray:
        """x_N (B, dim) from its message coordinates (B, k) at the public ``position``: the table row there whose
        coordinates are the sent ones (every such row is the same: :func:`embedding_message_coords`); with rows
        computed on demand, the row computed from them (the residual stream it is a function of, or every
        coordinate but the constant one)."""
        if self.config.message is None:
            return values
        if self.grid is not None:
            ar = self.arithmetic
            sent = ar.to_values(np.asarray(values))
            if self.grid.message_is_residual():
                return ar.from_values(self.grid.from_residual(sent))
            out = np.zeros((len(sent), self.dim))
            out[:, list(self.config.message)] = sent
            out[:, self.grid.const[0]] = self.grid.const[1]
            return ar.from_values(out)
        rows = self.table[int(position)]
        sent = rows[:, list(self.config.message)]
        out = []
        for v in np.asarray(values):
            hit = np.flatnonzero(np.all(sent == v, axis=1))
            if not hit.size:
                raise ValueError(f"the embedding message {v} is no token's x_N at position {position}")
            out.append(rows[hit[0]])
        return np.stack(out)

    def _float_embedding(self, tokens: np.ndarray) -> np.ndarray:
        """The (position, token) table rows, as float64 values."""
        return self.arithmetic.to_values(self.embed(tokens, np.arange(tokens.shape[1])))

    def __getstate__(self):
        """Picklable state (``--audit`` sends the model to spawned processes): plain arrays and
        module-level callables; an unpicklable ``torch_forward`` is left behind."""
        return without_unpicklable_forward(self.__dict__)

    def save(self, path) -> None:
        """Refused: a wrapped model is saved by saving the torch module."""
        raise AdapterError("a model wrapped from torch is saved by saving the torch module (torch.save)")

    def __repr__(self) -> str:
        return f"<TorchAttention {self.spec}: {self.source}>"


@dataclass
class OneLayer:
    """A one-layer attention model in folded form, before it becomes a :class:`TorchAttention`.

    ``inputs``: named (positions, tokens, dim) tables of the attention's inputs (one shared ``x``,
    or separate ``q``/``k``/``v`` inputs); ``projections``: for ``q``, ``k``, ``v`` the input name,
    the weight (H, m, dim) and bias (H, m) or None; ``scale`` multiplies the logits; ``W_O`` (d, H m);
    ``b_O`` (d,) or None; ``residual``: the (positions, tokens, d) residual stream at each position
    or None; ``post``: numpy function of the query's residual stream r = b_O + W_O o (+ x_N) -> outputs.
    """

    inputs: dict
    projections: dict
    scale: float
    W_O: np.ndarray
    b_O: np.ndarray | None
    residual: np.ndarray | None
    post: Callable
    outputs: int
    source: str = ""
    extras: dict = field(default_factory=dict)


class FoldedPsi:
    """psi of the folded layer: the residual stream b_O + W_O o (+ x_N) through the post-attention map
    (a picklable object holding plain arrays)."""

    def __init__(self, d_out: int, b_O, d_res: int, post):
        self.d_out, self.b_O, self.d_res, self.post = int(d_out), b_O, int(d_res), post

    def __call__(self, y):
        """The post-attention map of y = (W_O o, x_N[residual]), row by row: a row asked before (the same
        instance in the direct forward, the batch and its protocol run) is answered from the rows kept, up to
        :data:`PSI_KEPT_BYTES` (the map is batch-independent: a row's outputs depend on that row alone)."""
        y = np.asarray(y, dtype=np.float64)
        if y.ndim != 2 or not len(y):
            return self._map(y)
        kept = self.__dict__.setdefault("_kept", {})
        keys = [row.tobytes() for row in y]
        missing = [i for i, key in enumerate(keys) if key not in kept]
        fresh = self._map(y[missing]) if missing else None
        if fresh is not None and len(missing) == len(keys):
            out = fresh
        else:
            first = fresh[0] if fresh is not None else kept[keys[0]]
            out = np.empty((len(keys),) + np.shape(first), dtype=np.asarray(first).dtype)
            at = dict(zip(missing, range(len(missing))))
            for i, key in enumerate(keys):
                out[i] = fresh[at[i]] if i in at else kept[key]
        if fresh is not None:
            fresh = np.asarray(fresh)
            if self.__dict__.get("_kept_bytes", 0) + fresh.nbytes > PSI_KEPT_BYTES:
                kept.clear()
                self._kept_bytes = 0
            for i, row in zip(missing, fresh):
                kept[keys[i]] = row
            self._kept_bytes = self.__dict__.get("_kept_bytes", 0) + fresh.nbytes
        return out

    def __getstate__(self):
        """Picklable state: the arrays and the map (the kept rows stay behind)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_kept", "_kept_bytes")}

    def _map(self, y):
        """The map itself, on rows y."""
        stream = y[:, :self.d_out].copy()
        if self.b_O is not None:
            stream += self.b_O
        if self.d_res:
            stream += y[:, self.d_out:self.d_out + self.d_res]
        return self.post(stream)


def build_attention(layer: OneLayer, fmt: NumberFormat, *, spec: str = "", torch_forward=None) -> TorchAttention:
    """Fold a :class:`OneLayer` into a :class:`TorchAttention` (module docstring)."""
    H, m, _ = layer.projections["q"][1].shape
    blocks, offset = {}, 0
    for name, table in layer.inputs.items():
        blocks[name] = (offset, table.shape[2])
        offset += table.shape[2]
    # each bias as the model means it: rounded once, with the score scale for b_Q
    biases = {which: fmt.quantize(np.asarray(b) * (layer.scale if which == "q" else 1.0))
              for which, (_, _, b) in layer.projections.items() if b is not None}
    const, one = None, None
    if biases:   # a constant coordinate carries b_Q, b_K, b_V (none without biases: it would only cost bits)
        one = bias_carrier(fmt, list(biases.values()))
        const, offset = offset, offset + 1
    d_res = 0 if layer.residual is None else layer.residual.shape[2]
    shared = next((name for name, t in layer.inputs.items() if t is layer.residual), None)
    if shared is not None:   # the residual stream is an input already (nn.MultiheadAttention): read those coordinates
        res_at, stored = blocks[shared][0], 0
    else:
        res_at, stored = offset, d_res
    dim = offset + stored
    grids = {name: as_grid(t) for name, t in layer.inputs.items()}
    stream = None if layer.residual is None else next(
        (grids[name] for name, t in layer.inputs.items() if t is layer.residual), as_grid(layer.residual))
    P, V = next(iter(grids.values())).shape[:2]
    table = StackedGrid([(grids[name], start) for name, (start, _) in blocks.items()],
                        None if const is None else (const, one), (stream, res_at) if stored else None, dim)
    if P * V * dim <= MAX_TABLE:   # small: the whole table, read by gathers (an exhaustive run reads every row)
        table = table.dense()
    weights = {}
    for which in ("q", "k", "v"):
        source, W, b = layer.projections[which]
        start, size = blocks[source]
        scale = layer.scale if which == "q" else 1.0
        full = np.zeros((H, m, dim))
        full[:, :, start:start + size] = np.asarray(W) * scale
        if b is not None:
            full[:, :, const] = biases[which] / one   # exact: bias_carrier checked it is representable
        weights[which] = full
    d_out = layer.W_O.shape[0]
    W_O = np.asarray(layer.W_O, dtype=np.float64)
    b_O = None if layer.b_O is None else np.asarray(layer.b_O, dtype=np.float64)
    q_fmt = fmt.quantize
    b_O_q = None if b_O is None else q_fmt(b_O)
    psi = FoldedPsi(d_out, b_O_q, d_res, layer.post)
    residual = np.arange(res_at, res_at + d_res) if d_res else False   # psi reads e_N: (y, x_N[residual])
    model = TorchAttention(fmt, table, weights["q"], weights["k"], weights["v"], W_O, psi, residual=residual,
                           spec=spec, torch_forward=torch_forward, source=layer.source)
    model.output_probability = bool(getattr(layer.post, "probability", False))   # a sigmoid head: decided at 1/2
    if model.grid is None:
        message = embedding_message_coords(model.table, const, None if not stored else (res_at, res_at + d_res))
    elif table.message_is_residual():    # every row a function of the stream: the receiver computes it exactly
        message = tuple(range(res_at, res_at + d_res))
    else:                                # every coordinate but the constant one (None: no constant, all of them)
        message = None if const is None else tuple(i for i in range(dim) if i != const)
    if message is not None:
        model.config = model.config.replace(message=message)
    rope, alibi = layer.extras.get("rope"), layer.extras.get("alibi")
    if rope or alibi is not None:   # the position scheme inside the attention (protocols.models.attention_positions)
        model.config = model.config.replace(rope=bool(rope), rope_base=float(rope or 10000.0), alibi=alibi)
    return model


def bias_carrier(fmt: NumberFormat, biases) -> float:
    """The value c of the constant coordinate that carries the (rounded) projection biases b: weight b / c on it
    gives [W x + (b / c) c] = [W x + b] exactly when c and every b / c are representable (products and sums are
    exact, one rounding).  1 when the format has it; else a representable +-2^k that works (a fixed-point
    format too narrow for 1, e.g. fixed2.1); else AdapterError: a substitute would not be the module."""
    q = fmt.quantize
    for k in sorted(range(-8, 9), key=abs):
        for c in (2.0 ** k, -2.0 ** k):
            if q(np.float64(c)) == c and all(np.array_equal(q(b / c) * c, b) for b in biases):
                return c
    raise AdapterError(f"the module's q/k/v biases ride on a constant coordinate, but {fmt.name} cannot hold 1 (it "
                       f"rounds to {float(q(np.float64(1.0)))}) nor another constant that carries these biases "
                       f"exactly: the {fmt.bits}-bit model would not be the module with its weights rounded; use a "
                       f"wider precision (or a module without biases)", "precision")


def embedding_message_coords(codes: np.ndarray, const: int | None, residual: tuple[int, int] | None):
    """The coordinates of x_N the one-way ``embedding`` message carries (None: all of them), for the folded
    (positions, tokens, dim) table ``codes``: never the constant coordinate (both parties know it); with a
    stored residual stream (coordinates ``residual`` = (start, stop)) only those, when at every position they
    determine the whole row -- the attention's input (ln_1 of the stream) is then computed by the receiver
    exactly, by looking the row up at the public position (:meth:`TorchAttention.embedding_from_message`).
    commsim's own refinement of the [SHT23] message x_N: the papers send x_N whole."""
    dim = codes.shape[2]
    candidates = []
    if residual is not None:
        candidates.append(tuple(range(*residual)))
    if const is not None:
        candidates.append(tuple(i for i in range(dim) if i != const))
    for coords in candidates:
        if coords and all(_determines(codes[i], coords) for i in range(codes.shape[0])):
            return coords
    return None


def _determines(rows: np.ndarray, coords) -> bool:
    """Do the ``coords`` of the (tokens, dim) ``rows`` determine the whole row (equal coords -> equal row)?"""
    _, first, inverse = np.unique(rows[:, list(coords)], axis=0, return_index=True, return_inverse=True)
    return bool(np.array_equal(rows[first[inverse.reshape(-1)]], rows))


# ---- pieces the wrappers share -------------------------------------------------------------------
def check_table_size(vocab: int, positions: int, dim: int, what: str) -> None:
    """Refuse embeddings whose float64 copies -- what a (positions, tokens, dim) table computed on demand keeps:
    a (tokens, dim) and a (positions, dim) matrix, :class:`~.grid.SumGrid` -- pass the memory budget.  The table
    itself is written out only when it has at most :data:`MAX_TABLE` values (:func:`build_attention`)."""
    check_memory(8 * (vocab + positions) * dim, "model",
                 f"{what}: the embeddings of {vocab} tokens and {positions} positions x {dim}")


def vocab_and_positions(model_vocab: int, model_positions: int | None, vocab_size: int | None,
                        seq_len: int | None, what: str) -> tuple[int, int]:
    """(tokens, positions) of the table: the task's when given (checked against the model's), else the model's."""
    vocab = model_vocab if vocab_size is None else int(vocab_size)
    if vocab > model_vocab:
        raise AdapterError(f"{what} reads {model_vocab} tokens but the task uses {vocab}")
    if seq_len is None:
        if model_positions is None:
            raise AdapterError(f"{what} has no position limit; pass seq_len=")
        positions = model_positions
    else:
        positions = int(seq_len)
        if model_positions is not None and positions > model_positions:
            raise AdapterError(f"{what} has position embeddings for {model_positions} positions; the task needs "
                               f"{positions}")
    return vocab, positions


def embedding_grid(wte: np.ndarray, wpe: np.ndarray | None, vocab: int, positions: int,
                   fmt: NumberFormat | None = None) -> SumGrid:
    """e(i, s) = wte[s] + wpe[i] as a (positions, vocab, d) table, rounded to ``fmt`` when given; its rows are
    computed for the (position, token) pairs asked (:mod:`.grid`)."""
    return SumGrid(wte, wpe, vocab, positions, fmt)


def fold_pre_attention(e, pre, fmt: NumberFormat) -> MappedGrid:
    """The attention's input table x(i, s) = [pre(e(i, s))]: a per-position map before the attention (a
    LayerNorm or RMSNorm -- GPT-2's ``ln_1``, a pre-LN block's norm -- or any numpy map of one row) applied
    to every (position, token) row of the residual-stream table ``e`` and rounded to ``fmt``.  Exact: the
    map sees one position's vector, and that vector is a function of the position and the token.  The rows
    are computed for the (position, token) pairs asked (:mod:`.grid`)."""
    return MappedGrid(as_grid(e), pre, fmt)


def quantized(fmt: NumberFormat, a):
    """A torch tensor (or array) rounded to ``fmt`` as float64 values; None stays None."""
    return None if a is None else fmt.quantize(tensor(a))


class LastPositionForward(ModuleForward):
    """tokens -> the torch module's outputs at the last position (float64 numpy): the user's model itself;
    picklable when the module is."""

    @staticmethod
    def select(out):
        """The outputs at the last position."""
        return out[:, -1] if out.dim() == 3 else out

    def forward_options(self) -> dict:
        """Only the last position's logits and no key/value cache, where the module's forward takes the options
        (Hugging Face causal LMs: ``logits_to_keep``, ``use_cache``): with a 50,257-token head the logits of every
        position of 64 sequences of 1025 tokens would be 13 GB."""
        import inspect
        try:
            names = inspect.signature(self.module.forward).parameters
        except (TypeError, ValueError):
            return {}
        options = {"logits_to_keep": 1, "use_cache": False}
        return {k: v for k, v in options.items() if k in names}


def last_position_forward(module, dtype=None) -> LastPositionForward:
    """A function tokens -> the module's outputs at the last position (float64 numpy)."""
    return LastPositionForward(module)


def split_heads(W: np.ndarray, H: int, m: int) -> np.ndarray:
    """(H m, d) rows -> (H, m, d)."""
    return W.reshape(H, m, W.shape[1])
