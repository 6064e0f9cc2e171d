"""The last step of every page: an allow-list of elements and attributes, so no script runs and nothing is fetched.

:func:`sanitize` reads a page (the standard library's ``html.parser``) and writes it back keeping only the
elements and attributes :mod:`.allow` lists for their namespace -- HTML, SVG (what matplotlib writes) and MathML
(what latex2mathml writes) -- in a canonical form a browser cannot read differently from the checked one
(:mod:`.tree`).  A URL attribute survives only as a ``#fragment`` anchor or a ``data:image/...`` raster image;
a ``style`` attribute keeps a few properties with plain values, checked after its CSS escapes are decoded
(:mod:`.css`); no ``on*`` attribute exists in the lists; ``<style>`` is kept only as the page's own stylesheet
in ``<head>``, never in SVG or MathML.  Escaping user text before it reaches Markdown, MathML or SVG is the first
line of defence (:func:`commsim.render.page.text_token`); this is the second, for whatever slips past it (a
plugin's ``\\text{...}`` in a formula reaches latex2mathml, which copies it unescaped).
"""
from __future__ import annotations

from commsim.render.sanitize.allow import HTML_ELEMENTS, MATHML_ELEMENTS, SVG_ELEMENTS
from commsim.render.sanitize.css import clean_style, decode_escapes, safe_css, safe_stylesheet
from commsim.render.sanitize.tree import Sanitizer, safe_url

#: every element a page may hold, in some namespace
ELEMENTS = HTML_ELEMENTS | SVG_ELEMENTS | MATHML_ELEMENTS


def sanitize(page: str) -> str:
    """``page`` with only the allowed elements and attributes (see the module's docstring)."""
    parser = Sanitizer()
    parser.feed(page)
    return parser.result()


__all__ = ["sanitize", "safe_url", "safe_css", "safe_stylesheet", "clean_style", "decode_escapes", "ELEMENTS"]
