"""The exercises on a lesson page, in Chromium: each solution is folded until its summary is clicked, and the
page fits a phone and a desktop with every solution open."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from cli_helpers import invoke

_spec = importlib.util.spec_from_file_location("commsim_browser_checks", Path(__file__).with_name("test_browser.py"))
_browser = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_browser)          # skips this module too when Playwright or Chromium is missing


@pytest.fixture(scope="module")
def page_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("exercise-pages") / "rnn-index.html"
    invoke("teach", "rnn-index", "--format", "html", "--out", str(path))
    return path


def test_solutions_are_folded_until_asked_for(tab, page_path):
    page, errors, refused = _browser.open_page(tab, page_path, "teach-rnn-index-exercises",
                                               viewport={"width": 390, "height": 900})
    assert errors == [] and refused == []
    details = page.locator("section#exercises details.solution")
    assert details.count() == 4
    first = details.first
    answer = first.locator("p").first
    assert not answer.is_visible()
    first.locator("summary").click()
    assert answer.is_visible() and "first repeat" in answer.inner_text()


@pytest.mark.parametrize("width", [390, 1280])
def test_the_page_fits_with_every_solution_open(tab, page_path, width):
    page, _, _ = _browser.open_page(tab, page_path, None, viewport={"width": width, "height": 900})
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"{width} px: {overflow} px too wide with the solutions open"
