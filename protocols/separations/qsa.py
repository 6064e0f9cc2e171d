"""``commsim separate qsa``: q-sparse averaging in one attention layer of width O(q^2 log N) ([SHT23], explicit
keys) and O(q log N) (``keys=rip``, sign keys searched and verified on every q-set) vs the recurrent bound (state
bits >= N - q, ``index-qsa`` at q = 1) and the one-layer bound (``disj-qsa``): the query attends to its own
position, so Alice's cheapest message is min(d·p, (2m + 1)·p·H) bits, and that must be >= q."""
from __future__ import annotations

import math

import numpy as np

from commsim import load_plugins
from commsim.contract import InputError
from commsim.contract.options import Option
from protocols.separations.base import (
    EXHAUSTIVE_LIMIT,
    INPUTS_NOTE,
    WIDTH_NOTE,
    Separation,
    SeparationResult,
    attention_check,
    crossing,
    crossover_note,
    exchange_bits,
    inputs_info,
    model_width,
    recurrent_check,
)
from protocols.theorems import one_way_message_bits, qsa_one_layer_bits, qsa_recurrent_bits

#: the one-layer bound of disj-qsa for a layer whose query attends to its own position (construct:qsa's)
ONE_LAYER_FORMULA = "min(d·p, (2m + 1)·p·H) >= q"

DEFAULT_Q = 2
MAX_SEPARATE_Q = 4
#: the rip keys are built (searched, every q-set verified) while C(N, q) is at most this
RIP_SEPARATE_SETS = 1 << 16


