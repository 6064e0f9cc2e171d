"""Both halves of a separation, over a range of sequence lengths (``commsim separate TASK``).

Each separation builds the construction for every N in the range, verifies it (exhaustively when
the inputs are few, else on seeded samples), measures its size, and sets it against the lower bound
the *other* architecture must meet; where a model of the other architecture attains its bound
(the memorizing recurrence, the Dyck automaton) it is verified on the same inputs.

* ``idxl``   one-layer attention of width O(log N) (Theorem 1) vs recurrent m p >= N (Theorem 3).
* ``dyck22`` a recurrence of 3 state bits (the Dyck-(2,2) automaton) vs one-layer attention,
             which needs N - 1 bits with the odd/even split (Lemma 1), mH >= (N - 1)/(3(p + log N))
             (Theorem 5); the whole-string lookup layer (width N + 4) meets that.
* ``eq``     two-layer attention of width O(log N) (Theorem 6) vs recurrent m p >= N/2
             (Theorem 11) and one-layer attention 3m(p + log N)H >= N/2 (Theorem 12).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from commsim.core.errors import InputError
from commsim.core.limits import show_size
from commsim.plugins import load_plugins, make_model
from protocols.constructions.orthogonal import DEFAULT_GAMMA
from protocols.theorems import (
    attention_min_width,
    dyck_fooling_bits,
    dyck_min_width,
    equality_bits,
    index_one_way_bits,
)

#: at most this many inputs are enumerated for an exhaustive check
EXHAUSTIVE_LIMIT = 1 << 16


def lengths(n: int, smallest: int, even: bool = False) -> list[int]:
    """Powers of two from ``smallest`` up to n, and n itself."""
    out, N = [], smallest
    while N < n:
        out.append(N)
        N *= 2
    out.append(n)
    return sorted(set(x for x in out if not even or x % 2 == 0))


@dataclass
class SeparationResult:
    """One separation over a range of N: both sides, the rows, the table and the plot data."""

    task: str
    title: str
    claim: str
    n: int
    upper: dict
    lower: dict
    columns: list
    rows: list
    plot: dict
    notes: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def all_verified(self) -> bool:
        """Every row verified."""
        return all(row.get("verified", True) for row in self.rows)

    @property
    def verdict(self) -> str:
        """One line: what the last row shows (or where verification failed)."""
        last = self.rows[-1]
        if not self.all_verified:
            bad = [r["N"] for r in self.rows if not r.get("verified", True)]
            return f"NOT verified at N = {', '.join(map(str, bad))}: see the accuracy columns"
        return self._verdict(last)

    def _verdict(self, last: dict) -> str:
        """The upper side's verdict template filled in with the last row."""
        return self.upper["verdict"].format(**last)

    def to_dict(self) -> dict:
        """The ``commsim separate --json`` object."""
        upper = {k: v for k, v in self.upper.items() if k != "verdict"}
        return {"task": self.task, "title": self.title, "claim": self.claim, "n": self.n, "upper": upper,
                "lower": self.lower, "columns": self.columns, "rows": self.rows, "plot": self.plot,
                "all_verified": self.all_verified, "verdict": self.verdict, "notes": self.notes,
                "seconds": round(self.seconds, 3)}


class Separation:
    """Base: ``run(n, seed=, instances=, progress=)`` -> :class:`SeparationResult`."""

    name = ""
    description = ""
    options: tuple = ()         # extra keyword options run() accepts (e.g. "gamma")
    smallest = 2
    largest = 1 << 14
    even = False

    def check_n(self, n: int) -> None:
        """InputError unless n is in range (and even when the task needs it)."""
        if n < self.smallest or n > self.largest:
            raise InputError(f"n must be in {self.smallest}..{self.largest} for {self.name}, got {show_size(n)}", "n")
        if self.even and n % 2:
            raise InputError(f"n must be even for {self.name} (it is a string length N), got {show_size(n)}", "n")

    def run(self, n: int, *, seed: int = 0, instances: int | None = 1000, progress=None,
            **options) -> SeparationResult:
        """Build, verify and measure both sides at every N of the range."""
        self.check_n(n)
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise InputError(f"{self.name} takes no option {', '.join(unknown)}")
        start = time.perf_counter()
        Ns = lengths(n, self.smallest, self.even)
        rows = []
        for i, N in enumerate(Ns):
            rows.append(self.row(N, seed=seed, instances=instances, **options))
            if progress:
                progress(i + 1, len(Ns))
        result = self.result(n, rows)
        result.seconds = time.perf_counter() - start
        return result

    def row(self, N: int, *, seed: int, instances: int | None, **options) -> dict:  # pragma: no cover - abstract
        """One N: both sides, measured and verified."""
        raise NotImplementedError

    def result(self, n: int, rows: list) -> SeparationResult:  # pragma: no cover - abstract
        """The rows as a SeparationResult."""
        raise NotImplementedError


