"""The page: LaTeX becomes MathML (no raw $$ left), Markdown tables and code survive, figure placeholders
become inline figures, every page lists its figures, nothing refers to the network."""
from __future__ import annotations

import re

import pytest

pytest.importorskip("latex2mathml")
pytest.importorskip("markdown_it")
pytest.importorskip("jinja2")

from commsim.render.page import figure_token, markdown_to_html, page  # noqa: E402
from commsim.render.svg import Figure  # noqa: E402

FIG = Figure("fig1-sequence", "Step 1: the exchange", "two messages", '<svg viewBox="0 0 10 10"><text>x</text></svg>')


def test_display_and_inline_math_become_mathml():
    html = markdown_to_html("Text with $m p \\ge N$ inline.\n\n$$\n\\frac{N - 1}{3(p + \\log N)} \\le m H\n$$\n")
    assert html.count("<math") == 2 and 'display="block"' in html and "<mfrac>" in html
    assert "$" not in html


def test_tables_code_and_figure_tokens():
    md = "| party | holds |\n|---|---|\n| Alice | `a` |\n\n```\nraw $ text\n```\n\n" + figure_token(FIG.ident) + "\n"
    html = markdown_to_html(md, {FIG.ident: FIG})
    assert '<div class="scroll"><table>' in html and "<code>a</code>" in html
    assert f'<figure class="figure" id="{FIG.ident}"' in html and figure_token(FIG.ident) not in html


def test_page_is_self_contained_and_lists_its_figures():
    text = page("t", "# Title\n\nintro\n\n## Part\n\n" + figure_token(FIG.ident) + "\n", [FIG], "commsim x")
    assert text.startswith("<!DOCTYPE html>") and "prefers-color-scheme: dark" in text and "@media print" in text
    assert '<nav class="figures">' in text and f'href="#{FIG.ident}"' in text
    assert text.index('<nav class="figures">') < text.index("<h2")
    assert not re.search(r"(src|href)=\"(https?:)?//", text) and "<script" not in text


def test_a_page_without_figures_says_so():
    text = page("t", "# Title\n\nno pictures\n", [], "commsim x")
    assert "none on this page" in text
