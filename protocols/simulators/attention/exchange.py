"""The max-logit / partial-softmax exchange: a one-layer attention as a two-party protocol.

Theorem 4 of [BHBK24] (a formal version of Theorem 7 of [SHT23]): for **any** partition of the
positions between Alice and Bob, a one-layer attention layer with H heads of width m at p bits per
number is computed exactly by a protocol of about 3m(p + log N)H bits.  Here the protocol is run for
real, with the exact semantics of :mod:`protocols.models.attention`.  The module holds the simulator;
the plan (who sends what, how wide) is :mod:`~protocols.simulators.attention.plan`, the party programs
:mod:`~protocols.simulators.attention.parties`, the vectorized batch :mod:`~protocols.simulators.attention.batch`.

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
ways).  :meth:`AttentionExchange.plan` reports the theorem's own count, 3m(p + ceil(log2 N))H
(:func:`protocols.theorems.exchange_bits`, the :class:`~commsim.contract.MessagePlan`'s
``formula``), which leaves out the query's vectors this exchange also sends; the bits it really sends
are the plan's (:mod:`protocols.simulators.attention.plan`), reported beside it.  Appendix D of [BHBK24] gives the count as an order of magnitude: counted
step by step a head can cost more when p is large relative to log N.

one-way (the query owner owns *only* the query position): the [SHT23] protocol -- the query owner sends
the cheaper valid message (:func:`protocols.simulators.attention.plan.one_way_choice`): either x_N
(``embedding``, d·p bits, from which the other party computes q_N, the query's own key, value and
logit and psi's input), or each head's q_N (``query/head h``, m·p bits), with its own logit and value
when the query attends to itself (``self/head h``, (m + 1)·p bits) and the coordinates of x_N psi
reads when the layer has a residual path (r·p bits); the other party computes everything and outputs.
When Alice is that sender the protocol is one-way in the sense of the lower bounds
(the plan's ``direction`` is ``"one-way"``); when Bob is, only Bob speaks: one-way from Bob,
which the reductions bound by what Bob's input needs (INDEX: ceil(log2 n) bits).

division: with ``division=per-weight`` (Appendix D of [BHBK24]: a_i = [e_i / Z] rounded per weight)
both parties need Z before any weighted sum, so in the two-way exchange the query owner also sends its
partial Z (``Z owner/head h``) and the exchange takes four rounds instead of two.

local: one party owns every position and answers alone (0 bits).

Under fixed point the output is bit-identical to :meth:`AttentionLayer.forward_rep` for every
partition (all sums are exact integers); under IEEE formats it equals the reference float
semantics (partial sums carried exactly, rounded once), and both stay within
:data:`protocols.models.attention.FLOAT_TOLERANCE` of a plain float forward.
"""
from __future__ import annotations

import weakref
from typing import Callable

import numpy as np

from commsim.contract import (
    ANY_PARTITION,
    BatchResult,
    Encoded,
    InputError,
    MessagePlan,
    NotApplicable,
    Protocol,
    QUERY_ONLY,
    Shape,
    Simulator,
    Split,
    Vectorized,
)
from protocols.models.attention import AttentionConfig, AttentionLayer
from protocols.simulators.attention.batch import simulate
from protocols.simulators.attention.parties import AttentionExchangeProtocol
from protocols.simulators.attention.plan import ExchangeLayout, ExchangePlan, make_layout, make_plan, theorem_count
from protocols.theorems import exchange_bits, exchange_bits_paper_log, exchange_text

__all__ = ["AttentionExchange", "ATTENTION_EXCHANGE", "PlanCache", "batch_run", "batch_keys"]


