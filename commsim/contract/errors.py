"""The errors a plugin raises: a bad argument or spec (:class:`InputError`, exit 2 naming it), a model that cannot
run (:class:`ModelError`), a protocol or bound that does not apply (:class:`NotApplicable`), a broken promise
inside commsim or a plugin (:class:`InternalError`), a bad source-problem input (:class:`ProblemInputError`)."""
from commsim.core.errors import InputError, InternalError, ModelError, NotApplicable, ProblemInputError

__all__ = ["InputError", "InternalError", "ModelError", "NotApplicable", "ProblemInputError"]
