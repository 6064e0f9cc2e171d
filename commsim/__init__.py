"""commsim: communication-protocol simulator for lower bounds on neural sequence models.

The engine (this package) knows bits, number formats, parties, the channel, source problems,
lower bounds, certificates and the pipeline that composes them; the papers' models, simulators,
reductions and constructions live in the ``protocols`` package and register as plugins
(entry-point group ``commsim.plugins``).

The Python API::

    from commsim import run_reduction, make_model
    report = run_reduction("index-idxl", "memorize:capacity=7", n=8)
    report.bits_used, report.lower_bound.bits, report.certificate
    report.to_json()
    setup = prepare("index-idxl", "memorize:capacity=7", n=8)        # the engine's pieces, for lessons and notebooks
    setup.run_instance([1, 0, 1, 1, 0, 0, 1, 0], 3).result.transcript  # one instance through the real runner
    search_certificate(setup)                                          # the input on which the model must fail
    tokens, labels = sample("index-idxl", n=8, size=100, seed=0)   # the data commsim feeds, to train on

``make_model`` builds a model from a spec string (``"elman:width=8,precision=8"``) or adapts an
object (a PyTorch module, through the installed adapters); ``load_plugins`` returns the registry
(``--plugin MODULE`` on the command line).  ``python -m commsim`` is the command line.
"""
from commsim.startup import guard as _guard_startup

_guard_startup()   # Ctrl-C while the command imports: one line, exit 130 (first, before anything heavy)

from importlib.metadata import PackageNotFoundError, version  # noqa: E402

try:
    __version__ = version("commsim")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"

from commsim.core.bits import Bits  # noqa: E402
from commsim.core.channel import Message, Transcript  # noqa: E402
from commsim.core.errors import InputError, NotApplicable  # noqa: E402
from commsim.core.party import Protocol, Receive, Send  # noqa: E402
from commsim.core.precision import FixedPoint, FloatFormat, parse_format  # noqa: E402
from commsim.core.runner import AuditSession, run_protocol  # noqa: E402
from commsim.runs.cc import run_cc  # noqa: E402
from commsim.runs.report import Report  # noqa: E402
from commsim.runs.report import register_html_writer as _register_html_writer  # noqa: E402
from commsim.runs.run import run_instances, run_reduction, search_certificate  # noqa: E402
from commsim.runs.stages import Prepared, prepare  # noqa: E402
from commsim.runs.sample import sample, vocabulary  # noqa: E402
from commsim.plugins import load_plugins, make_model  # noqa: E402
from commsim.teach import Lesson, Step  # noqa: E402
from commsim.teach.course import Course, CourseLesson  # noqa: E402
from commsim.teach.exercises import (Exercise, ExerciseSet, answer_bits, answer_bool, answer_int,  # noqa: E402
                                     answer_ints, answer_keys, answer_list)
from commsim.teach.statement import Statement  # noqa: E402


def _check_keywords(call: str, options: dict, function, leading=()) -> None:
    """The keywords ``commsim.run``/``sweep``/``replicate`` pass on beyond their own are ``function``'s keyword-only
    parameters (with ``leading``, the call's own): any other is an InputError naming it, suggesting the closest
    and listing the valid ones (as :func:`make_model` does), not a TypeError from inside."""
    import inspect

    from commsim.spec import did_you_mean
    keywords = inspect.signature(function).parameters.items()
    valid = list(leading) + [name for name, p in keywords if p.kind is p.KEYWORD_ONLY]
    for key in options:
        if key not in valid:
            raise InputError(f"{call} got an unknown keyword {key!r}{did_you_mean(key, valid)}; valid keywords: "
                             f"{', '.join(valid)}", key)


def _check_table_options(call: str, options: dict, function) -> None:
    """``sweep``'s and ``replicate``'s keywords checked before anything runs: known ones (:func:`_check_keywords`),
    ``progress`` a function, True or None, ``notify`` and ``write`` functions or None, and ``out`` a table file
    name (.parquet, .csv, .json) that the atomic writer can write -- not a symbolic link, a directory or a
    read-only file, found out only at the first save after a cell has run."""
    import os

    from commsim.cli.files import check_target
    from commsim.runs.arguments import callable_argument
    from commsim.batch.sweep import table_format
    _check_keywords(call, options, function)
    for key in ("progress", "notify", "write"):
        if key in options and not (key == "progress" and options[key] is True):
            callable_argument(options[key], key)
    out = options.get("out")
    if out is not None:
        if not isinstance(out, (str, os.PathLike)):
            raise InputError(f"out must be a table file name (.parquet, .csv or .json), got {type(out).__name__}",
                             "out")
        table_format(out)
        check_target(out, "out", "table")


