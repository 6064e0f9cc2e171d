"""Opening a page in the shared headless Chromium (the ``browser`` fixture of tests/conftest.py) offline: every
request but the page's own file is refused and recorded, and console errors are collected.

:func:`open_page` opens a page in a browser context of its own (for what only a context sets, such as touch).
:class:`Tab` -- the ``tab`` fixture of tests/conftest.py, one per test process -- opens page after page in one
tab: a new tab costs Chromium several times what a page load in it does (a third of a second against a tenth).
Each page is still a load of its own, at the viewport, media and color scheme asked for, with nothing of the last
one left: before the next load the tab's storage is emptied and it goes to ``about:blank``, which ends the last
document (its timers, pending loads and unload handlers)."""
from __future__ import annotations

from pathlib import Path

#: a new browser context's viewport, which a page opened with no viewport gets
DEFAULT_VIEWPORT = {"width": 1280, "height": 720}


def _listen(page, errors, refused, allowed):
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        if allowed(r.request.url):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()
    page.route("**/*", route)


def _only(path: Path):
    """The URL test that lets through ``path`` itself (any ``#fragment``) and nothing else."""
    return lambda url: url.startswith("file://") and url.split("#")[0] == path.as_uri()


def open_page(browser, path: Path, **context):
    """Open ``path`` offline in a new browser context (``context``: Playwright's ``new_context`` options); returns
    (context, page, console errors, refused requests)."""
    ctx = browser.new_context(**context)
    page = ctx.new_page()
    errors, refused = [], []
    _listen(page, errors, refused, _only(path))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return ctx, page, errors, refused


class Tab:
    """One browser context with one tab, reused from page to page (see the module's text)."""

    def __init__(self, browser):
        self.ctx = browser.new_context()
        self.page = None
        self.errors, self.refused, self.allowed = [], [], lambda url: False

    def _blank(self):
        """The tab on ``about:blank``, its last page's storage emptied and any window that page opened closed; a
        tab that does not come back (a page that hung or crashed it) is replaced."""
        for other in self.ctx.pages:
            if other is not self.page:
                other.close()
        if self.page is not None:
            try:
                if self.page.url.startswith("file:"):
                    self.page.evaluate("() => { try { localStorage.clear(); sessionStorage.clear(); } catch (e) {} }")
                self.page.goto("about:blank")
                self.ctx.clear_cookies()
                return self.page
            except Exception:   # noqa: BLE001 -- a broken tab: replaced below
                self.page.close()
        self.page = self.ctx.new_page()
        _listen(self.page, _Forward(self, "errors"), _Forward(self, "refused"), lambda url: self.allowed(url))
        return self.page

    def open(self, path: Path, viewport: dict | None = None, color_scheme: str = "null", allowed=None):
        """Open ``path`` offline at ``viewport`` (None: a new context's) and ``color_scheme`` (``"null"``: none
        asked for), on screen; ``allowed``: a test of the URLs that may load (None: ``path`` itself only).  Returns
        (page, console errors, refused requests), the two lists this page's alone."""
        page = self._blank()
        page.set_viewport_size(viewport or DEFAULT_VIEWPORT)
        page.emulate_media(media="null", color_scheme=color_scheme)
        self.errors, self.refused, self.allowed = [], [], allowed or _only(path)
        errors, refused = self.errors, self.refused
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        return page, errors, refused

    def close(self) -> None:
        self.ctx.close()


class _Forward:
    """A list-like sink that appends to the tab's current list named ``name`` (the tab's listeners outlive a
    page's lists)."""

    def __init__(self, tab: Tab, name: str):
        self.tab, self.name = tab, name

    def append(self, item) -> None:
        getattr(self.tab, self.name).append(item)
