"""The pigeonhole certificate for the public-query message ([PNP24], one-way).

Bob's answer depends only on Alice's message and his own input.  Two Alice inputs that send the same
message but have different answers for some Bob input make the model wrong on one of the two instances.
The candidates are the problem's (``problem.collision_candidates(rng)``: for composition, functions g that
differ in one value only, the cheapest place for a short message to lose information, plus uniform ones);
the separating Bob input is the problem's (``problem.separating_bob(a1, a2)``); the failure is confirmed by
direct forwards of the model and by recomputing both messages.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from commsim.certify.types import Certificate
from commsim.core.digests import GROUPS_TRIED, collision_groups

__all__ = ["one_way_collision"]


def one_way_collision(sim, model, reduction, problem, *, seed: int = 0,
                      progress: Callable | None = None) -> tuple[Certificate | None, str]:
    """(certificate or None, what was searched) for the public-query simulator ``sim``."""
    rng = np.random.default_rng(seed)
    A, B = problem.collision_candidates(rng)
    encoded = reduction.encode(problem, A, B)
    plan = sim.plan(model, encoded)
    chunk = max(1, (1 << 21) // max(1, encoded.seq_len * plan.heads * plan.width * plan.candidates))
    keys = []
    for s in range(0, len(A), chunk):
        keys.append(sim.batch(model, plan, encoded.tokens[s:s + chunk])[1])
        if progress:
            progress(min(s + chunk, len(A)), len(A))
    keys = np.concatenate(keys)
    groups = collision_groups(keys)
    searched = (f"searched {len(A):,} Alice inputs ({problem.candidates_described}, seed {seed}): Alice's "
                f"{plan.total_bits}-bit messages compared value for value")
    pairs = groups.pairs(A, GROUPS_TRIED)
    if not pairs:
        return None, searched + "; no two different Alice inputs share a message: no certificate (the search is " \
                                "not exhaustive, so the model may still fail on inputs not searched)"
    searched += f"; {len(groups)} group(s) of Alice inputs share a message"
    for i, j in pairs:
        y = problem.separating_bob(A[i], A[j], int(B[i, -1]))
        if y is None:
            continue
        A2, B2 = np.stack([A[i], A[j]]), np.stack([y, y])
        expected = problem.evaluate_batch(A2, B2).astype(int)
        enc = reduction.encode(problem, A2, B2)
        answers = reduction.decode(model.decide(enc.tokens, plan.query)[:, None], B2).astype(int)
        again = sim.batch(model, plan, enc.tokens)[1]
        same = bool(np.array_equal(again[0], again[1]))
        fail = 0 if answers[0] != expected[0] else 1
        other = 1 - fail
        verified = same and answers[0] == answers[1] and answers[fail] != expected[fail]
        explanation = (
            f"Alice inputs {problem.show_alice(A2[fail])} and {problem.show_alice(A2[other])} send the same "
            f"{plan.total_bits}-bit message (the one-way bound needs {problem.one_way_bits} bits: pigeonhole). Bob's "
            f"input {problem.show_bob(y)} separates them (answer {expected[fail]} vs {expected[other]}), but Bob "
            f"sees the same message, so the model answers the same on both and must be wrong on one: it answers "
            f"{answers[fail]} where the answer is {expected[fail]}. "
            + ("A direct forward of the model confirms this." if verified else
               "NOT confirmed by the direct forward."))
        details = {"colliding_alice_input": A2[other].tolist(), "other_expected": int(expected[other]),
                   "other_model_output": int(answers[other]), "message_bits": plan.total_bits,
                   "search": "sampled", "alice_inputs_searched": int(len(A)), "colliding_groups": len(groups)}
        cert = Certificate("collision", A2[fail].tolist(), np.asarray(y).tolist(), int(expected[fail]),
                           int(answers[fail]), explanation, bool(verified), details)
        if verified:
            return cert, searched
    return None, searched + "; no collision could be verified by a direct forward"
