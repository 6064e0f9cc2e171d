"""``commsim separate dyck22``: a 3-state-bit recurrence vs one-layer attention, mH >= (N - 1)/(3(p + log N)) (Lemma 1, Theorem 5)."""
from __future__ import annotations

import numpy as np

from commsim.contract import InputError
from commsim import load_plugins, make_model
from protocols.separations.base import (
    EXHAUSTIVE_LIMIT,
    INPUTS_NOTE,
    WIDTH_NOTE,
    Separation,
    SeparationResult,
    attention_check,
    crossover_note,
    exchange_bits,
    inputs_info,
    model_width,
)
from protocols.theorems import dyck_fooling_bits, dyck_min_width


class DyckSeparation(Separation):
    """Dyck-(2,2): a 3-state-bit recurrence vs one-layer attention, mH >= (N - 1)/(3(p + log N))."""

    name = "dyck22"
    description = "Dyck-(2,2): recurrent 3 state bits vs one-layer attention mH >= (N-1)/(3(p + log N))"
    smallest = 2
    largest = 1 << 10
    even = True

    def row(self, N, run):
        """Dyck-(2,2) at N: the automaton, the bound and the lookup layer."""
        from protocols.constructions.lookup import build_lookup
        seed, instances = run.seed, run.instances
        reduction = load_plugins().get("reduction", "dyck22-fooling")
        problem = reduction.problem(N)
        total = 4 ** N
        if run.checks_all(total, EXHAUSTIVE_LIMIT):
            if total > (1 << 22):
                raise InputError(f"instances: all would enumerate {total} strings; give a number", "instances")
            S = np.array(np.meshgrid(*[np.arange(4)] * N, indexing="ij")).reshape(N, -1).T.astype(np.uint8)
            A, B = problem.split(S)
            described = "all"
        else:
            A, B = problem.sample(np.random.default_rng(seed), instances)
            described = f"{instances} sampled"
        expected = problem.evaluate_batch(A, B)
        encoded = reduction.encode(problem, A, B)
        model = build_lookup(N, "dyck22")
        accuracy, exact, _ = attention_check(reduction, model, N, A, B)
        dfa = make_model("dfa:dyck22", **reduction.model_context(N))
        labels = dfa.labels(dfa.forward_batch(encoded.tokens, encoded.output_positions))
        dfa_accuracy = float(np.mean(reduction.decode(labels, B) == expected))
        p = model.precision
        return {"N": N, "dfa_state_bits": int(dfa.state_bits), "dfa_accuracy": dfa_accuracy,
                "attn_bound_bits": dyck_fooling_bits(N), "attn_min_width": float(dyck_min_width(N, p)),
                "lookup_qk_width": model.width, "lookup_dim": model.dim, "lookup_width": model_width(model.width, model.dim),
                "precision": p, "lookup_protocol_bits": exchange_bits(model, encoded),
                **inputs_info(described, len(A)), "lookup_accuracy": accuracy, "protocol_exact": exact,
                "verified": accuracy == 1.0 and exact and dfa_accuracy == 1.0}

    def sizes(self, N, *, seed=0, **_):
        """The automaton's state bits and the one-layer bound N - 1 at N (nothing to build beyond the automaton)."""
        reduction = load_plugins().get("reduction", "dyck22-fooling")
        dfa = make_model("dfa:dyck22", **reduction.model_context(N))
        return {"N": N, "dfa_state_bits": int(dfa.state_bits), "attn_bound_bits": dyck_fooling_bits(N)}

    def result(self, n, rows, run):
        """The Dyck-(2,2) separation."""
        return SeparationResult(
            "dyck22", "bounded Dyck, Dyck-(2,2)",
            "a recurrence with 3 state bits (the 8-state automaton) recognizes Dyck-(2,2), while a one-layer "
            "attention needs N - 1 bits of exchange on the odd/even split: mH >= (N - 1)/(3(p + log N))",
            n,
            {"arch": "recurrent", "model": "dfa:dyck22", "source": "Appendix E of [BHBK24] (a 7-state DFA); Lemma 1 of [BHBK24]",
             "formula": "3 one-bit state units, for every N",
             "verdict": "at N = {N}: the automaton uses {dfa_state_bits} state bits and is correct on {instances} "
                        "inputs; a one-layer attention needs N - 1 = {attn_bound_bits} bits of exchange, i.e. "
                        "mH >= {attn_min_width:.3f} at p = {precision}; the whole-string lookup layer (width "
                        "max(m, d) = {lookup_width}) pays {lookup_protocol_bits} bits and is correct"},
            {"arch": "one-layer attention", "model": "construct:lookup (meets it)",
             "source": "Lemma 1 and Theorem 5 of [BHBK24]",
             "formula": "N - 1 bits on the odd/even split; mH >= (N - 1)/(3(p + ceil(log2 N)))"},
            [{"key": "N", "label": "N"}, {"key": "dfa_state_bits", "label": "RNN bits"},
             {"key": "dfa_accuracy", "label": "RNN acc."}, {"key": "attn_bound_bits", "label": "attn bits≥"},
             {"key": "precision", "label": "p"}, {"key": "attn_min_width", "label": "attn mH≥"},
             {"key": "lookup_qk_width", "label": "lookup m"}, {"key": "lookup_dim", "label": "lookup d"},
             {"key": "lookup_width", "label": "lookup width max(m,d)"},
             {"key": "lookup_protocol_bits", "label": "lookup bits"},
             {"key": "inputs_shown", "label": "inputs"}, {"key": "lookup_accuracy", "label": "lookup acc."},
             {"key": "protocol_exact", "label": "=model"}],
            rows,
            {"x": "N", "crossing": {"ours": "dfa_state_bits", "theirs": "attn_bound_bits", "text": "the separation is asymptotic"}, "ylabel": "bits", "series": [
                {"key": "dfa_state_bits", "label": "recurrent: state bits (dfa:dyck22)"},
                {"key": "attn_bound_bits", "label": "one-layer attention lower bound: N - 1 bits", "style": "--"},
                {"key": "lookup_protocol_bits", "label": "whole-string attention layer: exchange bits",
                 "style": ":"}]},
            notes=[crossover_note(rows, "dfa_state_bits", "attn_bound_bits", "the automaton's 3 state bits",
                                  "the attention bound N - 1", self), WIDTH_NOTE,
                   "RNN: the Dyck-(2,2) automaton as a recurrence (dfa:dyck22). attn: the lower bound for any "
                   "one-layer attention (m: the per-head width of Theorem 5), at p = the lookup layer's precision. "
                   "lookup: construct:lookup, which "
                   "reads the whole string and meets the bound.", INPUTS_NOTE,
                   "The split is odd/even, not contiguous: the recurrent bound of Theorem 2 does not apply."])
