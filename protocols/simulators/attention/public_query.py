"""The one-way partial-softmax message when the query is known to both parties ([PNP24]).

In the function-composition reduction of [PNP24] the query token x is public: Alice holds g's description,
Bob holds f's and the query position (he outputs), and Alice knows x too (the task's
:attr:`~commsim.contract.Encoded.public_positions`).  So Alice computes each head's query
q_N herself -- nothing travels from Bob -- and her part of the softmax is her whole message: one-way.

What she sends, per head, is her part of the exchange of Theorem 4 of [BHBK24]
(:mod:`protocols.simulators.attention.exchange`): her maximum logit M_A (p bits), her exact partial
normaliser Z_A = sum_i [exp(A_i - M)] and her exact partial weighted sum U_A = sum_i [e_i v_i] (m numbers),
at the exchange's exact widths.  One difference is forced by exactness: the layer subtracts the *global*
maximum M = max(M_A, M_B) before rounding each weight, and Alice does not know M_B.  Her terms under a
maximum M depend only on d = M - M_A, a whole number of grid steps, and vanish once [exp(-d)] rounds to 0;
so she sends (Z_A, U_A) for each of the K candidates d = 0, 1, ..., K - 1 steps (K = the smallest d with
[exp(-d)] = 0 in the layer's format: 1 with no fraction bits, 2 with one, 6 with two, 45 with four).  Bob
picks the entry for his M (none when d >= K: her terms are all 0), adds his own exact sums, divides once
and applies W_O and psi: bit-identical to the direct forward.  [PNP24] count the message as H(d + 1)p
bits (a p-bit normaliser and d-dimensional value sum per head, no rounding); the bits used are the ones
really sent, with that count shown beside.

Fixed-point formats only (under an IEEE format the candidates are every float in a wide range: not
implemented); division once only (per-weight division rounds e_i / Z with the global Z, which Alice cannot
know: no one-way message of this kind exists).  The simulator is not chosen by the model's kind; the
composition reduction names it (:attr:`~commsim.contract.Reduction.simulator_variants`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Callable

import numpy as np

from commsim.contract import (
    ANY_PARTITION,
    BatchResult,
    Bits,
    Encoded,
    MessagePlan,
    NotApplicable,
    Protocol,
    Receive,
    Send,
    Shape,
    Simulator,
    Split,
    Vectorized,
    pack_count,
    pack_signed,
    unpack_count,
    unpack_signed,
)
from protocols.models.attention import AttentionConfig, AttentionLayer
from protocols.simulators.attention.exchange import PlanCache, batch_keys, batch_run
from protocols.theorems import composition_message_bits

__all__ = ["PublicQueryLayout", "PublicQueryPlan", "PublicQueryExchange", "PUBLIC_QUERY", "candidate_count",
           "public_query_layout", "public_query_plan"]

#: the most candidate maxima a message may list (fixed point with many fraction bits needs thousands)
MAX_CANDIDATES = 1 << 12


def candidate_count(model: AttentionLayer) -> int:
    """K: the smallest number of grid steps d >= 1 with [exp(-d steps)] = 0 in the layer's fixed-point format."""
    ar = model.arithmetic
    steps = np.arange(1, MAX_CANDIDATES + 1, dtype=np.int64)
    e = ar.exp_weights(-steps[None, :], np.zeros(1, dtype=np.int64))[0]
    zero = np.flatnonzero(e == 0)
    if not zero.size:
        raise NotApplicable(f"with {ar.F} fraction bits Alice's terms survive more than {MAX_CANDIDATES} steps below "
                            f"the maximum: the exact one-way message would list that many sums (use fewer "
                            f"fraction bits, frac=F)", "model")
    return int(steps[zero[0]])


