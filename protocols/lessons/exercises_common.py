"""What the exercise files share: the seeded generator, the recurrent handoff, and the run of one instance.

Every check runs commsim: a state is the model's own state after Alice's tokens, an answer is the protocol's
answer and the direct forward's, a bound is the reduction's own bound.
"""
from __future__ import annotations

import zlib

import numpy as np

from protocols.lessons.common import bits_text, engine, run_one

__all__ = ["rng_for", "handoff_state", "run_pair", "bob_text", "first_collision", "field", "model_setup"]


def rng_for(topic: str, seed: int, k: int) -> np.random.Generator:
    """The generator of exercise ``k`` of ``topic`` at ``seed`` (independent of the other exercises)."""
    return np.random.default_rng([int(seed), zlib.crc32(topic.encode()), int(k)])


def field(ident: str) -> str:
    return f"answers.{ident}"


def handoff_state(reduction, problem, model, alice_rows) -> list[str]:
    """The state bits a recurrent model hands off after each row of Alice's inputs (her prefix run through the
    model; the message of Theorem 2)."""
    A = np.asarray(alice_rows, dtype=np.uint8)
    B = np.zeros((len(A),) + tuple(np.shape(problem.sample(np.random.default_rng(0), 1)[1][0])), dtype=np.int64)
    enc = reduction.encode(problem, A, B)
    cut = len(enc.alice_positions)
    h, _ = model.run(np.asarray(enc.tokens)[:, :cut])
    return [str(model.format.encode(row)) for row in np.asarray(h).reshape(len(A), -1)]


def first_collision(reduction, problem, model) -> tuple[np.ndarray, np.ndarray] | None:
    """Two different Alice inputs with the same handoff state (all of them tried, in order), or None."""
    A = problem.alice_inputs()
    seen: dict[str, int] = {}
    for k, s in enumerate(handoff_state(reduction, problem, model, A)):
        if s in seen:
            return np.asarray(A[seen[s]]), np.asarray(A[k])
        seen[s] = k
    return None


def bob_text(y) -> str:
    return f"b = {int(y) + 1}" if np.ndim(y) == 0 else f"y = {bits_text(y)}"


def run_pair(reduction, problem, model, simulator, xs, y) -> list[tuple[int, int, int]]:
    """(true answer, protocol's answer, direct forward's answer) of each Alice input in ``xs`` with Bob's ``y``,
    each through the real runner."""
    out = []
    for x in xs:
        x = np.asarray(x, dtype=np.uint8)
        _, _, answer, direct = run_one(reduction, problem, model, simulator, x, y)
        truth = int(problem.evaluate(x, y))
        out.append((truth, int(answer), int(direct)))
    return out


def model_setup(rid: str, spec: str, n: int):
    """(reduction, problem, model, simulator) as ``commsim run`` builds them."""
    return engine(rid, spec, n)
