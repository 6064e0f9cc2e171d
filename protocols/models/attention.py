"""One-layer attention with exact finite-precision semantics (the model of Theorem 4 of [BHBK24]).

The layer: token and position embeddings (tables or functions), H heads of width m with
``W_Q, W_K, W_V`` (m x d), ``W_O`` (d_out x H m) and an output map ``psi`` (an MLP, ReLU between
layers, or a callable), read at one query position (default the last; the label is the argmax of
psi's output, ties to the lowest class, or > 0 for one output).  The query attends to every position,
its own included (``attend_self=False`` leaves it out).

Finite-precision semantics (Appendix B.2 and D of [BHBK24]): every parameter is rounded to the
format once, at construction; writing [t] for rounding (fixed point: down to the grid 2^-F, saturating;
IEEE: to nearest even, overflow saturating), the forward pass at query position N is::

    x_i   = [E_tok(s_i) + E_pos(i)]                 (each embedding rounded, then their sum)
    q     = [W_Q x_N],  k_i = [W_K x_i],  v_i = [W_V x_i]          (per head)
    A_i   = [<q, k_i>]                              the logits, rounded
    M     = max_i A_i                               exact
    e_i   = [exp(A_i - M)]                          in [0, 1]; e = [1] at the maximum, so Z > 0
    Z     = sum_i e_i                               exact (an integer number of units)
    U     = sum_i [e_i * v_i]                       each product rounded, the sum exact
    o     = [U / Z]                                 one division per value, rounded
    y     = [W_O (o_1, ..., o_H)],  output = psi(y) (each MLP layer [W h + b], ReLU between)

``division="per-weight"`` is the semantics of Appendix D of [BHBK24] instead: each weight is
rounded first, a_i = [e_i / Z], then U = sum_i [a_i v_i] (products rounded, the sum exact) and o = [U].
Under per-weight the exchange needs Z at both parties before any U term: one more message per head.

With a residual path (``residual=True``, or a list of coordinates), psi's input is (y, x_N[coords]).
Linear maps and dot products are exact and rounded once (fixed point: exact integer sums of codes;
IEEE: float64, accumulated in index order).  ``exp`` is numpy's float64 ``exp``; a division [u / z]
(of U by Z, or of e_i by Z) is floor division of integers (fixed point) or Python's correctly rounded
integer division, then rounded to the format (IEEE).  Sums are carried in units of the format's
smallest step, so Z and U are exact integers and any split of the positions gives the same totals:
the exchange of :mod:`protocols.simulators.attention` is *bit-identical* to the direct
forward for every partition, under either division.  :meth:`AttentionLayer.float_forward` is a
plain float64 forward with the same parameters; float layers stay within :data:`FLOAT_TOLERANCE`.
Spec keys and the ``attention:probe`` construction: :mod:`protocols.models.attention_spec`.  Position schemes
inside the attention -- RoPE (k_i and q rotated by their positions) and ALiBi (a bias [m_h (i - N)] on each
logit), both computed from a position alone: :mod:`protocols.models.attention_positions`.
"""
from __future__ import annotations

import numpy as np

from commsim.contract import InputError
from commsim.core.precision import NumberFormat
from protocols.models.attention_config import DIVISIONS, AttentionConfig, FromConfig
from protocols.models.attention_kernel import BLOCK_ELEMENTS, divide, softmax_sums
from protocols.models.attention_pairs import PairCache, distinct_pairs
from protocols.models.decides import Decides
from protocols.models.attention_positions import alibi_bias, rotate

__all__ = ["DIVISIONS", "FLOAT_TOLERANCE", "AttentionConfig", "AttentionLayer", "random_layer"]

#: (relative + absolute) tolerance of the reference float semantics against a plain float64 forward
FLOAT_TOLERANCE = {"float64": 1e-9, "float32": 1e-4, "float16": 5e-2, "bfloat16": 1e-1}


