"""The max-logit / partial-softmax exchange: a one-layer attention as a two-party protocol.

Theorem 4 of [BHBK24] (a formal version of Theorem 7 of [SHT23]): for **any** partition of the
positions between Alice and Bob, a one-layer attention layer with H heads of width m at p bits per
number is computed exactly by a protocol of about 3m(p + log N)H bits plus the query.  Here the
protocol is run for real, with the exact semantics of :mod:`protocols.models.attention`:

two-way (each party owns a position besides the query; the query's owner outputs), two rounds:

1. ``query/head h``  (query owner -> other)  q_N of head h: m values, m·p bits;
2. ``max/head h``    both ways                the local maximum logit, p bits each way, so both know M;
3. ``Z/head h``      (other -> query owner)   the other's exact partial sum of e_i = [exp(A_i - M)]:
   an unsigned integer number of units, as many bits as n_other · [1] has (F + floor(log2 n_other) + 1
   under fixed point with F fraction bits; exact sums in IEEE formats count units of the smallest
   subnormal, so they are much wider there);
4. ``U/head h``      (other -> query owner)   the exact partial sums of [e_i v_i]: m two's-complement
   integers of p + ceil(log2 n_other) bits each (fixed point).

The query owner adds its own partial sums, divides once (o = [U / Z]), applies W_O and psi and
outputs (psi's residual input x_N, if any, is its own: no bits).  Because the division happens
once, at the output party, Z needs to travel one way only (the theorem's account exchanges it both
ways); the count is compared with the theorem's 3m(p + ceil(log2 N))H + m p H in
:meth:`AttentionExchange.bits_formula` and in the sweep details.

one-way (the query owner owns *only* the query position): the [SHT23] protocol — the query owner
sends each head's q_N (``query/head h``, m·p bits), when psi reads the query's embedding (a layer
with a residual path) the coordinates x_N it reads (``embedding``, r·p bits for r coordinates:
REFERENCE section 5, step 1), and, when the query attends to itself, its own logit and value
(``self/head h``, (m + 1)·p bits); the other party computes everything and outputs.
When Alice is that sender the protocol is one-way in the sense of the lower bounds
(:meth:`AttentionExchange.direction` says ``"one-way"``); when Bob is, only Bob speaks, which the
one-way bounds (Alice speaks) do not cover, so it counts as ``"two-way"``.

local: one party owns every position and answers alone (0 bits).

Under fixed point the output is bit-identical to :meth:`AttentionLayer.forward_rep` for every
partition (all sums are exact integers); under IEEE formats it equals the reference float
semantics (partial sums carried exactly, rounded once), and both stay within
:data:`protocols.models.attention.FLOAT_TOLERANCE` of a plain float forward.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from commsim.core.errors import InputError, NotApplicable
from commsim.core.party import Protocol, Receive, Send
from commsim.core.sums import pack_count, pack_sum, unpack_count, unpack_sum
from commsim.pipeline.interfaces import Encoded, Simulator, Sweep
from commsim.theory.bounds import ceil_log2
from protocols.models.attention import AttentionLayer


class PartitionError(InputError):
    """The positions given to Alice do not form a valid partition of the sequence."""


# ---- the plan: who owns what, who speaks, how wide every message is ---------------------------------
@dataclass(frozen=True)
class MessageSpec:
    step: str          # "query", "embedding", "max", "Z", "U" or "self"
    label: str
    sender: str
    head: int | None   # None: not a per-head message (the embedding)
    bits: int


@dataclass(frozen=True)
class ExchangePlan:
    """The exchange for one model, sequence length and partition (the same for every instance)."""

    seq_len: int
    query: int
    mode: str                           # "two-way", "one-way" or "local"
    query_owner: str
    output_party: str
    alice_positions: tuple[int, ...]
    bob_positions: tuple[int, ...]
    heads: int
    width: int
    precision: int
    attend_self: bool
    number_format: str
    residual: int = 0                   # coordinates of x_N that psi reads (0: no residual path)
    other_terms: int = 0                # positions summed by the party that sends Z and U
    z_width: int = 0
    u_width: int = 0
    messages: tuple[MessageSpec, ...] = field(default_factory=tuple)

    def positions(self, party: str) -> np.ndarray:
        return np.array(self.alice_positions if party == "alice" else self.bob_positions, dtype=np.int64)

    def attended(self, party: str) -> np.ndarray:
        """The positions of ``party`` that enter the query's attention."""
        pos = self.positions(party)
        return pos if self.attend_self else pos[pos != self.query]

    @property
    def other(self) -> str:
        return "bob" if self.query_owner == "alice" else "alice"

    @property
    def total_bits(self) -> int:
        return sum(m.bits for m in self.messages)

    @property
    def alice_to_bob(self) -> int:
        return sum(m.bits for m in self.messages if m.sender == "alice")

    @property
    def bob_to_alice(self) -> int:
        return sum(m.bits for m in self.messages if m.sender == "bob")

    @property
    def rounds(self) -> int:
        rounds, last = 0, None
        for m in self.messages:
            if m.sender != last:
                rounds, last = rounds + 1, m.sender
        return rounds

    @property
    def direction(self) -> str:
        """``"one-way"`` when only Alice speaks (or nobody), else ``"two-way"``."""
        senders = {m.sender for m in self.messages}
        return "one-way" if senders <= {"alice"} else "two-way"

    def itemize(self) -> dict:
        """Bits per step, per head and per direction; the steps (and the directions) add up to
        :attr:`total_bits` exactly; per head, the messages that belong to a head (not the embedding)."""
        steps: dict[str, int] = {}
        per_head = [dict() for _ in range(self.heads)]
        for m in self.messages:
            steps[m.step] = steps.get(m.step, 0) + m.bits
            if m.head is not None:
                per_head[m.head][m.step] = per_head[m.head].get(m.step, 0) + m.bits
        for h in per_head:
            h["total"] = sum(h.values())
        return {"bits_by_step": steps, "bits_by_head": per_head,
                "bits_by_direction": {"alice_to_bob": self.alice_to_bob, "bob_to_alice": self.bob_to_alice},
                "messages": [{"label": m.label, "step": m.step, "sender": m.sender, "bits": m.bits}
                             for m in self.messages],
                "total_bits": self.total_bits}


