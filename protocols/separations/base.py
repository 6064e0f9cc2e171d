"""What every separation shares: the rows over N, the result object, and the checks of both sides.

A separation builds the construction for every N in a range, verifies it (exhaustively when the
inputs are few, else on seeded samples), measures its size, and sets it against the lower bound the
*other* architecture must meet; :class:`Separation` is the base, :class:`SeparationResult` what
``commsim separate`` renders.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from commsim.core.errors import InputError
from commsim.core.limits import show_size
from commsim.plugins import make_model
from protocols.theorems import attention_min_width

__all__ = ["EXHAUSTIVE_LIMIT", "lengths", "SeparationResult", "Separation", "INPUTS_NOTE", "crossover_note",
           "crossing", "instances_for", "inputs_info", "exchange_bits", "attention_check", "recurrent_check"]

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
        Ns = self.lengths(n)
        rows = []
        for i, N in enumerate(Ns):
            rows.append(self.row(N, seed=seed, instances=instances, **options))
            if progress:
                progress(i + 1, len(Ns))
        result = self.result(n, rows)
        result.seconds = time.perf_counter() - start
        return result

    def lengths(self, n: int) -> list[int]:
        """The sequence lengths of the rows (powers of two from ``smallest``, and n)."""
        return lengths(n, self.smallest, self.even)

    def row(self, N: int, *, seed: int, instances: int | None, **options) -> dict:  # pragma: no cover - abstract
        """One N: both sides, measured and verified."""
        raise NotImplementedError

    def result(self, n: int, rows: list) -> SeparationResult:  # pragma: no cover - abstract
        """The rows as a SeparationResult."""
        raise NotImplementedError


def instances_for(problem, count_all: int, instances: int | None, seed: int, cap: int | None = None):
    """All pairs when few (or asked for), else ``instances`` seeded samples (at most ``cap``)."""
    if instances is None or count_all <= EXHAUSTIVE_LIMIT:
        if count_all > (1 << 22):
            raise InputError(f"instances: all would enumerate {count_all} inputs; give a number", "instances")
        A, B = problem.all_pairs()
        return A, B, "all"
    k = instances if cap is None else max(1, min(instances, cap))
    A, B = problem.sample(np.random.default_rng(seed), k)
    return A, B, f"{k} sampled"


def inputs_info(described: str, count: int) -> dict:
    """``instances`` ("all" / "K sampled"), ``inputs`` (the count) and the short form shown in tables."""
    return {"instances": described, "inputs": int(count), "exhaustive": described == "all",
            "inputs_shown": f"{count}{'*' if described == 'all' else ''}"}


INPUTS_NOTE = "inputs: * = every input of that length (exhaustive), else seeded samples."

#: the columns a two-layer construction's table ends with, against the recurrent and one-layer bounds
TWO_LAYER_TAIL_COLUMNS = [
    {"key": "precision", "label": "p"}, {"key": "width_bits", "label": "d·p"},
    {"key": "parameter_bits", "label": "all params"}, {"key": "inputs_shown", "label": "inputs"},
    {"key": "accuracy", "label": "acc."}, {"key": "rnn_bound_bits", "label": "RNN m·p≥"},
    {"key": "memorize_accuracy", "label": "memo acc."},
    {"key": "one_layer_bound_bits", "label": "1-layer bits≥"},
    {"key": "one_layer_min_width", "label": "1-layer mH≥"}]


def two_layer_plot(construction: str) -> dict:
    """The plot of a two-layer construction's d·p against the recurrent (N/2) and one-layer bounds."""
    return {"x": "N", "crossing": {"ours": "width_bits", "theirs": "rnn_bound_bits",
                                   "text": "the separation is asymptotic"}, "ylabel": "bits", "series": [
        {"key": "width_bits", "label": f"two-layer attention: d·p ({construction})"},
        {"key": "rnn_bound_bits", "label": "recurrent lower bound: m·p ≥ N/2", "style": "--"},
        {"key": "one_layer_bound_bits", "label": "one-layer attention: exchange ≥ N/2 bits", "style": ":"}]}


def two_layer_bounds(bound_bits: int, precision: int, N: int, memorize_bits: int, memorize_accuracy: float) -> dict:
    """The row columns a two-layer separation shares (:data:`TWO_LAYER_TAIL_COLUMNS`): the problem's bound, met by
    the memorizing recurrence, and the one-layer exchange it forces with the width that follows at ``precision``."""
    return {"rnn_bound_bits": bound_bits, "memorize_bits": memorize_bits, "memorize_accuracy": memorize_accuracy,
            "one_layer_bound_bits": bound_bits,
            "one_layer_min_width": float(attention_min_width(bound_bits, precision, N))}


def two_layer_crossover_note(rows: list) -> str:
    return crossover_note(rows, "width_bits", "rnn_bound_bits", "the two-layer model's d·p", "the recurrent bound N/2")


def crossover_note(rows: list, ours: str, theirs: str, ours_text: str, theirs_text: str) -> str:
    """Where the construction's size drops below the other side's bound, within the rows."""
    below = [r["N"] for r in rows if r[ours] < r[theirs]]
    if below and all(r[ours] < r[theirs] for r in rows if r["N"] >= below[0]):
        return f"{ours_text} is below {theirs_text} from N = {below[0]} on (in this range)."
    last = rows[-1]
    return (f"{ours_text} is still above {theirs_text} at N = {last['N']} ({last[ours]} vs {last[theirs]}): the "
            f"separation is asymptotic (the construction grows like log^2 N, the bound like N) and Lemma 2's "
            f"constants are large; a larger --n, or a larger --gamma (smaller k), moves the crossing into view.")


def exchange_bits(model, encoded) -> int:
    """The bits the attention exchange really sends on the task's partition (its message plan)."""
    from protocols.simulators.attention import make_plan
    return make_plan(model, encoded.seq_len, encoded.alice_positions, int(encoded.output_positions[0])).total_bits


def attention_check(reduction, model, n: int, A, B):
    """The attention layer judged by the engine on the instances (A, B) of ``reduction`` at size ``n``
    (:func:`commsim.run_instances`: the same audited batch and report builder as ``commsim run``):
    (accuracy, protocol == direct forward bit for bit on every instance, the report)."""
    from commsim import run_instances
    report = run_instances(reduction, model, n, A, B, described="the separation's inputs")
    return report.model_accuracy, report.protocol_matches_model, report


def recurrent_check(spec: str, reduction, N: int, encoded, B, expected) -> tuple[float, int]:
    """A recurrent model built for the task: its accuracy on the inputs and its state bits."""
    model = make_model(spec, **reduction.model_context(N))
    labels = model.labels(model.forward_batch(encoded.tokens, encoded.output_positions))
    answers = reduction.decode(labels, B)
    return float(np.mean(answers == expected)), int(model.state_bits)


def crossing(rows: list, ours: str, theirs: str) -> int | None:
    """The first N from which ``ours`` stays below ``theirs`` (None if it never does in the rows)."""
    below = [r["N"] for r in rows if r[ours] < r[theirs]]
    if below and all(r[ours] < r[theirs] for r in rows if r["N"] >= below[0]):
        return below[0]
    return None
