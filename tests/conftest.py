"""Settings for the whole test run.

Bytecode caches: the suite starts some hundreds of ``python -m commsim`` processes (interrupts, audits, the
fuzz's workers, notebooks) and pytest rewrites some hundred test modules.  With ``PYTHONDONTWRITEBYTECODE``
set (as on the CI machine) each of them would compile commsim and the tests from source again -- about 4 s of
collection per xdist worker and 0.2-0.5 s per process.  The run writes the standard ``__pycache__``
folders (git-ignored) whatever that variable says.

Threads: ``pytest -n 2`` already runs one test process per core, so torch's and the BLAS libraries' own thread
pools (one thread per core each by default) would only fight over the same cores -- OpenMP threads spin while
they wait: the your-model notebook (torch training) took 17 s beside another test, 6 s alone, 4.6 s with one
thread beside another test.  Each test process, and each process it starts, uses one such thread unless the
environment already says otherwise.  Nothing else in the environment is changed.
"""
from __future__ import annotations

import os
import sys

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)      # the processes the tests start inherit this
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")                 # read when torch and numpy load, which is after this

# Property tests: the ``ci`` profile draws the same examples on every run (derandomize: a seed derived from each
# test) and keeps no example database (a failure found once would otherwise be replayed on every later run of
# that checkout); no deadline, as a loaded CI machine runs an example at any speed.  It is loaded when the CI
# variable is set, and by ``--hypothesis-profile=ci`` (the README's test command, which .ci/run runs).  Other
# runs keep hypothesis's default profile -- random examples, which is how new failures are found.  (Recent
# hypothesis versions ship the same profile; it is registered here for every version the test extra allows.)
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
if os.environ.get("CI"):
    settings.load_profile("ci")


# ---- the browser the page tests share (tests/html, tests/docs) ----------------------------------------------------
# headless Chromium (Debian's ``chromium``, or ``COMMSIM_CHROMIUM``) driven by Playwright, one per test process:
# Playwright's sync API runs one event loop per process, so a second instance in the same process cannot start.
# Without Playwright or Chromium a test that needs it skips and says how to install them.
import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

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


@pytest.fixture(scope="session")
def tab(browser):
    """One tab of that browser, reused from page to page (tests/browser_pages.py: :class:`browser_pages.Tab`)."""
    from browser_pages import Tab
    t = Tab(browser)
    yield t
    t.close()