def _instances(problem, count_all: int, instances: int | None, seed: int, cap: int | None = None):
    """All pairs when few (or asked for), else ``instances`` seeded samples (at most ``cap``)."""
    if instances is None or count_all <= EXHAUSTIVE_LIMIT:
        if count_all > (1 << 22):
            raise InputError(f"instances: all would enumerate {count_all} inputs; give a number", "instances")
        A, B = problem.all_pairs()
        return A, B, "all"
    k = instances if cap is None else max(1, min(instances, cap))
    A, B = problem.sample(np.random.default_rng(seed), k)
    return A, B, f"{k} sampled"


def _inputs(described: str, count: int) -> dict:
    """``instances`` ("all" / "K sampled"), ``inputs`` (the count) and the short form shown in tables."""
    return {"instances": described, "inputs": int(count), "exhaustive": described == "all",
            "inputs_shown": f"{count}{'*' if described == 'all' else ''}"}


INPUTS_NOTE = "inputs: * = every input of that length (exhaustive), else seeded samples."


def crossover_note(rows: list, ours: str, theirs: str, ours_text: str, theirs_text: str) -> str:
    """Where the construction's size drops below the other side's bound, within the rows."""
    below = [r["N"] for r in rows if r[ours] < r[theirs]]
    if below and all(r[ours] < r[theirs] for r in rows if r["N"] >= below[0]):
        return f"{ours_text} is below {theirs_text} from N = {below[0]} on (in this range)."
    last = rows[-1]
    return (f"{ours_text} is still above {theirs_text} at N = {last['N']} ({last[ours]} vs {last[theirs]}): the "
            f"separation is asymptotic (the construction grows like log^2 N, the bound like N) and Lemma 2's "
            f"constants are large; a larger --n, or a larger --gamma (smaller k), moves the crossing into view.")


def _exchange_bits(model, encoded) -> int:
    """The bits the attention exchange really sends on the task's partition (its message plan)."""
    from protocols.simulators.exchange_plan import make_plan
    return make_plan(model, encoded.seq_len, encoded.alice_positions, int(encoded.output_positions[0])).total_bits


def _attention_check(model, encoded, answers_of_labels, expected) -> tuple[float, bool]:
    """Accuracy of the protocol's answers, and whether protocol == direct forward bit for bit."""
    from protocols.simulators.attention_exchange import ATTENTION_EXCHANGE
    sweep = ATTENTION_EXCHANGE.sweep(model, encoded)
    answers = answers_of_labels(sweep.protocol_labels)
    direct = answers_of_labels(sweep.direct_labels)
    exact = bool(np.all(sweep.exact_match)) and bool(np.array_equal(answers, direct))
    return float(np.mean(answers == expected)), exact


def _recurrent_check(spec: str, reduction, N: int, encoded, B, expected) -> tuple[float, int]:
    """A recurrent model built for the task: its accuracy on the inputs and its state bits."""
    model = make_model(spec, **reduction.model_context(N))
    labels = model.labels(model.forward_batch(encoded.tokens, encoded.output_positions))
    answers = reduction.decode(labels, B)
    return float(np.mean(answers == expected)), int(model.state_bits)


