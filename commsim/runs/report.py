"""The report of one run of a reduction (the contract's JSON keys)."""
from __future__ import annotations

import html
from dataclasses import dataclass, field

from commsim.certify.types import Certificate
from commsim.core.channel import Transcript
from commsim.core.jsonable import to_json
from commsim.runs.verdict import Verdict, judge
from commsim.theory.bounds import LowerBound


def _no_html_writer(report, path, *, command=None) -> None:
    raise RuntimeError("no page writer is set: import commsim (its save_html draws the page)")


#: what :meth:`Report.to_html` calls, ``(report, path, command=...)``: the writer given to
#: :func:`register_html_writer` (:func:`commsim.save_html`; none before it is registered)
html_writer = _no_html_writer


def register_html_writer(writer) -> None:
    """Make ``writer(report, path, command=...)`` the page writer of :meth:`Report.to_html`.  Pages are drawn in
    the layers above this one (render, and the command line's file writer), which this module may not import;
    the ``commsim`` package -- the public API, above every layer, loaded before any of its modules -- registers
    :func:`commsim.save_html` here when it loads, and is the one caller."""
    global html_writer
    html_writer = writer


def _effective_keys(found: dict | None) -> dict:
    """The flat keys of an effective-precision run: ``p_eff``, ``p_eff_tolerance``, ``p_eff_sample`` (None each
    without one)."""
    if found is None:
        return {"p_eff": None, "p_eff_tolerance": None, "p_eff_sample": None}
    return {"p_eff": found["p_eff"], "p_eff_tolerance": found["tolerance"],
            "p_eff_sample": f"{found['sample_size']} instances ({found['sample']})"}


