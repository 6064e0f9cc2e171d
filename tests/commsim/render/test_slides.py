"""A lesson as a deck: one section a step (after a title slide), the page sanitized like every page, then exactly
one script -- the fixed navigation script, allowed by its hash in the deck's Content-Security-Policy -- and no
lesson text able to add another."""
from __future__ import annotations

import base64
import hashlib
import re

import pytest

pytest.importorskip("latex2mathml", reason="decks need the html extra: pip install 'commsim[html]'")

from commsim.render.sanitize import sanitize  # noqa: E402
from commsim.render.slides import SCRIPT, lesson_slides  # noqa: E402
from commsim.teach import Lesson, Step  # noqa: E402

HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(2)><a href="https://example.org">x</a>'
LESSON = Lesson("t", f"Title {HOSTILE}", f"summary {HOSTILE}", [
    Step(f"one {HOSTILE}", f"claim z_(n+i) {HOSTILE}", instance=f"x = 0101\n{HOSTILE}",
         holdings={"alice": HOSTILE, "bob": "b"}, messages=[("alice", "m", "0101"), ("bob", "r", "1")],
         inequality=r"m p \ge N", notes=f"note {HOSTILE}", reference=f"Lemma 1 {HOSTILE}"),
    Step("two", "claim two", inequality=r"a \implies b")])


def test_one_slide_a_step_with_notes():
    deck = lesson_slides(LESSON, "commsim teach t --format slides")
    assert deck.count('<section class="slide"') == 3
    assert deck.count('<div class="notes">') == 3 and "Where it is proved:" in deck
    assert "5 bits in 2 round(s)" in deck and deck.count("<math") >= 3


def test_exactly_one_script_the_fixed_one_allowed_by_its_hash():
    deck = lesson_slides(LESSON, "c")
    assert deck.count("<script") == 1 and f"<script>{SCRIPT}</script>" in deck
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', deck).group(1)
    policy = policy.replace("&#x27;", "'")
    assert f"script-src 'sha256-{digest}';" in policy and "default-src 'none'" in policy
    assert not re.search(r"<[^>]*\s(src|href)=\"(https?:)?//", deck) and not re.search(r"<[^>]*\sonerror", deck)
    assert "&lt;script&gt;alert(1)" in deck                 # the lesson's text shown as text


def test_all_but_the_script_and_the_policy_is_what_the_sanitizer_keeps():
    deck = lesson_slides(LESSON, "c")
    rest = re.sub(r'<meta http-equiv="Content-Security-Policy" content="[^"]*">', "",
                  deck.replace(f"<script>{SCRIPT}</script>", ""))
    assert sanitize(rest) == rest
