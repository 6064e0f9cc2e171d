"""``commsim separate eq``: two-layer attention of width O(log N) (Theorem 6) vs recurrent and one-layer attention >= N/2 bits (Theorems 11, 12)."""
from __future__ import annotations

import math

import numpy as np

from commsim import load_plugins
from protocols.constructions.orthogonal import DEFAULT_GAMMA
from protocols.separations.base import (
    GAMMA,
    INPUTS_NOTE,
    TWO_LAYER_TAIL_COLUMNS,
    WIDTH_NOTE,
    Separation,
    SeparationResult,
    inputs_info,
    instances_for,
    model_width,
    recurrent_check,
    two_layer_bounds,
    two_layer_crossover_note,
    two_layer_plot,
)
from protocols.theorems import equality_bits


class EqSeparation(Separation):
    """Equality: two-layer attention of width O(log N) vs recurrent and one-layer attention >= N/2 bits."""

    name = "eq"
    description = "equality: two-layer attention of width O(log N) vs recurrent and one-layer attention >= N/2 bits"
    smallest = 4
    largest = 1 << 12
    even = True
    options = (GAMMA,)
    #: entries of the first layer's N x N attention matrices evaluated per N (bounds the time at large N)
    WORK = 1 << 27

    def row(self, N, run, *, gamma=DEFAULT_GAMMA):
        """Equality at N: the two-layer model and both bounds."""
        from protocols.constructions.eq2 import build_eq2
        reduction = load_plugins().get("reduction", "eq-ineq")
        half = N // 2
        problem = reduction.problem(half)
        seed = run.seed
        A, B, described = instances_for(problem, 4 ** half, run.instances, seed, cap=max(8, self.WORK // (N * N)),
                                        given=run.instances_given)
        if described != "all":  # a quarter equal, a quarter differing in one bit (the hard ones), half uniform
            rng = np.random.default_rng(seed + 1)
            kind = np.arange(len(A)) % 4
            B = np.where((kind <= 1)[:, None], A, rng.integers(0, 2, size=A.shape, dtype=A.dtype))
            hard = np.flatnonzero(kind == 1)
            B[hard, rng.integers(0, half, size=hard.size)] ^= 1
        expected = problem.evaluate_batch(A, B)
        encoded = reduction.encode(problem, A, B)
        model = build_eq2(half, seed=seed, gamma=gamma)
        answers = reduction.decode(model.forward(encoded.tokens)[:, None], B)
        accuracy = float(np.mean(answers == expected))
        rnn_accuracy, rnn_bits = recurrent_check("memorize", reduction, half, encoded, B, expected)
        p = model.precision
        return {**self._sizes(model, N), "gamma": gamma, "parameter_bits": model.parameter_count * p, **inputs_info(described, len(A)), "accuracy": accuracy,
                **two_layer_bounds(equality_bits(half), p, N, rnn_bits, rnn_accuracy),
                "verified": accuracy == 1.0 and rnn_accuracy == 1.0}

    @staticmethod
    def _sizes(model, N: int) -> dict:
        """The model's m, d, width = max(m, d) and width·p, with the recurrent bound N/2."""
        info = model.info
        width = model_width(info["width"], info["embedding_dim"])
        return {"N": N, "k": info["k"], "qk_width": info["width"], "embedding_dim": info["embedding_dim"],
                "width": width, "precision": model.precision, "width_bits": width * model.precision,
                "rnn_bound_bits": equality_bits(N // 2)}

    def sizes(self, N, *, seed=0, gamma=DEFAULT_GAMMA, **_):
        """The Theorem 6 model built at N (not verified) and the recurrent bound."""
        from protocols.constructions.eq2 import build_eq2
        return self._sizes(build_eq2(N // 2, seed=seed, gamma=gamma), N)

    def result(self, n, rows, run):
        """The equality separation."""
        return SeparationResult(
            "eq", "string equality (EQ / INEQ)",
            "two attention layers of width O(log N) decide equality of the two halves, while a recurrent model "
            "needs m*p >= N/2 and a one-layer attention 3m(p + log N)H >= N/2",
            n,
            {"arch": "two-layer attention", "model": "construct:eq2", "source": "Theorem 6 of [BHBK24]",
             "formula": "d = 2k + 5, width max(m, d) = O(log N), p = O(log N); no one-layer protocol simulates it "
                        "(Lemma 5)",
             "verdict": "at N = {N}: the two-layer model has width max(m, d) = {width} at {precision} bits "
                        "(width*p = {width_bits} bits) and is correct on {instances} inputs; a recurrent model needs m*p >= {rnn_bound_bits} "
                        "bits (the memorizing recurrence meets it with {memorize_bits}) and a one-layer attention "
                        "{one_layer_bound_bits} bits of exchange, mH >= {one_layer_min_width:.3f} at p = {precision}"},
            {"arch": "recurrent and one-layer attention", "model": "memorize (attains the RNN bound)",
             "source": "Theorems 11 and 12 of [BHBK24]",
             "formula": "RNN: m*p >= N/2 (one-way); one-layer attention: 3m(p + log N)H >= N/2 (two-way)"},
            [{"key": "N", "label": "N"}, {"key": "k", "label": "k"}, {"key": "qk_width", "label": "m"},
             {"key": "embedding_dim", "label": "d"}, {"key": "width", "label": "width max(m,d)"}]
            + TWO_LAYER_TAIL_COLUMNS,
            rows,
            two_layer_plot("construct:eq2"),
            notes=[two_layer_crossover_note(rows, self, run), WIDTH_NOTE,
                   "Two-layer columns: k (nearly orthogonal vectors), m, d = 2k + 5, the width max(m, d), precision "
                   "p, width·p, every "
                   "parameter at p bits, accuracy (INEQ). memo acc.: the memorizing recurrence (N/2 state bits).",
                   INPUTS_NOTE,
                   "Sampled inputs: a quarter are equal, a quarter differ in exactly one bit, the rest uniform.",
                   "At large N the first layer's N x N attention is costly; the number of sampled inputs is capped "
                   f"so that about 2^{int(math.log2(self.WORK))} attention entries are evaluated per N."])