# ---- the layer ----------------------------------------------------------------------------------
class AttentionLayer(Decides):
    """A one-layer attention model under a number format (module docstring: the exact semantics).

    ``token_embedding``: (V, d) array or a function of an int array returning (..., d);
    ``position_embedding``: (P, d) array, a function of positions, or None; ``W_Q``, ``W_K``,
    ``W_V``: (H, m, d); ``W_O``: (d_out, H m); ``psi``: a list of (W, b) MLP layers, a callable
    (float64 (B, d_out) -> (B, C)), or None (the output is y itself).  Functions must be pure
    (the same value for the same token/position, whatever the batch).

    ``residual``: False, True (psi reads (y, x_N)) or embedding coordinates (psi reads (y, x_N[coords]));
    ``division``: ``"once"`` or ``"per-weight"`` (Appendix D of [BHBK24]; module docstring).

    Attributes: ``format`` (the number format; p = :attr:`precision`), ``arithmetic`` (its exact
    kernels, :func:`~commsim.contract.arithmetic.arithmetic_for`), ``heads``, ``width`` (the m of the
    theorems), ``dim``, ``spec``.
    """

    def __init__(self, fmt: NumberFormat, token_embedding, position_embedding, W_Q, W_K, W_V, W_O,
                 psi=None, *, query: int | None = None, attend_self: bool = True, residual=False, division: str = "once",
                 spec: str = ""):
        W_Q, W_K, W_V = (np.asarray(w, dtype=np.float64) for w in (W_Q, W_K, W_V))
        if W_Q.ndim != 3 or W_Q.shape != W_K.shape or W_Q.shape != W_V.shape:
            raise InputError(f"W_Q, W_K, W_V must all be (heads, width, dim); got {W_Q.shape}, {W_K.shape}, "
                             f"{W_V.shape}")
        heads, width, dim = (int(s) for s in W_Q.shape)
        coords = None
        if residual is True:
            coords = tuple(range(dim))
        elif residual is not False and residual is not None:
            c = np.asarray(residual).reshape(-1)
            if c.dtype.kind not in "iu" or (c.size and (c.min() < 0 or c.max() >= dim)):
                raise InputError(f"residual coordinates must be integers in 0..{dim - 1}; got {list(c)}")
            coords = tuple(int(i) for i in c)
        self.config = AttentionConfig(heads, width, fmt, dim=dim, attend_self=bool(attend_self), residual=coords,
                                      query=None if query is None else int(query), division=division)
        self.residual_coords = None if coords is None else np.array(coords, dtype=np.int64)
        W_O = np.asarray(W_O, dtype=np.float64)
        if W_O.ndim != 2 or W_O.shape[1] != self.heads * self.width:
            raise InputError(f"W_O must be (d_out, heads*width = {self.heads * self.width}); got {W_O.shape}")
        self.out_dim = int(W_O.shape[0])
        psi_in = self.psi_input_width
        r = self.arithmetic.from_values
        self.W_Q, self.W_K, self.W_V, self.W_O = r(W_Q), r(W_K), r(W_V), r(W_O)
        self._W_KV = np.concatenate([self.W_K.reshape(-1, self.dim), self.W_V.reshape(-1, self.dim)])
        self._W_Q = self.W_Q.reshape(-1, self.dim)
        # embeddings
        if callable(token_embedding):
            self.token_table, self.token_fn, self.vocab_size = None, token_embedding, None
        else:
            t = np.asarray(token_embedding, dtype=np.float64)
            if t.ndim != 2 or t.shape[1] != self.dim:
                raise InputError(f"token embedding must be (vocab, dim = {self.dim}); got {t.shape}")
            self.token_table, self.token_fn, self.vocab_size = r(t), None, int(t.shape[0])
        if position_embedding is None:
            self.position_table, self.position_fn, self.max_positions = None, None, None
        elif callable(position_embedding):
            self.position_table, self.position_fn, self.max_positions = None, position_embedding, None
        else:
            pe = np.asarray(position_embedding, dtype=np.float64)
            if pe.ndim != 2 or pe.shape[1] != self.dim:
                raise InputError(f"position embedding must be (positions, dim = {self.dim}); got {pe.shape}")
            self.position_table, self.position_fn, self.max_positions = r(pe), None, int(pe.shape[0])
        # psi
        self.psi_fn, self.psi_layers = None, []
        if callable(psi):
            self.psi_fn, self.classes = psi, None
        elif psi is None:
            self.classes = psi_in
        else:
            width = psi_in
            for i, (W, b) in enumerate(psi):
                W, b = np.asarray(W, dtype=np.float64), np.asarray(b, dtype=np.float64).reshape(-1)
                if W.ndim != 2 or W.shape[1] != width or b.shape != (W.shape[0],):
                    raise InputError(f"psi layer {i}: W must be (out, {width}) and b (out,); got {W.shape}, {b.shape}")
                self.psi_layers.append((r(W), r(b)))
                width = W.shape[0]
            self.classes = width
        div_key = "" if division == "once" else f",division={division}"
        self.spec = spec or f"attention:heads={self.heads},width={self.width},dim={self.dim},{fmt.spec_keys}{div_key}"

    # ---- the shape, read through the config (query, attend_self and division may be set: a new config)
    heads = FromConfig("H: the number of heads.")
    width = FromConfig("m: the width of each head.")
    dim = FromConfig("d: the embedding width.")
    format = FromConfig("The number format.")
    arithmetic = FromConfig("The format's exact kernels.")
    precision = FromConfig("p: bits per number.")
    residual_width = FromConfig("How many coordinates of the query's embedding x_N psi reads (0: no residual path).")
    query = FromConfig("The position the decision is read at (None: the last).", settable=True)
    attend_self = FromConfig("Does the query attend to its own position?", settable=True)
    division = FromConfig("The division semantics, ``once`` or ``per-weight``.", settable=True)
    rope = FromConfig("Are q and k rotated by position (RoPE, :mod:`protocols.models.attention_positions`)?",
                      settable=True)
    rope_base = FromConfig("RoPE's base (10000 by default).", settable=True)
    alibi = FromConfig("ALiBi's slope per head, or None.", settable=True)

    # ---- descriptors
    @property
    def psi_input_width(self) -> int:
        """Width of psi's input: y's d_out, plus the residual coordinates of x_N."""
        return self.out_dim + self.residual_width

    def __repr__(self) -> str:
        return f"<AttentionLayer {self.spec}>"

    def query_position(self, seq_len: int) -> int:
        """The position the decision is read at (the model's ``query``, default the last)."""
        return self.config.query_position(seq_len)

    def check_input(self, seq_len: int, tokens: np.ndarray | None = None) -> None:
        """Refuse an input the layer cannot read: empty, longer than its positions, tokens outside its vocabulary."""
        self.config.check_input(seq_len)
        if self.max_positions is not None and seq_len > self.max_positions:
            raise InputError(f"the model has position embeddings for {self.max_positions} positions; the input "
                             f"has {seq_len} (use positions=N or a task of that length)", "model")
        if tokens is not None and self.vocab_size is not None and tokens.size:
            lo, hi = int(tokens.min()), int(tokens.max())
            if lo < 0 or hi >= self.vocab_size:
                raise InputError(f"token {lo if lo < 0 else hi} is outside the model's vocabulary "
                                 f"0..{self.vocab_size - 1}", "model")

    # ---- stage 1: embeddings and projections (pure functions of (position, token))
    def _token_rep(self, tokens: np.ndarray) -> np.ndarray:
        """E_tok(s) for token ids (rounded): a table row or the rounded value of the function."""
        if self.token_table is not None:
            return self.token_table[tokens]
        return self.arithmetic.from_values(self.token_fn(np.asarray(tokens)))

    def _position_rep(self, positions: np.ndarray) -> np.ndarray | None:
        """E_pos(i) for positions (rounded), or None without position embeddings."""
        if self.position_table is not None:
            return self.position_table[positions]
        if self.position_fn is not None:
            return self.arithmetic.from_values(self.position_fn(np.asarray(positions)))
        return None

    def embed(self, tokens: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """x = [E_tok(s) + E_pos(i)] for tokens (B, n) at positions (n,): (B, n, d)."""
        tok = self._token_rep(np.asarray(tokens))
        pos = self._position_rep(np.asarray(positions))
        return tok if pos is None else self.arithmetic.add(tok, pos)  # broadcasts positions over the rows

    def keys_values(self, tokens: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """k_i, v_i of tokens (B, n) at positions (n,): two (B, n, H, m) arrays.

        Each k_i, v_i depends only on position i and token s_i, and the projection is rounded row by row:
        the distinct (position, token) pairs of the rows are embedded and projected once each and gathered
        (the same values; a sampled batch holds few pairs per position, an exhaustive one at most V), costly
        rows kept for the next call (:mod:`protocols.models.attention_pairs`)."""
        tokens = np.asarray(tokens)
        B, n = tokens.shape
        H, m = self.heads, self.width
        positions = np.asarray(positions)
        cache = self.__dict__.get("_pairs")
        if cache is None:
            cache = self._pairs = PairCache(self.dim * 2 * H * m)
        if (B > 1 or cache.active) and n and int(tokens.min()) >= 0:
            column, token, inverse = distinct_pairs(tokens)
            kv = cache.rows(positions[column], token, lambda p, t: self.arithmetic.linear(self.embed(t, p), self._W_KV))
            kv = kv[inverse].reshape(B, n, 2, H, m)
        else:
            x = self.embed(tokens, positions)
            kv = self.arithmetic.linear(x, self._W_KV).reshape(B, n, 2, H, m)
        k = kv[:, :, 0] if not self.rope else rotate(self.arithmetic, kv[:, :, 0], positions, self.config)
        return k, kv[:, :, 1]

    def query_embedding(self, query_tokens: np.ndarray, position: int) -> np.ndarray:
        """x_N = [E_tok(s_N) + E_pos(N)] for the query tokens (B,): (B, d)."""
        t = np.asarray(query_tokens).reshape(-1, 1)
        return self.embed(t, np.array([position]))[:, 0]

    def embedding_message(self, x: np.ndarray) -> np.ndarray:
        """x_N (B, d) as the one-way message: its coordinates ``config.message`` (all d when None)."""
        return x if self.config.message is None else x[:, list(self.config.message)]

    def embedding_from_message(self, values: np.ndarray, position: int) -> np.ndarray:
        """x_N (B, d) back from :meth:`embedding_message` at ``position``; a layer that declares a ``message``
        overrides this (here every coordinate is sent)."""
        if self.config.message is not None:
            raise NotImplementedError(f"{type(self).__name__} declares a message but cannot rebuild x_N from it")
        return values

    def query_vectors(self, query_tokens: np.ndarray, position: int) -> np.ndarray:
        """q = [W_Q x_N] per head for the query tokens (B,): (B, H, m) (rotated at N with RoPE)."""
        return self.queries_of(self.query_embedding(query_tokens, position), position)

    def queries_of(self, x: np.ndarray, position: int | None = None) -> np.ndarray:
        """q = [W_Q x] per head for embeddings x (B, d) of the query at ``position``: (B, H, m); with RoPE
        rotated at that position (which must then be given)."""
        q = self.arithmetic.linear(np.asarray(x), self._W_Q).reshape(len(x), 1, self.heads, self.width)
        if self.rope:
            if position is None:
                raise ValueError("RoPE rotates the query by its position: pass the query position")
            q = rotate(self.arithmetic, q, [position], self.config)
        return q[:, 0]

    def own_term(self, x: np.ndarray, q: np.ndarray, position: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The query position's own logit A (B, H, 1) and value v (B, 1, H, m), from its embedding x_N
        (B, d), the queries q (B, H, m) and its position (needed with RoPE or ALiBi): the same values
        :meth:`scan` gives for that position."""
        ar = self.arithmetic
        if self.rope and position is None:
            raise ValueError("RoPE rotates the query position's key by its position: pass it")
        kv = ar.linear(np.asarray(x)[:, None], self._W_KV).reshape(len(x), 1, 2, self.heads, self.width)
        k = kv[:, :, 0] if not self.rope else rotate(ar, kv[:, :, 0], [position], self.config)
        return self._with_alibi(ar.logits(q, k).astype(ar.dtype, copy=False), [position], position), kv[:, :, 1]

    def _with_alibi(self, A: np.ndarray, positions, query: int | None) -> np.ndarray:
        """The logits A (B, H, n) of ``positions`` with ALiBi's [m_h (i - N)] added (N = ``query``), rounded."""
        if self.alibi is None:
            return A
        if query is None:
            raise ValueError("ALiBi adds m_h (i - N) to the logits: pass the query position N")
        ar = self.arithmetic
        return ar.add(A, alibi_bias(ar, self.alibi, positions, query)).astype(ar.dtype, copy=False)

    def residual_input(self, query_tokens: np.ndarray, position: int) -> np.ndarray | None:
        """The coordinates of x_N that psi reads (B, r), or None without a residual path."""
        if self.residual_coords is None:
            return None
        return self.query_embedding(query_tokens, position)[:, self.residual_coords]

    # ---- stage 2: logits (and values kept for the sums), over a set of positions
    def scan(self, tokens: np.ndarray, positions: np.ndarray, q: np.ndarray,
             query: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Logits A (B, H, n) and values v (B, n, H, m) of the given positions for queries q (B, H, m) of the
        query at position ``query`` (needed with ALiBi)."""
        tokens = np.asarray(tokens)
        positions = np.asarray(positions, dtype=np.int64)
        B, n = tokens.shape
        H, m = self.heads, self.width
        A = np.empty((B, H, n), dtype=self.arithmetic.dtype)
        V = np.empty((B, n, H, m), dtype=self.arithmetic.store)
        block = max(1, BLOCK_ELEMENTS // max(1, B * H * m))
        for s in range(0, n, block):
            k, v = self.keys_values(tokens[:, s:s + block], positions[s:s + block])
            A[:, :, s:s + block] = self._with_alibi(self.arithmetic.logits(q, k), positions[s:s + block], query)
            V[:, s:s + block] = v
        return A, V

    # ---- stage 3: exact partial sums given the global maximum
    def aggregate(self, A: np.ndarray, V: np.ndarray, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Z = sum e_i (B, H) and U = sum [e_i v_i] or, per-weight, sum [[e_i / Z] v_i] (B, H, m), exact in
        units, for (A, V) holding *every* attended position and the maximum logit M (B, H)."""
        if self.division == "per-weight":
            Z = self.weight_sum(A, M)
            return Z, self.weighted_sum(A, V, M, Z)
        return self.partial_sums(A, V, M)

    def weight_sum(self, A: np.ndarray, M: np.ndarray) -> np.ndarray:
        """A partial Z = sum e_i (B, H) over the positions of A, exact in units."""
        return self.partial_sums(A, None, M)[0]

    def weighted_sum(self, A: np.ndarray, V: np.ndarray, M: np.ndarray, Z=None) -> np.ndarray:
        """A partial U (B, H, m) over (A, V), exact in units; per-weight needs the *whole* Z (B, H)."""
        if (per_weight := self.division == "per-weight") and Z is None:
            raise ValueError("per-weight division rounds each weight e_i / Z: pass the whole sum Z")
        return self.partial_sums(A, V, M, Z if per_weight else None)[1]

    def partial_sums(self, A, V, M, Z=None) -> tuple[np.ndarray, np.ndarray]:
        """(sum e_i, sum [w_i v_i]), w_i = e_i or, given Z, [e_i / Z]; V None: Z only
        (:func:`~protocols.models.attention_kernel.softmax_sums`)."""
        return softmax_sums(self.arithmetic, A, V, M, Z, width=self.width)

    # ---- stage 4: the division and the readout
    def finish(self, U: np.ndarray, Z: np.ndarray, x_query: np.ndarray | None = None) -> np.ndarray:
        """Raw outputs (B, C) in the arithmetic's representation from the exact sums; ``x_query``
        (B, r): the residual coordinates of the query's embedding (:meth:`residual_input`), needed
        exactly when the layer has a residual path.  Division once: o = [U / Z]; per-weight: o = [U]."""
        o = divide(self.arithmetic, U, Z, self.division)
        y = self.arithmetic.linear(o.reshape(o.shape[0], -1), self.W_O)
        if self.residual_coords is not None:
            if x_query is None:
                raise ValueError("this layer's psi reads the query's embedding x_N: pass x_query to finish")
            x_query = np.asarray(x_query).reshape(y.shape[0], self.residual_width)
            dt = np.int64 if self.arithmetic.is_fixed else np.float64
            y = np.concatenate([y.astype(dt), x_query.astype(dt)], axis=1)
        if self.psi_fn is not None:
            return self.arithmetic.from_values(np.asarray(self.psi_fn(self.arithmetic.to_values(y)), dtype=np.float64)
                                       .reshape(y.shape[0], -1))
        for i, (W, b) in enumerate(self.psi_layers):
            y = self.arithmetic.linear(y, W, b)
            if i < len(self.psi_layers) - 1:
                y = self.arithmetic.relu(y)
        return y

    @property
    def output_width(self) -> int | None:
        """psi's outputs (None for a psi given as a function: its outputs show the width)."""
        return self.classes

    def decision_values(self, raw: np.ndarray) -> np.ndarray:
        """psi's output values of raw outputs in the arithmetic's representation."""
        return np.asarray(self.arithmetic.to_values(np.asarray(raw)), dtype=np.float64)

    def labels(self, raw: np.ndarray) -> np.ndarray:
        """Decisions from psi's outputs, by the layer's decision rule (:class:`Decides`)."""
        return self.decide_raw(raw)

    # ---- the direct forward
    def attended(self, seq_len: int, query: int) -> np.ndarray:
        """The positions the query at ``query`` attends to (itself included unless attend_self is off)."""
        pos = np.arange(seq_len)
        return pos if self.attend_self else pos[pos != query]

    def forward_rep(self, tokens: np.ndarray, query: int | None = None) -> np.ndarray:
        """Raw outputs (B, C) in the internal representation (codes for fixed point)."""
        tokens = np.atleast_2d(np.asarray(tokens))
        N = tokens.shape[1]
        self.check_input(N, tokens)
        qpos = self.query_position(N) if query is None else int(query)
        keep = self.attended(N, qpos)
        per_row = max(1, N * self.heads * self.width)
        chunk = max(1, (4 * BLOCK_ELEMENTS) // per_row)
        out = []
        for s in range(0, tokens.shape[0], chunk):
            T = tokens[s:s + chunk]
            q = self.query_vectors(T[:, qpos], qpos)
            A, V = self.scan(T[:, keep], keep, q, qpos)
            Z, U = self.aggregate(A, V, A.max(axis=-1))
            out.append(self.finish(U, Z, self.residual_input(T[:, qpos], qpos)))
        return np.concatenate(out) if out else np.zeros((0, self.classes or 1), dtype=self.arithmetic.dtype)

    def forward(self, tokens, query: int | None = None) -> np.ndarray:
        """The outputs psi(y) at the query position, as float64 values (B, C)."""
        return self.arithmetic.to_values(self.forward_rep(tokens, query))

    def decide(self, tokens, query: int | None = None) -> np.ndarray:
        """The model's decisions (B,) at the query position."""
        return self.labels(self.forward_rep(tokens, query))

    def float_forward(self, tokens, query: int | None = None) -> np.ndarray:
        """A plain float64 forward with the same (rounded) parameters: no intermediate rounding
        (:func:`protocols.models.attention_float.float_forward`)."""
        from protocols.models.attention_float import float_forward
        return float_forward(self, tokens, query)

    # ---- save / load (:mod:`protocols.models.attention_io`)
    def save(self, path) -> None:
        """Save to ``.npz`` (tables only: callable embeddings or psi cannot be saved)."""
        from protocols.models.attention_io import save_layer
        save_layer(self, path)

    @classmethod
    def load(cls, path, fmt: NumberFormat | None = None, *, spec: str = "") -> "AttentionLayer":
        """Load a layer saved by :meth:`save` (``fmt`` re-rounds the weights); a bad file is an InputError."""
        from protocols.models.attention_io import load_layer
        return load_layer(cls, path, fmt, spec=spec)


# ---- factories ------------------------------------------------------------------------------------
def random_layer(fmt: NumberFormat, *, vocab: int, positions: int | None, heads: int = 1, width: int = 4,
                 dim: int = 8, classes: int = 2, seed: int = 0, query: int | None = None,
                 attend_self: bool = True, residual: bool = False, division: str = "once",
                 spec: str = "") -> AttentionLayer:
    """A seeded random layer: unit-variance embeddings, weights of variance 1/fan-in, a linear psi
    (with ``residual``, psi reads (y, x_N): its weight is (classes, 2 dim), drawn after the others)."""
    rng = np.random.default_rng(seed)
    tok = rng.normal(size=(vocab, dim))
    pos = None if positions is None else rng.normal(scale=0.5, size=(positions, dim))
    W_Q, W_K, W_V = (rng.normal(scale=dim ** -0.5, size=(heads, width, dim)) for _ in range(3))
    W_O = rng.normal(scale=(heads * width) ** -0.5, size=(dim, heads * width))
    psi = [(rng.normal(scale=dim ** -0.5, size=(classes, dim)), rng.normal(scale=0.1, size=classes))]
    if residual:
        psi = [(np.concatenate([psi[0][0], rng.normal(scale=dim ** -0.5, size=(classes, dim))], axis=1), psi[0][1])]
    return AttentionLayer(fmt, tok, pos, W_Q, W_K, W_V, W_O, psi, query=query, attend_self=attend_self,
                          residual=residual, division=division, spec=spec)
