"""What the documentation-site tests share: the site built once per test session with ``mkdocs build --strict``
(:func:`build_site`), without executing the tutorials (``fast_site``: the default run, which executes the
notebooks on their own in test_notebooks.py) or with them executed (``executed_site``: the slow set), and the
headless Chromium of the page tests (the ``browser`` fixture of tests/conftest.py)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NEEDED = {"mkdocs": "mkdocs", "material": "mkdocs-material", "mkdocstrings_handlers.python": "mkdocstrings[python]",
          "mkdocs_click": "mkdocs-click", "mkdocs_jupyter": "mkdocs-jupyter", "latex2mathml": "latex2mathml"}


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


def build_site(out: Path, execute: bool) -> Path:
    """``mkdocs build --strict`` of the repository into ``out``; the tutorials executed or not
    (COMMSIM_DOCS_EXECUTE, read by mkdocs.yml).  Skips, saying how to install it, without the docs extra."""
    missing = _missing()
    if missing:
        pytest.skip(f"the site needs the docs extra ({', '.join(missing)} missing): pip install -e '.[docs]'")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "COMMSIM_DOCS_EXECUTE": "true" if execute else "false"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="session")
def fast_site(tmp_path_factory):
    return build_site(tmp_path_factory.mktemp("site"), execute=False)


@pytest.fixture(scope="session")
def executed_site(tmp_path_factory):
    return build_site(tmp_path_factory.mktemp("site-executed"), execute=True)
