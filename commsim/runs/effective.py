"""The bound at the precision a model really uses: its **effective precision** p_eff, and the run there.

p_eff is the smallest fixed-point width p of :data:`PRECISIONS` (p bits, p // 2 of them fraction bits:
``FixedPoint.with_bits(p)``) at which the model *as commsim runs it in that format* -- every parameter and every
computed number rounded to it, through :func:`commsim.plugins.make_model`'s ``precision=`` (a module object) or the
spec's ``precision=`` key (a spec string) -- keeps its accuracy: at most :data:`TOLERANCE` below its accuracy in
its own format (a torch module's dtype, a spec's own format), both measured on the same instances (the search
sample, :func:`search_sample`).  The widths are searched by bisection, which takes the accuracy to be monotone in
p (it need not be exactly: every width tried is kept with its accuracy, ``tried``); p_eff is None when even the
widest does not keep it.

:func:`search_width` is the search itself, on any accuracy function (the trained-model experiments use it too);
:func:`run_effective` is ``commsim run ... --precision effective`` / ``commsim.run(..., precision="effective")``:
search, then the whole run -- bits, bound, verdict, certificate -- of the model quantised to p_eff bits.  What
follows is a statement about **that quantised model**, not about the model in its own format: the report says so
(:data:`WHAT_FOLLOWS`) beside p_eff, the tolerance and the sample.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from commsim.contract.effective import PRECISIONS, TOLERANCE, search_width  # noqa: F401 (the run's search)
from commsim.core.errors import InputError
from commsim.core.precision import FixedPoint
from commsim.runs.arguments import instances_argument
from commsim.runs.report import Report
from commsim.runs.run import modes_kept, run_reduction
from commsim.runs.stages import Instances, check_run_size, prepare, select_instances
from commsim.plugins import load_plugins, make_model
from commsim.spec import FORMAT_KEYS, ModelSpec

#: the most instances the search measures accuracies on (the run's own instances when they are fewer)
MAX_SEARCH_INSTANCES = 4096

#: what the run at p_eff says, in words (every report with a p_eff says it)
WHAT_FOLLOWS = ("the bits, the bound's verdict and any certificate are about the model quantised to p_eff bits "
                "(every parameter and computed number rounded to fixed point), not about the model in its own format")


@dataclass(frozen=True)
class EffectivePrecision:
    """A p_eff search's result (module docstring): ``reference`` the accuracy in the model's own format
    (``own_format``), ``accuracy`` the quantised one at p_eff, ``sample`` the instances both were measured on."""

    p_eff: int | None
    tolerance: float
    reference: float
    accuracy: float | None
    own_format: str
    sample: str
    sample_size: int
    tried: dict = field(default_factory=dict)

    @property
    def format(self) -> str | None:
        """p_eff's number format (``fixedP.F``), None without a p_eff."""
        return None if self.p_eff is None else FixedPoint.with_bits(self.p_eff).name

    @property
    def text(self) -> str:
        """The search and what follows, in words."""
        measured = (f"on {self.sample_size:,} instances ({self.sample}), accuracy within {self.tolerance:g} of the "
                    f"model's {self.reference:.4f} in its own format ({self.own_format})")
        widths = f"{PRECISIONS[0]}..{PRECISIONS[-1]}"
        if self.p_eff is None:
            return (f"no fixed-point width of {widths} bits keeps the accuracy {measured}; this run is of the model "
                    f"in its own format")
        return (f"p_eff = {self.p_eff} ({self.format}): the smallest width of {widths} bits (bisection) keeping the "
                f"accuracy {measured}: {self.accuracy:.4f}; {WHAT_FOLLOWS}")

    def to_dict(self) -> dict:
        return {"p_eff": self.p_eff, "format": self.format, "tolerance": self.tolerance,
                "own_format_accuracy": self.reference, "own_format": self.own_format,
                "quantised_accuracy": self.accuracy, "sample": self.sample, "sample_size": self.sample_size,
                "precisions_tried": {str(p): a for p, a in sorted(self.tried.items())}, "search": "bisection",
                "precisions": list(PRECISIONS), "statement": self.text}


def search_sample(problem, instances: int | None, seed: int) -> Instances:
    """The instances the search measures on: the run's own (every instance, or its seeded sample) when there are at
    most :data:`MAX_SEARCH_INSTANCES` of them, else that many sampled with the run's seed."""
    count = problem.input_pairs if instances is None else instances
    if count <= MAX_SEARCH_INSTANCES:
        return select_instances(problem, instances, seed)
    return select_instances(problem, MAX_SEARCH_INSTANCES, seed)


