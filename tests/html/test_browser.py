"""The HTML pages in a real browser: headless Chromium (Debian's ``chromium``) driven by Playwright.

Each page opens offline (every request other than the file itself is refused and recorded), logs no console
error, shows its math as MathML (no raw ``$$``), shows every figure with a non-zero size, lists its figures,
and fits a phone's width.  Every page kind (run, budget, fooling, matrix, tree, automaton, separate, each lesson)
is also laid out at 390 px, at 1280 px and printed on A4 (:func:`check_layout`): no horizontal page overflow,
no element past the edge outside a box that scrolls and says so (``data-scroll``), no figure text drawn under 9 px
(6.5 px on a phone, where figures scale down to the width), no math cut off, and on paper no element or text node
outside the printable width.
Screenshots go to ``test-artifacts/html/`` (git-ignored; ``COMMSIM_ARTIFACTS`` moves them): one of each page as
it first opens (JPEG), and of each layout that fails (PNG, with the printed PDF when print fails).  Each page opens
in the session's shared tab (:class:`browser_pages.Tab`), a load of its own at its viewport.  Without Playwright or
Chromium the module skips and says how to install them.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from cli_helpers import invoke

sync_api = pytest.importorskip("playwright.sync_api",
                               reason="browser tests need playwright: pip install 'commsim[test]'")
pytest.importorskip("matplotlib", reason="the pages need the html extra: pip install 'commsim[html]'")

CHROMIUM = os.environ.get("COMMSIM_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip(f"browser tests need Chromium (not found at {CHROMIUM}): apt-get install chromium, or set "
                "COMMSIM_CHROMIUM to its path", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("COMMSIM_ARTIFACTS") or ROOT / "test-artifacts") / "html"


def _topics() -> list[str]:
    from commsim.plugins import load_plugins
    return load_plugins().names("topic")


@pytest.fixture(scope="session")
def pages_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("pages")


def open_page(tab, path: Path, shot: str | None, **options):
    """Open ``path`` offline in the shared tab (:meth:`browser_pages.Tab.open`, ``options``: its viewport and
    color scheme); returns (page, console errors, refused requests).  Saves a full-page screenshot named ``shot``
    (None: none)."""
    page, errors, refused = tab.open(path, **options)
    if shot is not None:
        _screenshot(page, shot, "jpeg")
    return page, errors, refused


def _screenshot(page, shot: str, kind: str = "png") -> None:
    """A full-page screenshot named ``shot``: a JPEG of each page as it opens (encoding a tall page as PNG took
    Chromium 1-5 s, as JPEG a tenth of that), a PNG of a layout that fails (the small text legible)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    if kind == "jpeg":
        page.screenshot(path=str(ARTIFACTS / f"{shot}.jpg"), full_page=True, type="jpeg", quality=85)
    else:
        page.screenshot(path=str(ARTIFACTS / f"{shot}.png"), full_page=True)


def check_page(page, errors, refused, need=()):
    assert errors == [], f"console errors: {errors}"
    assert refused == [], f"the page asked the network for: {refused}"
    assert page.locator("math").count() > 0, "no MathML on the page"
    assert "$$" not in page.inner_text("body"), "raw $$ left on the page"
    figures = page.locator("figure.figure")
    ids = [figures.nth(i).get_attribute("id") for i in range(figures.count())]
    for i, ident in enumerate(ids):
        svg = figures.nth(i).locator("svg").first
        box = svg.bounding_box()
        assert svg.is_visible() and box and box["width"] > 50 and box["height"] > 50, f"figure {ident}: {box}"
        assert page.locator(f'nav.figures a[href="#{ident}"]').count() == 1, f"figure {ident} is not listed"
    assert page.locator("nav.figures").count() == 1
    for prefix in need:
        assert any(i.startswith(prefix) or i.endswith(prefix) for i in ids), f"no {prefix} figure among {ids}"
    return ids


def test_attention_protocol_notes_open_offline_with_math_and_the_sequence_diagram(tab, pages_dir):
    path = pages_dir / "a.html"
    invoke("teach", "attention-protocol", "--format", "html", "--out", str(path))
    page, errors, refused = open_page(tab, path, "teach-attention-protocol")
    check_page(page, errors, refused, need=("sequence",))
    check_layout(tab, path, "layout-teach-attention-protocol")


