"""An mkdocs hook (mkdocs.yml ``hooks:``): a table cell may break a long name after an underscore
(``quantised_accuracy``, ``wrong_not_forced``), so a table of many columns reflows to the page's width instead
of running off it.  Only the text of ``<th>``/``<td>`` cells changes (a ``<wbr>`` after each ``_``); tags and
attributes stay as they are.  What still does not fit scrolls in a box that says so
(docs/extra/layout.js)."""
from __future__ import annotations

import re

_CELL = re.compile(r"(<t[hd]\b)([^>]*>)(.*?)(</t[hd]>)", re.S)
_TAG = re.compile(r"(<[^>]*>)")
#: a cell with more text than this is marked ``commsim-long``: on a phone it keeps a wider column (layout.css)
LONG = 24


def break_names(content: str) -> str:
    """``content`` with a ``<wbr>`` after every underscore of its table cells' text, and a cell of long text
    marked (class ``commsim-long``) unless it has a class already."""
    def cell(m: re.Match) -> str:
        parts = _TAG.split(m.group(3))
        text = "".join(p if i % 2 else p.replace("_", "_<wbr>") for i, p in enumerate(parts))
        plain = "".join(parts[::2])
        mark = ' class="commsim-long"' if len(plain) > LONG and "class=" not in m.group(2) else ""
        return m.group(1) + mark + m.group(2) + text + m.group(4)
    return _CELL.sub(cell, content)


def on_page_content(content: str, page, config, files) -> str:
    return break_names(content)