def _accuracy(setup, chosen: Instances) -> float:
    """The model's accuracy on the instances, from its direct forward in its format."""
    answers = setup.direct_answers(chosen.alice, chosen.bob)
    return float(np.mean(np.asarray(answers) == setup.problem.evaluate_batch(chosen.alice, chosen.bob)))


def _at_width(model: Any, reduction, n: int, decision=None) -> Callable[[int | None], Any]:
    """p -> the model at p-bit fixed point (None: in its own format): a spec string gets ``precision=p`` (refused,
    naming ``precision``, when it names a format already or its kind takes none), a module object goes through
    :func:`make_model` with ``precision=p``; ``decision``: the rule the model is decided by (None: by its shape)."""
    if isinstance(model, str):
        spec = ModelSpec.parse(model, load_plugins().names("model"))
        fixed = [key for key in FORMAT_KEYS if spec.has(key)]
        if fixed:
            raise InputError(f"precision: the spec {model!r} fixes its format ({fixed[0]}=); drop it to search the "
                             f"effective precision", "precision")
        joiner = "," if spec.params else ":"
        text = lambda p: model if p is None else f"{model}{joiner}precision={p}"   # noqa: E731
        return text if decision is None else lambda p: make_model(text(p), decision=decision,
                                                                  **reduction.model_context(n))
    context = {**reduction.model_context(n), "decision": decision}
    return lambda p: make_model(model, **context) if p is None else make_model(model, precision=p, **context)


def _prepared(reduction, model, n: int, simulator: str | None):
    """prepare(), a spec's unread ``precision=`` refused naming ``precision``: its kind has no format to search."""
    try:
        return prepare(reduction, model, n, simulator=simulator)
    except InputError as exc:
        if isinstance(model, str) and "precision" in str(exc) and "unknown key" in str(exc):
            raise InputError(f"precision: {model.split(':')[0]} models take no precision= (they fix their own "
                             f"number format), so there is no effective precision to search", "precision") from None
        raise


def effective_precision(reduction, model, n: int | None = None, *, instances: int | None = None, seed: int = 0,
                        simulator: str | None = None, tolerance: float = TOLERANCE, decision=None
                        ) -> tuple[EffectivePrecision, Callable[[int | None], Any]]:
    """The p_eff search for a run (module docstring), and the function p -> the model at p bits (decided by
    ``decision``; None: the rule its output shape calls for)."""
    if isinstance(reduction, str):
        reduction = load_plugins().get("reduction", reduction, param="reduction")
    size = reduction.default_n if n is None else check_run_size(reduction, n)
    if model is None:
        model = reduction.default_model
    at = _at_width(model, reduction, size, decision)
    own = prepare(reduction, at(None), size, simulator=simulator)
    chosen = search_sample(own.problem, instances_argument(instances), seed)
    reference = _accuracy(own, chosen)
    p_eff, tried = search_width(lambda p: _accuracy(_prepared(reduction, at(p), size, simulator), chosen),
                                reference, tolerance=tolerance)
    fmt = getattr(own.model, "format", None) or getattr(getattr(own.model, "arithmetic", None), "format", None)
    own_format = getattr(fmt, "name", None) or "as built"
    result = EffectivePrecision(p_eff, tolerance, reference, None if p_eff is None else tried[p_eff], own_format,
                                chosen.described, len(chosen.alice), tried)
    return result, at


def run_effective(reduction, model=None, n: int | None = None, *, frac=None, dtype=None, decision=None,
                  **options) -> Report:
    """``precision="effective"``: the p_eff search, then the run of the model quantised to p_eff bits (in its own
    format when no width keeps the accuracy), its report carrying the search (``Report.effective_precision``)."""
    for key, value in (("frac", frac), ("dtype", dtype)):
        if value is not None:
            raise InputError(f"{key}= does not go with precision='effective': the search sets the fixed-point width "
                             f"(p // 2 fraction bits)", key)
    with modes_kept(model):
        found, at = effective_precision(reduction, model, n, instances=options.get("instances"),
                                        seed=options.get("seed", 0), simulator=options.get("simulator"),
                                        decision=decision)
        report = run_reduction(reduction, at(found.p_eff), n, **options)
    report.effective_precision = found.to_dict()
    return report
