"""The page sanitizer against known mutation-XSS and sanitizer-bypass strings, in headless Chromium.

The strings (``xss_corpus.py``) either call ``pwn()`` -- bound here to a console message in every frame, with
``alert``/``confirm``/``prompt``/``print`` -- or ask the network for something.  A page is opened offline: every
request other than the page file itself is refused and recorded, every link and button is clicked, and the
check waits two animation frames and a task (an ``ontoggle``, an ``autofocus``, a ``javascript:`` link have run
by then).  A sanitized page must record nothing, and the DOM Chromium built from it must hold no script, frame,
form, ``base``, event handler, URL other than a ``#fragment`` or ``data:image``, style outside the page's head,
HTML element inside SVG or MathML, or CSS that loads an image.

First the corpus is shown armed: each payload marked live does run (or fetch) when the page is not sanitized.
Then each payload, alone on a sanitized page, and through the paths a page really takes: a plugin topic's
lesson (``teach --plugin``, whose formulas reach latex2mathml with ``\\text{...}`` and ``\\style{...}``
unescaped), every string field of a report on every page kind, and a weights file's name.  Last, pieces of the
corpus shuffled (from a fixed seed), where html.parser and Chromium are likeliest to read a page differently.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from cli_helpers import run_main
from injection import Injected, inject

pytest.importorskip("playwright.sync_api", reason="browser tests need playwright: pip install 'commsim[test]'")
pytest.importorskip("matplotlib", reason="the pages need the html extra: pip install 'commsim[html]'")

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("xss_corpus", Path(__file__).with_name("xss_corpus.py"))
corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)
MARKUP = corpus.all_markup()

#: ``pwn()`` (and ``alert``...) log a line and ask for an image: a run is also a request, the one event to wait for
PROBE = """(() => { const hit = () => { console.log('commsim-pwned ' + location.href);
                                    new Image().src = 'http://127.0.0.1:9/pwned'; };
  window.pwn = hit; for (const f of ['alert', 'confirm', 'prompt', 'print']) window[f] = hit; })();"""
#: click every link and button, then wait two animation frames and a task
ACT = """async () => {
  for (const e of document.querySelectorAll('a, [href], button, input, summary'))
    e.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true}));
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 0))));
}"""
#: what Chromium's DOM of a sanitized page must not hold
AUDIT = r"""() => {
  const HTML = 'http://www.w3.org/1999/xhtml', SVG = 'http://www.w3.org/2000/svg',
        MATHML = 'http://www.w3.org/1998/Math/MathML', bad = [];
  const never = ['script', 'iframe', 'frame', 'object', 'embed', 'form', 'button', 'input', 'textarea', 'base',
                 'link', 'template', 'noscript', 'foreignObject', 'set', 'animate', 'mglyph', 'annotation-xml'];
  const urls = ['href', 'xlink:href', 'src', 'action', 'formaction', 'srcdoc', 'data', 'background', 'poster'];
  for (const e of document.querySelectorAll('*')) {
    const name = e.localName, where = e.parentElement ? e.parentElement.localName : '';
    if (never.includes(name)) bad.push(`element ${name} in ${where}`);
    if (name === 'meta' && e.hasAttribute('http-equiv')) bad.push('meta http-equiv');
    if (name === 'style' && (e.namespaceURI !== HTML || e.parentElement !== document.head))
      bad.push(`style in ${where}`);
    const svg = e.parentElement && e.parentElement.closest('svg'), math = e.parentElement && e.parentElement.closest('math');
    if (svg && e.namespaceURI !== SVG) bad.push(`${e.namespaceURI} ${name} inside svg`);
    if (math && e.namespaceURI !== MATHML) bad.push(`${e.namespaceURI} ${name} inside math`);
    for (const a of e.attributes) {
      if (a.name.toLowerCase().startsWith('on')) bad.push(`${name} ${a.name}`);
      const image = (name === 'img' || name === 'image') && a.value.startsWith('data:image/');
      if (urls.includes(a.name) && !a.value.startsWith('#') && !image) bad.push(`${name} ${a.name}=${a.value}`);
    }
    const css = getComputedStyle(e);
    for (const p of ['background-image', 'list-style-image', 'border-image-source', 'mask-image', 'cursor'])
      if (css.getPropertyValue(p).includes('url(')) bad.push(`${name} ${p}: ${css.getPropertyValue(p)}`);
  }
  return bad.slice(0, 10);
}"""


class Guard:
    """One browser context with the probe bound in every frame and every request refused but the page's own;
    :meth:`open` a page, then read what ran and what was fetched.

    Each page is its own load -- a new document, with its own window and a freshly bound probe -- in one tab the
    guard keeps: a new tab costs Chromium several times what a page load in it does.  Before the records
    are cleared for the next page, the tab goes to ``about:blank``, which ends the last document (its timers,
    pending loads and unload handlers), and any window it opened is closed, so nothing one page does is recorded
    as the next one's; a tab that does not come back (a page that hung or crashed it) is closed and a new one opened."""

    def __init__(self, browser):
        self.ctx = browser.new_context()
        self.ctx.add_init_script(PROBE)
        self.ctx.route("**/*", self._route)
        self.ctx.on("console", lambda m: self.ran.append(m.text) if m.text.startswith("commsim-pwned") else None)
        self.ctx.on("dialog", lambda d: (self.ran.append(f"dialog {d.message}"), d.dismiss()))
        self.uri, self.ran, self.fetched, self.tab = None, [], [], None

    def _blank_tab(self):
        """The guard's tab on ``about:blank``, the last page it showed ended, and any window that page opened
        closed."""
        for old in self.ctx.pages:
            if old is not self.tab:
                old.close()
        if self.tab is not None:
            try:
                self.tab.goto("about:blank")
                return self.tab
            except Exception:   # noqa: BLE001 -- a tab a page hung or crashed: replaced below
                self.tab.close()
        self.tab = self.ctx.new_page()
        return self.tab

    def _route(self, r):
        if r.request.url.split("#")[0] == self.uri and r.request.frame.parent_frame is None:
            r.continue_()
        else:
            self.fetched.append(r.request.url)
            r.abort()

    def open(self, path: Path):
        """The page at ``path``, opened, every link and button clicked."""
        page = self._blank_tab()
        self.uri, self.ran, self.fetched = path.as_uri(), [], []
        page.goto(self.uri)
        page.wait_for_load_state("load")
        try:
            page.evaluate(ACT)
        except Exception as exc:    # noqa: BLE001 -- a payload that navigates the page away: recorded, not an error
            self.ran.append(f"the page went away: {exc}")
        return page

    def assert_inert(self, path: Path) -> None:
        page = self.open(path)
        assert self.ran == [], f"script ran: {self.ran}"
        assert self.fetched == [], f"the page asked the network for: {self.fetched}"
        problems = page.evaluate(AUDIT)
        assert problems == [], problems


