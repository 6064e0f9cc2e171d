"""Opening a page in the shared headless Chromium (the ``browser`` fixture of tests/conftest.py) offline: every
request but the page's own file is refused and recorded, and console errors are collected."""
from __future__ import annotations

from pathlib import Path


def open_page(browser, path: Path, **context):
    """Open ``path`` offline in a new browser context (``context``: Playwright's ``new_context`` options); returns
    (context, page, console errors, refused requests)."""
    ctx = browser.new_context(**context)
    page = ctx.new_page()
    errors, refused = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        if r.request.url.startswith("file://") and r.request.url.split("#")[0] == path.as_uri():
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()
    page.route("**/*", route)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return ctx, page, errors, refused
