"""The documentation site in a real browser (headless Chromium, offline: every request outside the built site is
refused and recorded), at a phone's width (390 px) and a desktop's (1280 px).

Nothing on a page is wider than the screen outside a box that scrolls sideways and says so (a note above it,
linked by ``aria-describedby``: docs/extra/layout.js); at 1280 px the 13- and 14-column tables of the papers'
experiments fit the page, and so does every code block of at most 100 columns (the tour's outputs), in type no
smaller than 10.5 px; the tutorials' math is MathML the browser lays out.  Screenshots of a failing layout go to
``test-artifacts/docs/``."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("COMMSIM_ARTIFACTS") or ROOT / "test-artifacts") / "docs"
#: a phone, a desktop, and the printable width of an A4 page (190 mm at 96 px per inch)
PHONE, DESKTOP, PRINT_WIDTH = 390, 1280, 718
PAGES = ["index.html", "EXPERIMENTS/index.html", "RESULTS/index.html", "guide/tour/index.html",
         "guide/commands/index.html", "tutorials/lecture/index.html", "reference/cli/index.html"]

#: what sticks out of the screen, and whether each such element sits in a marked scroll box with a visible note
OVERFLOW_JS = r"""() => {
  const width = window.innerWidth, out = {page: document.documentElement.scrollWidth - width, loose: [],
    unmarked: []};
  const known = new Map();
  const scroller = e => {          // the nearest box around e that scrolls sideways and is itself on the screen
    const a = e.parentElement;
    if (!a || a === document.body) return null;
    if (!known.has(a)) {
      const o = getComputedStyle(a).overflowX;
      known.set(a, (o === 'auto' || o === 'scroll') && a.getBoundingClientRect().right <= width + 1 ? a : scroller(a));
    }
    return known.get(a); };
  const said = box => {
    const note = document.getElementById(box.getAttribute('aria-describedby') || '');
    return box.classList.contains('commsim-scrolls') && note && note.textContent.includes('scroll it sideways')
      && note.getBoundingClientRect().height > 0; };
  for (const e of document.querySelectorAll('.md-content *')) {
    const r = e.getBoundingClientRect();
    const o = getComputedStyle(e).overflowX;
    const name = e.tagName + (e.className && typeof e.className === 'string' ? '.' + e.className : '');
    if ((o === 'auto' || o === 'scroll') && e.scrollWidth > e.clientWidth + 1 && r.width > 0 && !said(e))
      out.unmarked.push(name + ' (scrolls)');
    if (r.width === 0 || r.right <= width + 1) continue;
    const box = scroller(e);
    if (!box) out.loose.push(name);
    else if (!said(box)) out.unmarked.push(name);
  }
  out.loose = [...new Set(out.loose)].slice(0, 8); out.unmarked = [...new Set(out.unmarked)].slice(0, 8);
  return out;
}"""

#: every code block of at most 100 columns: does it fit, and in what type size
CODE_JS = r"""() => [...document.querySelectorAll('.md-typeset pre > code')].map(c => ({
  columns: Math.max(...c.textContent.split('\n').map(l => [...l].length)),
  fits: c.scrollWidth <= c.clientWidth + 1, px: parseFloat(getComputedStyle(c).fontSize)}))"""


def _open(tab, site: Path, page_path: str, width: int):
    """``page_path`` of the built ``site`` in the shared tab (:meth:`browser_pages.Tab.open`) at ``width`` px,
    loaded and laid out by layout.js; every request outside the site refused.  Returns (page, refused requests)."""
    def inside(url: str) -> bool:
        return url.startswith("file://") and url.split("#")[0].split("?")[0].startswith(site.as_uri())
    page, _, refused = tab.open(site / page_path, viewport={"width": width, "height": 900}, allowed=inside)
    page.wait_for_selector("html[data-commsim-layout=done]", state="attached")     # layout.js has run
    return page, refused


def _evidence(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@pytest.mark.parametrize("width", [PHONE, DESKTOP])
@pytest.mark.parametrize("page_path", PAGES)
def test_nothing_is_wider_than_the_screen_outside_a_scroll_box_that_says_so(tab, fast_site, page_path, width):
    page, refused = _open(tab, fast_site, page_path, width)
    found = page.evaluate(OVERFLOW_JS)
    if found["page"] > 1 or found["loose"] or found["unmarked"]:
        _evidence(page, f"{page_path.replace('/', '-')}-{width}")
    assert refused == [], f"the page asked the network for: {refused}"
    assert found["page"] <= 1, f"{page_path} at {width} px: the page is {found['page']} px wider than the screen"
    assert found["loose"] == [], f"{page_path} at {width} px: wider than the screen, in no scroll box: {found}"
    assert found["unmarked"] == [], f"{page_path} at {width} px: scrolls with no note saying so: {found}"


@pytest.mark.slow
@pytest.mark.parametrize("width", [PHONE, DESKTOP])
def test_the_executed_tutorials_outputs_fit_or_scroll_in_a_box_that_says_so(tab, executed_site, width):
    for name in sorted(p.stem for p in (ROOT / "docs" / "tutorials").glob("*.ipynb")):
        page, refused = _open(tab, executed_site, f"tutorials/{name}/index.html", width)
        found = page.evaluate(OVERFLOW_JS)
        images = page.evaluate("() => [...document.querySelectorAll('.jp-OutputArea-output img')].map("
                               "i => i.getBoundingClientRect().right <= window.innerWidth + 1)")
        if found["page"] > 1 or found["loose"] or found["unmarked"]:
            _evidence(page, f"tutorial-{name}-{width}")
        assert refused == [] and found["page"] <= 1, (name, refused, found)
        assert found["loose"] == [] and found["unmarked"] == [], (name, width, found)
        assert all(images), (name, width, images)


def test_the_experiments_wide_tables_fit_a_desktop_page(tab, fast_site):
    page, _ = _open(tab, fast_site, "EXPERIMENTS/index.html", DESKTOP)
    tables = page.evaluate("""() => [...document.querySelectorAll('.md-typeset__scrollwrap')].map(w => ({
        columns: w.querySelector('tr').cells.length, fits: w.scrollWidth <= w.clientWidth + 1,
        px: parseFloat(getComputedStyle(w.querySelector('td')).fontSize)}))""")
    wide = [t for t in tables if t["columns"] >= 13]
    assert len(wide) >= 4, tables
    assert all(t["fits"] and t["px"] >= 11 for t in wide), wide
    page, _ = _open(tab, fast_site, "EXPERIMENTS/index.html", PHONE)      # on a phone: a marked scroll box
    marked = page.evaluate("""() => [...document.querySelectorAll('.md-typeset__scrollwrap')].filter(
        w => w.querySelector('tr').cells.length >= 13).map(w => w.classList.contains('commsim-scrolls'))""")
    assert marked and all(marked), marked


def test_the_tours_100_column_outputs_fit_a_desktop_page(tab, fast_site):
    page, _ = _open(tab, fast_site, "guide/tour/index.html", DESKTOP)
    blocks = page.evaluate(CODE_JS)
    hundred = [b for b in blocks if 90 <= b["columns"] <= 100]
    assert len(hundred) >= 3, blocks
    assert all(b["fits"] and b["px"] >= 10.5 for b in hundred), hundred
    assert all(b["px"] >= 10.5 for b in blocks), blocks                 # wider ones scroll, never shrink further


def test_the_tutorials_math_is_laid_out_as_mathml(tab, fast_site):
    page, _ = _open(tab, fast_site, "tutorials/lecture/index.html", DESKTOP)
    boxes = page.evaluate("""() => [...document.querySelectorAll('.md-content math')].map(m => {
        const r = m.getBoundingClientRect(); return [r.width, r.height]; })""")
    text = " ".join(page.locator(".jp-MarkdownCell").all_inner_texts())
    assert len(boxes) >= 10 and all(w > 0 and h > 0 for w, h in boxes), boxes
    assert "Alice holds" in text and "\\cdot" not in text and "$" not in text


@pytest.mark.parametrize("page_path", ["guide/tour/index.html", "EXPERIMENTS/index.html"])
def test_printed_the_code_wraps_and_the_wide_tables_fit_the_paper(tab, fast_site, page_path):
    page, _ = _open(tab, fast_site, page_path, PRINT_WIDTH)
    page.emulate_media(media="print")
    found = page.evaluate("""() => ({page: document.documentElement.scrollWidth - window.innerWidth,
        code: [...document.querySelectorAll('.md-typeset pre > code')].filter(
            c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent.slice(0, 40)),
        tables: [...document.querySelectorAll('.md-typeset__scrollwrap')].filter(
            w => w.scrollWidth > w.clientWidth + 1).map(w => w.querySelector('tr').cells.length)})""")
    if found["page"] > 1 or found["code"] or found["tables"]:
        _evidence(page, f"print-{page_path.replace('/', '-')}")
    assert found["page"] <= 1 and found["code"] == [] and found["tables"] == [], found
