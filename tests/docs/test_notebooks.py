"""The tutorials of the documentation site (``docs/tutorials/*.ipynb``) are executed, cell by cell, in a
fresh kernel, so they cannot rot: a cell that raises fails the test with the cell's error.  A notebook names
the extras it needs in its metadata (``commsim.requires``); without them it is skipped, saying which."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the tutorials need the docs extra: pip install -e '.[docs]'")
nbclient = pytest.importorskip("nbclient", reason="the tutorials need the docs extra: pip install -e '.[docs]'")
pytest.importorskip("ipykernel", reason="the tutorials need the docs extra: pip install -e '.[docs]'")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "docs" / "tutorials").glob("*.ipynb"))


def test_there_are_at_least_three_tutorials():
    assert len(NOTEBOOKS) >= 3, NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_tutorial_runs(path, tmp_path):
    book = nbformat.read(path, as_version=4)
    missing = [m for m in book.metadata.get("commsim", {}).get("requires", []) if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{path.name} needs {', '.join(missing)}")
    client = nbclient.NotebookClient(book, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()                  # raises CellExecutionError naming the cell and its traceback
    outputs = [o for cell in book.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert all(cell.get("execution_count") for cell in book.cells if cell.cell_type == "code")
    assert not any(o.get("name") == "stderr" and "Traceback" in o.get("text", "") for o in outputs)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_tutorial_is_stored_without_outputs(path):
    """The site shows outputs made when it is built (mkdocs.yml executes the notebooks), never stale ones saved
    with the file."""
    book = nbformat.read(path, as_version=4)
    code = [cell for cell in book.cells if cell.cell_type == "code"]
    assert code and not any(cell.get("outputs") or cell.get("execution_count") for cell in code)