# ---- idxl -----------------------------------------------------------------------------------------
class IdxlSeparation(Separation):
    """Index lookup: one-layer attention of width O(log N) (Theorem 1) vs recurrent m p >= N (Theorem 3)."""

    name = "idxl"
    description = "index lookup: one-layer attention of width O(log N) vs recurrent state bits >= N"
    options = ("gamma",)
    smallest = 4
    largest = 1 << 14

    def row(self, N, *, seed, instances, gamma=DEFAULT_GAMMA):
        """Index lookup at N: the idxl layer and the memorizing recurrence."""
        from protocols.constructions.idxl import build_idxl
        reduction = load_plugins().get("reduction", "index-idxl")
        problem = reduction.problem(N)
        A, B, described = _instances(problem, N * 2 ** N, instances, seed)
        expected = problem.evaluate_batch(A, B)
        encoded = reduction.encode(problem, A, B)
        model = build_idxl(N, seed=seed, gamma=gamma)
        accuracy, exact = _attention_check(model, encoded, lambda lab: reduction.decode(lab, B), expected)
        rnn_accuracy, rnn_bits = _recurrent_check("memorize", reduction, N, encoded, B, expected)
        info = model.info
        return {"N": N, "k": info["k"], "k_theorem": info["k_theorem"], "width": info["width"],
                "dim": info["embedding_dim"], "precision": info["precision"], "width_bits": info["width_bits"],
                "parameter_bits": info["parameter_bits"], "protocol_bits": _exchange_bits(model, encoded),
                **_inputs(described, len(A)), "accuracy": accuracy, "protocol_exact": exact,
                "rnn_bound_bits": index_one_way_bits(N), "memorize_bits": rnn_bits, "memorize_accuracy": rnn_accuracy,
                "verified": accuracy == 1.0 and exact and rnn_accuracy == 1.0}

    def result(self, n, rows):
        """The index-lookup separation."""
        return SeparationResult(
            "idxl", "index lookup (IdxL)",
            "one attention layer of width O(log N) and precision O(log N) performs index lookup, while every "
            "recurrent model needs a state of m*p >= N bits",
            n,
            {"arch": "one-layer attention", "model": "construct:idxl", "source": "Theorem 1 of [BHBK24]",
             "formula": "width m = k = O(log N / gamma^2) (nearly orthogonal vectors, Lemma 2), p = O(log N)",
             "verdict": "at N = {N}: the attention layer has width {width} at {precision} bits (m*p = {width_bits} "
                        "bits; its exchange with the query's owner takes {protocol_bits} bits) and is correct on "
                        "{instances} inputs; a recurrent model needs m*p >= {rnn_bound_bits} bits, which the "
                        "memorizing recurrence meets exactly ({memorize_bits} bits)"},
            {"arch": "recurrent (any RNN, LSTM, SSM, ...)", "model": "memorize (attains the bound)",
             "source": "Theorem 3 of [BHBK24] (one-way INDEX)", "formula": "m*p >= N (one-way, contiguous split)"},
            [{"key": "N", "label": "N"}, {"key": "width", "label": "m"}, {"key": "precision", "label": "p"},
             {"key": "width_bits", "label": "m·p"}, {"key": "parameter_bits", "label": "all params"},
             {"key": "protocol_bits", "label": "exchange"}, {"key": "inputs_shown", "label": "inputs"},
             {"key": "accuracy", "label": "acc."}, {"key": "protocol_exact", "label": "=model"},
             {"key": "rnn_bound_bits", "label": "RNN m·p≥"}, {"key": "memorize_accuracy", "label": "memo acc."}],
            rows,
            {"x": "N", "ylabel": "bits", "series": [
                {"key": "width_bits", "label": "one-layer attention: m·p (construct:idxl)"},
                {"key": "protocol_bits", "label": "attention exchange bits (two-way)", "style": ":"},
                {"key": "rnn_bound_bits", "label": "recurrent lower bound: m·p ≥ N", "style": "--"}]},
            notes=[crossover_note(rows, "width_bits", "rnn_bound_bits", "the attention layer's m·p",
                                  "the recurrent bound N"),
                   "Attention columns: width m (= k, the dimension of the nearly orthogonal vectors), precision p, "
                   "m·p, every parameter at p bits (embedding tables included), the exchange's bits on the "
                   "index-idxl split, accuracy, and whether the protocol's output equals the model's bit for bit. "
                   "memo acc.: the memorizing recurrence, whose state is exactly N bits.", INPUTS_NOTE,
                   "On the index-idxl split only Bob (the index and the query) speaks: INDEX one-way from "
                   "Bob costs only ceil(log2 n) bits, so Theorem 3's n bits (Alice to Bob) do not bind the "
                   "attention layer."])