@pytest.fixture(scope="module")
def guard(browser):
    g = Guard(browser)
    yield g
    g.ctx.close()


def _document(body: str) -> str:
    """The page template around ``body`` as it is (what a render path that forgot to escape would make)."""
    from jinja2 import Environment
    from markupsafe import Markup

    from commsim.render.page import STYLE, TEMPLATE
    return Environment(autoescape=True).from_string(TEMPLATE).render(
        title="corpus", style=Markup(STYLE), body=Markup(body), command="commsim test")


def _formula_page(latex: str) -> str:
    """A page (:func:`commsim.render.page.page`) with ``latex`` as display and as inline math."""
    from commsim.render.page import page
    return page("corpus", f"# Corpus\n\n$$\n{latex}\n$$\n\nInline: $x {latex}$.\n", [], "commsim test")


# ---- the corpus is armed: without the sanitizer, each live payload runs or fetches --------------------------
# These check the test data (that each payload is live), not commsim: in the slow run (pytest -m slow).
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(corpus.LIVE_MARKUP | {f"latex-{n}" for n in corpus.LIVE_LATEX}))
def test_each_live_payload_runs_in_chromium_when_the_page_is_not_sanitized(guard, tmp_path, monkeypatch, name):
    import commsim.render.page as page_module
    monkeypatch.setattr(page_module, "sanitize", lambda text: text)
    path = tmp_path / "raw.html"
    path.write_text(_formula_page(corpus.LATEX[name[6:]]) if name.startswith("latex-") else _document(MARKUP[name]))
    guard.open(path)
    if not guard.ran and not guard.fetched:        # a meta refresh, a queued navigation or event: wait for it
        guard.ctx.wait_for_event("requestfailed", timeout=10_000)     # refused, so recorded, by then
    assert guard.ran or guard.fetched


