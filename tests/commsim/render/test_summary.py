"""One run-summary view (commsim.render.summary.run_summary): the terminal panel and the HTML run page show the
same rows -- label and text -- for runs with a certificate, an audit, coins, a measured error rate and a torch
agreement; and the certificate shows the model's own output on its task beside the decoded answer."""
from __future__ import annotations

import pytest

pytest.importorskip("latex2mathml")

from page_checks import flat as _flat, page_text  # noqa: E402

import commsim.cli.common as cli_common  # noqa: E402
from commsim.cli.run import render_report  # noqa: E402
from commsim.runs.run import run_reduction  # noqa: E402
from commsim.render.reports import run_page  # noqa: E402
from commsim.render.summary import run_summary  # noqa: E402

RUNS = {
    "must-fail": dict(reduction="index-idxl", model="memorize:capacity=5", n=6),
    "audited": dict(reduction="eq-ineq", model="lstm:width=1,precision=2", n=3, audit=True),
    "error-rate": dict(reduction="compose-index", model=None, n=4, instances=40),
    "torch": dict(reduction="index-idxl", model="python:examples.factories:lstm_index:hidden=4", n=4, instances=40),
}


def _report(case: str):
    args = dict(RUNS[case])
    if case == "torch":
        pytest.importorskip("torch")
    return run_reduction(args.pop("reduction"), args.pop("model"), args.pop("n"), **args)


def _terminal(capsys, monkeypatch, report) -> str:
    monkeypatch.setattr(cli_common.console, "_width", 2000)      # one line per row
    capsys.readouterr()
    render_report(report)
    return capsys.readouterr().out


@pytest.mark.parametrize("case", list(RUNS))
def test_terminal_and_html_show_the_same_rows(capsys, monkeypatch, case):
    report = _report(case)
    rows = run_summary(report)
    labels = [r.label for r in rows]
    assert len(labels) == len(set(labels))
    for needed in ("reduction", "model", "protocol", "instances", "bits used", "lower bound", "verdict",
                   "model correct", "protocol = model"):
        assert needed in labels
    out = _terminal(capsys, monkeypatch, report)
    lines = [_flat(line) for line in out.splitlines()]
    for row in rows:     # each row on one line of the panel: its label, (the bits bar,) then its text
        assert any(line.startswith(_flat(row.label)) and line.endswith(_flat(row.text)) for line in lines), \
            (row.label, row.text)
    shown = page_text(run_page(report, "commsim run")).rows
    assert {k: v for k, v in shown.items() if k in labels} == {r.label: _flat(r.text) for r in rows}
    assert [k for k in shown if k in labels] == labels          # in the same order


def test_the_rows_the_page_used_to_leave_out():
    audited = run_summary(_report("audited"))
    assert "in separate processes" in next(r.text for r in audited if r.label == "instances")
    assert next(r for r in audited if r.label == "model correct").lead == "no"
    error = {r.label: r for r in run_summary(_report("error-rate"))}
    assert "error rate" in error and "with coins" in error
    pytest.importorskip("torch")
    torch_rows = {r.label: r for r in run_summary(_report("torch"))}
    assert "torch agreement" in torch_rows


def test_certificate_in_the_models_own_terms(capsys, monkeypatch):
    """eq-ineq: the model computes INEQ; its own output and the decoded EQ answer are both shown, labelled."""
    from commsim.certify.view import certificate_view
    report = run_reduction("eq-ineq", "lstm:width=1,precision=2", n=4)
    cert = report.certificate.to_dict()
    own = cert["details"]["task_output"]
    assert own["task"] == "ineq" and own["model_output"] == 1 - cert["model_output"]
    view = certificate_view(cert, report.problem)
    assert view.task == "INEQ" and view.source == "EQ"
    assert f"INEQ = {own['model_output']}" in view.task_output and f"EQ = {cert['model_output']}" in view.task_output
    out = _flat(_terminal(capsys, monkeypatch, report))
    assert "answer (EQ)" in out and "model → EQ" in out and "model's INEQ" in out and _flat(view.task_output) in out
    page = run_page(report, "commsim run")
    assert "INEQ = 1" in page and "answer / model (EQ)" in page and _flat(view.task_output) in _flat(page)
    # without the key (an older certificate): today's table
    del cert["details"]["task_output"]
    plain = certificate_view(cert, report.problem)
    assert plain.task == "" and plain.task_output == "" and all(r.task_model is None for r in plain.rows)


def test_identity_decoding_keeps_one_answer_column():
    from commsim.certify.view import certificate_view
    report = run_reduction("index-idxl", "memorize:capacity=5", n=6)
    view = certificate_view(report.certificate, report.problem)
    assert view.task == "" and "identity" in view.task_output


@pytest.mark.parametrize("model, n", [("lstm:width=1,precision=2", 4), ("elman:width=16,precision=8", 6)])
def test_the_failing_rows_label_does_not_overlap_its_outline(model, n):
    import matplotlib.patches as mpatches

    from commsim.certify.view import FAILING_LABELS, certificate_view
    from commsim.render.exchange import certificate_figure
    report = run_reduction("eq-ineq" if model.startswith("lstm") else "index-idxl", model, n=n)
    fig = certificate_figure(certificate_view(report.certificate, report.problem), report.certificate.details)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    labels = [t.get_window_extent(renderer) for t in ax.texts if t.get_text() in FAILING_LABELS]
    outlines = [p.get_window_extent(renderer) for p in ax.patches
                if isinstance(p, mpatches.Rectangle) and not p.get_fill()]
    assert labels and outlines
    for label in labels:
        for box in outlines:
            assert label.x1 < box.x0 or label.y0 > box.y1 or label.y1 < box.y0
    import matplotlib.pyplot as plt
    plt.close(fig)