# ---- dyck22 ---------------------------------------------------------------------------------------
class DyckSeparation(Separation):
    """Dyck-(2,2): a 3-state-bit recurrence vs one-layer attention, mH >= (N - 1)/(3(p + log N))."""

    name = "dyck22"
    description = "Dyck-(2,2): recurrent 3 state bits vs one-layer attention mH >= (N-1)/(3(p + log N))"
    smallest = 2
    largest = 1 << 10
    even = True

    def row(self, N, *, seed, instances, **options):
        """Dyck-(2,2) at N: the automaton, the bound and the lookup layer."""
        from protocols.constructions.lookup import build_lookup
        reduction = load_plugins().get("reduction", "dyck22-fooling")
        problem = reduction.problem(N)
        total = 4 ** N
        if instances is None or total <= EXHAUSTIVE_LIMIT:
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
        accuracy, exact = _attention_check(model, encoded, lambda lab: reduction.decode(lab, B), expected)
        dfa = make_model("dfa:dyck22", **reduction.model_context(N))
        labels = dfa.labels(dfa.forward_batch(encoded.tokens, encoded.output_positions))
        dfa_accuracy = float(np.mean(reduction.decode(labels, B) == expected))
        p = model.precision
        return {"N": N, "dfa_state_bits": int(dfa.state_bits), "dfa_accuracy": dfa_accuracy,
                "attn_bound_bits": dyck_fooling_bits(N), "attn_min_width": float(dyck_min_width(N, p)),
                "lookup_width": model.width,
                "precision": p, "lookup_protocol_bits": _exchange_bits(model, encoded),
                **_inputs(described, len(A)), "lookup_accuracy": accuracy, "protocol_exact": exact,
                "verified": accuracy == 1.0 and exact and dfa_accuracy == 1.0}

    def result(self, n, rows):
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
                        "{lookup_width}) pays {lookup_protocol_bits} bits and is correct"},
            {"arch": "one-layer attention", "model": "construct:lookup (meets it)",
             "source": "Lemma 1 and Theorem 5 of [BHBK24]",
             "formula": "N - 1 bits on the odd/even split; mH >= (N - 1)/(3(p + ceil(log2 N)))"},
            [{"key": "N", "label": "N"}, {"key": "dfa_state_bits", "label": "RNN bits"},
             {"key": "dfa_accuracy", "label": "RNN acc."}, {"key": "attn_bound_bits", "label": "attn bits≥"},
             {"key": "precision", "label": "p"}, {"key": "attn_min_width", "label": "attn mH≥"},
             {"key": "lookup_width", "label": "lookup m"}, {"key": "lookup_protocol_bits", "label": "lookup bits"},
             {"key": "inputs_shown", "label": "inputs"}, {"key": "lookup_accuracy", "label": "lookup acc."},
             {"key": "protocol_exact", "label": "=model"}],
            rows,
            {"x": "N", "ylabel": "bits", "series": [
                {"key": "dfa_state_bits", "label": "recurrent: state bits (dfa:dyck22)"},
                {"key": "attn_bound_bits", "label": "one-layer attention lower bound: N - 1 bits", "style": "--"},
                {"key": "lookup_protocol_bits", "label": "whole-string attention layer: exchange bits",
                 "style": ":"}]},
            notes=[crossover_note(rows, "dfa_state_bits", "attn_bound_bits", "the automaton's 3 state bits",
                                  "the attention bound N - 1"),
                   "RNN: the Dyck-(2,2) automaton as a recurrence (dfa:dyck22). attn: the lower bound for any "
                   "one-layer attention, at p = the lookup layer's precision. lookup: construct:lookup, which "
                   "reads the whole string and meets the bound.", INPUTS_NOTE,
                   "The split is odd/even, not contiguous: the recurrent bound of Theorem 2 does not apply."])