def test_a_page_cannot_unbind_the_probe_or_leave_a_window_for_the_next_page(guard, tmp_path):
    """The pages share the guard's tab, each a load of its own: a page that rebinds ``pwn()`` and ``alert()`` and
    opens a window does not stop the next page's ``pwn()`` from being recorded, and its window is gone."""
    first, second = tmp_path / "unbinds.html", tmp_path / "calls.html"
    first.write_text(_document('<svg onload="window.pwn = () => {}; window.alert = () => {}; '
                               'window.open(\'about:blank\')"></svg>'))
    second.write_text(_document("<svg onload=pwn()></svg>"))
    with guard.ctx.expect_page() as window:
        guard.open(first)
    assert window.value in guard.ctx.pages
    guard.open(second)
    assert [m for m in guard.ran if m.startswith("commsim-pwned")], guard.ran
    assert guard.ctx.pages == [guard.tab]


# ---- each payload alone, sanitized -------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(MARKUP))
def test_each_payload_is_inert_on_a_sanitized_page(guard, tmp_path, name):
    from commsim.render.sanitize import sanitize
    path = tmp_path / "page.html"
    path.write_text(sanitize(_document(MARKUP[name])))
    guard.assert_inert(path)


@pytest.mark.parametrize("name", sorted(corpus.LATEX))
def test_each_formula_is_inert_on_a_page(guard, tmp_path, name):
    path = tmp_path / "page.html"
    path.write_text(_formula_page(corpus.LATEX[name]))
    guard.assert_inert(path)


# ---- the paths a page really takes -------------------------------------------------------------------------
TOPIC_PLUGIN = '''
import json
from commsim.teach import Lesson, Step

MARKUP = json.loads({markup!r})
LATEX = json.loads({latex!r})


def build(n=None):
    steps = [Step(title=f"formula {{name}}", claim=f"Inline ${{latex}}$ in a claim.", inequality=latex,
                  notes=f"Notes: ${{latex}}$") for name, latex in LATEX.items()]
    steps += [Step(title=f"markup {{name}}", claim=text, instance=text, holdings={{"alice": text, "bob": text}},
                   reference=text, notes=text) for name, text in MARKUP.items()]
    steps[0].messages = [("alice", next(iter(MARKUP.values())), "0101"), ("bob", "<svg onload=pwn()>", "1")]
    return Lesson(topic="xss-corpus", title="Corpus " + MARKUP["svg-style"], summary=MARKUP["mglyph-style"],
                  steps=steps)


def register(registry):
    registry.register("topic", "xss-corpus", build, "every corpus string in a lesson")
'''


def _corpus_lesson(tmp_path, fmt: str):
    """The corpus lesson (a ``--plugin`` topic) written by ``commsim teach ... --format FMT`` as the console command
    does; returns the written file."""
    (tmp_path / "xss_topic.py").write_text(TOPIC_PLUGIN.format(markup=json.dumps(MARKUP),
                                                               latex=json.dumps(corpus.LATEX)))
    path = tmp_path / ("deck.html" if fmt == "slides" else "lesson.html")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "commsim", "teach", "xss-corpus", "--plugin", "xss_topic",
                           "--format", fmt, "--out", str(path)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return path


