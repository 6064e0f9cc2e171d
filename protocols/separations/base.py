"""What every separation shares: the rows over N, the result object, and the checks of both sides.

A separation builds the construction for every N in a range, verifies it (exhaustively when the
inputs are few, else on seeded samples), measures its size, and sets it against the lower bound the
*other* architecture must meet; :class:`Separation` is the base, :class:`SeparationResult` what
``commsim separate`` renders.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np

from commsim import make_model
from commsim.contract import InputError, show_size
from commsim.contract.options import Option
from protocols.constructions.orthogonal import DEFAULT_GAMMA
from protocols.theorems import attention_min_width

__all__ = ["EXHAUSTIVE_LIMIT", "lengths", "SeparationResult", "Separation", "SeparationRun", "GAMMA", "INPUTS_NOTE",
           "crossover_note",
           "crossing", "checks_all", "instances_for", "inputs_info", "exchange_bits", "attention_check", "recurrent_check",
           "model_width", "WIDTH_NOTE", "WEAKEST_GAMMA"]

#: at most this many inputs are enumerated for an exhaustive check
EXHAUSTIVE_LIMIT = 1 << 16

#: the --gamma at which Lemma 2's condition |<s, t>| <= floor(gamma k) is the weakest any accepted gamma (< 1) sets
#: for every k <= 1000: k - 1, i.e. sign vectors distinct up to sign -- where the constructions are narrowest
WEAKEST_GAMMA = 0.999


def _lemma2_range(gamma: float) -> str:
    """Why ``gamma`` is refused ("" when accepted): Lemma 2 takes gamma in (0, 1), and below 0.1 the width
    k = 8 ln(2N)/gamma^2 is too large to build (1e-300: 1/0)."""
    if 0.1 <= gamma < 1:
        return ""
    return (f"must be in [0.1, 1) (Lemma 2 takes gamma in (0, 1); below 0.1 the width 8 ln(2N)/gamma^2 is too "
            f"large to build), got {gamma}")


#: the near-orthogonality gamma of Lemma 2's position vectors, an option of every separation built on them
GAMMA = Option("gamma", float, "Near-orthogonality of the constructions' position vectors (idxl, eq; default 1/4 as "
               "in [BHBK24]); 0.5 shrinks the width about 4x.", default=DEFAULT_GAMMA, check=_lemma2_range)


#: the one definition of a transformer's width every separation uses, said once
WIDTH_NOTE = ("width = max(m, d), [BHBK24]'s width of a transformer: m the query/key/value width per head, d the "
              "embedding width; width·p its bits. The theorems' counts (3m(p + log N)H, mH >=) keep m, the per-head width.")


def model_width(m: int, d: int) -> int:
    """[BHBK24]'s width of a transformer: max(m, d) (:data:`WIDTH_NOTE`)."""
    return max(int(m), int(d))


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
        """Every row that was checked passed (a row with ``verified`` None was built and measured, not checked)."""
        return all(row.get("verified", True) is not False for row in self.rows)

    @property
    def unverified_rows(self) -> list:
        """The N of the rows built and measured only (``verified`` None: nothing was computed to check them)."""
        return [r["N"] for r in self.rows if "verified" in r and r["verified"] is None]

    @property
    def verdict(self) -> str:
        """One line: what the last row shows (or where verification failed), and which rows were not checked."""
        last = self.rows[-1]
        if not self.all_verified:
            bad = [r["N"] for r in self.rows if r.get("verified", True) is False]
            return f"NOT verified at N = {', '.join(map(str, bad))}: see the accuracy columns"
        unchecked = self.unverified_rows
        tail = (f" (rows N = {', '.join(map(str, unchecked))} were built and measured, not verified)"
                if unchecked else "")
        return self._verdict(last) + tail

    def _verdict(self, last: dict) -> str:
        """The upper side's verdict template filled in with the last row."""
        return self.upper["verdict"].format(**last)

    def to_dict(self) -> dict:
        """The ``commsim separate --json`` object."""
        upper = {k: v for k, v in self.upper.items() if k != "verdict"}
        return {"task": self.task, "title": self.title, "claim": self.claim, "n": self.n, "upper": upper,
                "lower": self.lower, "columns": self.columns, "rows": self.rows, "plot": self.plot,
                "all_verified": self.all_verified, "unverified_rows": self.unverified_rows, "verdict": self.verdict,
                "notes": self.notes,
                "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class SeparationRun:
    """One call of :meth:`Separation.run`: its settings, handed to every row and to the result.  A value per call,
    never state on the registered separation, so that two runs of one separation at once (threads, Dask tasks)
    each see their own.  ``options``: the options the caller gave (a separation's own, :attr:`Separation.options`);
    ``instances_given``: the caller gave ``instances`` (:func:`checks_all`); ``shared``: what every row of the run
    uses, computed once (:meth:`Separation.shared`)."""

    seed: int
    instances: int | None
    instances_given: bool = False
    options: dict = field(default_factory=dict)
    shared: dict = field(default_factory=dict)

    def checks_all(self, total: int, limit: int) -> bool:
        """Whether a row checks all of its ``total`` inputs (:func:`checks_all`, with this run's instances)."""
        return checks_all(total, limit, self.instances, self.instances_given)

    @property
    def hint_options(self) -> dict:
        """The seed and options :meth:`Separation.crossing_hint` re-evaluates the construction with."""
        return {"seed": self.seed, **self.options}


class Separation:
    """Base: ``run(n, seed=, instances=, progress=)`` -> :class:`SeparationResult`; a separation implements
    ``row(N, run, **options)`` (one N, ``run`` the call's :class:`SeparationRun`) and ``result(n, rows, run)``."""

    name = ""
    description = ""
    #: the keyword options run() accepts beyond the engine's (:class:`commsim.contract.options.Option`: ``gamma``,
    #: ``q``, ...): the command line builds a flag from each
    options: tuple[Option, ...] = ()
    samples = True              # rows check seeded samples when the inputs are too many (False: --instances unused)
    smallest = 2
    largest = 1 << 14
    even = False

    def option(self, name: str) -> Option | None:
        """The option ``name`` this separation declares (None: it declares none of that name)."""
        return next((o for o in self.options if o.name == name), None)

    def check_n(self, n: int) -> None:
        """InputError unless n is in range (and even when the task needs it)."""
        if n < self.smallest or n > self.largest:
            raise InputError(f"n must be in {self.smallest}..{self.largest} for {self.name}, got {show_size(n)}", "n")
        if self.even and n % 2:
            raise InputError(f"n must be even for {self.name} (it is a string length N), got {show_size(n)}", "n")

    def run(self, n: int, *, seed: int = 0, instances: int | None = 1000, progress=None,
            instances_given: bool = False, **options) -> SeparationResult:
        """Build, verify and measure both sides at every N of the range.  ``instances`` inputs per N where a
        row's inputs are too many to check all; with ``instances_given`` (the user asked for that number) also
        where they are fewer than the row's exhaustive limit but more than ``instances`` (:meth:`checks_all`)."""
        self.check_n(n)
        unknown = sorted(set(options) - {o.name for o in self.options})
        if unknown:
            raise InputError(f"{self.name} takes no option {', '.join(unknown)}")
        start = time.perf_counter()
        call = SeparationRun(seed, instances, instances_given, dict(options))
        call = dataclasses.replace(call, shared=self.shared(call))
        Ns = self.lengths(n)
        rows = []
        for i, N in enumerate(Ns):
            rows.append(self.row(N, call, **options))
            if progress:
                progress(i + 1, len(Ns))
        result = self.result(n, rows, call)
        result.seconds = time.perf_counter() - start
        return result

    def shared(self, run: SeparationRun) -> dict:
        """What every row of ``run`` uses, computed once before the rows (:attr:`SeparationRun.shared`; none)."""
        return {}

    def lengths(self, n: int) -> list[int]:
        """The sequence lengths of the rows (powers of two from ``smallest``, and n)."""
        return lengths(n, self.smallest, self.even)

    def row(self, N: int, run: SeparationRun, **options) -> dict:  # pragma: no cover - abstract
        """One N: both sides, measured and verified."""
        raise NotImplementedError

    def result(self, n: int, rows: list, run: SeparationRun) -> SeparationResult:  # pragma: no cover - abstract
        """The rows as a SeparationResult."""
        raise NotImplementedError

    def sizes(self, N: int, *, seed: int = 0, **options) -> dict | None:
        """The construction's measured sizes at N (built, not verified), with the other side's bound under the
        same keys as :meth:`row`; None when the separation offers none (then :meth:`crossing_hint` says nothing)."""
        return None

    def crossing_hint(self, rows: list, ours: str, theirs: str, options: dict | None = None) -> str:
        """Computed, not guessed: the accepted --n (at the run's --gamma) from which ``ours`` drops below ``theirs``
        (doubling N up to :attr:`largest`), else whether --gamma set to :data:`WEAKEST_GAMMA` at the largest --n
        does, else that no accepted setting shows it.  "" when the separation offers no :meth:`sizes`.
        ``options``: the run's seed and options (:attr:`SeparationRun.hint_options`; None: seed 0, none given)."""
        options = dict(options or {})
        seed = options.pop("seed", 0)
        options = {k: v for k, v in options.items()
                   if self.option(k) is not None and k != "partition" and v is not None}
        N = rows[-1]["N"]
        if type(self).sizes is Separation.sizes:
            return ""
        at = None
        while N < self.largest:
            N = min(2 * N, self.largest)
            at = self.sizes(N, seed=seed, **options)
            if at[ours] < at[theirs]:
                return f"--n {N} brings the crossing into view ({at[ours]} vs {at[theirs]} there)."
        at = at or self.sizes(N, seed=seed, **options)
        text = f"at the largest --n ({self.largest}) it is {at[ours]} vs {at[theirs]}"
        gamma = self.option("gamma")
        if gamma is not None and options.get("gamma", gamma.default) < WEAKEST_GAMMA:
            weak = self.sizes(self.largest, seed=seed, **{**options, "gamma": WEAKEST_GAMMA})
            if weak[ours] < weak[theirs]:
                return (f"{text}; --n {self.largest} --gamma {WEAKEST_GAMMA} brings the crossing into view "
                        f"({weak[ours]} vs {weak[theirs]}).")
            text += (f", and {weak[ours]} vs {weak[theirs]} with --gamma {WEAKEST_GAMMA} (for k <= 1000 the "
                     f"weakest condition any gamma < 1 sets: vectors distinct up to sign)")
        knobs = "--n or --gamma" if gamma is not None else "--n"
        fixed = ", ".join(f"{k} = {v}" for k, v in options.items() if k != "gamma")
        return f"no accepted {knobs} brings the crossing into view here{f' (at {fixed})' if fixed else ''}: {text}."


def checks_all(total: int, limit: int, instances: int | None, given: bool = False) -> bool:
    """Whether a row checks all ``total`` inputs: with --instances all (None) always; else when there are at
    most ``limit`` -- unless the user gave --instances (``given``) below ``total``: then that many samples."""
    if instances is None:
        return True
    return total <= limit and not (given and instances < total)


def instances_for(problem, count_all: int, instances: int | None, seed: int, cap: int | None = None,
                  given: bool = False):
    """All pairs when few (or asked for), else ``instances`` seeded samples (at most ``cap``); ``given``: the
    user gave --instances (:func:`checks_all`)."""
    if checks_all(count_all, EXHAUSTIVE_LIMIT, instances, given):
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
    {"key": "precision", "label": "p"}, {"key": "width_bits", "label": "width·p"},
    {"key": "parameter_bits", "label": "all params"}, {"key": "inputs_shown", "label": "inputs"},
    {"key": "accuracy", "label": "acc."}, {"key": "rnn_bound_bits", "label": "RNN m·p≥"},
    {"key": "memorize_accuracy", "label": "memo acc."},
    {"key": "one_layer_bound_bits", "label": "1-layer bits≥"},
    {"key": "one_layer_min_width", "label": "1-layer mH≥"}]


