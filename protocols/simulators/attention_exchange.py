"""The max-logit / partial-softmax exchange: a one-layer attention as a two-party protocol.

Theorem 4 of [BHBK24] (a formal version of Theorem 7 of [SHT23]): for **any** partition of the
positions between Alice and Bob, a one-layer attention layer with H heads of width m at p bits per
number is computed exactly by a protocol of about 3m(p + log N)H bits.  Here the protocol is run for
real, with the exact semantics of :mod:`protocols.models.attention`.  The module holds the simulator;
the plan (who sends what, how wide) is :mod:`~protocols.simulators.exchange_plan`, the party programs
:mod:`~protocols.simulators.exchange_parties`, the vectorized batch :mod:`~protocols.simulators.exchange_batch`.

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
ways).  :meth:`AttentionExchange.bits_formula` reports the theorem's own count, 3m(p + ceil(log2 N))H
(:func:`protocols.theorems.exchange_bits`), which leaves out the query's vectors this exchange also
sends; the bits it really sends are the plan's (:mod:`protocols.simulators.exchange_plan`), reported
beside it.  Appendix D of [BHBK24] gives the count as an order of magnitude: counted
step by step a head can cost more when p is large relative to log N.

one-way (the query owner owns *only* the query position): the [SHT23] protocol -- the query owner sends
the cheaper valid message (:func:`protocols.simulators.exchange_plan.one_way_choice`): either x_N
(``embedding``, d·p bits, from which the other party computes q_N, the query's own key, value and
logit and psi's input), or each head's q_N (``query/head h``, m·p bits), with its own logit and value
when the query attends to itself (``self/head h``, (m + 1)·p bits) and the coordinates of x_N psi
reads when the layer has a residual path (r·p bits); the other party computes everything and outputs.
When Alice is that sender the protocol is one-way in the sense of the lower bounds
(:meth:`AttentionExchange.direction` says ``"one-way"``); when Bob is, only Bob speaks: one-way from Bob,
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

from typing import Callable

import numpy as np

from commsim.core.errors import InputError, NotApplicable
from commsim.core.party import Protocol
from commsim.pipeline.interfaces import (
    ANY_PARTITION,
    QUERY_ONLY,
    Encoded,
    ShapePlan,
    Simulator,
    Sweep,
)
from protocols.models.attention import AttentionLayer
from protocols.simulators.exchange_batch import simulate
from protocols.simulators.exchange_parties import (
    AttentionExchangeProtocol,
)
from protocols.simulators.exchange_plan import (
    ExchangePlan,
    make_plan,
    theorem_count,
)
from protocols.simulators.exchange_shape import LayerShape
from protocols.theorems import exchange_bits, exchange_text

__all__ = ["AttentionExchange", "ATTENTION_EXCHANGE"]


class AttentionExchange(Simulator):
    """One-layer attention: max-logit / partial-softmax exchange (Theorem 4 of [BHBK24])."""

    name = "attention-exchange"
    source = "Theorem 4 of [BHBK24]; one-way variant: [SHT23]"
    arch = "attention"
    budget_parameters = ("width", "precision", "heads")
    partition_kind = ANY_PARTITION           # Theorem 4 holds for any partition of the positions
    one_way_splits = (QUERY_ONLY,)           # Alice holding only the query sends, Bob answers ([SHT23])
    shape_plan_limit = 1 << 20               # the plan lists every position: budget evaluates it up to 2^20

    def budget_bits(self, width: int, precision: int, heads: int, seq_len: int) -> tuple[int, str]:
        """Theorem 4 of [BHBK24]: 3m(p + ceil(log2 N))H (:func:`protocols.theorems.exchange_bits`)."""
        return (exchange_bits(width, precision, heads, seq_len),
                f"{exchange_text(width, precision, heads, seq_len)} (Theorem 4 of [BHBK24])")

    def shape_plan(self, width: int, precision: int, heads: int, seq_len: int, alice_positions,
                   output_positions, dim: int | None = 8, **_) -> ShapePlan:
        """The message plan ``run`` executes, for the papers' layer of these sizes
        (:class:`~protocols.simulators.exchange_shape.LayerShape`) at length N on this partition."""
        if len(output_positions) != 1:
            raise NotApplicable(f"the attention exchange (Theorem 4 of [BHBK24]) computes the output at one query "
                                f"position; this task reads {len(output_positions)} outputs, one per query, and the "
                                f"one-layer lower-bound technique does not apply to associative recall with many "
                                f"queries (Appendix C of [BHBK24], Discussion)", "model")
        shape = LayerShape(int(heads), int(width), int(precision), dim=dim)
        plan = make_plan(shape, int(seq_len), np.asarray(alice_positions, dtype=np.int64), int(output_positions[0]))
        formula, _ = theorem_count(plan)
        steps = ", ".join(f"{k} {v}" for k, v in plan.itemize()["bits_by_step"].items())
        text = (f"{plan.mode} exchange at N = {seq_len}: {plan.total_bits} bits ({steps}; Alice→Bob "
                f"{plan.alice_to_bob}, Bob→Alice {plan.bob_to_alice})")
        return ShapePlan(plan.alice_to_bob, plan.bob_to_alice, plan.rounds, text,
                         {**shape.assumptions(), "mode": plan.mode, "plan_formula": formula})

    def senders(self, model, encoded: Encoded) -> frozenset:
        """The parties that send a message in the plan."""
        return frozenset(m.sender for m in self.plan(model, encoded).messages)

    def protocol_bits(self, model, encoded: Encoded) -> int:
        """The plan's bits, both directions."""
        return self.plan(model, encoded).total_bits

    def accepts(self, model) -> bool:
        """Any one-layer attention (:class:`AttentionLayer`)."""
        return isinstance(model, AttentionLayer)

    def plan(self, model: AttentionLayer, encoded: Encoded) -> ExchangePlan:
        """The message plan for this model on the task's partition, its query the task's output position."""
        if len(encoded.output_positions) != 1:
            raise NotApplicable(f"the attention exchange reads one query position; this task reads "
                                f"{len(encoded.output_positions)} ({list(encoded.output_positions)})", "model")
        out = int(encoded.output_positions[0])
        if model.query is not None and model.query_position(encoded.seq_len) != out:
            raise InputError(f"the model reads its decision at position {model.query_position(encoded.seq_len)} "
                             f"(query={model.query}) but the task reads it at position {out}", "model")
        return make_plan(model, encoded.seq_len, encoded.alice_positions, out)

    def check_partition(self, model, encoded: Encoded) -> None:
        """Any partition works; the input and the query position must fit the model."""
        model.check_input(encoded.seq_len, encoded.tokens)
        self.plan(model, encoded)

    def direction(self, model, encoded: Encoded) -> str:
        """The plan's direction: one-way when only Alice speaks."""
        return self.plan(model, encoded).direction

    def bits_formula(self, model, encoded: Encoded) -> tuple[int, str]:
        """The papers' count for this plan (:func:`~protocols.simulators.exchange_plan.theorem_count`)."""
        return theorem_count(self.plan(model, encoded))

    def make_protocol(self, model, encoded: Encoded) -> Protocol:
        """The party programs for the task's partition."""
        return AttentionExchangeProtocol(model, self.plan(model, encoded))

    def direct_labels(self, model, encoded: Encoded) -> np.ndarray:
        """The layer's own decision at the output position."""
        return model.decide(encoded.tokens, int(encoded.output_positions[0]))[:, None]

    def details(self, model: AttentionLayer, plan: ExchangePlan) -> dict:
        """The plan's itemized bits beside the theorem's count (the report's ``details``)."""
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

    def sweep(self, model, encoded: Encoded, progress: Callable | None = None) -> Sweep:
        """The vectorized exchange and the direct forward on every instance, in chunks."""
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
            exact[s:s + chunk] = np.all(model.arithmetic.key(raw_p) == model.arithmetic.key(raw_d), axis=1)
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
        from commsim.pipeline.stages import Prepared, direct_answers, run_one_instance
        cache: dict = {}

        def plan_for(encoded):
            """The plan for an encoding's partition (cached: one per split)."""
            key = (encoded.seq_len, encoded.alice_positions.tobytes(), tuple(encoded.output_positions))
            if key not in cache:
                cache[key] = self.plan(model, encoded)
            return cache[key]

        def evaluate(A, B):
            """The vectorized exchange's answers and transcript keys on instances (A, B)."""
            encoded = reduction.encode(problem, A, B)
            plan = plan_for(encoded)
            chunk = _chunk(model, encoded.seq_len)
            answers, keys = [], []
            for s in range(0, encoded.batch, chunk):
                raw, k = simulate(model, plan, encoded.tokens[s:s + chunk])
                answers.append(reduction.decode(model.labels(raw)[:, None], B[s:s + chunk]))
                keys.append(k)
            return np.concatenate(answers), np.concatenate(keys)

        setup = Prepared(reduction, problem, model, self)

        def direct(A, B):
            """The model's direct answers on instances (A, B)."""
            return direct_answers(setup, A, B)

        def transcript(a, b):
            """The runner's transcript on one instance."""
            return run_one_instance(setup, a, b).result.transcript

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