def test_a_plugin_topics_lesson_with_every_payload_is_inert(guard, tmp_path):
    """``teach --plugin``: the corpus in every text of a lesson, the formulas in claims, notes and the step's
    inequality (latex2mathml's ``\\text{...}``), run as the console command does."""
    path = _corpus_lesson(tmp_path, "html")
    text = path.read_text()
    assert text.count("<math") >= 2 * len(corpus.LATEX) and "<svg" in text     # the formulas and the figure stay
    guard.assert_inert(path)


def test_a_deck_of_that_lesson_runs_its_own_script_and_nothing_else(guard, tmp_path):
    """``teach --format slides``: the same corpus lesson as a deck.  Its DOM holds exactly the two pieces the deck
    adds after sanitizing -- the fixed navigation script and the policy that allows only it -- and nothing the
    corpus put there runs or fetches, with the script live and every link clicked."""
    from commsim.render.slides import SCRIPT, policy
    path = _corpus_lesson(tmp_path, "slides")
    page = guard.open(path)
    assert guard.ran == [] and guard.fetched == [], (guard.ran, guard.fetched)
    assert page.evaluate("() => [...document.scripts].map(s => s.textContent)") == [SCRIPT]
    assert page.evaluate("() => [...document.querySelectorAll('meta[http-equiv]')].map(m => m.content)") == [policy()]
    assert page.evaluate("() => document.documentElement.classList.contains('js')")       # the deck's script ran
    problems = [p for p in page.evaluate(AUDIT) if p not in ("element script in body", "meta http-equiv")]
    assert problems == [], problems


#: every payload and every formula, as one text
EVERYTHING = " ".join(MARKUP.values()) + " " + " ".join(f"${latex}$" for latex in corpus.LATEX.values())
NUMBERS = ("n", "protocol_bits", "lower_bound_bits", "max_n", "bits_formula", "paper_max_n", "rows", "cols", "ones",
           "rank_real", "rank_gf2", "log_rank_bits", "gf2_rank_bits", "distinct_rows", "one_way_bits",
           "fooling_search", "two_way_lower_bound_bits", "states", "live_states", "input_states", "state_bits",
           "depth", "output_leaves", "pairs_run", "nodes", "rounds", "certificate", "evaluation_sets",
           "bits_by_direction", "lower_bound", "torch_agreement", "measured_error", "columns", "plot", "verified")


def _inject(value):
    return inject(value, EVERYTHING)


def _Injected(report):   # noqa: N802 - reads as the class it builds
    return Injected(report, EVERYTHING, keep=NUMBERS)


def _replicate_page() -> str:
    from commsim.render.replicate_page import replicate_page
    claims = [{"claim": EVERYTHING, "paper": EVERYTHING, "ours": EVERYTHING, "status": EVERYTHING}]
    frame = types.SimpleNamespace(attrs={
        "title": EVERYTHING, "experiment": EVERYTHING, "scale": "quick", "cells": 2, "run": 2, "skipped": 0,
        "failed": 0, "executor": EVERYTHING, "source": EVERYTHING, "claims": claims, "violations": [EVERYTHING],
        "sizes": {"N": EVERYTHING, "seeds": 1}, "paper_sizes": {"N": EVERYTHING}, "figure": EVERYTHING})
    rows = [{"model": MARKUP["svg-style"], "layers": 1, "width": 4, "N": n, "seed": 0, "accuracy": 0.9,
             "theorem5_note": EVERYTHING} for n in (8, 16)]
    return replicate_page(frame, rows, {}, EVERYTHING)


