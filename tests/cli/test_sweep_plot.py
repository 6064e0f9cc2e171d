"""``sweep --plot``'s figure read the way a person reads it: every legend beside the panels (never over the data,
the lower-bound line included), the models named by what differs between their specs (no two rows of the
certificate panel alike), and the accuracy panel's lines in the same legend.  Bounding boxes come from
matplotlib's own renderer."""
from __future__ import annotations

import pytest

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

from commsim.cli.sweep_plot import _common_affixes, spec_labels, sweep_figure  # noqa: E402


@pytest.fixture(scope="module")
def frame():
    from commsim import sweep
    return sweep(["index-idxl", "eq-ineq"], "elman:width=1..6,precision=4", "4..6:+2", instances=16)


def _boxes(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    data_axes = [ax for ax in fig.axes if ax.axison]
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    return renderer, data_axes, legends


def test_legends_sit_outside_every_panel(frame):
    fig = sweep_figure(frame)
    renderer, data_axes, legends = _boxes(fig)
    assert len(data_axes) == 6 and len(legends) == 3                  # one per row of panels, the kinds below
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in data_axes:
            assert not box.overlaps(ax.get_window_extent(renderer)), (legend.get_title().get_text(), ax.get_title())
    figure_box = fig.bbox
    for legend in legends:                                              # and inside the figure
        box = legend.get_window_extent(renderer)
        assert box.x0 >= figure_box.x0 - 1 and box.x1 <= figure_box.x1 + 1 and box.y0 >= figure_box.y0 - 1


def test_rows_and_lines_are_named_by_what_differs(frame):
    fig = sweep_figure(frame)
    renderer, data_axes, legends = _boxes(fig)
    bits, accuracy, certified = data_axes[:3]
    rows = [t.get_text() for t in certified.get_yticklabels()]
    assert rows == [f"width={w}" for w in range(1, 7)]                # on top the first, none repeated
    names = [t.get_text() for t in legends[0].get_texts()]
    assert names == [f"width={w}" for w in range(1, 7)] + ["lower bound"]
    assert "elman:precision=4" in legends[0].get_title().get_text()
    # the accuracy lines carry the legend's names and colours
    assert [line.get_label() for line in accuracy.get_lines()] == names[:-1]
    assert [line.get_color() for line in accuracy.get_lines()] == [line.get_color() for line in bits.get_lines()][:6]
    assert len(set(rows)) == len(rows)


@pytest.mark.parametrize("specs, labels, common", [
    (["python:mymodels.py:gru:hidden=32,layers=1", "python:mymodels.py:gru:hidden=64,layers=1",
      "python:mymodels.py:gru:hidden=32,layers=2"], ["hidden=32, layers=1", "hidden=64, layers=1",
                                                     "hidden=32, layers=2"], "python:mymodels.py:gru"),
    (["elman:width=2,precision=4", "elman:width=4,precision=4"], ["width=2", "width=4"], "elman:precision=4"),
    (["elman:width=2", "elman:width=2,seed=1"], ["no seed", "seed=1"], "elman:width=2"),
    (["python:a.py:f", "python:b.py:f"], ["a.py", "b.py"], "python:…:f"),
    (["lstm:width=2", "gru:width=2"], ["lstm", "gru"], "…:width=2"),
    (["memorize:capacity=3"], ["memorize:capacity=3"], ""),
])
def test_spec_labels(specs, labels, common):
    assert spec_labels(specs) == (labels, common)


def test_six_long_specs_that_share_thirty_characters_stay_distinct():
    specs = [f"python:/home/someone/research/mymodels.py:gru_with_a_long_name:hidden={h}" for h in range(6)]
    labels, common = spec_labels(specs)
    assert labels == [f"hidden={h}" for h in range(6)] and common.endswith("gru_with_a_long_name")
    assert _common_affixes(["ab:x", "ab:x:y"]) == ("ab:", "")
