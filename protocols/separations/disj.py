"""``commsim separate disj``: disjointness as a threshold of 2-sparse features in two attention layers of
width O(log N) (Theorem 13) vs recurrent m p >= N/2 and one-layer attention 3m(p + log N)H >= N/2 (Fact 1)."""
from __future__ import annotations

import numpy as np

from commsim import load_plugins, make_model
from commsim.theory.problems import make_problem
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
    two_layer_bounds,
    two_layer_crossover_note,
    two_layer_plot,
)
from protocols.theorems import disjointness_bits


class DisjSeparation(Separation):
    """DISJ on N = 2n bits: Theorem 13's two layers vs the recurrent and one-layer DISJ bounds."""

    name = "disj"
    description = "disjointness: two-layer attention of width O(log N) (Theorem 13) vs recurrent and one-layer >= N/2"
    options = (GAMMA,)
    smallest = 4
    largest = 1 << 12
    even = True
    #: attention entries (inputs x N^2 x width x heads) evaluated per N
    WORK = 1 << 28
    #: every (a, b) is checked up to this many pairs
    EXHAUSTIVE = 1 << 12

    def row(self, N, run, *, gamma=DEFAULT_GAMMA):
        """DISJ_(N/2) on x = a b: the Theorem 13 model and the memorizing recurrence over disj-mqar."""
        seed, instances = run.seed, run.instances
        half = N // 2
        problem = make_problem("disj", half)
        model = make_model(f"construct:thres:h=disj,n={half},gamma={gamma},seed={seed}")
        cap = max(8, self.WORK // (N * N * model.width * model.info["heads"]))
        if run.checks_all(4 ** half, self.EXHAUSTIVE):
            A, B, described = instances_for(problem, 4 ** half, None, seed)
        else:
            count = max(1, min(instances, cap))
            A, B = problem.sample(np.random.default_rng(seed), count)
            described = f"{count} sampled"
        if described != "all":  # a third disjoint complements, a third meeting in exactly one bit, the rest uniform
            rng = np.random.default_rng(seed + 1)
            kind = np.arange(len(A)) % 3
            B = np.where((kind <= 1)[:, None], 1 - A, B)
            one = np.flatnonzero(kind == 1)
            where = rng.integers(0, half, size=one.size)
            A[one, where], B[one, where] = 1, 1
        expected = problem.evaluate_batch(A, B)
        X = np.concatenate([A, B], axis=1).astype(np.int64)
        accuracy = float(np.mean(model.forward(X) == expected))
        mqar = load_plugins().get("reduction", "disj-mqar")
        mproblem = mqar.problem(half)
        encoded = mqar.encode(mproblem, A, B)
        memo = make_model("memorize", **mqar.model_context(half))
        labels = memo.labels(memo.forward_batch(encoded.tokens, encoded.output_positions))
        rnn_accuracy = float(np.mean(mqar.decode(labels, B) == expected))
        p = model.precision
        return {**self._sizes(model, N), "gamma": gamma, "qk_width_bits": model.width * p * model.info["heads"],
                "parameter_bits": model.parameter_count * p, **inputs_info(described, len(A)), "accuracy": accuracy,
                **two_layer_bounds(disjointness_bits(half), p, N, int(memo.state_bits), rnn_accuracy),
                "verified": accuracy == 1.0 and rnn_accuracy == 1.0}

    @staticmethod
    def _sizes(model, N: int) -> dict:
        """The model's m, d, width = max(m, d) and width·p, with the recurrent bound N/2."""
        info = model.info
        width = model_width(model.width, info["embedding_dim"])
        return {"N": N, "k": info["k"], "heads": info["heads"], "qk_width": model.width,
                "embedding_dim": info["embedding_dim"], "width": width, "precision": model.precision,
                "width_bits": width * model.precision, "rnn_bound_bits": disjointness_bits(N // 2)}

    def sizes(self, N, *, seed=0, gamma=DEFAULT_GAMMA, **_):
        """The Theorem 13 model built at N (not verified) and the recurrent bound."""
        return self._sizes(make_model(f"construct:thres:h=disj,n={N // 2},gamma={gamma},seed={seed}"), N)

    def result(self, n, rows, run):
        """The disjointness separation."""
        return SeparationResult(
            "disj", "set disjointness (DISJ), a threshold of 2-sparse features",
            "two attention layers of width O(log N) decide DISJ (a threshold of the 2-sparse features "
            "a_i AND b_i, Theorem 13), while a recurrent model needs m*p >= N/2 and a one-layer attention "
            "3m(p + log N)H >= N/2 bits of exchange",
            n,
            {"arch": "two-layer attention", "model": "construct:thres:h=disj", "source": "Theorem 13 of [BHBK24]",
             "formula": "k = 2 heads in layer 1, width max(m, d) = O(log N), p = O(log N); no one-layer protocol "
                        "simulates it (Lemma 5)",
             "verdict": "at N = {N}: the two-layer model ({heads} heads) has width max(m, d) = {width} (m = "
                        "{qk_width}, d = {embedding_dim}) at {precision} bits (width*p = {width_bits}) and is correct on {instances} "
                        "inputs; a recurrent model needs m*p >= {rnn_bound_bits} bits (the memorizing recurrence "
                        "over disj-mqar meets it with {memorize_bits}) and a one-layer attention "
                        "{one_layer_bound_bits} bits of exchange, mH >= {one_layer_min_width:.3f} at p = {precision}"},
            {"arch": "recurrent and one-layer attention", "model": "memorize on disj-mqar (attains the RNN bound)",
             "source": "Theorem 8 and Fact 1 of [BHBK24]; Theorem 4 for one layer",
             "formula": "RNN: m*p >= N/2 (one-way); one-layer attention: 3m(p + log N)H >= N/2 (two-way)"},
            [{"key": "N", "label": "N"}, {"key": "k", "label": "k"}, {"key": "heads", "label": "H"},
             {"key": "qk_width", "label": "m"}, {"key": "embedding_dim", "label": "d"},
             {"key": "width", "label": "width max(m,d)"}] + TWO_LAYER_TAIL_COLUMNS,
            rows,
            two_layer_plot("construct:thres"),
            notes=[two_layer_crossover_note(rows, self, run), WIDTH_NOTE,
                   "DISJ(a, b) = 1 when the sets meet (the papers' convention), on x = a b of length N = 2n: the "
                   "features a_i AND b_(i) (I_i = {i, i + N/2}) with threshold 0. Sampled inputs: a third are "
                   "complements (disjoint, the fooling set), a third meet in exactly one bit, the rest uniform.",
                   INPUTS_NOTE])
