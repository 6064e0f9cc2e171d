"""``commsim separate idxl``: one-layer attention of width O(log N) (Theorem 1) vs recurrent m p >= N (Theorem 3)."""
from __future__ import annotations

from commsim import load_plugins
from protocols.constructions.orthogonal import DEFAULT_GAMMA
from protocols.separations.base import (
    GAMMA,
    INPUTS_NOTE,
    WIDTH_NOTE,
    Separation,
    SeparationResult,
    attention_check,
    crossover_note,
    exchange_bits,
    inputs_info,
    instances_for,
    model_width,
    recurrent_check,
)
from protocols.theorems import index_one_way_bits


class IdxlSeparation(Separation):
    """Index lookup: one-layer attention of width O(log N) (Theorem 1) vs recurrent m p >= N (Theorem 3)."""

    name = "idxl"
    description = "index lookup: one-layer attention of width O(log N) vs recurrent state bits >= N"
    options = (GAMMA,)
    smallest = 4
    largest = 1 << 14

    def row(self, N, run, *, gamma=DEFAULT_GAMMA):
        """Index lookup at N: the idxl layer and the memorizing recurrence."""
        from protocols.constructions.idxl import build_idxl
        reduction = load_plugins().get("reduction", "index-idxl")
        problem = reduction.problem(N)
        A, B, described = instances_for(problem, N * 2 ** N, run.instances, run.seed, given=run.instances_given)
        expected = problem.evaluate_batch(A, B)
        encoded = reduction.encode(problem, A, B)
        model = build_idxl(N, seed=run.seed, gamma=gamma)
        accuracy, exact, _ = attention_check(reduction, model, N, A, B)
        rnn_accuracy, rnn_bits = recurrent_check("memorize", reduction, N, encoded, B, expected)
        info = model.info
        return {**self._sizes(model, N), "gamma": gamma, "k_theorem": info["k_theorem"],
                "parameter_bits": info["parameter_bits"], "protocol_bits": exchange_bits(model, encoded),
                **inputs_info(described, len(A)), "accuracy": accuracy, "protocol_exact": exact,
                "memorize_bits": rnn_bits, "memorize_accuracy": rnn_accuracy,
                "verified": accuracy == 1.0 and exact and rnn_accuracy == 1.0}

    @staticmethod
    def _sizes(model, N: int) -> dict:
        """The layer's m, d, width = max(m, d) and width·p, with the recurrent bound N."""
        info = model.info
        width = model_width(info["width"], info["embedding_dim"])
        return {"N": N, "k": info["k"], "qk_width": info["width"], "dim": info["embedding_dim"], "width": width,
                "precision": info["precision"], "width_bits": width * info["precision"],
                "rnn_bound_bits": index_one_way_bits(N)}

    def sizes(self, N, *, seed=0, gamma=DEFAULT_GAMMA, **_):
        """The idxl layer built at N (not verified) and the recurrent bound."""
        from protocols.constructions.idxl import build_idxl
        return self._sizes(build_idxl(N, seed=seed, gamma=gamma), N)

    def result(self, n, rows, run):
        """The index-lookup separation."""
        return SeparationResult(
            "idxl", "index lookup (IdxL)",
            "one attention layer of width O(log N) and precision O(log N) performs index lookup, while every "
            "recurrent model needs a state of m*p >= N bits",
            n,
            {"arch": "one-layer attention", "model": "construct:idxl", "source": "Theorem 1 of [BHBK24]",
             "formula": "width max(m, d) = d = 2k + 1, m = k = O(log N / gamma^2) (Lemma 2), p = O(log N)",
             "verdict": "at N = {N}: the attention layer has width max(m, d) = {width} at {precision} bits "
                        "(width*p = {width_bits} bits; its exchange with the query's owner takes {protocol_bits} bits) and is correct on "
                        "{instances} inputs; a recurrent model needs m*p >= {rnn_bound_bits} bits, which the "
                        "memorizing recurrence meets exactly ({memorize_bits} bits)"},
            {"arch": "recurrent (any RNN, LSTM, SSM, ...)", "model": "memorize (attains the bound)",
             "source": "Theorem 3 of [BHBK24] (one-way INDEX)", "formula": "m*p >= N (one-way, contiguous split)"},
            [{"key": "N", "label": "N"}, {"key": "qk_width", "label": "m"}, {"key": "dim", "label": "d"},
             {"key": "width", "label": "width max(m,d)"}, {"key": "precision", "label": "p"},
             {"key": "width_bits", "label": "width·p"}, {"key": "parameter_bits", "label": "all params"},
             {"key": "protocol_bits", "label": "exchange"}, {"key": "inputs_shown", "label": "inputs"},
             {"key": "accuracy", "label": "acc."}, {"key": "protocol_exact", "label": "=model"},
             {"key": "rnn_bound_bits", "label": "RNN m·p≥"}, {"key": "memorize_accuracy", "label": "memo acc."}],
            rows,
            {"x": "N", "crossing": {"ours": "width_bits", "theirs": "rnn_bound_bits", "text": "the separation is asymptotic"}, "ylabel": "bits", "series": [
                {"key": "width_bits", "label": "one-layer attention: width·p, width = max(m, d) (construct:idxl)"},
                {"key": "protocol_bits", "label": "attention exchange bits (one-way, Bob → Alice)", "style": ":"},
                {"key": "rnn_bound_bits", "label": "recurrent lower bound: m·p ≥ N", "style": "--"}]},
            notes=[crossover_note(rows, "width_bits", "rnn_bound_bits", "the attention layer's width·p",
                                  "the recurrent bound N", self), WIDTH_NOTE,
                   "Attention columns: m (= k, the dimension of the nearly orthogonal vectors), d, the width "
                   "max(m, d), precision p, width·p, every parameter at p bits (embedding tables included), the exchange's bits on the "
                   "index-idxl split, accuracy, and whether the protocol's output equals the model's bit for bit. "
                   "memo acc.: the memorizing recurrence, whose state is exactly N bits.", INPUTS_NOTE,
                   "On the index-idxl split only Bob (the index and the query) speaks: INDEX one-way from "
                   "Bob costs only ceil(log2 n) bits, so Theorem 3's n bits (Alice to Bob) do not bind the "
                   "attention layer."])
