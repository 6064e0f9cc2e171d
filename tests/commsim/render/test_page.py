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
    assert '<div class="scroll" data-scroll="sideways"><table>' in html and "<code>a</code>" in html
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


def test_display_math_sits_in_its_own_scrolling_box_and_code_wraps():
    html = markdown_to_html("before\n\n$$\nN - 1 \\le 3m(p + \\log N)H\n$$\n\nafter")
    assert re.search(r'<div class="math" data-scroll="sideways"><math[^>]*display="block"', html)
    text = page("t", "# T\n\nx\n", [], "commsim x")
    assert "code { overflow-wrap: anywhere; }" in text and "div.math { overflow-x: auto;" in text
    assert "@media print" in text and "white-space: pre-wrap" in text    # printed code wraps instead of being cut


def test_a_figure_keeps_its_smallest_text_legible_and_log_ticks_are_plain_text():
    pytest.importorskip("matplotlib")
    from commsim.render.svg import MIN_TEXT_PX, min_width_px, pyplot, to_svg
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot([16, 32, 64, 4096], [1, 2, 4, 8])
    ax.set_xscale("log", base=2)
    ax.set_title("title", fontsize=6)
    svg = to_svg(fig)
    assert "mathdefault" not in svg and "2⁴" in svg and "2¹²" in svg        # not the TeX source of the labels
    width = float(re.search(r'viewBox="0 0 ([0-9.]+)', svg).group(1))
    assert f"--min-width: {min_width_px(svg)}px" in svg
    assert min_width_px(svg) * 6 / width >= MIN_TEXT_PX                     # the 6 px title at >= 9.5 px
    assert min_width_px('<svg viewBox="0 0 100 50"><text style="font-size: 10px">a</text></svg>') == 95