class QsaSeparation(Separation):
    """qSA: one attention layer of width O(q^2 log N) vs recurrent >= N - q bits."""

    name = "qsa"
    description = "q-sparse averaging: one-layer attention of width O(q^2 log N) vs recurrent state bits >= N - q"
    options = (Option("q", int, "Sparsity q of the query sets (qsa; default 2).", default=DEFAULT_Q),)
    smallest = 4
    largest = 1 << 11
    #: attention entries (inputs x N x width) evaluated per N
    WORK = 1 << 24

    def _q(self, q) -> int:
        q = DEFAULT_Q if q is None else int(q)
        if not 1 <= q <= MAX_SEPARATE_Q:
            raise InputError(f"q must be in 1..{MAX_SEPARATE_Q} for qsa, got {q}", "q")
        return q

    def run(self, n, *, seed=0, instances=1000, progress=None, **options):
        """As the base, after checking q (and that the smallest N holds q values and the query)."""
        q = self._q(options.get("q"))
        if n < q + 2:
            raise InputError(f"n must be at least q + 2 = {q + 2} for qsa with q = {q}", "n")
        return super().run(n, seed=seed, instances=instances, progress=progress, **{**options, "q": q})

    def shared(self, run) -> dict:
        """Every row's disj-qsa columns: the layout at N = 2q + 1 checked once per run (:meth:`_disj_check`)."""
        return self._disj_check(run.options["q"], run.seed)

    def _disj_check(self, q: int, seed: int) -> dict:
        """The disj-qsa layout at N = 2q + 1 through the attention protocol (every DISJ_q input)."""
        from protocols.constructions.qsa import build_qsa
        reduction = load_plugins().get("reduction", "disj-qsa")
        problem = reduction.problem(q)
        A, B = problem.all_pairs()
        encoded = reduction.encode(problem, A, B)
        model = build_qsa(2 * q + 1, q, layout="disj", seed=seed)
        accuracy, exact, _ = attention_check(reduction, model, q, A, B)
        rip = build_qsa(2 * q + 1, q, layout="disj", seed=seed, keys="rip")
        rip_accuracy, rip_exact, _ = attention_check(reduction, rip, q, A, B)
        return {"disj_accuracy": min(accuracy, rip_accuracy), "disj_protocol_exact": exact and rip_exact,
                "disj_protocol_bits": exchange_bits(model, encoded),
                "disj_rip_protocol_bits": exchange_bits(rip, encoded)}

    def row(self, N, run, *, q=DEFAULT_Q):
        """qSA on N positions: the layer's error on every input (small N) or seeded samples."""
        from protocols.constructions.qsa import all_qsa, build_qsa, qsa_average, sample_qsa
        seed, instances = run.seed, run.instances
        q = min(q, N - 2)
        model = build_qsa(N, q, seed=seed)
        total = 2 ** (N - 1) * math.comb(N - 1, q)
        if run.checks_all(total, EXHAUSTIVE_LIMIT):
            T, described = all_qsa(N, q), "all"
        else:
            count = max(8, min(instances, self.WORK // (N * model.width)))
            T, described = sample_qsa(np.random.default_rng(seed), count, N, q), f"{count} sampled"
        error = float(np.abs(model.forward(T)[:, 0] - qsa_average(T, q, "generic")).max())
        eps = model.info["epsilon"]
        memo_accuracy = None
        if q == 1:  # index-qsa: the memorizing recurrence attains N - 1 bits
            reduction = load_plugins().get("reduction", "index-qsa")
            problem = reduction.problem(N - 1)
            rng = np.random.default_rng(seed)
            A, B = problem.sample(rng, 256)
            encoded = reduction.encode(problem, A, B)
            memo_accuracy, _ = recurrent_check("memorize", reduction, N - 1, encoded, B, problem.evaluate_batch(A, B))
        p = model.precision
        rip = self._rip_row(N, q, seed, T)
        return {**self._sizes(model, N, q), "parameter_bits": (3 * model.width * model.dim + model.width) * p,
                **inputs_info(described, len(T)), "epsilon": eps, "max_error": error, **rip,
                "memorize_accuracy": memo_accuracy, **run.shared,
                "verified": error < eps and run.shared["disj_accuracy"] == 1.0 and run.shared["disj_protocol_exact"]
                and memo_accuracy in (None, 1.0) and (rip["rip_max_error"] is None or rip["rip_max_error"] < eps)}

    @staticmethod
    def _rip_row(N: int, q: int, seed: int, T: np.ndarray) -> dict:
        """The keys=rip layer at N: its m, width·p, every q-set verified, and its error on the same inputs T
        (None past :data:`RIP_SEPARATE_SETS` sets)."""
        from protocols.constructions.qsa import build_qsa, qsa_average
        if math.comb(N, q) > RIP_SEPARATE_SETS:
            return {"rip_m": None, "rip_width": None, "rip_precision": None, "rip_width_bits": None,
                    "rip_sets_verified": None, "rip_max_error": None,
                    "rip_text": f"keys=rip not built at N = {N} (C(N, q) = {math.comb(N, q)} sets to verify, over "
                                f"{RIP_SEPARATE_SETS})"}
        rip = build_qsa(N, q, seed=seed, keys="rip")
        error = float(np.abs(rip.forward(T)[:, 0] - qsa_average(T, q, "generic")).max())
        width = model_width(rip.width, rip.dim)
        return {"rip_m": rip.width, "rip_width": width, "rip_precision": rip.precision,
                "rip_width_bits": width * rip.precision, "rip_sets_verified": rip.info["sets_verified"],
                "rip_max_error": error,
                "rip_text": f"with searched sign keys (keys=rip, seed {seed}; all C({N}, {q}) = "
                            f"{rip.info['sets_verified']} q-sets verified exactly) m = {rip.width}, width max(m, d) = "
                            f"{width} at {rip.precision} bits (width*p = {width * rip.precision}), largest error "
                            f"{error:.2g}"}

    @staticmethod
    def _sizes(model, N: int, q: int) -> dict:
        """The layer's m, d, width = max(m, d), width·p and its one-way message min(d·p, (2m + 1)·p·H), with both
        bounds (recurrent N - q, one-layer q)."""
        p, width = model.precision, model_width(model.width, model.dim)
        return {"N": N, "q": q, "qk_width": model.width, "dim": model.dim, "width": width, "precision": p,
                "width_bits": width * p, "rnn_bound_bits": qsa_recurrent_bits(N, q),
                "one_layer_message_bits": one_way_message_bits(model.width, p, model.heads, model.config.message_dim,
                                                               attend_self=True),
                "one_layer_bound_bits": qsa_one_layer_bits(q)}

    def sizes(self, N, *, seed=0, q=DEFAULT_Q, **_):
        """The qSA layer built at N (not verified) and the bounds."""
        from protocols.constructions.qsa import build_qsa
        q = min(q, N - 2)
        return self._sizes(build_qsa(N, q, seed=seed), N, q)

    def result(self, n, rows, run):
        """The sparse-averaging separation."""
        return SeparationResult(
            "qsa", "q-sparse averaging (qSA)",
            "one self-attention layer of width O(q^2 log N) with explicit keys, O(q log N) with the slides' "
            "Candes-Tao keys (keys=rip: searched and verified on every q-set by commsim) approximates qSA to "
            "1/(4q), while a recurrent model needs N - q state bits; a one-layer attention "
            "whose query attends to its own position (as construct:qsa's does) itself needs "
            "min(d*p, (2m + 1)*p*H) >= q bits one-way (disj-qsa), so its width must grow with q",
            n,
            {"arch": "one-layer attention", "model": "construct:qsa (keys=lemma2; keys=rip)",
             "source": "[SHT23] (the Hsu slides, \"Construction using q-neighborly 0/1 polytopes\"); the rip "
                       "keys' search and exact verification are commsim's",
             "formula": "m = k = O(q^2 log N) (nearly orthogonal keys, gamma = 1/(3q)); keys=rip: k = O(q log N) "
                        "(sign keys with ||w_S|| <= 2 sqrt(q), <w_S, u_j> = 1 on S, |<w_S, u_j>| <= 1/2 off S); "
                        "d = 2k + 1, so width max(m, d) = d; p = O(log N)",
             "verdict": "at N = {N}, q = {q}: the layer has width max(m, d) = {width} at {precision} bits "
                        "(width*p = {width_bits}) "
                        "and its largest error on {instances} inputs is {max_error:.2g} (< 1/(4q) = {epsilon:.3g}); "
                        "on disj-qsa (N = 2q + 1) it decides DISJ_q through the attention protocol, bit for bit, "
                        "with {disj_protocol_bits} bits ({disj_rip_protocol_bits} with keys=rip); {rip_text}; "
                        "a recurrent model needs {rnn_bound_bits} state bits and a "
                        "self-attending one-layer attention min(d*p, (2m + 1)*p*H) >= {one_layer_bound_bits} (this "
                        "layer's: {one_layer_message_bits})"},
            {"arch": "recurrent; one-layer attention", "model": "memorize on index-qsa (q = 1)",
             "source": "[SHT23]; Fact 1 of [BHBK24] (disj-qsa)",
             "formula": "RNN: state bits >= N - q (INDEX_(N-q) one-way); one layer, the query attending to "
                        "itself: min(d*p, (2m + 1)*p*H) >= q (DISJ_q one-way; min(d*p, m*p*H) >= q without it)"},
            [{"key": "N", "label": "N"}, {"key": "q", "label": "q"}, {"key": "qk_width", "label": "m"},
             {"key": "dim", "label": "d"}, {"key": "width", "label": "width max(m,d)"},
             {"key": "precision", "label": "p"}, {"key": "width_bits", "label": "width·p"},
             {"key": "inputs_shown", "label": "inputs"}, {"key": "max_error", "label": "max err"},
             {"key": "epsilon", "label": "ε"}, {"key": "rip_m", "label": "m (rip)"},
             {"key": "rip_width_bits", "label": "width·p (rip)"}, {"key": "rip_max_error", "label": "max err (rip)"},
             {"key": "rnn_bound_bits", "label": "RNN bits≥"},
             {"key": "memorize_accuracy", "label": "memo acc."},
             {"key": "one_layer_message_bits", "label": "1-layer min(d·p,(2m+1)pH)"},
             {"key": "one_layer_bound_bits", "label": "1-layer ≥ q"}],
            rows,
            {"x": "N", "crossing": {"ours": "width_bits", "theirs": "rnn_bound_bits", "text": "the separation is asymptotic"}, "ylabel": "bits", "series": [
                {"key": "width_bits", "label": "one-layer attention: width·p, width = max(m, d) (construct:qsa)"},
                {"key": "rip_width_bits", "label": "one-layer attention, keys=rip: width·p", "style": "-."},
                {"key": "rnn_bound_bits", "label": "recurrent lower bound: N - q bits", "style": "--"},
                {"key": "one_layer_bound_bits", "label": "one-layer lower bound: min(d·p, (2m + 1)·p·H) ≥ q",
                 "style": ":"}]},
            notes=[crossover_note(rows, "width_bits", "rnn_bound_bits", "the attention layer's width·p",
                                  "the recurrent bound N - q", self), _rip_crossing_note(rows), WIDTH_NOTE,
                   "Inputs (generic layout): values +-1 at the first N - 1 positions, the query's q-subset at the "
                   "last; the error is |output - (1/q) sum_(j in S) v_j|. memo acc.: the memorizing recurrence on "
                   "index-qsa (q = 1 only).",
                   ("m (rip): construct:qsa:keys=rip, random sign keys at the smallest width the seeded search "
                    "verified (every q-set of the N positions checked in exact integer arithmetic; built while "
                    f"C(N, q) <= {RIP_SEPARATE_SETS}), run on the same inputs."), INPUTS_NOTE])



def _rip_crossing_note(rows: list) -> str:
    """Where keys=rip's width·p drops below the recurrent bound N - q, among the rows where it was built."""
    built = [r for r in rows if r["rip_width_bits"] is not None]
    if not built:
        return "keys=rip was built at no N of this range (too many q-sets to verify)."
    cross = crossing(built, "rip_width_bits", "rnn_bound_bits")
    if cross is not None:
        return f"keys=rip's width·p is below the recurrent bound N - q from N = {cross} on (where it was built)."
    last = built[-1]
    return (f"keys=rip's width·p is still at or above the recurrent bound N - q at N = {last['N']} "
            f"({last['rip_width_bits']} vs {last['rnn_bound_bits']}), the largest N where it was built: d = 2k + 1 "
            f"and p grow like q log N and log N, the bound like N.")
