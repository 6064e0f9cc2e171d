"""Slide decks in a real browser (headless Chromium through Playwright: the session's shared tab, and a context
with touch for the swipe): a deck opens offline with no console error (so no Content-Security-Policy violation:
its one script runs, nothing else is asked for), shows one slide at a time, turns the page forward and back by
keyboard and by a swipe, shows the speaker notes on ``n``, and prints every slide on a page of its own."""
from __future__ import annotations


import pytest
from browser_pages import open_page
from cli_helpers import invoke

pytest.importorskip("playwright.sync_api", reason="browser tests need playwright: pip install 'commsim[test]'")
pytest.importorskip("matplotlib", reason="the decks need the html extra: pip install 'commsim[html]'")


def _smallest_n(topic: str) -> list[str]:
    from protocols.lessons import TOPICS
    return ["--n", str(TOPICS[topic].minimum)]

VISIBLE_JS = "() => [...document.querySelectorAll('section.slide')].map(s => s.offsetParent !== null)"


def _shown(page) -> list[int]:
    """The 1-based numbers of the slides on screen."""
    return [k for k, on in enumerate(page.evaluate(VISIBLE_JS), 1) if on]


@pytest.mark.parametrize("topic", ["fooling-sets", "rnn-index", "attention-protocol"])
def test_a_deck_turns_its_pages_by_keyboard(tab, tmp_path, topic):
    path = tmp_path / f"{topic}-deck.html"
    invoke(["teach", topic, "--format", "slides", "--out", str(path)] + _smallest_n(topic))
    page, errors, refused = tab.open(path, viewport={"width": 1280, "height": 800})
    total = page.locator("section.slide").count()
    assert total >= 4 and _shown(page) == [1] and page.inner_text("#counter") == f"1 / {total}"
    first = page.locator("section.slide.current h1").inner_text()
    for key, expected in (("ArrowRight", 2), ("Space", 3), ("PageDown", 4), ("ArrowLeft", 3), ("PageUp", 2),
                          ("End", total), ("ArrowRight", total), ("Home", 1), ("ArrowLeft", 1)):
        page.keyboard.press(key)
        assert _shown(page) == [expected], f"after {key}: slides {_shown(page)} on screen, not {expected}"
        assert page.inner_text("#counter") == f"{expected} / {total}"
    assert page.locator("section.slide.current h1").inner_text() == first
    page.keyboard.press("ArrowRight")
    notes = page.locator("section.slide.current div.notes")
    assert not notes.is_visible()
    page.keyboard.press("n")
    assert notes.is_visible() and "Where it is proved" in notes.inner_text()
    page.keyboard.press("n")
    assert not notes.is_visible()
    page.emulate_media(media="print")
    assert len(_shown(page)) == total and not notes.is_visible()
    breaks = page.evaluate("() => [...document.querySelectorAll('section.slide')].map(s => getComputedStyle(s)"
                           ".breakAfter)")
    assert set(breaks) == {"page"}, breaks
    assert errors == [] and refused == [], (errors, refused)


def test_a_swipe_turns_the_page(browser, tmp_path):
    path = tmp_path / "deck.html"
    invoke(["teach", "fooling-sets", "--format", "slides", "--out", str(path), "--n", "2"])
    ctx, page, errors, _ = open_page(browser, path, viewport={"width": 390, "height": 844}, has_touch=True)

    def swipe(dx: int) -> None:
        page.evaluate("""(dx) => {
          const t = (x) => [new Touch({identifier: 1, target: document.body, clientX: x, clientY: 300})];
          document.dispatchEvent(new TouchEvent('touchstart', {changedTouches: t(200), bubbles: true}));
          document.dispatchEvent(new TouchEvent('touchend', {changedTouches: t(200 + dx), bubbles: true}));
        }""", dx)
    swipe(-120)
    assert _shown(page) == [2]
    swipe(-20)                               # too short: not a swipe
    assert _shown(page) == [2]
    swipe(150)
    assert _shown(page) == [1]
    ctx.close()
    assert errors == []
