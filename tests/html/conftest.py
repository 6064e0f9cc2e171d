"""The browser the page tests share: headless Chromium (Debian's ``chromium``, or ``COMMSIM_CHROMIUM``) driven by
Playwright, one per test session.  Without Playwright or Chromium a test that needs it skips and says how to
install them."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("COMMSIM_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="browser tests need playwright: pip install 'commsim[test]'")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"browser tests need Chromium (not found at {CHROMIUM}): apt-get install chromium, or set "
                    "COMMSIM_CHROMIUM to its path")
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        except Exception as exc:       # noqa: BLE001 -- a broken install is a skip with its reason, not a failure
            pytest.skip(f"Chromium at {CHROMIUM} does not start under Playwright: {exc}")
        yield b
        b.close()
