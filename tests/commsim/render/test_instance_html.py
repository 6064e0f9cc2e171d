"""A step's instance on a page: aligned columns become a table (with a header when the first row names the
columns), a long line is folded behind a "show all" toggle (the differing positions of two bit strings shown),
everything is escaped; prose subscripts and arrows between statements get MathML."""
from __future__ import annotations

import re

import pytest

pytest.importorskip("latex2mathml", reason="pages need the html extra: pip install 'commsim[html]'")

from commsim.render.instance import FOLD_AT, instance_html  # noqa: E402
from commsim.render.lesson import prose_math  # noqa: E402
from commsim.render.page import latex_to_mathml  # noqa: E402

TABLE = """  i owner  token A_i (units)        A_i
  1 Alice  b             -87   -2.71875
  2 Bob    c             -78   -2.43750
  3 Alice  c             -25   -0.78125
Alice's max -23 units"""


def _cells(html: str, tag: str) -> list[str]:
    return [re.sub(r"<span class=\"label\">.*?</span>", "", c) for c in re.findall(rf"<{tag}(?:\s[^>]*)?>(.*?)</{tag}>", html)]


def test_aligned_columns_become_a_table_with_its_header():
    html = instance_html(TABLE)
    assert _cells(html, "th") == ["i", "owner", "token", "A_i (units)", "A_i"]
    assert _cells(html, "td")[:5] == ["1", "Alice", "b", "-87", "-2.71875"]
    assert html.count("<tr>") == 4 and '<div class="line">Alice&#x27;s max -23 units</div>' in html
    assert '<span class="label">owner: </span>Bob' in html          # the stacked form's label on a phone


def test_a_table_without_a_header_and_a_bar_table():
    rows = "Alice: the first half    Alice {1, 2}   two-way   69 bits\nonly the query           Alice {6}      one-way   50 bits\n" \
           "random split #1          Alice {2, 4}   two-way   69 bits"
    html = instance_html(rows)
    assert "<thead>" not in html and _cells(html, "td")[:4] == ["Alice: the first half", "Alice {1, 2}", "two-way",
                                                               "69 bits"]
    bars = instance_html("flips | slot\n(none) | 0 0\nx_1 | 1 0")
    assert _cells(bars, "th") == ["flips", "slot"] and _cells(bars, "td") == ["(none)", "0 0", "x_1", "1 0"]


def test_a_long_line_folds_and_two_bit_strings_show_where_they_differ():
    a = "0111110101111100111010000100100000100001000100110111000101110011" * 3
    b = a[:32] + ("1" if a[32] == "0" else "0") + a[33:]
    long = "word " * (FOLD_AT // 4)
    html = instance_html(f"a = {a}\nb = {b} (a with bit 33 flipped)\n{long}")
    folds = re.findall(r"<summary>(.*?)</summary>", html)
    assert len(folds) == 3 and "differs at position 33" in folds[0] and "[" in folds[0]
    assert all("show all" in f for f in folds)
    assert html.count('<div class="full">') == 3 and a in html and long.strip() in html     # all of it, behind it
    assert instance_html("short line").count("<details") == 0


def test_the_instance_is_escaped():
    html = instance_html("<script>alert(1)</script> & <b>x</b>\n" + "<img src=x> " * 40)
    assert "<script" not in html and "<img" not in html and "&lt;script&gt;" in html


def test_prose_subscripts_become_math_and_arrows_get_room():
    assert prose_math("z_(n+i) = M − (i + 1), a_i, q_N") == "$z_{n+i}$ = M − (i + 1), $a_{i}$, $q_{N}$"
    assert prose_math("paper_max_n and a_((x−1)·n+y)") == "paper_max_n and a_((x−1)·n+y)"     # left alone
    assert prose_math("already $x_i$ math, y_j") == "already $x_i$ math, y_j"
    mathml = latex_to_mathml(r"a \implies b \iff c", False)
    assert mathml.count('<mo lspace="0.6em" rspace="0.6em">') == 2
