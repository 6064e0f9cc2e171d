"""The sanitizer against the corpus of mutation-XSS and sanitizer-bypass strings (``tests/html/xss_corpus.py``),
in Python: its output holds no executable construct, reads the same when sanitized again, and the page's own
content (MathML, SVG figures, tables, details/summary, the stylesheet) stays.  Every page kind returns what the
one final sanitizer pass made.  The same corpus runs in Chromium in ``tests/html/test_xss.py``."""
from __future__ import annotations

import importlib.util
import re
import types
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("latex2mathml")
pytest.importorskip("markdown_it")

from commsim.render.sanitize import clean_style, decode_escapes, safe_css, safe_stylesheet, sanitize  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "xss_corpus", Path(__file__).resolve().parents[2] / "html" / "xss_corpus.py")
corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)
MARKUP = corpus.all_markup()

#: never on a page, in any namespace
NEVER = {"script", "iframe", "frame", "frameset", "object", "embed", "applet", "form", "button", "input",
         "textarea", "select", "base", "link", "template", "noscript", "xmp", "noembed", "noframes", "plaintext",
         "foreignobject", "set", "animate", "animatetransform", "animatemotion", "mglyph", "malignmark",
         "annotation-xml", "desc", "iframe", "portal", "video", "audio", "source"}
#: HTML elements that would take a browser out of SVG or MathML, or be parsed as markup there
NOT_FOREIGN = {"b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em", "embed",
               "h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing", "menu", "meta", "nobr",
               "ol", "p", "pre", "ruby", "s", "small", "span", "strong", "strike", "sub", "sup", "table", "tt", "u",
               "ul", "var", "font", "style", "title", "a", "svg", "math", "mtext", "mi"}
_LOADS = re.compile(r"url\((?!\s*['\"]?#)|image-set|image\(|expression|@import|javascript:|vbscript:|\\", re.I)


