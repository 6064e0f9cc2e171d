"""The attention exchange's message plan: who owns what, who speaks, how wide every message is.

A plan depends on the model's shape (H heads of width m, p bits, the number format, whether the query
attends to itself, the coordinates of x_N the output map reads, the embedding width d, the division
semantics), the sequence length N and the partition -- never on the tokens -- so one plan serves every
instance of a run, and its bits are known before anything is run.  :func:`make_plan` reads only the
layer's :class:`~protocols.models.attention.AttentionConfig`, so a config built from sizes (``commsim
budget``) gives the same plan as the model.  The messages depend on the partition only through who holds the
query and how many positions each party holds: :func:`make_layout` lays them out from those counts
(:class:`ExchangeLayout`, the plan without its position lists: what ``commsim budget`` judges), with
:func:`make_plan`'s checks and refusals.

One-way (the query owner holds only the query) the sender sends the cheaper valid message
(:func:`one_way_choice`): x_N itself (d·p bits; everything about the query position follows from it),
or each head's q_N, plus its own logit and value when the query attends to itself and the
coordinates of x_N psi reads ((m·p·H + (m + 1)·p·H [+ r·p]) bits); a tie goes to q_N.

Under per-weight division (Appendix D of [BHBK24]: a_i = [e_i / Z]) the other party needs Z before
it can form its U terms: two-way, after it sends its Z the query owner sends back its own partial Z
(``Z owner/head h``), and only then does U travel: four rounds instead of two.  The protocol it lays out is described in
:mod:`protocols.simulators.attention.exchange`; :func:`theorem_count` sets it beside the papers' count.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from protocols.models.attention import AttentionConfig, AttentionLayer
from protocols.simulators.attention.partition import PartitionError, partition_counts, validate_partition
from protocols.theorems import (
    exchange_bits,
    exchange_text,
    one_way_attention_bits,
    one_way_message_bits,
    query_bits,
)

__all__ = ["PartitionError", "MessageSpec", "ExchangeLayout", "ExchangePlan", "make_layout", "make_plan",
           "one_way_choice", "theorem_count"]


@dataclass(frozen=True)
class MessageSpec:
    """One message of the plan: its step, label, sender, head (None: not per head) and exact width."""

    step: str          # "query", "embedding", "max", "Z", "U" or "self"
    label: str
    sender: str
    head: int | None   # None: not a per-head message (the embedding)
    bits: int


@dataclass(frozen=True)
class ExchangeLayout:
    """The exchange's messages for one model, sequence length and partition, without the positions
    themselves (:func:`make_layout`; every message and width is :func:`make_plan`'s)."""

    seq_len: int
    query: int
    mode: str                           # "two-way", "one-way" or "local"
    query_owner: str
    output_party: str
    heads: int
    width: int
    precision: int
    attend_self: bool
    number_format: str
    residual: int = 0                   # coordinates of x_N that psi reads (0: no residual path)
    dim: int | None = None              # d, x_N's width as a message (None: unknown, x_N is not an option)
    division: str = "once"              # "once" (o = [U / Z]) or "per-weight" (a_i = [e_i / Z] first)
    one_way_message: str = ""           # one-way: "embedding" (x_N) or "query" (q_N [+ self, + x_N coords])
    one_way_reason: str = ""            # one-way: why that message (both widths)
    z_owner_width: int = 0              # per-weight two-way: the query owner's partial Z
    other_terms: int = 0                # positions summed by the party that sends Z and U
    z_width: int = 0
    u_width: int = 0
    messages: tuple[MessageSpec, ...] = field(default_factory=tuple)

    @property
    def other(self) -> str:
        """The party that does not own the query."""
        return "bob" if self.query_owner == "alice" else "alice"

    @property
    def total_bits(self) -> int:
        """Every message's bits, both directions."""
        return sum(m.bits for m in self.messages)

    @property
    def alice_to_bob(self) -> int:
        """The bits Alice sends."""
        return sum(m.bits for m in self.messages if m.sender == "alice")

    @property
    def bob_to_alice(self) -> int:
        """The bits Bob sends."""
        return sum(m.bits for m in self.messages if m.sender == "bob")

    @property
    def rounds(self) -> int:
        """The number of runs of consecutive messages from one sender."""
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
                "division": self.division, "one_way_message": self.one_way_message or None,
                "one_way_reason": self.one_way_reason or None, "total_bits": self.total_bits}


