"""budget --plot and separate --plot: log-axis ticks as plain text (2¹², never the TeX source
"$\\mathdefault{2^{12}}$"), x tick labels that do not overlap, and max N marked truthfully."""
from __future__ import annotations

import re

import pytest

from tests.cli.cli_helpers import run_main

pytest.importorskip("matplotlib")

BUDGET = ["budget", "--arch", "rnn", "--width", "128", "--precision", "64", "--reduction", "index-idxl",
          "--n-range", "16:4096"]
SEPARATE = ["separate", "qsa", "--n", "16", "--q", "1"]        # the quickest separation


def _tick_texts(fig) -> list[str]:
    fig.canvas.draw()
    return [t.get_text() for ax in fig.axes for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]


def _x_labels_overlap(fig) -> bool:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = sorted((t.get_window_extent(renderer) for t in fig.axes[0].get_xticklabels()
                    if t.get_text() and t.get_visible()), key=lambda b: b.x0)
    return any(a.x1 > b.x0 for a, b in zip(boxes, boxes[1:]))


@pytest.mark.parametrize("args, tick", [(BUDGET, "2¹²"), (SEPARATE, "2⁴")], ids=["budget", "separate"])
def test_written_svg_ticks_are_plain_text(args, tick, tmp_path, capsys):
    path = tmp_path / "plot.svg"
    code, _, err = run_main(capsys, *args, "--plot", str(path))
    assert code == 0, err
    svg = path.read_text()
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert "mathdefault" not in svg and texts and not any("$" in t for t in texts)
    assert tick in texts


def test_png_figures_tick_labels_are_plain_and_apart():
    from commsim.budget.compute import budget
    from commsim.render.plots import budget_figure, separation_figure
    from commsim.plugins import load_plugins
    figures = [budget_figure(budget("rnn", 128, 64, "index-idxl", n_range=[2 ** k for k in range(4, 13)])),
               separation_figure(load_plugins().get("separation", "qsa").run(16, seed=0, q=1).to_dict())]
    for fig in figures:
        ticks = _tick_texts(fig)
        assert ticks and not any("$" in t or "mathdefault" in t for t in ticks), ticks
        assert {"2⁴", "2⁸"} <= set(ticks), ticks
        assert not _x_labels_overlap(fig)


def test_max_n_beyond_the_plotted_range_is_said_not_drawn():
    from commsim.budget.compute import budget
    from commsim.render.plots import budget_figure
    report = budget("rnn", 128, 64, "index-idxl", n_range=[2 ** k for k in range(4, 13)])
    assert report.max_n == 8193
    fig = budget_figure(report)
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "max N = 8193, beyond the range (N ≤ 4096): the crossing is not drawn" in legend
    assert ax.get_xlim()[1] < 8193                  # no line at max N stretching the axis past the data
    inside = budget("rnn", 4, 4, "index-idxl", n_range=[4, 8, 16, 32, 64])
    legend = [t.get_text() for t in budget_figure(inside).axes[0].get_legend().get_texts()]
    assert f"max N = {inside.max_n}" in legend and 4 <= inside.max_n <= 64