class _Audit(HTMLParser):
    """What in a sanitized page could run or fetch, read namespace by namespace."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        self._check(tag, attrs)
        if tag not in ("br", "hr", "img", "meta"):
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self._check(tag, attrs)

    def handle_endtag(self, tag):
        if tag in self.stack:
            while self.stack.pop() != tag:
                pass

    def _check(self, tag, attrs):
        foreign = [t for t in self.stack if t in ("svg", "math")]
        if tag in NEVER:
            self.problems.append(f"element {tag}")
        if foreign and tag in NOT_FOREIGN and not (tag in ("svg", "math") and len(foreign) == 1 and tag == foreign[0]):
            if not (tag in ("mtext", "mi") and foreign[-1] == "math" and self.stack[-1] not in
                    ("mi", "mo", "mn", "ms", "mtext")):
                self.problems.append(f"{tag} inside {foreign[-1]}")
        if tag in ("style", "title", "meta") and self.stack[-2:] != ["html", "head"]:
            self.problems.append(f"{tag} outside the head: {self.stack}")
        for name, value in attrs:
            value = value or ""
            plain = re.sub(r"[\x00-\x20\x7f]+", "", value).lower()
            if name.startswith("on") or name in ("srcdoc", "formaction", "action", "http-equiv", "background"):
                self.problems.append(f"{tag} {name}")
            if name in ("href", "xlink:href", "src") and not (
                    value.startswith("#") or (tag in ("img", "image") and value.startswith("data:image/png"))):
                self.problems.append(f"{tag} {name}={value!r}")
            if plain.startswith(("javascript:", "vbscript:", "data:text")) or _LOADS.search(value):
                self.problems.append(f"{tag} {name}={value!r}")

    def handle_data(self, data):
        if self.stack[-1:] == ["style"] and not safe_stylesheet(data):
            self.problems.append("a stylesheet that loads or escapes")


def executable(text: str) -> list[str]:
    """The constructs in ``text`` that could run or fetch (empty: none)."""
    audit = _Audit()
    audit.feed(text)
    problems = audit.problems[:]
    for mark in ("<!--", "<![CDATA[", "<?", "<script", "</script"):
        if mark in text.lower():
            problems.append(f"markup {mark}")
    if re.search(r"<!(?!DOCTYPE html>)", text):
        problems.append("a declaration other than the doctype")
    return problems


def _document(body: str) -> str:
    from jinja2 import Environment
    from markupsafe import Markup

    from commsim.render.page import STYLE, TEMPLATE
    return Environment(autoescape=True).from_string(TEMPLATE).render(
        title="corpus", style=Markup(STYLE), body=Markup(body), command="commsim test")


# ---- the two reproductions -------------------------------------------------------------------------
@pytest.mark.parametrize("root", ["svg", "math"])
def test_a_style_inside_foreign_content_goes_with_its_content(root):
    clean = sanitize(f"<{root}><style><img src=x onerror=alert(1)></style></{root}>")
    assert clean == f"<{root}></{root}>"


def test_a_css_escape_is_decoded_before_the_url_check():
    from commsim.render.page import page
    text = page("t", r"$\style{background-image:u\72l(http://127.0.0.1:8765/x)}{x}$", [], "c")
    body = text[text.index("<body>"):]
    assert "8765" not in body and "background" not in body and "style" not in body and "<mi>x</mi>" in body
    assert not safe_css(r"background-image:u\72l(http://127.0.0.1:8765/x)")


# ---- the corpus --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(MARKUP))
def test_each_payload_sanitized_holds_nothing_executable(name):
    for text in (MARKUP[name], _document(MARKUP[name])):
        clean = sanitize(text)
        assert executable(clean) == [], (clean, executable(clean))
        assert sanitize(clean) == clean                       # what a browser reads is what was checked


@pytest.mark.parametrize("name", sorted(corpus.LATEX))
def test_each_formula_on_a_page_holds_nothing_executable(name):
    from commsim.render.page import page
    latex = corpus.LATEX[name]
    text = page("corpus", f"# Corpus\n\n$$\n{latex}\n$$\n\nInline: $x {latex}$.\n", [], "commsim test")
    assert executable(text) == [], executable(text)
    assert text.count("<math") == 2                            # the formula stays, as MathML


@pytest.mark.parametrize("name", sorted(corpus.CSS))
def test_each_css_payload_is_refused_and_its_loading_declaration_dropped(name):
    value = corpus.CSS[name]
    assert not safe_css(value)
    kept = clean_style(value)
    assert not _LOADS.search(kept) and "127.0.0.1" not in kept and "(" not in kept, kept
    assert kept in ("", "color:red")                           # the plain declaration beside a url


def test_css_escapes_are_decoded_as_css_syntax_says():
    assert decode_escapes(r"u\72l(") == "url(" and decode_escapes("u\\000072 l(") == "url("
    assert decode_escapes(r"u\r\l(") == "url(" and decode_escapes("u\\72\r\nl(") == "url("
    assert decode_escapes(r"a\0 b") == "a\ufffdb" and decode_escapes("a\\110000") == "a\ufffd"
    assert decode_escapes("a\\\nb") == "ab" and decode_escapes("a\\") == "a\ufffd"
    assert decode_escapes(r"\3b") == ";" and decode_escapes(r"\28") == "("
    assert clean_style(r"fill: \23 abc; stroke: #000") == "fill: #abc; stroke: #000"    # written back decoded
    assert clean_style("fill: url(#p1); color: url(#p1)") == "fill: url(#p1)"        # a url only for paint
    assert clean_style("--min-width: 480px; behavior: url(x.htc); -moz-binding: url(x)") == "--min-width: 480px"


# ---- legitimate content stays -------------------------------------------------------------------------------
def test_tables_details_mathml_and_figures_stay():
    from commsim.render.page import latex_to_mathml
    body = ('<details open=""><summary>Why</summary><table><thead><tr><th align="right">a</th></tr></thead>'
            '<tbody><tr><td style="text-align: right">1</td></tr></tbody></table></details>'
            '<svg viewBox="0 0 9 9"><defs><clipPath id="p1"><rect x="0" y="0" width="9" height="9"></rect>'
            '</clipPath></defs><g clip-path="url(#p1)"><path d="M 0 0 L 9 9" style="fill: none; stroke: #0072b2">'
            '</path><text x="1" y="1" style="font-size: 8px; text-anchor: middle">label</text></g></svg>'
            + latex_to_mathml(r"\frac{N}{3(p + \log N)} \le \text{bits}", True))
    # kept whole; latex2mathml's character references (&#x02264;) are written back as the characters
    assert sanitize(body) == re.sub(r"&#x([0-9A-F]+);", lambda m: chr(int(m.group(1), 16)), body)
    assert safe_stylesheet(__import__("commsim.render.page", fromlist=["STYLE"]).STYLE)


def test_a_dropped_element_takes_only_its_own_content():
    """A void element that is dropped (``input``, ``source``) has no content to drop; a dropped element ends at
    its end tag even when it left another dropped element open -- the rest of the page stays."""
    clean = sanitize("<p>a<input autofocus onfocus=pwn()>b<source onerror=pwn()>c<embed src=x>"
                     "<textarea><noscript></textarea>d<iframe><p>e</p></iframe>f</p><h2>next</h2>")
    assert clean == "<p>abcdf</p><h2>next</h2>"


# ---- one final pass for every page kind --------------------------------------------------------------------
def test_every_page_kind_returns_what_the_final_sanitizer_pass_made(monkeypatch):
    import commsim.render.page as page_module
    from commsim.budget.compute import budget
    from commsim.runs.run import run_reduction
    from commsim.plugins import load_plugins
    from commsim.render import reports
    from commsim.render.lesson import lesson_page
    from commsim.render.replicate_page import replicate_page
    made: list[str] = []
    monkeypatch.setattr(page_module, "sanitize", lambda text: made.append(sanitize(text)) or made[-1])
    frame = types.SimpleNamespace(attrs={
        "title": "t", "experiment": "e", "scale": "quick", "cells": 1, "run": 1, "skipped": 0, "failed": 0,
        "executor": "inprocess", "source": "s", "claims": [], "violations": [], "sizes": {}, "paper_sizes": {},
        "figure": "Figure 1"})
    rows = [{"model": "lstm", "layers": 1, "width": 4, "N": 8, "seed": 0, "accuracy": 0.9}]
    pages = {
        "run": reports.run_page(run_reduction("eq-ineq", "lstm:width=1,precision=2", n=4), "c"),
        "budget": reports.budget_page(budget("attention", 4, 8, "dyck22-fooling", heads=1, n=16), "c"),
        "separate": reports.separation_page(load_plugins().get("separation", "idxl").run(8, seed=0, instances=16)
                                            .to_dict(), "c"),
        "teach": lesson_page(load_plugins().get("topic", "two-layers")(None), "c"),
        "replicate": replicate_page(frame, rows, {}, "c"),
    }
    assert len(made) == len(pages)
    for (kind, text), last in zip(pages.items(), made):
        assert text is last, kind


FRAGMENTS = ["<", ">", "/", "=", '"', "'", " ", "\n", "x", "svg", "math", "mtext", "mglyph", "table", "style",
             "title", "textarea", "noscript", "xmp", "iframe", "template", "img", "src=x", "onerror=pwn()",
             "<!--", "-->", "<![CDATA[", "]]>", "&lt;", "&#x6a;", "javascript:", "href=", "xlink:href=",
             "style=", "u\\72l(", "url(", "http://e/", "@import", "image-set(", ";", ":", "(", ")", "\\"]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=50))
def test_random_fragment_soup_sanitizes_to_nothing_executable_and_a_fixed_point(parts):
    clean = sanitize("".join(parts))
    assert executable(clean) == []
    assert sanitize(clean) == clean