@dataclass(frozen=True)
class ExchangePlan(ExchangeLayout):
    """The exchange for one model, sequence length and partition (the same for every instance): its layout
    and both parties' positions."""

    alice_positions: tuple[int, ...] = field(kw_only=True)
    bob_positions: tuple[int, ...] = field(kw_only=True)

    def positions(self, party: str) -> np.ndarray:
        """The positions ``party`` owns, in increasing order."""
        return np.array(self.alice_positions if party == "alice" else self.bob_positions, dtype=np.int64)

    def attended(self, party: str) -> np.ndarray:
        """The positions of ``party`` that enter the query's attention."""
        pos = self.positions(party)
        return pos if self.attend_self else pos[pos != self.query]


def one_way_choice(width: int, precision: int, heads: int, *, dim: int | None = None, residual: int = 0,
                   attend_self: bool = True) -> tuple[str, int, int, str]:
    """The one-way sender's message: ``(kind, bits, other option's bits, why)``, kind ``"embedding"``
    (x_N, d·p bits) or ``"query"`` (:func:`protocols.theorems.one_way_attention_bits`: q_N per head, its own
    logit and value when the query attends to itself, the r coordinates of x_N psi reads), whichever is
    cheaper (a tie, or d unknown: the query).  min(d·p, (2m + 1)·p·H) for a self-attending layer."""
    m, p, H = int(width), int(precision), int(heads)
    query = one_way_attention_bits(m, p, H, residual=residual, attend_self=attend_self)
    cheapest = one_way_message_bits(m, p, H, dim, residual=residual, attend_self=attend_self)
    parts = f"q_N, m·p·H = {m * p * H}" + (f", + its own logit and value, (m+1)·p·H = {(m + 1) * p * H}"
                                             if attend_self else "") + \
        (f", + the {residual} coordinates of x_N psi reads, r·p = {residual * p}" if residual else "")
    if dim is None:
        return "query", query, query, f"q_N and what it needs ({parts}): {query} bits (d unknown)"
    embedding = int(dim) * p
    if cheapest < query:
        return "embedding", cheapest, query, (f"x_N, d·p = {dim}·{p} = {embedding} bits, is cheaper than q_N and "
                                               f"what it needs ({parts}: {query} bits); the receiver computes "
                                               f"q_N, the query's key, value and logit and psi's input from x_N")
    return "query", cheapest, embedding, (f"q_N and what it needs ({parts}: {query} bits) is no more than x_N "
                                       f"(d·p = {dim}·{p} = {embedding} bits)")


def _holds(positions: tuple[int, ...], position: int) -> bool:
    """Whether the sorted ``positions`` include ``position`` (a bisection: budget plans lengths up to 2^20)."""
    i = bisect.bisect_left(positions, position)
    return i < len(positions) and positions[i] == position


def make_plan(shape: AttentionConfig | AttentionLayer, seq_len: int, alice_positions,
              query: int | None = None) -> ExchangePlan:
    """Validate the partition (disjoint, covering, the query owned by one party) and lay out the messages.
    Reads the layer's config only (a layer also checks the length against its position table)."""
    cfg, qpos = _config_and_query(shape, seq_len, query)
    alice, bob = validate_partition(seq_len, alice_positions)
    return ExchangePlan(alice_positions=alice, bob_positions=bob,
                        **_layout(cfg, seq_len, qpos, _holds(alice, qpos), len(alice), len(bob)))


def make_layout(shape: AttentionConfig | AttentionLayer, seq_len: int, alice_positions,
                query: int | None = None) -> ExchangeLayout:
    """:func:`make_plan`'s messages, with its checks and refusals, without listing the parties' positions
    (:func:`~protocols.simulators.attention.partition.partition_counts`: a range of Alice's positions is
    checked from its ends): what ``commsim budget`` plans at lengths up to 2^20."""
    cfg, qpos = _config_and_query(shape, seq_len, query)
    return ExchangeLayout(**_layout(cfg, seq_len, qpos, *partition_counts(seq_len, alice_positions, qpos)))


def _config_and_query(shape: AttentionConfig | AttentionLayer, seq_len: int, query: int | None):
    """The layer's config and the query position, checked against the length."""
    shape.check_input(seq_len)
    cfg = shape.config if isinstance(shape, AttentionLayer) else shape
    qpos = cfg.query_position(seq_len) if query is None else int(query)
    if not 0 <= qpos < seq_len:
        raise PartitionError(f"query position {qpos} is outside 0..{seq_len - 1}", "partition")
    return cfg, qpos