def _validate_partition(seq_len: int, alice_positions) -> tuple[tuple[int, ...], tuple[int, ...]]:
    a = np.asarray(alice_positions)
    if a.ndim != 1:
        raise PartitionError(f"Alice's positions must be a flat list of integers, got shape {a.shape}", "partition")
    if a.size and a.dtype.kind not in "iu":
        if not np.array_equal(a, np.floor(a)):
            raise PartitionError("Alice's positions must be integers", "partition")
        a = a.astype(np.int64)
    a = a.astype(np.int64)
    if a.size and (a.min() < 0 or a.max() >= seq_len):
        bad = int(a.min()) if a.min() < 0 else int(a.max())
        raise PartitionError(f"position {bad} is outside 0..{seq_len - 1}", "partition")
    counts = np.bincount(a, minlength=seq_len)
    if a.size and counts.max() > 1:
        dup = int(np.argmax(counts > 1))
        raise PartitionError(f"position {dup} is given to Alice twice (the parts must be disjoint)", "partition")
    mask = counts > 0
    return tuple(np.flatnonzero(mask).tolist()), tuple(np.flatnonzero(~mask).tolist())


def make_plan(model: AttentionLayer, seq_len: int, alice_positions, query: int | None = None) -> ExchangePlan:
    """Validate the partition (disjoint, covering, the query owned by one party) and lay out the messages."""
    model.check_input(seq_len)
    qpos = model.query_position(seq_len) if query is None else int(query)
    if not 0 <= qpos < seq_len:
        raise PartitionError(f"query position {qpos} is outside 0..{seq_len - 1}", "partition")
    alice, bob = _validate_partition(seq_len, alice_positions)
    owner = "alice" if qpos in set(alice) else "bob"
    mine = alice if owner == "alice" else bob
    other = "bob" if owner == "alice" else "alice"
    theirs = bob if owner == "alice" else alice
    H, m, p, ar = model.heads, model.width, model.precision, model.ar
    common = dict(seq_len=seq_len, query=qpos, query_owner=owner, alice_positions=alice, bob_positions=bob,
                  heads=H, width=m, precision=p, attend_self=model.attend_self, number_format=model.fmt.name,
                  residual=model.residual_width)
    msgs: list[MessageSpec] = []
    if not theirs:
        return ExchangePlan(mode="local", output_party=owner, **common)
    if len(mine) == 1:   # the query owner holds only the query: one-way, the other party outputs
        for h in range(H):
            msgs.append(MessageSpec("query", f"query/head {h}", owner, h, m * p))
        if model.residual_width:
            msgs.append(MessageSpec("embedding", "embedding", owner, None, model.residual_width * p))
        if model.attend_self:
            for h in range(H):
                msgs.append(MessageSpec("self", f"self/head {h}", owner, h, (m + 1) * p))
        return ExchangePlan(mode="one-way", output_party=other, messages=tuple(msgs), **common)
    n_other = len(theirs)
    z_width = max((n_other * ar.one_units).bit_length(), 1)
    lo, hi = ar.sum_range(n_other)
    u_width = max((-lo - 1).bit_length(), hi.bit_length()) + 1
    for h in range(H):
        msgs.append(MessageSpec("query", f"query/head {h}", owner, h, m * p))
    for h in range(H):
        msgs.append(MessageSpec("max", f"max/head {h}", owner, h, p))
    for h in range(H):
        msgs.append(MessageSpec("max", f"max/head {h}", other, h, p))
    for h in range(H):
        msgs.append(MessageSpec("Z", f"Z/head {h}", other, h, z_width))
    for h in range(H):
        msgs.append(MessageSpec("U", f"U/head {h}", other, h, m * u_width))
    return ExchangePlan(mode="two-way", output_party=owner, other_terms=n_other, z_width=z_width, u_width=u_width,
                        messages=tuple(msgs), **common)