def test_run_report_opens_offline_with_sequence_diagram_and_certificate(tab, pages_dir):
    path = pages_dir / "r.html"
    invoke("run", "dyck22-fooling", "--html", str(path))
    page, errors, refused = open_page(tab, path, "run-dyck22-fooling")
    ids = check_page(page, errors, refused, need=("fig-sequence", "fig-certificate"))
    assert ids == ["fig-sequence", "fig-certificate"]
    # a phone: nothing wider than the screen; dark theme; print layout hides the figure list
    page, errors, refused = open_page(tab, path, "run-dyck22-fooling-phone-dark",
                                      viewport={"width": 390, "height": 844}, color_scheme="dark")
    assert errors == [] and page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != "rgb(255, 255, 255)"
    page.emulate_media(media="print")
    assert not page.locator("nav.figures").is_visible()


#: what a phone, a desktop and a printed A4 page (190 mm printable at 96 px per inch) give a page
PHONE, DESKTOP, PRINT_WIDTH = 390, 1280, 718

LAYOUT_JS = r"""([print, floor]) => {
  const out = {overflow: document.documentElement.scrollWidth - window.innerWidth, small: [], math: [], cut: [],
               wide: []};
  const clips = e => { const r = []; for (let a = e.parentElement; a; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX; if (o !== 'visible') r.push([a, o]); } return r; };
  const outside = (r, box) => r.right > box.right + 1 || r.left < box.left - 1;
  for (const t of document.querySelectorAll('figure svg text')) {
    const m = t.getScreenCTM();
    const px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
    if (t.textContent.trim() && px < floor) out.small.push(t.textContent.trim().slice(0, 30) + ' at ' + px.toFixed(1) + 'px');
  }
  for (const m of document.querySelectorAll('math')) {       // all of it on screen, or in a box that scrolls
    const r = m.getBoundingClientRect();
    for (const [a, o] of clips(m))
      if (outside(r, a.getBoundingClientRect()) && (print || (o !== 'auto' && o !== 'scroll')))
        out.math.push(m.textContent.slice(0, 40));
    if (outside(r, {left: 0, right: window.innerWidth})) out.math.push(m.textContent.slice(0, 40));
  }
  const marked = e => { for (let a = e.parentElement; a; a = a.parentElement) {     // in a box that says it scrolls
      const o = getComputedStyle(a).overflowX;
      if (!print && a.hasAttribute('data-scroll') && (o === 'auto' || o === 'scroll')) return true; } return false; };
  for (const e of document.body.querySelectorAll('*')) {      // no element past the edge but inside such a box
    const r = e.getBoundingClientRect();
    if (r.width && r.height && (r.right > window.innerWidth + 1 || r.left < -1) && !marked(e))
      out.wide.push(e.tagName.toLowerCase() + ' ' + Math.round(r.width) + 'px: ' + (e.textContent || '').trim().slice(0, 40));
  }
  if (print) {                                               // paper does not scroll: every text node inside
    const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      if (!n.textContent.trim()) continue;
      const range = document.createRange(); range.selectNodeContents(n);
      const boxes = clips(n.parentElement).map(([a]) => a.getBoundingClientRect());
      boxes.push({left: 0, right: window.innerWidth});
      for (const r of range.getClientRects())
        if (r.width > 0 && boxes.some(b => outside(r, b))) { out.cut.push(n.textContent.trim().slice(0, 40)); break; }
    }
  }
  out.small = out.small.slice(0, 5); out.math = out.math.slice(0, 5); out.cut = out.cut.slice(0, 5);
  out.wide = out.wide.slice(0, 5);
  return out;
}"""


#: the smallest figure text (px) a layout may draw: on a phone a figure scales down to the width until its text
#: is 0.7 of its legible size (commsim.render.page.PHONE_SCALE), then its box scrolls
TEXT_FLOOR = {PHONE: 6.5, DESKTOP: 9, PRINT_WIDTH: 6.5}