@dataclass(frozen=True)
class PublicQueryLayout:
    """Alice's message for one model, length and partition: per head her max (p bits), K normalisers of
    ``z_width`` bits and K·m weighted sums of ``u_width`` bits (without the parties' positions:
    :func:`public_query_layout`)."""

    query: int
    heads: int
    width: int
    precision: int
    dim: int
    candidates: int
    z_width: int
    u_width: int

    @property
    def head_bits(self) -> int:
        return self.precision + self.candidates * (self.z_width + self.width * self.u_width)

    @property
    def total_bits(self) -> int:
        return self.heads * self.head_bits

    def itemize(self) -> dict:
        H, K = self.heads, self.candidates
        steps = {"max": H * self.precision, "Z": H * K * self.z_width, "U": H * K * self.width * self.u_width}
        return {"bits_by_step": steps, "candidates": K, "total_bits": self.total_bits,
                "messages": [{"label": f"{s}/head {h}", "step": s, "sender": "alice",
                              "bits": steps[s] // H} for h in range(H) for s in ("max", "Z", "U")],
                "message_widths": {"number": self.precision, "Z": self.z_width, "U_value": self.u_width},
                "bits_by_direction": {"alice_to_bob": self.total_bits, "bob_to_alice": 0}}


@dataclass(frozen=True)
class PublicQueryPlan(PublicQueryLayout):
    """Alice's message for one model, length and partition, and both parties' positions."""

    alice_positions: tuple[int, ...] = field(kw_only=True)
    bob_positions: tuple[int, ...] = field(kw_only=True)


def _sums(model: AttentionLayer, A, V, M, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Alice's exact (Z_A, U_A) for the candidates M = M_A + d, d = 0..K-1: (B, H, K) and (B, H, K, m)."""
    parts = [model.partial_sums(A, V, M + d) for d in range(K)]
    return np.stack([z for z, _ in parts], axis=2), np.stack([u for _, u in parts], axis=2)


def _bob_sums(model: AttentionLayer, tokens, positions, q, M_A,
              query: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bob's side: the global maximum M and his exact (Z_B, U_B) under it (none attended: M = M_A, zero sums),
    for the query at position ``query``."""
    B, H = np.shape(M_A)
    if not len(positions):
        return M_A, np.zeros((B, H), dtype=np.int64), np.zeros((B, H, model.width), dtype=np.int64)
    A, V = model.scan(tokens, positions, q, query)
    M = np.maximum(A.max(axis=-1), M_A)
    return (M, *model.partial_sums(A, V, M))


def _pick(M_A, M_B, Z_A, U_A, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Bob's choice among Alice's candidates: the entry d = M - M_A (zero sums when d >= K)."""
    d = np.maximum(np.asarray(M_B, dtype=np.int64) - np.asarray(M_A, dtype=np.int64), 0)
    ok = d < K
    idx = np.where(ok, d, 0)
    Z = np.take_along_axis(Z_A, idx[..., None], axis=-1)[..., 0]
    U = np.take_along_axis(U_A, idx[..., None, None], axis=-2)[..., 0, :]
    return np.where(ok, Z, 0), np.where(ok[..., None], U, 0)


class PublicQueryProtocol(Protocol):
    """Alice: her max and K candidate (Z_A, U_A) per head; Bob: the rest of the softmax, the output."""

    name = "attention-public-query"
    output_party = "bob"

    def __init__(self, model: AttentionLayer, plan: PublicQueryPlan):
        self.model, self.plan = model, plan

    def _q(self, share):
        """Each head's q_N, from the public query token (Alice) or Bob's own query position."""
        tok = dict(share.public).get(self.plan.query)
        if tok is None:
            tok = int(np.asarray(share.tokens)[np.asarray(share.positions) == self.plan.query][0])
        return model_query(self.model, tok, self.plan.query), tok

    def alice(self, share):
        model, plan, ar = self.model, self.plan, self.model.arithmetic
        q, _ = self._q(share)
        A, V = model.scan(np.asarray(share.tokens)[None], np.asarray(share.positions), q, plan.query)
        M_A = A.max(axis=-1)
        Z, U = _sums(model, A, V, M_A, plan.candidates)
        for h in range(plan.heads):
            yield Send(f"max/head {h}", ar.encode(M_A[0, h:h + 1]))
            yield Send(f"Z/head {h}", Bits.concat(pack_count(z, plan.z_width) for z in Z[0, h]))
            yield Send(f"U/head {h}", pack_signed(U[0, h].reshape(-1), plan.u_width))
        return None

    def bob(self, share):
        model, plan, ar = self.model, self.plan, self.model.arithmetic
        H, K, m, zw = plan.heads, plan.candidates, plan.width, plan.z_width
        M_A = np.zeros((1, H), dtype=np.int64)
        Z_A = np.zeros((1, H, K), dtype=object)
        U_A = np.zeros((1, H, K, m), dtype=object)
        for h in range(H):
            M_A[0, h] = ar.decode((yield Receive(f"max/head {h}")), 1)[0]
            z = yield Receive(f"Z/head {h}")
            Z_A[0, h] = [unpack_count(z[j * zw:(j + 1) * zw], zw) for j in range(K)]
            U_A[0, h] = unpack_signed((yield Receive(f"U/head {h}")), plan.u_width, K * m).reshape(K, m)
        q, tok = self._q(share)
        pos = np.asarray(share.positions)
        keep = pos if model.attend_self else pos[pos != plan.query]
        tokens = np.asarray(share.tokens)[np.isin(pos, keep)][None]
        M, Z_B, U_B = _bob_sums(model, tokens, keep, q, M_A, plan.query)
        Z_pick, U_pick = _pick(M_A, M, Z_A, U_A, K)
        Z, U = _exact(Z_B + Z_pick), _exact(U_B + U_pick)
        raw = model.finish(U, Z, model.residual_input(np.array([tok]), plan.query))
        return np.asarray(model.labels(raw)).reshape(-1), ar.to_values(raw)[0]


def public_query_plan(model, seq_len: int, alice_positions, bob_positions, query: int,
                      public_positions) -> PublicQueryPlan:
    """Alice's message for a layer (an :class:`AttentionLayer` or its :class:`AttentionConfig`: only the shape and
    the format are read) at length N on this partition; NotApplicable when the protocol cannot be exact."""
    alice = tuple(int(p) for p in alice_positions)
    layout = _layout(model, seq_len, query, query in alice, len(alice), public_positions)
    return PublicQueryPlan(**{f.name: getattr(layout, f.name) for f in fields(PublicQueryLayout)},
                           alice_positions=alice, bob_positions=tuple(int(p) for p in bob_positions))


def public_query_layout(model, seq_len: int, alice_positions, query: int, public_positions) -> PublicQueryLayout:
    """:func:`public_query_plan`'s message, with its refusals, for Alice's positions (distinct ones; Bob holds the
    rest), without listing either party's positions: a range is read from its length (``commsim budget``
    plans lengths up to 2^20)."""
    if isinstance(alice_positions, range):
        return _layout(model, seq_len, query, query in alice_positions, len(alice_positions), public_positions)
    alice = {int(i) for i in alice_positions}
    return _layout(model, seq_len, query, query in alice, len(alice), public_positions)


def _layout(model, seq_len: int, query: int, alice_holds_query: bool, n_alice: int,
            public_positions) -> PublicQueryLayout:
    """The message when Alice holds ``n_alice`` positions (the query among them or not): nothing else of the
    partition enters it."""
    if not model.arithmetic.is_fixed:
        raise NotApplicable(f"the exact one-way message is implemented for fixed-point formats (precision=P, "
                            f"frac=F); under {model.format.name} the candidate maxima are every float in a "
                            f"wide range", "model")
    if model.division != "once":
        raise NotApplicable("per-weight division rounds each e_i / Z with the global Z, which Alice cannot "
                            "know in a one-way protocol; use division=once", "model")
    if alice_holds_query or query not in public_positions or not n_alice:
        raise NotApplicable("the public-query message needs Bob to own the query position, Alice to know its "
                            "token (a public position) and to own at least one position", "partition")
    if model.query is not None and model.query_position(seq_len) != query:
        raise NotApplicable(f"the model reads position {model.query_position(seq_len)}, the task {query}", "model")
    ar, K = model.arithmetic, candidate_count(model)
    lo, hi = ar.sum_range(n_alice)
    return PublicQueryLayout(query, model.heads, model.width,
                             model.precision, getattr(model, "config", model).message_dim, K,   # a layer or its config
                             max((n_alice * ar.one_units).bit_length(), 1),
                             max((-lo - 1).bit_length(), hi.bit_length()) + 1)


def model_query(model: AttentionLayer, token: int, position: int) -> np.ndarray:
    """q_N per head (1, H, m) for the query token at its position."""
    return model.query_vectors(np.array([int(token)]), position)


def _exact(a) -> np.ndarray:
    """Exact integer sums as int64 when they fit, else Python integers."""
    a = np.asarray(a, dtype=object)
    if a.size and max(abs(int(v)) for v in a.reshape(-1)) < (1 << 62):
        return a.astype(np.int64)
    return a


class PublicQueryExchange(Vectorized, Simulator):
    """One-layer attention, the query known to both: Alice's one-way partial softmax ([PNP24]).

    Its :meth:`transcript_keys` are Alice's message values per instance (the whole transcript: one-way), which
    the engine's pigeonhole search compares, with the problem's ``collision_candidates`` and
    ``separating_bob``."""

    name = "attention-public-query"
    plans_number_format = True
    source = "[PNP24] (the query is known to both; Alice sends her part of the softmax); Theorem 4 of [BHBK24]"
    partition_kind = ANY_PARTITION
    selectable = False

    def __init__(self):
        self._cache = PlanCache()

    def split_direction(self, split: str) -> str:
        """One-way on every split it runs on: only Alice speaks."""
        return "one-way"

    def accepts(self, model) -> bool:
        """A one-layer attention (:class:`AttentionLayer`)."""
        return isinstance(model, AttentionLayer)

    def exchange_plan(self, model: AttentionLayer, encoded: Encoded) -> PublicQueryPlan:
        """Alice's message for this model and partition (cached per model and split); NotApplicable when the
        protocol cannot be exact."""
        if not isinstance(model, AttentionLayer):
            raise NotApplicable("the public-query message is a one-layer attention protocol", "model")
        return self._cache.get(model, encoded, lambda: self._make_plan(model, encoded))

    @staticmethod
    def _make_plan(model: AttentionLayer, encoded: Encoded) -> PublicQueryPlan:
        if len(encoded.output_positions) != 1:
            raise NotApplicable("the public-query message computes one query position", "model")
        return public_query_plan(model, encoded.seq_len, encoded.alice_positions, encoded.bob_positions,
                                 int(encoded.output_positions[0]), encoded.public_positions)

    # ---- declarations read by commsim budget (a reduction's variant: budget plans what run runs)
    plan_limit = 1 << 20                     # as the exchange's: budget evaluates the plan up to 2^20

    def plan(self, shape: Shape, split: Split) -> MessagePlan:
        """The message ``run`` sends for the papers' layer of these sizes at length N on this partition
        (:meth:`AttentionConfig.fixed <protocols.models.attention.AttentionConfig.fixed>`, as the exchange's
        budget plan: fixed point, p // 2 fraction bits, division once, d = ``shape.extras["dim"]``; the shape's
        number format instead when it is one)."""
        width, precision, heads, seq_len = shape.width, shape.precision, shape.heads, split.seq_len
        alice_positions, output_positions = split.alice_positions, split.output_positions
        dim, public_positions = shape.extras.get("dim", 8), split.public_positions
        number_format = None if isinstance(shape.format, int) else shape.format
        if len(output_positions) != 1:
            raise NotApplicable("the public-query message computes one query position", "model")
        config = (AttentionConfig.fixed(heads, width, precision, dim=dim) if number_format is None else
                  AttentionConfig(int(heads), int(width), number_format, dim=dim))
        return self._message_plan(public_query_layout(config, int(seq_len), alice_positions, int(output_positions[0]),
                                                      public_positions))

    def paper_count(self, shape: Shape, split: Split) -> tuple[int, str]:
        """[PNP24]'s count of Alice's one-way message, H(d + 1)p (:func:`protocols.theorems.
        composition_message_bits`), whatever N."""
        heads, dim, precision = shape.heads, shape.extras.get("dim", 8), shape.precision
        count = composition_message_bits(heads, dim, precision)
        return count, f"H(d + 1)p = {heads}·({dim} + 1)·{precision} = {count} ([PNP24], Theorem 1)"

    def plan_model(self, model, encoded: Encoded) -> MessagePlan:
        """Alice's message, one way, beside [PNP24]'s count H(d + 1)p; the input must fit the model."""
        model.check_input(encoded.seq_len, encoded.tokens)
        return self._message_plan(self.exchange_plan(model, encoded))

    @staticmethod
    def _message_plan(plan: PublicQueryLayout) -> MessagePlan:
        """Alice's message as a :class:`MessagePlan`, beside [PNP24]'s count H(d + 1)p."""
        H, d, p, K = plan.heads, plan.dim, plan.precision, plan.candidates
        count = composition_message_bits(H, d, p)
        formula_text = (f"H(d + 1)p = {H}·({d} + 1)·{p} = {count} bits ([PNP24]: per head a normaliser and a "
                        f"d-dimensional value sum); this exact message sends per head M_A (p = {p}) and, for the K = "
                        f"{K} global maxima at which Alice's rounded weights do not all vanish, her exact Z_A "
                        f"({plan.z_width} bits) and U_A (m = {plan.width} values of {plan.u_width} bits): "
                        f"{plan.total_bits} bits, Alice→Bob only")
        steps = ", ".join(f"{k} {v}" for k, v in plan.itemize()["bits_by_step"].items())
        return MessagePlan(plan.total_bits, 0, 1, f"one-way partial softmax (public query): {plan.total_bits} bits "
                           f"({steps}; K = {K} candidate maxima)", {}, count, formula_text,
                           "Alice's partial softmax (her maximum, and her Z_A and U_A per candidate maximum)")

    def protocol(self, model, encoded: Encoded) -> Protocol:
        return PublicQueryProtocol(model, self.exchange_plan(model, encoded))

    def direct_labels(self, model, encoded: Encoded) -> np.ndarray:
        return model.decide(encoded.tokens, int(encoded.output_positions[0]))[:, None]

    def batch(self, model: AttentionLayer, plan: PublicQueryPlan, tokens) -> tuple[np.ndarray, np.ndarray]:
        """(Bob's raw outputs (B, C), Alice's messages as int64 key rows (B, k)) for token rows."""
        T = np.atleast_2d(np.asarray(tokens))
        B, qpos = T.shape[0], plan.query
        q = model.query_vectors(T[:, qpos], qpos)
        a_pos = np.array(plan.alice_positions, dtype=np.int64)
        A_a, V_a = model.scan(T[:, a_pos], a_pos, q, qpos)
        M_A = A_a.max(axis=-1)
        Z_A, U_A = _sums(model, A_a, V_a, M_A, plan.candidates)
        b_pos = np.array(plan.bob_positions, dtype=np.int64)
        b_pos = b_pos if model.attend_self else b_pos[b_pos != qpos]
        M, Z_B, U_B = _bob_sums(model, T[:, b_pos], b_pos, q, M_A, qpos)
        Z_pick, U_pick = _pick(M_A, M, Z_A, U_A, plan.candidates)
        raw = model.finish(U_B + U_pick, Z_B + Z_pick, model.residual_input(T[:, qpos], qpos))
        keys = np.concatenate([M_A.reshape(B, -1), np.asarray(Z_A, dtype=np.int64).reshape(B, -1),
                               np.asarray(U_A, dtype=np.int64).reshape(B, -1)], axis=1)
        return raw, keys

    def run_batch(self, model, encoded: Encoded, progress: Callable | None = None) -> BatchResult:
        plan = self.exchange_plan(model, encoded)
        B = encoded.batch
        proto, direct, exact = batch_run(model, encoded.tokens, plan.query,
                                         lambda rows: self.batch(model, plan, rows)[0], _chunk(encoded, plan),
                                         progress)
        message = self.plan_model(model, encoded)
        details = {"mode": "one-way (public query)", "query_position": plan.query, "query_owner": "bob",
                   "output_party": "bob", "p": plan.precision, "m": plan.width, "H": plan.heads, "d": plan.dim,
                   "theorem_bits": message.formula, "theorem_text": message.formula_text,
                   "exact_matches": int(exact.sum()), **plan.itemize()}
        return BatchResult(proto[:, None], direct[:, None], exact, np.full(B, plan.total_bits, dtype=np.int64),
                           np.zeros(B, dtype=np.int64), np.ones(B, dtype=np.int64), details=details)

    def transcript_keys(self, model, encoded: Encoded) -> tuple[np.ndarray, np.ndarray]:
        """Bob's labels (B, 1) and Alice's message values (B, k): her whole transcript, so equal rows for two
        Alice inputs under one Bob input are a pigeonhole collision."""
        plan = self.exchange_plan(model, encoded)
        return batch_keys(model, encoded.tokens, lambda rows: self.batch(model, plan, rows), _chunk(encoded, plan))


def _chunk(encoded: Encoded, plan: PublicQueryPlan) -> int:
    """Rows per batch chunk: the K candidate sums of a chunk take a few tens of MB."""
    return max(1, (1 << 22) // max(1, encoded.seq_len * plan.heads * plan.width * plan.candidates))


PUBLIC_QUERY = PublicQueryExchange()