def theorem_bits(model: AttentionLayer, plan: ExchangePlan) -> tuple[int, str]:
    """The theorem's count for this plan: 3m(p + ceil(log2 N))H + m p H (two-way, Theorem 4 of
    [BHBK24]); m p H, plus (m + 1) p H for the query's own term (one-way, [SHT23]), plus d p for the
    query's embedding x_N when psi reads it (one-way; d = the coordinates psi reads)."""
    m, p, H, N = model.width, model.precision, model.heads, plan.seq_len
    if plan.mode == "local":
        return 0, "one party owns every position: no communication"
    if plan.mode == "one-way":
        total = base = m * p * H
        text = f"one-way ([SHT23]): each head's q_N, m·p·H = {m}·{p}·{H} = {base}"
        if plan.residual:
            emb = plan.residual * p
            total += emb
            text += f", plus the query's embedding x_N for psi, d·p = {plan.residual}·{p} = {emb}"
        if plan.attend_self:
            extra = (m + 1) * p * H
            total += extra
            text += f", plus the query's own logit and value, (m+1)·p·H = {extra}"
        return total, text + (f": {total} bits" if total != base else " bits")
    L = ceil_log2(N)
    main, query = 3 * m * (p + L) * H, m * p * H
    return main + query, (f"3m(p + ceil(log2 N))H + mpH = 3·{m}·({p} + {L})·{H} + {m}·{p}·{H} = {main + query} "
                          f"(Theorem 4 of [BHBK24], plus the query)")


