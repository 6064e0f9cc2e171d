"""The attention exchange's party programs: what Alice and Bob each compute, from their own share only.

Run by the runner (:func:`commsim.core.runner.run_protocol`); every message is an exact bit string of the
width the plan (:mod:`protocols.simulators.attention.plan`) gives it.  The steps are those of Theorem 4 of
[BHBK24] (two-way) and of the one-way protocol of [SHT23], as described in
:mod:`protocols.simulators.attention.exchange`.
"""
from __future__ import annotations

import numpy as np

from commsim.contract import (
    Protocol,
    Receive,
    Send,
    Share,
    pack_count,
    pack_signed,
    run_protocol,
    unpack_count,
    unpack_signed,
)
from protocols.models.attention import AttentionLayer
from protocols.simulators.attention.plan import ExchangePlan, make_plan

__all__ = ["AttentionExchangeProtocol", "run_exchange"]


class AttentionExchangeProtocol(Protocol):
    """The party programs of the exchange; shares are :class:`commsim.contract.Share` values."""

    name = "attention-exchange"

    def __init__(self, model: AttentionLayer, plan: ExchangePlan):
        """The programs for ``model`` on the partition ``plan`` lays out."""
        self.model, self.plan = model, plan
        self.output_party = plan.output_party

    def alice(self, share):
        """Alice's program."""
        return self._program("alice", share)

    def bob(self, share):
        """Bob's program."""
        return self._program("bob", share)

    def _program(self, me: str, share):
        """The program of party ``me`` for the plan's mode and its role in it."""
        plan = self.plan
        if plan.mode == "local":
            return self._local(me, share)
        if plan.mode == "one-way":
            return self._sender(share) if me == plan.query_owner else self._receiver(share)
        return self._query_owner(share) if me == plan.query_owner else self._other(share)

    # helpers: everything a party computes, from its own share only
    def _own(self, share, attended_only: bool = True):
        """The party's tokens (1, k) and positions that enter the query's attention."""
        pos = np.asarray(share.positions, dtype=np.int64)
        tok = np.asarray(share.tokens)
        keep = pos != self.plan.query if (attended_only and not self.plan.attend_self) else np.ones(len(pos), bool)
        return tok[None, keep], pos[keep]

    def _query_token(self, share):
        """The query position's token (the query owner's share holds it)."""
        pos = np.asarray(share.positions)
        return np.asarray(share.tokens)[pos == self.plan.query]

    def _output(self, raw):
        """(labels, output values) of raw model outputs: what the output party returns."""
        model = self.model
        return np.asarray(model.labels(raw)).reshape(-1), model.arithmetic.to_values(raw)[0]

    def _local(self, me, share):
        """One party owns every position: it runs the layer alone, no message."""
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
            yield Send(f"query/head {h}", model.arithmetic.encode(q[0, h]))
        return q

    def _receive_queries(self):
        """Step 1 on the other side: each head's q_N, decoded; returns q of shape (1, H, m)."""
        plan = self.plan
        q = []
        for h in range(plan.heads):
            q.append(self.model.arithmetic.decode((yield Receive(f"query/head {h}")), plan.width))
        return np.stack(q)[None]

    def _sender(self, share):
        """One-way, the query owner ([SHT23]): x_N alone, or q_N per head, x_N's coordinates psi reads and
        its own term -- the plan's cheaper message."""
        model, plan, ar = self.model, self.plan, self.model.arithmetic
        if plan.one_way_message == "embedding":
            x = model.query_embedding(self._query_token(share), plan.query)
            yield Send("embedding", ar.encode(model.embedding_message(x)[0]))
            return None
        q = yield from self._send_queries(share)
        if plan.residual:
            yield Send("embedding", ar.encode(model.residual_input(self._query_token(share), plan.query)[0]))
        if plan.attend_self:
            A, V = model.scan(np.asarray(share.tokens)[None], np.asarray(share.positions), q, plan.query)
            for h in range(plan.heads):
                yield Send(f"self/head {h}", ar.encode(np.concatenate([A[0, h], V[0, 0, h].astype(A.dtype)])))
        return None

    def _receiver(self, share):
        """One-way, the other party: attends over its positions (and the query's own term) and outputs."""
        model, plan, ar = self.model, self.plan, self.model.arithmetic
        H, m = plan.heads, plan.width
        if plan.one_way_message == "embedding":   # x_N: q_N, the query's own term and psi's input follow
            x = model.embedding_from_message(ar.decode((yield Receive("embedding")), plan.dim)[None], plan.query)
            q = model.queries_of(x, plan.query)
            tok, pos = self._own(share)
            A, V = model.scan(tok, pos, q, plan.query)
            if plan.attend_self:
                A_s, V_s = model.own_term(x, q, plan.query)
                A, V = np.concatenate([A, A_s], axis=2), np.concatenate([V, V_s.astype(V.dtype)], axis=1)
            x_query = x[:, model.residual_coords] if plan.residual else None
            Z, U = model.aggregate(A, V, A.max(axis=-1))
            return self._output(model.finish(U, Z, x_query))
        q = yield from self._receive_queries()
        x_query = None
        if plan.residual:
            x_query = ar.decode((yield Receive("embedding")), plan.residual)[None]
        tok, pos = self._own(share)
        A, V = model.scan(tok, pos, q, plan.query)
        if plan.attend_self:
            own = []
            for h in range(H):
                own.append(ar.decode((yield Receive(f"self/head {h}")), m + 1))
            A = np.concatenate([A, np.array([[[o[0]] for o in own]], dtype=A.dtype)], axis=2)
            V = np.concatenate([V, np.array([[[o[1:] for o in own]]]).astype(V.dtype)], axis=1)
        Z, U = model.aggregate(A, V, A.max(axis=-1))
        return self._output(model.finish(U, Z, x_query))

    def _query_owner(self, share):
        """Two-way, the query owner: sends q_N and its maximum, adds the other's Z (per-weight: sends its own
        partial Z back) and U, divides, outputs."""
        model, plan, ar = self.model, self.plan, self.model.arithmetic
        H = plan.heads
        q = yield from self._send_queries(share)
        tok, pos = self._own(share)
        A, V = model.scan(tok, pos, q, plan.query)
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
        per_weight = plan.division == "per-weight"
        # division once: Z and U in one pass over the weights (U does not read Z); per-weight: U needs the whole Z
        Z, U = (model.weight_sum(A, M), None) if per_weight else model.partial_sums(A, V, M)
        Z_all = _exact(Z + Z_other)
        if per_weight:
            for h in range(H):
                yield Send(f"Z owner/head {h}", pack_count(Z[0, h], plan.z_owner_width))
        U_other = np.zeros((1, H, plan.width), dtype=object)
        for h in range(H):
            U_other[0, h] = unpack_signed((yield Receive(f"U/head {h}")), plan.u_width, plan.width)
        if per_weight:
            U = model.weighted_sum(A, V, M, Z_all)
        x_query = model.residual_input(self._query_token(share), plan.query)   # its own position: no bits
        return self._output(model.finish(_exact(U + U_other), Z_all, x_query))

    def _other(self, share):
        """Two-way, the other party: its maximum, then its exact partial sums Z and U."""
        model, plan, ar = self.model, self.plan, self.model.arithmetic
        H = plan.heads
        q = yield from self._receive_queries()
        theirs = []
        for h in range(H):
            theirs.append(ar.decode((yield Receive(f"max/head {h}")), 1)[0])
        tok, pos = self._own(share)
        A, V = model.scan(tok, pos, q, plan.query)
        local_max = A.max(axis=-1)
        for h in range(H):
            yield Send(f"max/head {h}", ar.encode(local_max[0, h:h + 1]))
        M = np.maximum(local_max, np.array([theirs], dtype=local_max.dtype))
        per_weight = plan.division == "per-weight"
        Z, U = (model.weight_sum(A, M), None) if per_weight else model.partial_sums(A, V, M)   # once: one pass
        for h in range(H):
            yield Send(f"Z/head {h}", pack_count(Z[0, h], plan.z_width))
        if per_weight:   # a_i = [e_i / Z] needs the whole Z: the owner's part comes back
            Z_owner = np.zeros((1, H), dtype=object)
            for h in range(H):
                Z_owner[0, h] = unpack_count((yield Receive(f"Z owner/head {h}")), plan.z_owner_width)
            U = model.weighted_sum(A, V, M, _exact(Z + Z_owner))
        for h in range(H):
            yield Send(f"U/head {h}", pack_signed(U[0, h], plan.u_width))
        return None


def _exact(a) -> np.ndarray:
    """Exact integer sums as int64 when they fit, else Python integers."""
    a = np.asarray(a, dtype=object)
    if a.size and max(abs(int(v)) for v in a.reshape(-1)) < (1 << 62):
        return a.astype(np.int64)
    return a


def run_exchange(model: AttentionLayer, tokens, alice_positions, query: int | None = None, *, audit: bool = False):
    """Run the exchange on one token sequence for a partition given by Alice's positions;
    returns the runner's :class:`~commsim.core.runner.RunResult` (output: (labels, raw outputs))."""
    tokens = np.asarray(tokens).reshape(-1)
    model.check_input(len(tokens), tokens)
    plan = make_plan(model, len(tokens), alice_positions, query)
    a, b = plan.positions("alice"), plan.positions("bob")
    return run_protocol(AttentionExchangeProtocol(model, plan), Share(a, tokens[a].copy(), len(tokens)),
                        Share(b, tokens[b].copy(), len(tokens)), audit=audit)