def run(reduction, model=None, n=None, *, precision=None, frac=None, dtype=None, decision=None, **options):
    """``commsim.run(reduction, model, n=..., instances=...)``: :func:`run_reduction`, with a model object's
    number format -- ``precision=P`` (P-bit fixed point; an int, or a format name such as ``"fixed16.8"`` or
    ``"bfloat16"``) with an optional ``frac=F``, or ``dtype=NAME`` -- given as to :func:`make_model`, which
    builds the model from the object (a torch module, a dict of its parts) sized to the task.  A spec string
    names its format inside it (``"lstm:width=8,precision=8"``).  A torch module runs in eval mode and gets its
    own train/eval mode back afterwards (:func:`commsim.runs.run.modes_kept`).  ``precision="effective"`` (a
    spec string or a model object) searches the smallest fixed-point width that keeps the model's accuracy and runs
    the model quantised to it (:mod:`commsim.runs.effective`).  ``progress=True`` draws a
    progress bar (in Jupyter, in the cell's output: :mod:`commsim.cli.progress`).  ``decision``: how the model's
    outputs become decisions -- ``"argmax"``, ``"sign"`` (one logit) or ``"threshold"`` (one probability, at 1/2);
    default: the rule the output's shape calls for (:mod:`commsim.core.decision`)."""
    _check_keywords("run", options, run_reduction, leading=("n", "precision", "frac", "dtype", "decision"))
    if options.get("progress") is True:
        from commsim.cli.progress import api_progress
        label = reduction if isinstance(reduction, str) else "run"
        with api_progress(True, label, stages=True) as progress:
            return run(reduction, model, n, precision=precision, frac=frac, dtype=dtype, decision=decision,
                       **{**options, "progress": progress})
    if isinstance(precision, str) and precision.strip().lower() == "effective":   # p_eff searched, then the run
        from commsim.runs.effective import run_effective
        return run_effective(reduction, model, n, frac=frac, dtype=dtype, decision=decision, **options)
    given = [key for key, value in (("precision", precision), ("frac", frac), ("dtype", dtype)) if value is not None]
    if not given and decision is None:
        return run_reduction(reduction, model, n, **options)
    if given and (model is None or isinstance(model, str)):
        raise InputError(f"{given[0]}= applies to a model object (a torch module, a dict of its parts); a spec string "
                         f"names its number format inside it, e.g. 'lstm:width=8,precision=8'", param=given[0])
    from commsim.runs.run import modes_kept
    from commsim.runs.stages import check_run_size
    task = load_plugins().get("reduction", reduction, param="reduction") if isinstance(reduction, str) else reduction
    size = task.default_n if n is None else check_run_size(task, n)
    with modes_kept(model):   # the module's train/eval mode as it was, after the run
        fmt = parse_format(precision=precision, frac=frac, dtype=dtype)   # the one parse; make_model keeps it
        built = make_model(task.default_model if model is None else model, decision=decision,
                           **({} if fmt is None else {"precision": fmt}), **task.model_context(size))
        return run_reduction(task, built, size, **options)


def sweep(reductions, models=None, n=None, **options):
    """A grid of runs as a pandas DataFrame: ``commsim.sweep("index-idxl", "elman:width=2..8:x2", n="8..16:x2",
    executor="dask", out="r.parquet")`` (:func:`commsim.batch.sweep.sweep`; needs ``commsim[sweep]``).
    ``out`` is written through the command line's atomic file writer and resumed from on the next call;
    ``prune=True`` drops its rows whose cells are no longer in the grid.  ``progress=True`` draws a progress bar
    (in Jupyter, in the cell's output: :mod:`commsim.cli.progress`)."""
    from commsim.cli.files import write_bytes
    from commsim.cli.progress import api_progress
    from commsim.batch.arguments import sweep_arguments
    from commsim.batch.sweep import sweep as run_sweep
    _check_table_options("sweep", options, run_sweep)
    bar = options.get("progress") is True
    sweep_arguments(reductions, models, n, {**options, "progress": None} if bar else options)   # before a bar shows
    options.setdefault("write", lambda path, data: write_bytes(path, data, option="out"))
    with api_progress(options.get("progress"), "sweep: cells") as progress:
        return run_sweep(reductions, models, n, **{**options, "progress": progress})