# ---- eq -------------------------------------------------------------------------------------------
class EqSeparation(Separation):
    """Equality: two-layer attention of width O(log N) vs recurrent and one-layer attention >= N/2 bits."""

    name = "eq"
    description = "equality: two-layer attention of width O(log N) vs recurrent and one-layer attention >= N/2 bits"
    smallest = 4
    largest = 1 << 12
    even = True
    options = ("gamma",)
    #: entries of the first layer's N x N attention matrices evaluated per N (bounds the time at large N)
    WORK = 1 << 27

    def row(self, N, *, seed, instances, gamma=DEFAULT_GAMMA):
        """Equality at N: the two-layer model and both bounds."""
        from protocols.constructions.eq2 import build_eq2
        reduction = load_plugins().get("reduction", "eq-ineq")
        half = N // 2
        problem = reduction.problem(half)
        A, B, described = _instances(problem, 4 ** half, instances, seed, cap=max(8, self.WORK // (N * N)))
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
        rnn_accuracy, rnn_bits = _recurrent_check("memorize", reduction, half, encoded, B, expected)
        info = model.info
        p = model.precision
        return {"N": N, "k": info["k"], "width": info["embedding_dim"], "qk_width": info["width"],
                "precision": p, "width_bits": info["embedding_dim"] * p,
                "parameter_bits": model.parameter_count * p, **_inputs(described, len(A)), "accuracy": accuracy,
                "rnn_bound_bits": equality_bits(half), "memorize_bits": rnn_bits, "memorize_accuracy": rnn_accuracy,
                "one_layer_bound_bits": equality_bits(half),
                "one_layer_min_width": float(attention_min_width(equality_bits(half), p, N)),
                "verified": accuracy == 1.0 and rnn_accuracy == 1.0}

    def result(self, n, rows):
        """The equality separation."""
        return SeparationResult(
            "eq", "string equality (EQ / INEQ)",
            "two attention layers of width O(log N) decide equality of the two halves, while a recurrent model "
            "needs m*p >= N/2 and a one-layer attention 3m(p + log N)H >= N/2",
            n,
            {"arch": "two-layer attention", "model": "construct:eq2", "source": "Theorem 6 of [BHBK24]",
             "formula": "width d = 2k + 5 = O(log N), p = O(log N); no one-layer protocol simulates it (Lemma 5)",
             "verdict": "at N = {N}: the two-layer model has width {width} at {precision} bits (d*p = {width_bits} "
                        "bits) and is correct on {instances} inputs; a recurrent model needs m*p >= {rnn_bound_bits} "
                        "bits (the memorizing recurrence meets it with {memorize_bits}) and a one-layer attention "
                        "{one_layer_bound_bits} bits of exchange, mH >= {one_layer_min_width:.3f} at p = {precision}"},
            {"arch": "recurrent and one-layer attention", "model": "memorize (attains the RNN bound)",
             "source": "Theorems 11 and 12 of [BHBK24]",
             "formula": "RNN: m*p >= N/2 (one-way); one-layer attention: 3m(p + log N)H >= N/2 (two-way)"},
            [{"key": "N", "label": "N"}, {"key": "k", "label": "k"}, {"key": "width", "label": "d"},
             {"key": "precision", "label": "p"}, {"key": "width_bits", "label": "d·p"},
             {"key": "parameter_bits", "label": "all params"}, {"key": "inputs_shown", "label": "inputs"},
             {"key": "accuracy", "label": "acc."}, {"key": "rnn_bound_bits", "label": "RNN m·p≥"},
             {"key": "memorize_accuracy", "label": "memo acc."},
             {"key": "one_layer_bound_bits", "label": "1-layer bits≥"},
             {"key": "one_layer_min_width", "label": "1-layer mH≥"}],
            rows,
            {"x": "N", "ylabel": "bits", "series": [
                {"key": "width_bits", "label": "two-layer attention: d·p (construct:eq2)"},
                {"key": "rnn_bound_bits", "label": "recurrent lower bound: m·p ≥ N/2", "style": "--"},
                {"key": "one_layer_bound_bits", "label": "one-layer attention: exchange ≥ N/2 bits", "style": ":"}]},
            notes=[crossover_note(rows, "width_bits", "rnn_bound_bits", "the two-layer model's d·p",
                                  "the recurrent bound N/2"),
                   "Two-layer columns: k (nearly orthogonal vectors), width d = 2k + 5, precision p, d·p, every "
                   "parameter at p bits, accuracy (INEQ). memo acc.: the memorizing recurrence (N/2 state bits).",
                   INPUTS_NOTE,
                   "Sampled inputs: a quarter are equal, a quarter differ in exactly one bit, the rest uniform.",
                   "At large N the first layer's N x N attention is costly; the number of sampled inputs is capped "
                   f"so that about 2^{int(math.log2(self.WORK))} attention entries are evaluated per N."])


SEPARATIONS = [IdxlSeparation(), DyckSeparation(), EqSeparation()]


def register(registry) -> None:
    """Register every separation (``commsim separate``); the module's own entry point calls it."""
    for sep in SEPARATIONS:
        registry.register("separation", sep.name, sep, sep.description)