# ---- the party programs ---------------------------------------------------------------------------
class AttentionExchangeProtocol(Protocol):
    """The party programs of the exchange; shares are :class:`commsim.pipeline.interfaces.Share` values."""

    name = "attention-exchange"

    def __init__(self, model: AttentionLayer, plan: ExchangePlan):
        self.model, self.plan = model, plan
        self.output_party = plan.output_party

    def alice(self, share):
        return self._program("alice", share)

    def bob(self, share):
        return self._program("bob", share)

    def _program(self, me: str, share):
        plan = self.plan
        if plan.mode == "local":
            return self._local(me, share)
        if plan.mode == "one-way":
            return self._sender(share) if me == plan.query_owner else self._receiver(share)
        return self._query_owner(share) if me == plan.query_owner else self._other(share)

    # helpers: everything a party computes, from its own share only
    def _own(self, share, attended_only: bool = True):
        pos = np.asarray(share.positions, dtype=np.int64)
        tok = np.asarray(share.tokens)
        keep = pos != self.plan.query if (attended_only and not self.plan.attend_self) else np.ones(len(pos), bool)
        return tok[None, keep], pos[keep]

    def _query_token(self, share):
        pos = np.asarray(share.positions)
        return np.asarray(share.tokens)[pos == self.plan.query]

    def _output(self, raw):
        model = self.model
        return np.asarray(model.labels(raw)).reshape(-1), model.ar.to_values(raw)[0]

    def _local(self, me, share):
        if me != self.plan.output_party:
            return None
            yield  # pragma: no cover - makes this a generator
        order = np.argsort(share.positions)
        tokens = np.asarray(share.tokens)[order][None]
        return self._output(self.model.forward_rep(tokens, self.plan.query))

    def _send_queries(self, share):
        """Step 1: the query owner sends each head's q_N (m numbers of p bits); returns q."""
        model, plan = self.model, self.plan
        q = model.query_vectors(self._query_token(share), plan.query)
        for h in range(plan.heads):
            yield Send(f"query/head {h}", model.ar.encode(q[0, h]))
        return q

    def _receive_queries(self):
        """Step 1 on the other side: each head's q_N, decoded; returns q of shape (1, H, m)."""
        plan = self.plan
        q = []
        for h in range(plan.heads):
            q.append(self.model.ar.decode((yield Receive(f"query/head {h}")), plan.width))
        return np.stack(q)[None]

    def _sender(self, share):
        model, plan, ar = self.model, self.plan, self.model.ar
        q = yield from self._send_queries(share)
        if plan.residual:
            yield Send("embedding", ar.encode(model.residual_input(self._query_token(share), plan.query)[0]))
        if plan.attend_self:
            A, V = model.scan(np.asarray(share.tokens)[None], np.asarray(share.positions), q)
            for h in range(plan.heads):
                yield Send(f"self/head {h}", ar.encode(np.concatenate([A[0, h], V[0, 0, h].astype(A.dtype)])))
        return None

    def _receiver(self, share):
        model, plan, ar = self.model, self.plan, self.model.ar
        H, m = plan.heads, plan.width
        q = yield from self._receive_queries()
        x_query = None
        if plan.residual:
            x_query = ar.decode((yield Receive("embedding")), plan.residual)[None]
        tok, pos = self._own(share)
        A, V = model.scan(tok, pos, q)
        if plan.attend_self:
            own = []
            for h in range(H):
                own.append(ar.decode((yield Receive(f"self/head {h}")), m + 1))
            A = np.concatenate([A, np.array([[[o[0]] for o in own]], dtype=A.dtype)], axis=2)
            V = np.concatenate([V, np.array([[[o[1:] for o in own]]]).astype(V.dtype)], axis=1)
        Z, U = model.aggregate(A, V, A.max(axis=-1))
        return self._output(model.finish(U, Z, x_query))

    def _query_owner(self, share):
        model, plan, ar = self.model, self.plan, self.model.ar
        H = plan.heads
        q = yield from self._send_queries(share)
        tok, pos = self._own(share)
        A, V = model.scan(tok, pos, q)
        local_max = A.max(axis=-1)
        for h in range(H):
            yield Send(f"max/head {h}", ar.encode(local_max[0, h:h + 1]))
        theirs = np.zeros_like(local_max)
        for h in range(H):
            theirs[0, h] = ar.decode((yield Receive(f"max/head {h}")), 1)[0]
        M = np.maximum(local_max, theirs)
        Z_other = np.zeros((1, H), dtype=object)
        for h in range(H):
            Z_other[0, h] = unpack_count((yield Receive(f"Z/head {h}")), plan.z_width)
        U_other = np.zeros((1, H, plan.width), dtype=object)
        for h in range(H):
            U_other[0, h] = unpack_sum((yield Receive(f"U/head {h}")), plan.u_width, plan.width)
        Z, U = model.aggregate(A, V, M)
        x_query = model.residual_input(self._query_token(share), plan.query)   # its own position: no bits
        return self._output(model.finish(_exact(U + U_other), _exact(Z + Z_other), x_query))

    def _other(self, share):
        model, plan, ar = self.model, self.plan, self.model.ar
        H = plan.heads
        q = yield from self._receive_queries()
        theirs = []
        for h in range(H):
            theirs.append(ar.decode((yield Receive(f"max/head {h}")), 1)[0])
        tok, pos = self._own(share)
        A, V = model.scan(tok, pos, q)
        local_max = A.max(axis=-1)
        for h in range(H):
            yield Send(f"max/head {h}", ar.encode(local_max[0, h:h + 1]))
        M = np.maximum(local_max, np.array([theirs], dtype=local_max.dtype))
        Z, U = model.aggregate(A, V, M)
        for h in range(H):
            yield Send(f"Z/head {h}", pack_count(Z[0, h], plan.z_width))
        for h in range(H):
            yield Send(f"U/head {h}", pack_sum(U[0, h], plan.u_width))
        return None