def _layout(cfg: AttentionConfig, seq_len: int, qpos: int, alice_holds_query: bool, n_alice: int,
            n_bob: int) -> dict:
    """The messages (and the plan's other fields but the positions) for a partition in which Alice holds
    ``n_alice`` positions, Bob ``n_bob``, and Alice holds the query or not: nothing else of the partition
    enters the plan."""
    owner = "alice" if alice_holds_query else "bob"
    n_mine, n_theirs = (n_alice, n_bob) if alice_holds_query else (n_bob, n_alice)
    other = "bob" if owner == "alice" else "alice"
    H, m, p, ar = cfg.heads, cfg.width, cfg.precision, cfg.arithmetic
    dim, division, residual = cfg.message_dim, cfg.division, cfg.residual_width   # d: x_N's width as a message
    common = dict(seq_len=seq_len, query=qpos, query_owner=owner,
                  heads=H, width=m, precision=p, attend_self=cfg.attend_self, number_format=cfg.format.name,
                  residual=residual, dim=dim, division=division)
    msgs: list[MessageSpec] = []
    if not n_theirs:
        return dict(mode="local", output_party=owner, **common)
    if n_mine == 1:   # the query owner holds only the query: one-way, the other party outputs
        kind, _, _, why = one_way_choice(m, p, H, dim=dim, residual=residual,
                                         attend_self=cfg.attend_self)
        if kind == "embedding":
            msgs.append(MessageSpec("embedding", "embedding", owner, None, dim * p))
        else:
            for h in range(H):
                msgs.append(MessageSpec("query", f"query/head {h}", owner, h, m * p))
            if residual:
                msgs.append(MessageSpec("embedding", "embedding", owner, None, residual * p))
            if cfg.attend_self:
                for h in range(H):
                    msgs.append(MessageSpec("self", f"self/head {h}", owner, h, (m + 1) * p))
        return dict(mode="one-way", output_party=other, messages=tuple(msgs), one_way_message=kind,
                    one_way_reason=why, **common)
    n_other = n_theirs
    z_width = max((n_other * ar.one_units).bit_length(), 1)
    n_own = n_mine if cfg.attend_self else n_mine - 1
    z_owner_width = max((n_own * ar.one_units).bit_length(), 1) if division == "per-weight" else 0
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
    for h in range(H if division == "per-weight" else 0):   # the other party needs the whole Z for [e_i / Z]
        msgs.append(MessageSpec("Z", f"Z owner/head {h}", owner, h, z_owner_width))
    for h in range(H):
        msgs.append(MessageSpec("U", f"U/head {h}", other, h, m * u_width))
    return dict(mode="two-way", output_party=owner, other_terms=n_other, z_width=z_width, u_width=u_width,
                z_owner_width=z_owner_width, messages=tuple(msgs), **common)


def theorem_count(plan: ExchangeLayout) -> tuple[int, str]:
    """The papers' count for this plan, and how it is made up: two-way, Theorem 4 of [BHBK24],
    3m(p + ceil(log2 N))H (:func:`protocols.theorems.exchange_bits`); one-way, the [SHT23] message
    (:func:`protocols.theorems.one_way_attention_bits`); local, 0."""
    m, p, H, N = plan.width, plan.precision, plan.heads, plan.seq_len
    if plan.mode == "local":
        return 0, "one party owns every position: no communication"
    if plan.mode == "one-way":
        kind, total, _, why = one_way_choice(m, p, H, dim=plan.dim, residual=plan.residual,
                                             attend_self=plan.attend_self)
        if plan.dim is None:
            return total, f"one-way ([SHT23]): {why}"
        query = one_way_attention_bits(m, p, H, residual=plan.residual, attend_self=plan.attend_self)
        return total, (f"one-way ([SHT23]): the cheaper of x_N (d·p = {plan.dim}·{p} = {plan.dim * p}) and each "
                       f"head's q_N with what it needs ({query}): {total} bits; {why}")
    total = exchange_bits(m, p, H, N)
    extra = (f"; per-weight division (Appendix D): the query owner also sends its partial Z, "
             f"{plan.z_owner_width} bits per head, so that the other party can round a_i = [e_i / Z]"
             if plan.division == "per-weight" else "")
    return total, (f"{exchange_text(m, p, H, N)} bits (Theorem 4 of [BHBK24]); the simulator's exchange also "
                   f"sends each head's query q_N (m·p·H = {query_bits(m, p, H)} bits) and its sums at their exact "
                   f"widths{extra}: the bits it really sends are the bits used")