@dataclass
class Report:
    """Everything ``commsim run`` reports; :meth:`to_dict` has the contract's keys."""

    reduction: str
    problem: str
    task: str
    protocol: str
    model: str
    n: int
    seq_len: int
    instances: str
    instances_run: int
    bits_used: int
    bits_by_direction: dict
    rounds: int
    bits_formula: int
    bits_formula_text: str
    lower_bound: LowerBound
    model_accuracy: float
    model_correct: bool
    protocol_matches_model: bool
    runner_checked: int
    audited: bool
    certificate: Certificate | None
    certificate_search: str = ""
    transcript: Transcript | None = None
    details: dict = field(default_factory=dict)
    #: accuracy per evaluation set, e.g. {"members": 1.0, "crossings": 0.0, "random_non_members": 0.02}
    accuracy_by_set: dict = field(default_factory=dict)
    #: per evaluation set: name, description, instances, wrong, accuracy, protocol_matches_model
    evaluation_sets: list = field(default_factory=list)
    #: for a model adapted from a framework (PyTorch): ok, atol, rtol, max_abs_diff, reference, note (framework.py)
    torch_agreement: dict | None = None
    #: for a distributional bound: the measured error rate with its confidence interval against the bound
    measured_error: dict | None = None
    #: how the simulator was chosen ("by the model's kind", "by name" with --simulator, or as a reduction's variant)
    simulator_choice: str = ""
    #: how the model's outputs became decisions (commsim.core.decision.Decision.to_dict: rule, text, chosen); None
    #: for a model that decides by no output values (an automaton)
    decision: dict | None = None
    #: a run at the effective precision (``precision="effective"``): the search's p_eff, tolerance, sample and what
    #: follows (:class:`commsim.runs.effective.EffectivePrecision`); None for a run in the model's own format
    effective_precision: dict | None = None

    @property
    def budget_ok(self) -> bool | None:
        """Does the run use at least the lower bound's bits (None when no bound applies)?"""
        return self.lower_bound.satisfied_by(self.bits_used)

    def to_dict(self) -> dict:
        lb = self.lower_bound
        return {
            "reduction": self.reduction, "problem": self.problem, "task": self.task, "protocol": self.protocol,
            "model": self.model, "n": self.n, "seq_len": self.seq_len, "instances": self.instances,
            "instances_run": self.instances_run, "bits_used": self.bits_used,
            "bits_by_direction": self.bits_by_direction, "rounds": self.rounds,
            "bits_formula": self.bits_formula, "bits_formula_text": self.bits_formula_text,
            "lower_bound_bits": lb.bits, "lower_bound_source": lb.source, "lower_bound": lb.to_dict(),
            "bound_applies": lb.applies, "bound_note": lb.note, "budget_ok": self.budget_ok,
            "bound_kind": lb.kind, "bound_randomized": lb.randomized,
            "bound_randomized_note": lb.randomized_reason,
            "model_accuracy": self.model_accuracy, "model_correct": self.model_correct,
            "accuracy_by_set": self.accuracy_by_set, "evaluation_sets": self.evaluation_sets,
            "protocol_matches_model": self.protocol_matches_model, "runner_checked": self.runner_checked,
            "audited": self.audited,
            "certificate": None if self.certificate is None else self.certificate.to_dict(),
            "certificate_search": self.certificate_search,
            "transcript": None if self.transcript is None else self.transcript.to_dict(),
            "details": self.details, "torch_agreement": self.torch_agreement,
            "measured_error": self.measured_error, "simulator_choice": self.simulator_choice,
            # the flat keys of the design contract for a distributional bound (None without one)
            "error_rate": None if self.measured_error is None else self.measured_error["rate"],
            "error_rate_interval": None if self.measured_error is None else
            [self.measured_error["low"], self.measured_error["high"]],
            "error_bound": None if self.measured_error is None or not self.measured_error["applies"] else
            self.measured_error["bound"],
            "verdict": self.judgement.to_dict(),
            "decision": None if self.decision is None else self.decision["rule"],
            "decision_note": None if self.decision is None else
            f"{self.decision['rule']}: {self.decision['text']} ({self.decision['chosen']})",
            # precision="effective": p_eff, the tolerance and the sample it was searched with (None otherwise)
            "effective_precision": self.effective_precision,
            **_effective_keys(self.effective_precision),
        }

    @property
    def judgement(self) -> Verdict:
        """The run's one verdict (:func:`commsim.runs.verdict.judge`): outcome and sentence."""
        return judge(self)

    @property
    def outcome(self) -> str:
        """The verdict's outcome: ``must_fail``, ``wrong_not_forced``, ``correct`` or ``bound_does_not_apply``."""
        return self.judgement.outcome

    def verdict(self) -> str:
        """One line: the bits against the bound and what follows for the model (the verdict's sentence)."""
        return self.judgement.text

    def to_row(self) -> dict:
        """The key figures as one flat row of scalars (``pandas.DataFrame([r.to_row() for r in reports])``)."""
        lb, cert = self.lower_bound, self.certificate
        return {
            "reduction": self.reduction, "model": self.model, "protocol": self.protocol, "n": self.n,
            "seq_len": self.seq_len, "instances_run": self.instances_run, "bits_used": self.bits_used,
            "alice_to_bob": self.bits_by_direction.get("alice_to_bob"),
            "bob_to_alice": self.bits_by_direction.get("bob_to_alice"), "rounds": self.rounds,
            "bits_formula": self.bits_formula, "lower_bound_bits": lb.bits, "bound_applies": lb.applies,
            "bound_kind": lb.kind, "budget_ok": self.budget_ok, "model_accuracy": self.model_accuracy,
            "model_correct": self.model_correct, "protocol_matches_model": self.protocol_matches_model,
            "certificate": cert is not None and cert.verified,
            "certificate_kind": None if cert is None else cert.kind, "verdict": self.outcome, "audited": self.audited,
            "torch_agreement": None if self.torch_agreement is None else self.torch_agreement.get("ok"),
            "measured_error": None if self.measured_error is None else self.measured_error.get("rate"),
            "decision": None if self.decision is None else self.decision["rule"],
        }

    def _repr_html_(self) -> str:
        """A Jupyter display: the verdict and the key figures as a table (escaped text only)."""
        rows = "".join(f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
                       f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>"
                       for k, v in self.to_row().items())
        certificate = ""
        if self.certificate is not None:
            certificate = f"<p><b>Certificate</b>: {html.escape(self.certificate.explanation)}</p>"
        verdict = self.judgement
        return (f"<div class='commsim-report'><p><b>commsim run {html.escape(self.reduction)}</b> on "
                f"<code>{html.escape(self.model)}</code>, n = {self.n}: <span class='verdict' "
                f"data-outcome='{html.escape(verdict.outcome)}'>{html.escape(verdict.text)}</span></p>"
                f"<table>{rows}</table>{certificate}</div>")

    def to_html(self, path, *, command: str | None = None) -> None:
        """Save the report as the page ``commsim run --html`` writes: :func:`commsim.save_html` (the same code,
        the same checks on ``path``; ``command`` is the page footer's "made by" line, default: this call).  The
        writer is the one registered with :func:`register_html_writer` (pages are drawn above this layer)."""
        import os

        made_by = command
        if command is None and isinstance(path, (str, os.PathLike)):
            made_by = f"report.to_html({os.fspath(path)!r})"
        html_writer(self, path, command=made_by)

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text, exactly what ``commsim run --json`` prints."""
        return to_json(self.to_dict(), indent)
