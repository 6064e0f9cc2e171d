"""commsim: communication-protocol simulator for lower bounds on neural sequence models.

The engine (this package) knows bits, number formats, parties, the channel,
source problems, lower bounds and the plugin registry; the papers' protocols,
reductions and models live in the ``protocols`` package and register as plugins.
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

__all__ = ["Bits", "Message", "Transcript", "InputError", "NotApplicable", "Protocol", "Receive", "Send",
           "FixedPoint", "FloatFormat", "parse_format", "AuditSession", "run_protocol", "__version__"]
