"""What the summary of one run shows, as data: rows of (label, plain text, status), built once.

:func:`run_summary` turns a :class:`~commsim.runs.report.Report` into :class:`SummaryRow` s -- the
same rows whether the terminal (``commsim run``: a rich table, coloured by status) or the HTML run page (a
table, the status word in bold) lays them out, as :mod:`commsim.certify.view` does for certificates.  The
verdict row is the run's one verdict (:func:`commsim.runs.verdict.judge`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

#: a status colours a row's lead: good, bad, warn (None: plain)
GOOD, BAD, WARN = "good", "bad", "warn"

#: the verdict row's lead and status per outcome
OUTCOME_LEAD = {"must_fail": ("must fail", BAD), "wrong_not_forced": ("wrong, not forced by the bound", BAD),
                "correct": ("correct", GOOD), "bound_does_not_apply": ("no bound applies", WARN)}


@dataclass(frozen=True)
class SummaryRow:
    """One row: ``text`` is the whole cell as plain text; ``lead`` (a prefix of ``text``, possibly empty) is
    what ``status`` colours or emphasises; ``bar`` = (bits used, bits needed) when a renderer may draw a
    bar beside the text."""

    label: str
    text: str
    status: str | None = None
    lead: str = ""
    bar: tuple[int, int | None] | None = None

    @property
    def rest(self) -> str:
        """The text after the lead."""
        return self.text[len(self.lead):]

    def to_dict(self) -> dict:
        return asdict(self)


def _led(label: str, lead: str, rest: str, status: str | None) -> SummaryRow:
    return SummaryRow(label, lead + rest, status, lead)


def _counted(entry: dict) -> str:
    """An evaluation set as "524,288 fooling-set members"."""
    return f"{entry['instances']:,} {entry['description']}"


def _joined(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def correctness_row(d: dict) -> SummaryRow:
    """The "model correct" row: yes or no, and on which evaluation sets the model is right or wrong -- never
    "yes" beside a verified certificate (a verified certificate is an input the model gets wrong)."""
    sets = d.get("evaluation_sets") or []
    accuracy = f" (accuracy {d['model_accuracy']:.4f} over all {sum(e['instances'] for e in sets):,} tested)" \
        if len(sets) > 1 else f" (accuracy {d['model_accuracy']:.4f})"
    if not sets:
        return _led("model correct", "yes" if d["model_correct"] else "no", accuracy,
                    GOOD if d["model_correct"] else BAD)
    right = [e for e in sets if not e["wrong"]]
    wrong = [e for e in sets if e["wrong"]]
    if d["model_correct"]:
        return _led("model correct", "yes", f": correct on all {_joined([_counted(e) for e in sets])}{accuracy}",
                    GOOD)
    parts = []
    if right:
        parts.append("correct on the " + _joined([_counted(e) for e in right]))
    if wrong:
        parts.append("wrong on " + _joined([f"all {_counted(e)}" if e["wrong"] == e["instances"] else
                                            f"{e['wrong']:,} of the {_counted(e)}" for e in wrong]))
    cert = d.get("certificate")
    if not wrong and cert and cert.get("verified"):
        parts.append(f"wrong on the certificate's {'crossing' if cert['kind'] == 'rectangle' else 'input'}")
    return _led("model correct", "no", ": " + "; ".join(parts) + accuracy, BAD)


def measured_error_text(m: dict) -> str:
    """The "error rate" row: the measured rate with its interval, the distributional bound and the verdict."""
    interval = ("exact, every instance" if m["confidence"] == 1.0 else
                f"{m['confidence']:.0%} {m['method']} interval [{m['low']:.4g}, {m['high']:.4g}]")
    bound = (f"bound {m['bound']:.4g} over {m['distribution']} ({m['source']}: {m['statement']})" if m["applies"]
             else f"no bound ({m['source']}): {m['reason']}")
    return f"{m['rate']:.4g} measured ({m['events']:,} wrong of {m['trials']:,}; {interval}); {bound}; {m['verdict']}"


def agreement_row(a: dict) -> SummaryRow:
    """The "torch agreement" row: commsim's model against the framework module's own forward."""
    label = f"{a.get('framework', 'torch')} agreement"
    where = f"on {a['instances']:,}" + (f" of {a['of_instances']:,}" if a.get("sampled") else "") + " instances"
    diff = "n/a" if a.get("max_abs_diff") is None else f"{a['max_abs_diff']:.3g}"
    if a.get("ok") is None:
        return _led(label, "not judged", f": max |commsim − {a['framework']}| = {diff} {where} ({a.get('note', '')})",
                    WARN)
    rule = f" ≤ {a['atol']:g} + {a['rtol']:g}·|{a['framework']}|" if a.get("atol") is not None else ""
    rest = (f": max |commsim − {a['framework']}| = {diff}{rule if a['ok'] else ''} {where}"
            + ("" if a["ok"] else f" ({a.get('note', '')})"))
    return _led(label, "passed" if a["ok"] else "FAILED", rest, GOOD if a["ok"] else BAD)


def run_summary(report) -> list[SummaryRow]:
    """The summary rows of a run's report, in the order every renderer shows them."""
    d = report.to_dict()
    verdict = report.judgement
    rows = [SummaryRow("reduction", f"{d['reduction']}  ({d['problem']} → {d['task']}, n = {d['n']}, "
                                    f"sequence length {d['seq_len']})"),
            SummaryRow("model", str(d["model"])),
            SummaryRow("protocol", f"{d['protocol']}  ({d['bits_formula_text']})"
                                   + (f"; chosen {d['simulator_choice']}" if d.get("simulator_choice") else ""))]
    more = [_counted(e) for e in (d.get("evaluation_sets") or [])[1:]]
    rows.append(SummaryRow("instances", f"{d['instances_run']:,} ({d['instances']})"
                                        f"{'; also ' + _joined(more) if more else ''}; {d['runner_checked']} re-run "
                                        f"through the runner{' in separate processes' if d['audited'] else ''}"))
    needed = d["lower_bound_bits"] if d["bound_applies"] else None
    unit = d["lower_bound"].get("unit", "bits")
    if unit == "bits":
        used = f"{d['bits_used']} used / {needed} needed" if needed else f"{d['bits_used']} bits"
        directions = d["bits_by_direction"]
        rows.append(SummaryRow("bits used", f"{used}; Alice→Bob {directions['alice_to_bob']}, "
                                            f"Bob→Alice {directions['bob_to_alice']}, rounds {d['rounds']}",
                               None if needed is None else (GOOD if d["budget_ok"] else BAD),
                               bar=(d["bits_used"], needed)))
    else:       # a bound on the model's own size (a width): no protocol, no bits
        measured = d["lower_bound"].get("measured")
        used = f"{measured} used / {needed} needed" if needed else f"{measured}"
        rows.append(SummaryRow(unit, f"{used} (the bound is on the model's {unit}; no protocol is run)",
                               None if needed is None else (GOOD if d["budget_ok"] else BAD),
                               bar=(measured, needed) if measured is not None else None))
    if d["bound_applies"]:
        amount = f"{d['lower_bound_bits']} bits" if unit == "bits" else f"{unit} {d['lower_bound_bits']}"
        rows.append(SummaryRow("lower bound", f"{amount} — {d['bound_note']}"))
    else:
        rows.append(_led("lower bound", "does not apply", f": {d['bound_note']}", WARN))
    lead, status = OUTCOME_LEAD[verdict.outcome]
    rows.append(_led("verdict", lead, f": {verdict.text}", status))
    if d.get("bound_randomized_note"):
        survives = {True: "survives randomness", False: "deterministic only", None: "randomness: not stated"}
        rows.append(SummaryRow("with coins", f"{survives[d['bound_randomized']]} — {d['bound_randomized_note']}"))
    if d.get("decision"):
        rows.append(SummaryRow("decision", d["decision_note"]))
    rows.append(correctness_row(d))
    if d.get("measured_error"):
        rows.append(SummaryRow("error rate", measured_error_text(d["measured_error"])))
    rows.append(_led("protocol = model", "yes, bit for bit", "", GOOD) if d["protocol_matches_model"] else
                _led("protocol = model", "NO", ": the protocol's output differs from the direct forward", BAD))
    if d.get("torch_agreement"):
        rows.append(agreement_row(d["torch_agreement"]))
    if d.get("effective_precision"):
        found = d["effective_precision"]
        lead = "none found" if found["p_eff"] is None else f"p_eff = {found['p_eff']}"
        rest = f": {found['statement']}" if found["p_eff"] is None else found["statement"][len(lead):]
        rows.append(_led("effective precision", lead, rest, WARN if found["p_eff"] is None else None))
    return rows
