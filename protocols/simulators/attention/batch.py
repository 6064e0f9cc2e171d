"""The attention exchange over a batch: the same computation as the party programs, vectorized.

:func:`simulate` returns, for every row of tokens, the output party's raw output and the transcript's
keys -- every message value in order, as int64 columns -- so that equal keys mean equal transcripts.
The rectangle certificate (:mod:`commsim.certify.rectangle`) digests those rows; every collision it
uses is re-checked on transcripts the runner produced.
"""
from __future__ import annotations

import numpy as np

from commsim.contract import message_rows, pack_signed, row_digests
from protocols.models.attention import AttentionLayer
from protocols.simulators.attention.plan import ExchangePlan

__all__ = ["simulate"]


def _sum_keys(sums, width: int, batch: int) -> np.ndarray:
    """Exact partial sums (Z or U) as int64 key columns, one row per instance.

    Sums that fit in int64 are their own keys.  Wider ones (Python integers: the exact sums of the IEEE
    formats) are written in ``width``-bit two's complement, as in the message, and each instance's bits
    are reduced to one 64-bit digest column by :func:`commsim.core.digests.row_digests`.
    """
    a = np.asarray(sums).reshape(batch, -1)
    if a.dtype != object:
        return a.astype(np.int64)
    rows = message_rows(pack_signed(a.reshape(-1), width), batch)
    return row_digests(rows).view(np.int64)


def simulate(model: AttentionLayer, plan: ExchangePlan, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The protocol on a batch of token rows: the output party's raw outputs (B, C) and the
    transcript keys (B, K) -- every message value in order, so equal keys mean equal transcripts."""
    T = np.atleast_2d(np.asarray(tokens))
    B = T.shape[0]
    ar, qpos = model.arithmetic, plan.query
    if plan.mode == "local":
        return model.forward_rep(T, qpos), np.zeros((B, 0), dtype=np.int64)
    if plan.mode == "one-way" and plan.one_way_message == "embedding":   # x_N alone: the receiver does the rest
        x = model.query_embedding(T[:, qpos], qpos)
        q = model.queries_of(x, qpos)
        pos = plan.attended(plan.output_party)
        A, V = model.scan(T[:, pos], pos, q, qpos)
        if plan.attend_self:
            A_s, V_s = model.own_term(x, q, qpos)
            A, V = np.concatenate([A, A_s], axis=2), np.concatenate([V, V_s.astype(V.dtype)], axis=1)
        Z, U = model.aggregate(A, V, A.max(axis=-1))
        x_query = x[:, model.residual_coords] if plan.residual else None
        return model.finish(U, Z, x_query), ar.key(model.embedding_message(x)).reshape(B, -1)
    q = model.query_vectors(T[:, qpos], qpos)
    x_query = model.residual_input(T[:, qpos], qpos)
    keys = [ar.key(q).reshape(B, -1)]
    if plan.mode == "one-way":
        if x_query is not None:
            keys.append(ar.key(x_query).reshape(B, -1))
        receiver = plan.output_party
        pos = plan.attended(receiver)
        A, V = model.scan(T[:, pos], pos, q, qpos)
        if plan.attend_self:
            A_s, V_s = model.scan(T[:, [qpos]], np.array([qpos]), q, qpos)
            keys += [ar.key(A_s).reshape(B, -1), ar.key(V_s).reshape(B, -1)]
            A, V = np.concatenate([A, A_s], axis=2), np.concatenate([V, V_s], axis=1)
        Z, U = model.aggregate(A, V, A.max(axis=-1))
        return model.finish(U, Z, x_query), np.concatenate(keys, axis=1)
    pos_q, pos_o = plan.attended(plan.query_owner), plan.positions(plan.other)
    A_q, V_q = model.scan(T[:, pos_q], pos_q, q, qpos)
    A_o, V_o = model.scan(T[:, pos_o], pos_o, q, qpos)
    max_q, max_o = A_q.max(axis=-1), A_o.max(axis=-1)
    M = np.maximum(max_q, max_o)
    if plan.division == "per-weight":   # a_i = [e_i / Z]: the whole Z first, then the U terms
        Z_o, Z_q = model.weight_sum(A_o, M), model.weight_sum(A_q, M)
        U_o, U_q = model.weighted_sum(A_o, V_o, M, Z_q + Z_o), model.weighted_sum(A_q, V_q, M, Z_q + Z_o)
    else:                               # division once: each part's (Z, U) in one pass
        (Z_o, U_o), (Z_q, U_q) = model.partial_sums(A_o, V_o, M), model.partial_sums(A_q, V_q, M)
    Z = Z_q + Z_o
    # Z is unsigned in the message (z_width bits); one more bit writes it in two's complement
    keys += [ar.key(max_q), ar.key(max_o), _sum_keys(Z_o, plan.z_width + 1, B)]
    if plan.division == "per-weight":   # the query owner's partial Z travels back
        keys.append(_sum_keys(Z_q, plan.z_owner_width + 1, B))
    keys.append(_sum_keys(U_o, plan.u_width, B))
    return model.finish(U_q + U_o, Z, x_query), np.concatenate(keys, axis=1)