class PlanCache:
    """Plans per model (weakly held) and per (shape, length, partition, outputs): a certificate search asks
    for the same split's plan once per chunk, and a plan of a long sequence lists every position."""

    LIMIT = 64   # plans kept per model

    def __init__(self):
        self._plans: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def get(self, model, encoded: Encoded, make: Callable):
        """The cached plan for ``model`` on ``encoded``'s split, made by ``make()`` the first time."""
        key = (model.config, encoded.seq_len, np.asarray(encoded.alice_positions, dtype=np.int64).tobytes(),
               tuple(int(p) for p in encoded.output_positions), tuple(int(p) for p in encoded.public_positions))
        plans = self._plans.setdefault(model, {})
        if key not in plans:
            if len(plans) >= self.LIMIT:
                plans.clear()
            plans[key] = make()
        return plans[key]


def batch_run(model: AttentionLayer, tokens: np.ndarray, query: int, protocol_raw: Callable, chunk: int,
              progress: Callable | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(protocol labels (B,), direct labels (B,), raw outputs equal bit for bit (B,)) over token rows in
    chunks; ``protocol_raw(rows)`` is the vectorized protocol's raw output."""
    B = len(tokens)
    proto, direct = np.zeros(B, dtype=np.int64), np.zeros(B, dtype=np.int64)
    exact = np.zeros(B, dtype=bool)
    key = model.arithmetic.key
    for s in range(0, B, chunk):
        rows = tokens[s:s + chunk]
        raw_p, raw_d = protocol_raw(rows), model.forward_rep(rows, query)
        proto[s:s + chunk], direct[s:s + chunk] = model.labels(raw_p), model.labels(raw_d)
        exact[s:s + chunk] = np.all(key(raw_p) == key(raw_d), axis=1)
        if progress:
            progress(min(s + chunk, B), B)
    return proto, direct, exact


def batch_keys(model: AttentionLayer, tokens: np.ndarray, protocol: Callable,
               chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """(labels (B, 1), key rows (B, k)) over token rows in chunks; ``protocol(rows)`` gives (raw, keys)."""
    labels, keys = [], []
    for s in range(0, len(tokens), chunk):
        raw, k = protocol(tokens[s:s + chunk])
        labels.append(model.labels(raw))
        keys.append(k)
    if not labels:
        return np.zeros((0, 1), dtype=np.int64), np.zeros((0, 0), dtype=np.int64)
    return np.concatenate(labels)[:, None], np.concatenate(keys)


class AttentionExchange(Vectorized, Simulator):
    """One-layer attention: max-logit / partial-softmax exchange (Theorem 4 of [BHBK24])."""

    name = "attention-exchange"
    plans_number_format = True
    source = "Theorem 4 of [BHBK24]; one-way variant: [SHT23]"
    budget_parameters = ("width", "precision", "heads")
    partition_kind = ANY_PARTITION           # Theorem 4 holds for any partition of the positions
    one_way_splits = (QUERY_ONLY,)           # Alice holding only the query sends, Bob answers ([SHT23])
    plan_limit = 1 << 20                     # run's plan lists every position: budget plans up to 2^20

    def __init__(self):
        self._cache = PlanCache()

    # ---- declarations read by commsim budget
    def paper_count(self, shape: Shape, split: Split) -> tuple[int, str]:
        """Theorem 4 of [BHBK24]: 3m(p + ceil(log2 N))H (:func:`protocols.theorems.exchange_bits`), at any N."""
        width, precision, heads, seq_len = shape.width, shape.precision, shape.heads, split.seq_len
        return (exchange_bits(width, precision, heads, seq_len),
                f"{exchange_text(width, precision, heads, seq_len)} (Theorem 4 of [BHBK24])")

    #: Theorem 4's count as the paper writes it: log N not rounded (budget shows its max N beside the ceiling's)
    paper_form_text = "3m(p + log2 N)H, log2 N unrounded"

    def paper_form_bits(self, shape: Shape, seq_len: int) -> float:
        """Theorem 4 of [BHBK24] in the paper's own form (:func:`protocols.theorems.exchange_bits_paper_log`)."""
        return exchange_bits_paper_log(shape.width, shape.precision, shape.heads, seq_len)

    def plan(self, shape: Shape, split: Split) -> MessagePlan:
        """The message plan ``run`` executes, for the papers' layer of these sizes at length N on this
        partition (:meth:`AttentionConfig.fixed <protocols.models.attention.AttentionConfig.fixed>`: fixed
        point, p // 2 fraction bits, the query attending to itself, no residual path, d = ``shape.extras["dim"]``;
        in the shape's number format instead when it is one, e.g. float32: the layer ``attention:dtype=float32``
        builds)."""
        width, precision, heads, seq_len = shape.width, shape.precision, shape.heads, split.seq_len
        alice_positions, output_positions = split.alice_positions, split.output_positions
        dim = shape.extras.get("dim", 8)
        number_format = None if isinstance(shape.format, int) else shape.format
        if len(output_positions) != 1:
            raise NotApplicable(f"the attention exchange (Theorem 4 of [BHBK24]) computes the output at one query "
                                f"position; this task reads {len(output_positions)} outputs, one per query, and the "
                                f"one-layer lower-bound technique does not apply to associative recall with many "
                                f"queries (Appendix C of [BHBK24], Discussion)", "model")
        config = (AttentionConfig.fixed(heads, width, precision, dim=dim) if number_format is None else
                  AttentionConfig(int(heads), int(width), number_format, dim=dim))
        plan = make_layout(config, int(seq_len), alice_positions if isinstance(alice_positions, range) else
                           np.asarray(alice_positions, dtype=np.int64), int(output_positions[0]))
        return _message_plan(plan, assumptions={**_assumptions(config), "mode": plan.mode,
                                                "plan_formula": theorem_count(plan)[0]})

    # ---- hooks
    def accepts(self, model) -> bool:
        """Any one-layer attention (:class:`AttentionLayer`)."""
        return isinstance(model, AttentionLayer)

    def exchange_plan(self, model: AttentionLayer, encoded: Encoded) -> ExchangePlan:
        """The exchange's own plan (every message, its sender and width) for this model on the task's
        partition, its query the task's output position; cached per model and split."""
        return self._cache.get(model, encoded, lambda: self._make_plan(model, encoded))

    @staticmethod
    def _make_plan(model: AttentionLayer, encoded: Encoded) -> ExchangePlan:
        if len(encoded.output_positions) != 1:
            raise NotApplicable(f"the attention exchange reads one query position; this task reads "
                                f"{len(encoded.output_positions)} ({list(encoded.output_positions)})", "model")
        out = int(encoded.output_positions[0])
        if model.query is not None and model.query_position(encoded.seq_len) != out:
            raise InputError(f"the model reads its decision at position {model.query_position(encoded.seq_len)} "
                             f"(query={model.query}) but the task reads it at position {out}", "model")
        return make_plan(model, encoded.seq_len, encoded.alice_positions, out)

    def plan_model(self, model: AttentionLayer, encoded: Encoded) -> MessagePlan:
        """Any partition works; the input (length, tokens) and the query position must fit the model."""
        model.check_input(encoded.seq_len, encoded.tokens)
        return _message_plan(self.exchange_plan(model, encoded))

    def protocol(self, model, encoded: Encoded) -> Protocol:
        """The party programs for the task's partition."""
        return AttentionExchangeProtocol(model, self.exchange_plan(model, encoded))

    def run_batch(self, model, encoded: Encoded, progress: Callable | None = None) -> BatchResult:
        """The vectorized exchange and the direct forward on every instance, in chunks."""
        plan = self.exchange_plan(model, encoded)
        B = encoded.batch
        proto, direct, exact = batch_run(model, encoded.tokens, plan.query,
                                         lambda rows: simulate(model, plan, rows)[0],
                                         _chunk(model, encoded.seq_len), progress)
        details = details_of(plan)
        details["exact_matches"] = int(exact.sum())
        return BatchResult(proto[:, None], direct[:, None], exact, np.full(B, plan.alice_to_bob, dtype=np.int64),
                           np.full(B, plan.bob_to_alice, dtype=np.int64), np.full(B, plan.rounds, dtype=np.int64),
                           details=details)

    def transcript_keys(self, model, encoded: Encoded) -> tuple[np.ndarray, np.ndarray]:
        """The exchange's labels (B, 1) and every message value in order as int64 columns (B, k)
        (:func:`~protocols.simulators.attention.batch.simulate`): equal rows, equal transcripts."""
        plan = self.exchange_plan(model, encoded)
        return batch_keys(model, encoded.tokens, lambda rows: simulate(model, plan, rows),
                          _chunk(model, encoded.seq_len))

    def direct_labels(self, model, encoded: Encoded) -> np.ndarray:
        """The layer's own decision at the output position."""
        return model.decide(encoded.tokens, int(encoded.output_positions[0]))[:, None]


def details_of(plan: ExchangePlan) -> dict:
    """The plan's itemized bits beside the theorem's count (a batch run's ``details``)."""
    formula, text = theorem_count(plan)
    d = {"mode": plan.mode, "query_position": plan.query, "query_owner": plan.query_owner,
         "output_party": plan.output_party, "number_format": plan.number_format, "p": plan.precision,
         "m": plan.width, "H": plan.heads, "N": plan.seq_len, "attend_self": plan.attend_self,
         "residual": plan.residual,
         "message_widths": {"number": plan.precision, "Z": plan.z_width, "U_value": plan.u_width},
         "theorem_bits": formula, "theorem_text": text}
    d.update(plan.itemize())
    d["within_theorem"] = plan.total_bits <= formula
    return d


def _message_name(plan: ExchangeLayout) -> str:
    """What the protocol sends, in words."""
    if plan.mode == "local":
        return "no message (one party holds every position)"
    if plan.mode == "two-way":
        return "the exchange (each head's q_N, the local maxima, the partial sums Z and U)"
    if plan.one_way_message == "embedding":
        return "the query's embedding x_N"
    return "each head's q_N" + (" with the query's own logit and value" if plan.attend_self else "") + \
        (" and the coordinates of x_N psi reads" if plan.residual else "")


def _message_plan(plan: ExchangeLayout, assumptions: dict | None = None) -> MessagePlan:
    """The engine's view of an exchange plan: bits per direction, rounds, the steps and the papers' count."""
    formula, formula_text = theorem_count(plan)
    steps = ", ".join(f"{k} {v}" for k, v in plan.itemize()["bits_by_step"].items())
    text = (f"{plan.mode} exchange at N = {plan.seq_len}: {plan.total_bits} bits ({steps}; Alice→Bob "
            f"{plan.alice_to_bob}, Bob→Alice {plan.bob_to_alice})")
    return MessagePlan(plan.alice_to_bob, plan.bob_to_alice, plan.rounds, text, assumptions or {}, formula,
                       formula_text, _message_name(plan))


def _assumptions(config: AttentionConfig) -> dict:
    """The papers' layer that ``commsim budget`` plans for (``budget --json``'s assumptions)."""
    frac = getattr(config.format, "frac", None)          # None: a float format
    number = (f"fixed point {config.format.name} (p = {config.precision}, frac = {frac})" if frac is not None else
              f"floating point {config.format.name} (p = {config.precision})")
    return {"number_format": config.format.name, "frac": frac, "attend_self": config.attend_self,
            "dim": config.dim, "division": config.division, "residual_width": config.residual_width,
            "query": "the task's output position",
            "text": (f"the papers' layer: the query attends to itself ({'yes' if config.attend_self else 'no'}), "
                     f"no residual path from x_N, {number}")}


def _chunk(model: AttentionLayer, seq_len: int) -> int:
    """Rows per batch chunk: the values of a chunk take a few tens of MB."""
    per_row = max(1, seq_len * model.heads * model.width)
    return int(max(1, min(1 << 16, (1 << 22) // per_row)))


ATTENTION_EXCHANGE = AttentionExchange()
