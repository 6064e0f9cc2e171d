"""The progress bar of long runs and sweeps in Jupyter (issue 26.6): ``progress=True`` in a notebook draws rich's bar
as one output of the cell, redrawn in place and left at its last state (executed here by nbclient in a real
kernel); outside a terminal and a notebook nothing is drawn; a function given as ``progress`` is called as before."""
from __future__ import annotations

import pytest

from commsim.cli.progress import ProgressBar, api_progress, in_jupyter

nbformat = pytest.importorskip("nbformat", reason="the notebook test needs the docs extra: pip install -e '.[docs]'")
nbclient = pytest.importorskip("nbclient", reason="the notebook test needs the docs extra: pip install -e '.[docs]'")
pytest.importorskip("ipykernel", reason="the notebook test needs the docs extra: pip install -e '.[docs]'")
pytest.importorskip("pandas")

CELLS = [
    'import commsim\nframe = commsim.sweep("index-idxl", "elman:width=1..3,precision=2", 3, certify=False, '
    'progress=True)\nlen(frame)',
    'report = commsim.run("index-idxl", "elman:width=2,precision=2", 3, progress=True)\nreport.bits_used',
]


def _displays(cell) -> list[dict]:
    return [o for o in cell.outputs if o.output_type in ("display_data", "update_display_data")]


def test_a_sweep_and_a_run_in_a_notebook_show_their_bar_in_the_cell(tmp_path):
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    client = nbclient.NotebookClient(book, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    sweep_cell, run_cell = book.cells
    assert [o.data["text/plain"] for o in sweep_cell.outputs if o.output_type == "execute_result"] == ["3"]
    bars = _displays(sweep_cell)
    assert len(bars) == 1                                     # one output, redrawn in place (display_id)
    text, html = bars[0].data["text/plain"], bars[0].data["text/html"]
    assert "sweep: cells" in text and "3/3" in text           # its last state: every cell done
    assert html.startswith("<pre") and "3/3" in html
    assert not [o for o in sweep_cell.outputs if o.output_type == "stream" and o.name == "stderr"]   # no warning
    bars = _displays(run_cell)
    assert len(bars) == 1 and "index-idxl: " in bars[0].data["text/plain"]
    assert not [o for o in run_cell.outputs if o.output_type == "error"]


def test_outside_a_terminal_and_a_notebook_nothing_is_drawn(capsys):
    assert not in_jupyter()
    with ProgressBar("sweep") as update:
        update(1, 2, "sweep: cells")
        update(2, 2)
    assert capsys.readouterr() == ("", "")


def test_a_progress_function_is_called_as_given_and_none_stays_none():
    calls = []
    with api_progress(calls.append, "sweep") as progress:
        assert progress == calls.append
    with api_progress(None, "sweep") as progress:
        assert progress is None