def check_layout(tab, path: Path, shot: str) -> None:
    """At 390 px (a phone) and 1280 px: no horizontal page overflow, no element past the screen's edge unless it
    is inside a box that scrolls and says so (``data-scroll``), no figure text under :data:`TEXT_FLOOR`, no math
    cut off (it fits or scrolls in its own box); printed on A4: no element past the printable width and no text
    node outside it or its box.  A layout that fails leaves its evidence: the screenshot (and for print, the PDF)
    named ``shot``."""
    for width in (PHONE, DESKTOP):
        page, errors, _ = open_page(tab, path, None, viewport={"width": width, "height": 900})
        found = page.evaluate(LAYOUT_JS, [False, TEXT_FLOOR[width]])
        if found["overflow"] > 1 or found["small"] or found["math"] or found["wide"]:
            _screenshot(page, f"{shot}-{width}")
        assert found["overflow"] <= 1, f"{width} px: the page is {found['overflow']} px wider than the screen"
        assert found["wide"] == [], f"{width} px: wider than the screen, outside a marked scroll box: {found['wide']}"
        assert found["small"] == [], f"{width} px: figure text below {TEXT_FLOOR[width]} px: {found['small']}"
        assert found["math"] == [], f"{width} px: math cut off: {found['math']}"
    page, errors, _ = open_page(tab, path, None, viewport={"width": PRINT_WIDTH, "height": 1000})
    page.emulate_media(media="print")
    found = page.evaluate(LAYOUT_JS, [True, 0])
    if found["overflow"] > 1 or found["math"] or found["cut"] or found["wide"]:
        _screenshot(page, f"{shot}-print")
        page.pdf(path=str(ARTIFACTS / f"{shot}.pdf"), format="A4")
    assert found["overflow"] <= 1 and found["math"] == [] and found["wide"] == [], f"print: {found}"
    assert found["cut"] == [], f"print: text cut at the edge: {found['cut']}"


#: one page of every kind (besides the lessons), with what makes pages wide: a long model spec, long bit strings,
#: display math, log axes, many table columns, small figure labels
PAGE_KINDS = {
    "run": ["run", "index-idxl", "--model", "lstm:width=3,precision=8,frac=4,seed=2026112703", "--n", "6"],
    "budget": ["budget", "--arch", "attention", "--width", "8", "--precision", "16", "--heads", "2",
               "--task", "dyck22-fooling", "--n-range", "16:4096"],
    "fooling": ["fooling", "dyck22", "--n", "4"],
    "matrix": ["matrix", "eq", "--n", "3"],
    "tree": ["tree", "index", "--n", "3", "--protocol", "two-way"],
    "automaton": ["automaton", "dyck22", "--n", "4"],
    "separate": ["separate", "dyck22", "--n", "64"],
}


@pytest.mark.parametrize("kind", list(PAGE_KINDS))
def test_every_page_kind_fits_a_phone_a_desktop_and_paper(tab, pages_dir, kind):
    path = pages_dir / f"layout-{kind}.html"
    invoke(PAGE_KINDS[kind] + ["--html", str(path)])
    check_layout(tab, path, f"layout-{kind}")


def test_long_code_and_wide_math_wrap_or_scroll_in_their_own_box(tab, pages_dir):
    """A page built to be wide: a 300-character spec in a sentence and in a table, a long display formula."""
    from commsim.render.page import code_token, page
    spec = "python:" + "/very/long/directory" * 12 + "/models.py:factory:hidden=512,layers=4"
    formula = " + ".join(f"\\frac{{{i}N}}{{3(p + \\log N)}}" for i in range(1, 7))   # wider than a phone, not than paper
    md = (f"# Wide\n\nThe model {code_token(spec)} runs.\n\n| key | value |\n|---|---|\n| model | {code_token(spec)} |"
          f"\n\n$$\n{formula} \\le mH\n$$\n\n```\n{'0' * 400}\n```\n")
    path = pages_dir / "wide.html"
    path.write_text(page("wide", md, [], "commsim test"))
    check_layout(tab, path, "layout-wide")


def _smallest_n(topic: str) -> list[str]:
    """``--n`` at the topic's smallest size when the lesson table knows it (the page is the same shape)."""
    from protocols.lessons import TOPICS
    return ["--n", str(TOPICS[topic].minimum)] if topic in TOPICS else []


@pytest.mark.parametrize("topic", [t for t in _topics() if t != "attention-protocol"])   # that one: above
def test_every_topic_renders_to_a_page(tab, pages_dir, topic):
    path = pages_dir / f"teach-{topic}.html"
    invoke(["teach", topic, "--format", "html", "--out", str(path)] + _smallest_n(topic))
    page, errors, refused = open_page(tab, path, f"teach-{topic}")
    check_page(page, errors, refused)
    check_layout(tab, path, f"layout-teach-{topic}")
