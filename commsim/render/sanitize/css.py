"""CSS a page may keep: a few properties with plain values, and the page's own stylesheet.

A CSS escape (``\\72``, ``\\000072 ``, ``\\r``) is decoded as CSS does (:func:`decode_escapes`) before anything
is checked, and what is kept is written back decoded: the browser reads the very text that was checked, with no
escape left to read differently.  A ``style`` attribute keeps only the declarations of :data:`PROPERTIES` whose
value is a sequence of plain tokens (numbers with units, ``#rgb`` colours, keywords, simple quoted names,
``rgb()``/``hsl()`` colours and, for paint and clipping, ``url(#fragment)``); anything else -- another function
(``url(http:...)``, ``image-set(...)``, ``expression(...)``, ``var(...)``), an ``@`` rule, a backslash, a comment
-- drops the declaration.  A stylesheet (the page's own ``<style>``) is kept whole or not at all
(:func:`safe_stylesheet`).
"""
from __future__ import annotations

import re

#: the properties a ``style`` attribute may set (matplotlib's SVG, markdown-it's table alignment, the page's
#: ``--min-width`` for a figure)
PROPERTIES = frozenset({
    "fill", "fill-opacity", "fill-rule", "stroke", "stroke-width", "stroke-opacity", "stroke-linecap",
    "stroke-linejoin", "stroke-dasharray", "stroke-dashoffset", "stroke-miterlimit", "opacity", "font-family",
    "font-size", "font-weight", "font-style", "text-anchor", "text-align", "dominant-baseline", "clip-path", "mask",
    "color", "background-color", "white-space", "vertical-align", "text-decoration", "--min-width"})
#: the properties whose value may be a ``url(#fragment)`` (a paint server, a clip path, a mask on the page)
URL_PROPERTIES = frozenset({"fill", "stroke", "clip-path", "mask"})
#: the functions the page's own stylesheet may call
SHEET_FUNCTIONS = frozenset({"var", "rgb", "rgba", "hsl", "hsla", "calc", "min", "max", "clamp"})

_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})[ \t\n]?|(\n)|(.)|$)", re.S)
_TOKENS = [re.compile(p) for p in (
    r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?:%|[a-zA-Z]{1,4})?",        # a number, its unit
    r"#[0-9a-fA-F]{3,8}(?![\w-])",                                               # a colour
    r"'[A-Za-z0-9 ._-]*'|\"[A-Za-z0-9 ._-]*\"",                                  # a font's name
    r"(?:rgba?|hsla?)\([0-9.,%\s]*\)",                                           # a colour function
    r"-{0,2}[A-Za-z][A-Za-z0-9-]*(?![\w(-])",                                    # a keyword (no function)
)]
_URL = re.compile(r"url\(\s*(['\"]?)#[A-Za-z_][\w.-]*\1\s*\)")
_SEPARATOR = re.compile(r"[\s,]+")
_FUNCTION = re.compile(r"([-\w]+)\(")
_AT_RULE = re.compile(r"@([-\w]*)")


def decode_escapes(text: str) -> str:
    """``text`` with every CSS escape replaced by the character it stands for (CSS Syntax 3, "consume an
    escaped code point"; an escaped newline is removed, as inside a string)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n").replace("\x00", "\ufffd")

    def one(m: re.Match) -> str:
        if m.group(1):
            code = int(m.group(1), 16)
            return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
        if m.group(2):
            return ""
        return m.group(3) if m.group(3) is not None else "\ufffd"
    return _ESCAPE.sub(one, text)


def clean_value(value: str, urls: bool = False) -> str | None:
    """``value`` (decoded) as plain tokens separated by spaces and commas, or None when anything else is in it;
    ``urls``: a ``url(#fragment)`` is a plain token too."""
    text = " ".join(decode_escapes(value).split())
    if not text or len(text) > 400:
        return None
    pos = 0
    while pos < len(text):
        sep = _SEPARATOR.match(text, pos)
        if sep:
            pos = sep.end()
            continue
        m = next((m for t in _TOKENS + ([_URL] if urls else []) if (m := t.match(text, pos))), None)
        if m is None:
            return None
        pos = m.end()
    return text


def clean_style(value: str) -> str:
    """A ``style`` attribute's declarations that are allowed, decoded and written back (``""``: none is)."""
    kept = []
    for declaration in decode_escapes(value or "").split(";"):
        name, colon, val = declaration.partition(":")
        name = name.strip().lower()
        if not colon or name not in PROPERTIES:
            continue
        clean = clean_value(val, urls=name in URL_PROPERTIES)
        if clean is not None:                   # as written: a space after the colon or none
            kept.append(f"{name}:{' ' if val[:1].isspace() else ''}{clean}")
    return "; ".join(kept)


def safe_css(value: str) -> bool:
    """Every declaration of the ``style`` value ``value`` is allowed (:func:`clean_style` keeps them all)."""
    declarations = [d for d in decode_escapes(value or "").split(";") if d.strip()]
    kept = clean_style(value)
    return len(kept.split("; ")) == len(declarations) if kept else not declarations


def safe_stylesheet(text: str) -> bool:
    """A stylesheet with no escape, comment or markup character, no ``@`` rule but ``@media``, and no function
    but :data:`SHEET_FUNCTIONS` (so no ``url()``, ``image-set()``, ``@import``, ``expression()``)."""
    if any(c in text for c in "\\<>&\x00") or "/*" in text:
        return False
    if any(rule.lower() != "media" for rule in _AT_RULE.findall(text)):
        return False
    if any(name.lower() not in SHEET_FUNCTIONS for name in _FUNCTION.findall(text)):
        return False
    lowered = text.lower()
    return not any(word in lowered for word in ("javascript", "vbscript", "behavior", "binding"))
