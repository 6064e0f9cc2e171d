"""Helpers the page and terminal tests share: text without line breaks or box drawing, a page's visible
text and its two-column table rows."""
from __future__ import annotations

from html.parser import HTMLParser


def flat(text: str) -> str:
    """Terminal or page text with box drawing and line breaks gone: words separated by one space."""
    for ch in "│╭╮╰╯─┃━┏┓┗┛┡┩╇┳┻":
        text = text.replace(ch, " ")
    return " ".join(text.split())


class _Text(HTMLParser):
    """The visible text of a page, and the text of each summary-table row (label -> value)."""

    def __init__(self):
        super().__init__()
        self.parts: list[str] = []
        self.rows: dict[str, str] = {}
        self._cells: list[str] | None = None
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("style", "svg"):
            self._skip += 1
        if tag == "tr":
            self._cells = []
        if tag in ("td", "th") and self._cells is not None:
            self._cells.append("")

    def handle_endtag(self, tag):
        if tag in ("style", "svg"):
            self._skip -= 1
        if tag == "tr" and self._cells:
            if len(self._cells) == 2:
                self.rows.setdefault(flat(self._cells[0]), flat(self._cells[1]))
            self._cells = None

    def handle_data(self, data):
        if self._skip:
            return
        self.parts.append(data)
        if self._cells:
            self._cells[-1] += data


def page_text(page: str) -> _Text:
    parsed = _Text()
    parsed.feed(page)
    return parsed