def _exact(a) -> np.ndarray:
    """Exact integer sums as int64 when they fit, else Python integers."""
    a = np.asarray(a, dtype=object)
    if a.size and max(abs(int(v)) for v in a.reshape(-1)) < (1 << 62):
        return a.astype(np.int64)
    return a


# ---- the vectorized protocol (the same computation, over a batch) ------------------------------------
def _fingerprint(a, batch: int) -> np.ndarray:
    """Exact sums as int64 columns (Python integers beyond int64 are hashed; equality is then
    re-checked on real transcripts by the certificate search)."""
    a = np.asarray(a).reshape(batch, -1)
    if a.dtype != object:
        return a.astype(np.int64)
    return np.array([[hash(int(v)) for v in row] for row in a], dtype=np.int64).reshape(batch, -1)


def simulate(model: AttentionLayer, plan: ExchangePlan, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The protocol on a batch of token rows: the output party's raw outputs (B, C) and the
    transcript keys (B, K) — every message value in order, so equal keys mean equal transcripts."""
    T = np.atleast_2d(np.asarray(tokens))
    B = T.shape[0]
    ar, qpos = model.ar, plan.query
    if plan.mode == "local":
        return model.forward_rep(T, qpos), np.zeros((B, 0), dtype=np.int64)
    q = model.query_vectors(T[:, qpos], qpos)
    x_query = model.residual_input(T[:, qpos], qpos)
    keys = [ar.key(q).reshape(B, -1)]
    if plan.mode == "one-way":
        if x_query is not None:
            keys.append(ar.key(x_query).reshape(B, -1))
        receiver = plan.output_party
        pos = plan.attended(receiver)
        A, V = model.scan(T[:, pos], pos, q)
        if plan.attend_self:
            A_s, V_s = model.scan(T[:, [qpos]], np.array([qpos]), q)
            keys += [ar.key(A_s).reshape(B, -1), ar.key(V_s).reshape(B, -1)]
            A, V = np.concatenate([A, A_s], axis=2), np.concatenate([V, V_s], axis=1)
        Z, U = model.aggregate(A, V, A.max(axis=-1))
        return model.finish(U, Z, x_query), np.concatenate(keys, axis=1)
    pos_q, pos_o = plan.attended(plan.query_owner), plan.positions(plan.other)
    A_q, V_q = model.scan(T[:, pos_q], pos_q, q)
    A_o, V_o = model.scan(T[:, pos_o], pos_o, q)
    max_q, max_o = A_q.max(axis=-1), A_o.max(axis=-1)
    M = np.maximum(max_q, max_o)
    Z_o, U_o = model.aggregate(A_o, V_o, M)
    Z_q, U_q = model.aggregate(A_q, V_q, M)
    keys += [ar.key(max_q), ar.key(max_o), _fingerprint(Z_o, B), _fingerprint(U_o, B)]
    return model.finish(U_q + U_o, Z_q + Z_o, x_query), np.concatenate(keys, axis=1)


def run_exchange(model: AttentionLayer, tokens, alice_positions, query: int | None = None, *, audit: bool = False):
    """Run the exchange on one token sequence for a partition given by Alice's positions;
    returns the runner's :class:`~commsim.core.runner.RunResult` (output: (labels, raw outputs))."""
    from commsim.core.runner import run_protocol
    from commsim.pipeline.interfaces import Share
    tokens = np.asarray(tokens).reshape(-1)
    model.check_input(len(tokens), tokens)
    plan = make_plan(model, len(tokens), alice_positions, query)
    a, b = plan.positions("alice"), plan.positions("bob")
    return run_protocol(AttentionExchangeProtocol(model, plan), Share(a, tokens[a].copy(), len(tokens)),
                        Share(b, tokens[b].copy(), len(tokens)), audit=audit)


# ---- the simulator plugin --------------------------------------------------------------------
class AttentionExchange(Simulator):
    """One-layer attention: max-logit / partial-softmax exchange (Theorem 4 of [BHBK24])."""

    name = "attention-exchange"
    source = "Theorem 4 of [BHBK24]; one-way variant: [SHT23]"
    arch = "attention"

    def budget_bits(self, width: int, precision: int, heads: int, seq_len: int) -> tuple[int, str]:
        """3·m·(p + ceil(log2 N))·H (Theorem 4)."""
        bits = 3 * width * (precision + ceil_log2(max(seq_len, 1))) * heads
        return bits, (f"3·m·(p + ceil(log2 N))·H = 3·{width}·({precision} + ceil(log2 N))·{heads} (Theorem 4)")

    def accepts(self, model) -> bool:
        return isinstance(model, AttentionLayer)

    def plan(self, model: AttentionLayer, encoded: Encoded) -> ExchangePlan:
        if len(encoded.output_positions) != 1:
            raise NotApplicable(f"the attention exchange reads one query position; this task reads "
                                f"{len(encoded.output_positions)} ({list(encoded.output_positions)})", "--model")
        out = int(encoded.output_positions[0])
        if model.query is not None and model.query_position(encoded.seq_len) != out:
            raise InputError(f"the model reads its decision at position {model.query_position(encoded.seq_len)} "
                             f"(query={model.query}) but the task reads it at position {out}", "--model")
        return make_plan(model, encoded.seq_len, encoded.alice_positions, out)

    def check_partition(self, model, encoded: Encoded) -> None:
        model.check_input(encoded.seq_len, encoded.tokens)
        self.plan(model, encoded)

    def direction(self, model, encoded: Encoded) -> str:
        return self.plan(model, encoded).direction

    def bits_formula(self, model, encoded: Encoded) -> tuple[int, str]:
        return theorem_bits(model, self.plan(model, encoded))

    def make_protocol(self, model, encoded: Encoded) -> Protocol:
        return AttentionExchangeProtocol(model, self.plan(model, encoded))

    def direct_labels(self, model, encoded: Encoded) -> np.ndarray:
        return model.decide(encoded.tokens, int(encoded.output_positions[0]))[:, None]

    def details(self, model: AttentionLayer, plan: ExchangePlan) -> dict:
        formula, text = theorem_bits(model, plan)
        d = {"mode": plan.mode, "query_position": plan.query, "query_owner": plan.query_owner,
             "output_party": plan.output_party, "number_format": plan.number_format, "p": plan.precision,
             "m": plan.width, "H": plan.heads, "N": plan.seq_len, "attend_self": plan.attend_self,
             "residual": plan.residual,
             "message_widths": {"number": plan.precision, "Z": plan.z_width, "U_value": plan.u_width},
             "theorem_bits": formula, "theorem_text": text}
        d.update(plan.itemize())
        d["within_theorem"] = plan.total_bits <= formula
        return d

    def sweep(self, model, encoded: Encoded, progress: Callable | None = None) -> Sweep:
        plan = self.plan(model, encoded)
        T = encoded.tokens
        B = encoded.batch
        chunk = _chunk(model, encoded.seq_len)
        proto = np.zeros(B, dtype=np.int64)
        direct = np.zeros(B, dtype=np.int64)
        exact = np.zeros(B, dtype=bool)
        for s in range(0, B, chunk):
            rows = T[s:s + chunk]
            raw_p, _ = simulate(model, plan, rows)
            raw_d = model.forward_rep(rows, plan.query)
            proto[s:s + chunk] = model.labels(raw_p)
            direct[s:s + chunk] = model.labels(raw_d)
            exact[s:s + chunk] = np.all(model.ar.key(raw_p) == model.ar.key(raw_d), axis=1)
            if progress:
                progress(min(s + chunk, B), B)
        details = self.details(model, plan)
        details["exact_matches"] = int(exact.sum())
        return Sweep(proto[:, None], direct[:, None], exact, np.full(B, plan.alice_to_bob, dtype=np.int64),
                     np.full(B, plan.bob_to_alice, dtype=np.int64), np.full(B, plan.rounds, dtype=np.int64),
                     details=details)

    def certificate(self, model, reduction, problem, bound, *, seed: int = 0, progress: Callable | None = None):
        """The rectangle argument on the problem's fooling set (:mod:`commsim.certify.rectangle`)."""
        from commsim.certify.rectangle import rectangle_certificate
        from commsim.core.runner import run_protocol
        cache: dict = {}

        def plan_for(encoded):
            key = (encoded.seq_len, encoded.alice_positions.tobytes(), tuple(encoded.output_positions))
            if key not in cache:
                cache[key] = self.plan(model, encoded)
            return cache[key]

        def evaluate(A, B):
            encoded = reduction.encode(problem, A, B)
            plan = plan_for(encoded)
            chunk = _chunk(model, encoded.seq_len)
            answers, keys = [], []
            for s in range(0, encoded.batch, chunk):
                raw, k = simulate(model, plan, encoded.tokens[s:s + chunk])
                answers.append(reduction.decode(model.labels(raw)[:, None], B[s:s + chunk]))
                keys.append(k)
            return np.concatenate(answers), np.concatenate(keys)

        def direct(A, B):
            encoded = reduction.encode(problem, A, B)
            return reduction.decode(self.direct_labels(model, encoded), B)

        def transcript(a, b):
            encoded = reduction.encode(problem, np.asarray(a)[None], np.asarray(b)[None])
            alice, bob = encoded.shares(0)
            return run_protocol(AttentionExchangeProtocol(model, plan_for(encoded)), alice, bob).transcript

        one_way = None
        try:
            A0, B0 = problem.sample(np.random.default_rng(seed), 1)
            one_way = self.direction(model, reduction.encode(problem, A0, B0)) == "one-way"
        except InputError:
            one_way = False
        cert, searched = rectangle_certificate(problem, evaluate, direct, transcript, one_way=one_way,
                                               progress=progress)
        if cert is not None:  # the model input the certificate stands for, in the task's own tokens
            try:
                encoded = reduction.encode(problem, np.asarray(cert.alice_input)[None],
                                           np.asarray(cert.bob_input).reshape(1, *np.shape(cert.bob_input)))
                names = reduction.vocabulary(problem.n)
                cert.details["model_input"] = " ".join(names[int(t)] for t in encoded.tokens[0])
            except (InputError, IndexError, NotImplementedError):
                pass
        return cert, searched


def _chunk(model: AttentionLayer, seq_len: int) -> int:
    """Rows per batch chunk: the values of a chunk take a few tens of MB."""
    per_row = max(1, seq_len * model.heads * model.width)
    return int(max(1, min(1 << 16, (1 << 22) // per_row)))


ATTENTION_EXCHANGE = AttentionExchange()