def bit_budget(arch: str, width: int, precision: int | None, task: str, **options):
    """What ``commsim budget`` computes, as its report: the architecture's protocol bits on ``task`` against the
    task's bound, the longest N its plan is not ruled out at, and the paper's count beside it
    (:func:`commsim.budget.compute.budget`; ``heads``, ``n``, ``n_range``, ``dim``, ``dtype`` as there)."""
    from commsim.budget.compute import budget
    return budget(arch, width, precision, task, **options)


def save_html(report, path, *, command=None):
    """Save ``report`` (a :class:`Report` from :func:`run`) as the page ``commsim run --html`` writes -- the
    summary, the bits against the bound, the costliest transcript and the certificate, one self-contained HTML
    file -- through the command line's atomic file writer.  ``path`` must name a .html file in an existing
    directory (checked before the page is built); ``command`` is the page footer's "made by" line (default: this
    call).  Needs the html extra: ``pip install 'commsim[html]'``."""
    import os

    from commsim.cli.html import check_html, write_html
    from commsim.render.reports import run_page
    if not isinstance(report, Report):
        raise InputError(f"report must be a commsim Report (from commsim.run), got {type(report).__name__}", "report")
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"path must be a file name, got {type(path).__name__}", "path")
    check_html(os.fspath(path), "path")
    if command is not None and not isinstance(command, str):
        raise InputError(f"command must be a string, got {type(command).__name__}", "command")
    made_by = f"commsim.save_html(report, {os.fspath(path)!r})" if command is None else command
    write_html(os.fspath(path), run_page(report, made_by), "path")


_register_html_writer(save_html)      # Report.to_html draws its page here, in the API layer above the pipeline


def replicate(experiment, scale="quick", **options):
    """A paper's experiment at ``scale`` (``quick``, ``cpu``, ``paper``) as a pandas DataFrame, one row per model x
    N x width x seed: ``commsim.replicate("bhbk24-index", "cpu", executor="processes", out="idx.parquet")``
    (:func:`commsim.batch.replicate.replicate`; needs torch).  The frame's ``attrs`` hold the paper's claims
    checked (``claims``) and the invariants broken (``violations``).  ``out`` is written through the command
    line's atomic file writer and resumed from on the next call.  ``progress=True`` draws a progress bar (in
    Jupyter, in the cell's output)."""
    from commsim.cli.files import write_bytes
    from commsim.cli.progress import api_progress
    from commsim.batch.replicate import replicate as run_replicate
    _check_table_options("replicate", options, run_replicate)
    if not isinstance(experiment, str) and not all(hasattr(experiment, key) for key in ("name", "scales", "cells")):
        raise InputError(f"experiment must be an experiment id such as 'bhbk24-index' (commsim list shows them) or "
                         f"an experiment object (name, scales, cells, run_cell), got "
                         f"{type(experiment).__name__ if experiment is not None else None}", "experiment")
    with api_progress(options.get("progress"), "replicate: cells") as progress:
        if progress is not None:
            options["progress"] = progress
        options.setdefault("write", lambda path, data: write_bytes(path, data, option="out"))
        return run_replicate(experiment, scale, **options)


__all__ = ["run_reduction", "run", "run_instances", "prepare", "Prepared", "search_certificate", "sweep", "replicate", "save_html", "bit_budget", "run_cc", "Lesson", "Step", "Statement", "Exercise", "ExerciseSet", "answer_bits", "answer_bool", "answer_int", "answer_ints", "answer_keys", "answer_list", "Course", "CourseLesson", "sample", "vocabulary", "make_model", "load_plugins", "Report", "Bits", "Message", "Transcript",
           "InputError", "NotApplicable", "Protocol", "Receive", "Send", "FixedPoint", "FloatFormat",
           "parse_format", "AuditSession", "run_protocol", "__version__"]
