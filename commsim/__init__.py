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
    tokens, labels = sample("index-idxl", n=8, size=100, seed=0)   # the data commsim feeds, to train on

``make_model`` builds a model from a spec string (``"elman:width=8,precision=8"``) or adapts an
object (a PyTorch module, through the installed adapters); ``load_plugins`` returns the registry
(``--plugin MODULE`` on the command line).  ``python -m commsim`` is the command line.
"""
from importlib.metadata import PackageNotFoundError, version

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
from commsim.pipeline.report import Report  # noqa: E402
from commsim.pipeline.run import run_reduction  # noqa: E402
from commsim.pipeline.sample import sample, vocabulary  # noqa: E402
from commsim.plugins import load_plugins, make_model  # noqa: E402

#: ``commsim.run(reduction, model, n=..., instances=...)`` is :func:`run_reduction`
run = run_reduction


def sweep(reductions, models=None, n=None, **options):
    """A grid of runs as a pandas DataFrame: ``commsim.sweep("index-idxl", "elman:width=2..8:x2", n="8..16:x2",
    executor="dask", out="r.parquet")`` (:func:`commsim.pipeline.sweep.sweep`; needs ``commsim[sweep]``).
    ``out`` is written through the command line's atomic file writer and resumed from on the next call."""
    from commsim.cli.files import write_bytes
    from commsim.pipeline.sweep import sweep as run_sweep
    options.setdefault("write", lambda path, data: write_bytes(path, data, option="out"))
    return run_sweep(reductions, models, n, **options)


__all__ = ["run_reduction", "run", "sweep", "sample", "vocabulary", "make_model", "load_plugins", "Report", "Bits", "Message", "Transcript",
           "InputError", "NotApplicable", "Protocol", "Receive", "Send", "FixedPoint", "FloatFormat",
           "parse_format", "AuditSession", "run_protocol", "__version__"]
