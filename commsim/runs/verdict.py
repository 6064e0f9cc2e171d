"""The one verdict of a run: what the bits against the bound, and the model's answers, say about the model.

Every place that tells a reader what a run means -- the terminal panel, :meth:`Report.verdict`,
``Report._repr_html_``, the HTML run page, ``run --json`` (the ``verdict`` key), ``Report.to_row`` and the
exit status of ``run --fail-on-certificate`` / ``--fail-on-error`` -- calls :func:`judge` and shows its
sentence, so none can say more than another.  Four outcomes:

``must_fail``
    a bound applies and the protocol uses fewer bits than it (for a bound on the model's own size, a width: the
    model is smaller than it): the bound forces the model to be wrong on some input (a verified collision,
    rectangle or kernel pair shows one, or the search found none);
``wrong_not_forced``
    the model is wrong on some tested input (its answers, or a verified certificate), but its bits meet the
    bound, or no bound applies: the error is the model's, not forced by the bound;
``correct``
    correct on every tested input, and the bits meet the bound;
``bound_does_not_apply``
    correct on every tested input, and no bound applies to this protocol.
"""
from __future__ import annotations

from dataclasses import dataclass

MUST_FAIL = "must_fail"
WRONG_NOT_FORCED = "wrong_not_forced"
CORRECT = "correct"
BOUND_DOES_NOT_APPLY = "bound_does_not_apply"
#: every outcome, in order of severity
OUTCOMES = (MUST_FAIL, WRONG_NOT_FORCED, CORRECT, BOUND_DOES_NOT_APPLY)
#: the outcomes that say the model is wrong somewhere (``run --fail-on-error`` exits 3 on them)
WRONG_OUTCOMES = frozenset({MUST_FAIL, WRONG_NOT_FORCED})

#: the certificate kinds a bound forces (an ``error`` certificate is a plain wrong answer)
FORCED_KINDS = {"collision": "a verified collision (two inputs, one message)",
                "rectangle": "a verified rectangle (a crossing with its members' transcript)",
                "kernel": "a verified kernel pair (two inputs the first linear layer maps to one output)"}


@dataclass(frozen=True)
class Verdict:
    """An outcome (one of :data:`OUTCOMES`) and the sentence every renderer shows."""

    outcome: str
    text: str

    def to_dict(self) -> dict:
        return {"outcome": self.outcome, "text": self.text}


def judge(report) -> Verdict:
    """The verdict of a :class:`~commsim.runs.report.Report`."""
    lb, cert = report.lower_bound, report.certificate
    verified = cert is not None and cert.verified
    wrong = not report.model_correct or verified
    ok = lb.satisfied_by(report.bits_used)
    used = f"{report.bits_used} bits" if lb.measured is None else f"{lb.unit} {lb.measured}"
    if ok is None:
        head = f"{used}; no bound applies ({lb.reason})"
        if wrong:
            return Verdict(WRONG_NOT_FORCED, f"{head}: the model is wrong on {_where(report)}, not forced by any "
                                             "bound")
        return Verdict(BOUND_DOES_NOT_APPLY, f"{head}: correct on everything tested, with no bound to hold it to")
    relation = ">=" if ok else "<"
    head = f"{used} {relation} the bound {lb.bits} ({lb.source})"
    if not ok:
        if verified and cert.kind in FORCED_KINDS:
            shown = f"{FORCED_KINDS[cert.kind]} shows where"
        elif verified:
            shown = "a verified wrong answer shows one (an error certificate; no collision or rectangle shown)"
        elif report.certificate_search:
            shown = "no input found by the search"
        else:
            shown = "the certificate search was not run"
        return Verdict(MUST_FAIL, f"{head}: the model must fail somewhere, forced by the bound; {shown}")
    if wrong:
        return Verdict(WRONG_NOT_FORCED, f"{head}: the model is wrong on {_where(report)}, but within budget, so "
                                         "not forced by the bound")
    return Verdict(CORRECT, f"{head}: correct on everything tested and within budget (not ruled out)")


def _where(report) -> str:
    """Which tested inputs the model is wrong on: how many of those tested, and whether a verified
    certificate shows one."""
    cert = report.certificate
    shown = cert is not None and cert.verified
    sets = report.evaluation_sets or []
    wrong = sum(int(s.get("wrong") or 0) for s in sets)
    total = sum(int(s.get("instances") or 0) for s in sets)
    if wrong and total:
        return f"{wrong:,} of {total:,} tested inputs" + (" (a verified certificate shows one)" if shown else "")
    return "the input a verified certificate shows" if shown else "some tested input"