def _report_page(kind: str) -> str:
    from commsim.plugins import load_plugins
    from commsim.render import reports
    if kind == "run":
        from commsim.runs.run import run_reduction
        return reports.run_page(_Injected(run_reduction("dyck22-fooling", "attention", n=8)), EVERYTHING)
    if kind == "budget":
        from commsim.budget.compute import budget
        return reports.budget_page(_Injected(budget("attention", 4, 8, "dyck22-fooling", heads=1, n=16)), EVERYTHING)
    if kind == "separate":
        data = load_plugins().get("separation", "idxl").run(8, seed=0, instances=64).to_dict()
        return reports.separation_page({k: v if k in NUMBERS else _inject(v) for k, v in data.items()}, EVERYTHING)
    if kind == "matrix":
        from commsim.theory.comm_matrix import analyze_matrix
        return reports.matrix_page(_Injected(analyze_matrix("eq", 2)), EVERYTHING)
    if kind == "automaton":
        from commsim.theory.automaton import automaton_report
        return reports.automaton_page(_Injected(automaton_report("dyck22", 4)), EVERYTHING, 4, EVERYTHING)
    if kind == "tree":
        from commsim.theory.protocol_tree import build_protocol_tree
        tree = build_protocol_tree("eq", 2, load_plugins().get("cc-protocol", "one-way"))
        return reports.tree_page(_Injected(tree), EVERYTHING)
    if kind == "fooling":
        from commsim.theory.fooling import fooling_set
        fs = fooling_set("eq", 2)
        data = {k: v if k in NUMBERS else _inject(v) for k, v in fs.to_dict(None).items()}
        return reports.fooling_page(fs, data | {"problem": "eq"}, EVERYTHING)
    return _replicate_page()


@pytest.mark.parametrize("kind", ["run", "budget", "separate", "matrix", "automaton", "tree", "fooling",
                                  "replicate"])
def test_every_page_kind_with_the_corpus_in_every_field_is_inert(guard, tmp_path, kind):
    path = tmp_path / f"{kind}.html"
    path.write_text(_report_page(kind))
    guard.assert_inert(path)
    assert "onerror=pwn()" in path.read_text()          # the payloads are on the page, as text


@pytest.fixture(scope="module")
def weights(tmp_path_factory) -> Path:
    from protocols.models.trainable import random_model
    path = tmp_path_factory.mktemp("w") / "good.npz"
    random_model("elman", 4, "8", vocab=6, classes=2).save(str(path))     # index-idxl at n = 4: 6 tokens
    return path


@pytest.mark.parametrize("name", ["svg-style", "mglyph-style-plain", "comment-abrupt", "css-url-hex-escape"])
def test_a_run_page_for_a_weights_file_named_by_a_payload_is_inert(guard, capsys, tmp_path, weights, name):
    target = tmp_path / "w" / f"{MARKUP[name]}.npz"           # a "/" in the payload makes folders: fine
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(weights, target)
    path = tmp_path / "run.html"
    code, _, err = run_main(capsys, "run", "index-idxl", "--model", f"elman:weights={target}", "--n", "4",
                            "--html", str(path))
    assert code == 0, err
    guard.assert_inert(path)


def _soups(count: int, seed: int = 2026) -> list[str]:
    """``count`` strings of 80 pieces of the corpus (tags, half tags, text) in a random order, from a fixed seed."""
    import random
    import re
    pieces = re.findall(r"<[^<>]{0,40}>?|[^<]{1,40}", "".join(MARKUP.values()) + "".join(corpus.LATEX.values()))
    rng = random.Random(seed)
    return ["".join(rng.choices(pieces, k=80)) for _ in range(count)]


@pytest.mark.parametrize("index", range(20))
def test_corpus_pieces_in_a_random_order_are_inert_once_sanitized(guard, tmp_path, index):
    """Where html.parser and Chromium could read a mixture differently, Chromium's tree of the sanitized page
    is what counts."""
    from commsim.render.sanitize import sanitize
    path = tmp_path / "soup.html"
    path.write_text(sanitize(_document(_soups(20)[index])))
    guard.assert_inert(path)


@pytest.mark.slow
def test_most_random_orders_run_or_fetch_when_the_page_is_not_sanitized(guard, tmp_path):
    """The mixtures above are armed: unsanitized, at least half of them run a handler or fetch by the time the page
    has loaded (17 of the 20 were seen; a handler that fires only after the load event -- a meta refresh -- may be
    missed, hence the margin; each live payload alone is shown armed above, waiting on its request)."""
    armed = 0
    for soup in _soups(20):
        path = tmp_path / "raw-soup.html"
        path.write_text(_document(soup))
        guard.open(path)
        armed += bool(guard.ran or guard.fetched)
    assert armed >= 10
