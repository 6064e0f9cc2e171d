"""The documentation site builds with ``mkdocs build --strict``: every page in the nav exists, no link between
pages or to an API object is broken, the command reference is generated from the click commands and the API
reference from the docstrings.  Skipped, saying how to install it, without the docs extra."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NEEDED = {"mkdocs": "mkdocs", "material": "mkdocs-material", "mkdocstrings_handlers.python": "mkdocstrings[python]",
          "mkdocs_click": "mkdocs-click", "mkdocs_jupyter": "mkdocs-jupyter"}


def _missing() -> list[str]:
    out = []
    for module, package in NEEDED.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            out.append(package)
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    missing = _missing()
    if missing:
        pytest.skip(f"the site needs the docs extra ({', '.join(missing)} missing): pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_the_site_builds_strictly_with_every_page(site):
    for page in ("index.html", "RESULTS/index.html", "EXTENDING/index.html", "reference/cli/index.html",
                 "reference/api/index.html", "tutorials/your-model/index.html", "tutorials/lecture/index.html",
                 "tutorials/sweeps/index.html", "EXPERIMENTS/index.html"):
        assert (site / page).is_file(), page
    for page in (ROOT / "docs" / "guide").glob("*.md"):
        assert (site / "guide" / page.stem / "index.html").is_file(), page.name


def test_the_guide_includes_the_readme_sections_it_names(site):
    tour = (site / "guide/tour/index.html").read_text()
    safety = " ".join((site / "guide/safety/index.html").read_text().split())
    assert "A recurrent model one bit short." in tour and "How long can a model go?" in tour
    assert "--8&lt;--" not in tour and "--8&lt;--" not in safety          # every include was resolved
    assert "trusts that cluster" in safety and "127.0.0.1 without authentication" in safety


def test_the_command_reference_has_every_command(site):
    from commsim.cli import cli
    text = (site / "reference/cli/index.html").read_text()
    headings = set(re.findall(r'<h3 id="([^"]+)"', text))
    assert set(cli.commands) <= headings, set(cli.commands) - headings
    assert "--fail-on-certificate" in text                        # an option of run, from its click definition


def test_the_api_reference_documents_the_front_doors(site):
    text = (site / "reference/api/index.html").read_text()
    for name in ("run", "run_reduction", "sweep", "sample", "make_model", "prepare", "Report"):
        assert f'id="commsim.{name}"' in text, name


def _hook():
    spec = importlib.util.spec_from_file_location("source_links", ROOT / "docs/reference/source_links.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.on_page_markdown


class _Page:
    class file:
        src_uri = "EXTENDING.md"


@pytest.mark.parametrize("repo, expected", [
    ("", "see `tests/plugin_example/`, [RESULTS](RESULTS.md), the runner (`commsim/core/runner.py`) ![x](../a.png)"),
    ("https://example.org/r/", "see [`tests/plugin_example/`](https://example.org/r/tree/HEAD/tests/plugin_example), "
     "[RESULTS](RESULTS.md), the [runner (`commsim/core/runner.py`)](https://example.org/r/tree/HEAD/commsim/core/"
     "runner.py) ![x](../a.png)"),
])
def test_a_link_into_the_source_tree_is_shown_as_its_path(repo, expected):
    text = ("see [`tests/plugin_example/`](../tests/plugin_example), [RESULTS](RESULTS.md), "
            "the [runner](../commsim/core/runner.py) ![x](../a.png)")
    assert _hook()(text, _Page, {"repo_url": repo}, None) == expected