def two_layer_plot(construction: str) -> dict:
    """The plot of a two-layer construction's width·p against the recurrent (N/2) and one-layer bounds."""
    return {"x": "N", "crossing": {"ours": "width_bits", "theirs": "rnn_bound_bits",
                                   "text": "the separation is asymptotic"}, "ylabel": "bits", "series": [
        {"key": "width_bits", "label": f"two-layer attention: width·p, width = max(m, d) ({construction})"},
        {"key": "rnn_bound_bits", "label": "recurrent lower bound: m·p ≥ N/2", "style": "--"},
        {"key": "one_layer_bound_bits", "label": "one-layer attention: exchange ≥ N/2 bits", "style": ":"}]}


def two_layer_bounds(bound_bits: int, precision: int, N: int, memorize_bits: int, memorize_accuracy: float) -> dict:
    """The row columns a two-layer separation shares (:data:`TWO_LAYER_TAIL_COLUMNS`): the problem's bound, met by
    the memorizing recurrence, and the one-layer exchange it forces with the width that follows at ``precision``."""
    return {"rnn_bound_bits": bound_bits, "memorize_bits": memorize_bits, "memorize_accuracy": memorize_accuracy,
            "one_layer_bound_bits": bound_bits,
            "one_layer_min_width": float(attention_min_width(bound_bits, precision, N))}


def two_layer_crossover_note(rows: list, separation: "Separation | None" = None,
                             run: SeparationRun | None = None) -> str:
    return crossover_note(rows, "width_bits", "rnn_bound_bits", "the two-layer model's width·p",
                          "the recurrent bound N/2", separation, run)


def crossover_note(rows: list, ours: str, theirs: str, ours_text: str, theirs_text: str,
                   separation: "Separation | None" = None, run: SeparationRun | None = None) -> str:
    """Where the construction's size drops below the other side's bound, within the rows; else whether an accepted
    --n or --gamma would show it (:meth:`Separation.crossing_hint` at ``run``'s seed and options, computed)."""
    cross = crossing(rows, ours, theirs)
    if cross is not None:
        return f"{ours_text} is below {theirs_text} from N = {cross} on (in this range)."
    last = rows[-1]
    hint = separation.crossing_hint(rows, ours, theirs, None if run is None else run.hint_options) \
        if separation is not None else ""
    return (f"{ours_text} is still at or above {theirs_text} at N = {last['N']} ({last[ours]} vs {last[theirs]}): "
            f"the separation is asymptotic (the construction grows like log^2 N, the bound like N) and Lemma 2's "
            f"constants are large" + (f"; {hint}" if hint else "."))


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
