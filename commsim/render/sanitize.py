"""The last step of every page: an allow-list of elements and attributes, so no script runs and nothing is fetched.

:func:`sanitize` parses a page (the standard library's ``html.parser``) and writes it back keeping only the
elements of :data:`ELEMENTS` (HTML, MathML, the SVG that matplotlib writes) with the attributes of
:data:`ATTRIBUTES`.  An element outside the list is dropped with its attributes (its text stays, escaped);
``script`` and similar raw-text elements are dropped with their content, as are comments, processing
instructions and SVG ``metadata``.  A URL attribute (``href``, ``xlink:href``, ``src``) survives only as a
``#fragment`` anchor or a ``data:image/...`` image; a ``style`` (attribute or element) only without
``url(...)`` other than ``url(#...)``, ``@import``, ``expression(`` or ``javascript:``; no ``on*`` attribute
exists in the list.  Escaping user text before it reaches Markdown, MathML or SVG is the first line of
defence (:func:`commsim.render.page.text_token`); this is the second, for whatever slips past it.
"""
from __future__ import annotations

import html
import re
from html.parser import HTMLParser

_HTML = {"html", "head", "meta", "title", "style", "body", "main", "footer", "nav", "header", "section", "article",
         "h1", "h2", "h3", "h4", "h5", "h6", "p", "a", "code", "pre", "strong", "em", "b", "i", "ul", "ol", "li",
         "table", "thead", "tbody", "tr", "th", "td", "div", "span", "figure", "figcaption", "br", "hr", "img",
         "blockquote", "sup", "sub", "small", "dl", "dt", "dd", "kbd", "samp", "abbr"}
_MATHML = {"math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msub", "msup", "msubsup", "mfrac", "msqrt",
           "mroot", "mstyle", "mtable", "mtr", "mtd", "munder", "mover", "munderover", "mpadded", "mphantom",
           "menclose", "semantics", "mfenced"}
_SVG = {"svg", "g", "path", "rect", "circle", "ellipse", "line", "polyline", "polygon", "text", "tspan", "defs",
        "clippath", "use", "image", "lineargradient", "radialgradient", "stop", "pattern", "marker", "mask", "symbol"}
#: every element a page may hold
ELEMENTS = frozenset(_HTML | _MATHML | _SVG)
#: elements dropped together with everything inside them
DROP_WITH_CONTENT = frozenset({"script", "noscript", "iframe", "object", "embed", "template", "metadata", "foreignobject",
                               "textarea", "xmp", "noembed", "noframes", "plaintext", "frameset", "frame", "applet",
                               "set", "animate", "animatetransform", "animatemotion", "handler", "listener"})
#: elements without an end tag
VOID = frozenset({"meta", "br", "hr", "img"})

_SVG_ATTRS = {"viewbox", "preserveaspectratio", "version", "d", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r",
              "rx", "ry", "width", "height", "transform", "points", "fill", "fill-opacity", "fill-rule", "stroke",
              "stroke-width", "stroke-opacity", "stroke-linecap", "stroke-linejoin", "stroke-dasharray",
              "stroke-dashoffset", "stroke-miterlimit", "opacity", "clip-path", "clip-rule", "clippathunits",
              "font-family", "font-size", "font-weight", "font-style", "text-anchor", "dominant-baseline",
              "alignment-baseline", "dx", "dy", "rotate", "offset", "stop-color", "stop-opacity",
              "gradientunits", "gradienttransform", "patternunits", "patterntransform", "markerwidth",
              "markerheight", "refx", "refy", "orient", "markerunits", "mask", "xml:space", "letter-spacing",
              "word-spacing", "visibility", "display", "overflow", "color", "fx", "fy", "spreadmethod",
              "image-rendering", "shape-rendering", "text-rendering", "vector-effect", "paint-order",
              "xlink:href", "href"}
_MATHML_ATTRS = {"display", "mathvariant", "stretchy", "fence", "separator", "separators", "lspace", "rspace",
                 "columnalign", "rowalign", "columnspacing", "rowspacing", "columnlines", "rowlines", "frame",
                 "framespacing", "width", "height", "depth", "voffset", "displaystyle", "scriptlevel", "accent",
                 "accentunder", "movablelimits", "form", "largeop", "symmetric", "minsize", "maxsize",
                 "linethickness", "notation", "open", "close", "mathsize", "mathcolor", "mathbackground", "align",
                 "numalign", "denomalign", "bevelled", "columnspan", "rowspan", "encoding", "lquote", "rquote"}
_GLOBAL = {"id", "class", "style", "lang", "title", "role", "dir", "xmlns", "xmlns:xlink"}
#: the attributes kept, by element kind (``data-*`` and ``aria-*`` are kept everywhere)
ATTRIBUTES = {
    "html": _GLOBAL,
    "meta": _GLOBAL | {"charset", "name", "content"},
    "a": _GLOBAL | {"href"},
    "img": _GLOBAL | {"src", "alt", "width", "height"},
    "th": _GLOBAL | {"colspan", "rowspan", "align", "scope"},
    "td": _GLOBAL | {"colspan", "rowspan", "align"},
    "ol": _GLOBAL | {"start"},
    "style": {"type", "media"},
    **{name: _GLOBAL | _MATHML_ATTRS for name in _MATHML},
    **{name: _GLOBAL | _SVG_ATTRS for name in _SVG},
}
#: the namespaces an ``xmlns`` attribute may declare
NAMESPACES = frozenset({"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink", "http://www.w3.org/1998/Math/MathML",
                        "http://www.w3.org/1999/xhtml"})
#: SVG names html.parser lowercases, written back in their case (for a reader of the page's source)
_CASE = {"viewbox": "viewBox", "preserveaspectratio": "preserveAspectRatio", "clippath": "clipPath",
         "clippathunits": "clipPathUnits", "lineargradient": "linearGradient", "radialgradient": "radialGradient",
         "gradientunits": "gradientUnits", "gradienttransform": "gradientTransform", "patternunits": "patternUnits",
         "patterntransform": "patternTransform", "markerwidth": "markerWidth", "markerheight": "markerHeight",
         "refx": "refX", "refy": "refY", "markerunits": "markerUnits", "spreadmethod": "spreadMethod"}

_DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*", re.IGNORECASE)
_FRAGMENT = re.compile(r"#[A-Za-z_][\w.:-]*")
_CSS_URL = re.compile(r"url\s*\(\s*['\"]?\s*([^)'\"]*)", re.IGNORECASE)
_CSS_BAD = re.compile(r"@import|expression\s*\(|javascript:|vbscript:|behavior\s*:|-moz-binding|</", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x20\x7f]+")


def safe_url(value: str, image: bool = False) -> bool:
    """A ``#fragment`` anchor, or (``image``) a base64 ``data:image/...`` URL; nothing else."""
    v = _CONTROL.sub("", value or "")
    return bool(_FRAGMENT.fullmatch(v) or (image and _DATA_IMAGE.fullmatch(value.strip())))


def safe_css(value: str) -> bool:
    """CSS with no fetch and no script: every ``url(...)`` a ``#fragment``, no ``@import``/``expression``."""
    text = html.unescape(value or "").replace("\\", "")
    if _CSS_BAD.search(_CONTROL.sub("", text)):
        return False
    return all(_FRAGMENT.fullmatch(u.strip()) for u in _CSS_URL.findall(text))


def _keep_attribute(tag: str, name: str, value: str | None) -> bool:
    if name.startswith("on") or ":" in name and name not in ("xlink:href", "xml:space", "xmlns:xlink"):
        return False
    if not (name in ATTRIBUTES.get(tag, _GLOBAL) or name.startswith(("data-", "aria-"))):
        return False
    value = value or ""
    if name in ("href", "xlink:href", "src"):
        return safe_url(value, image=tag in ("img", "image"))
    if name in ("xmlns", "xmlns:xlink"):
        return value in NAMESPACES
    if name == "style" or name in ("fill", "stroke", "clip-path", "mask", "filter"):
        return safe_css(value)
    return not _CONTROL.sub("", html.unescape(value)).lower().startswith(("javascript:", "vbscript:", "data:"))


class _Sanitizer(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.dropping: list[str] = []    # the stack of content-dropping elements we are inside
        self.open: list[str] = []        # the kept elements open

    def _start(self, tag: str, attrs, closed: bool) -> None:
        if self.dropping:
            if tag in DROP_WITH_CONTENT and not closed:
                self.dropping.append(tag)
            return
        if tag in DROP_WITH_CONTENT:
            if not closed:
                self.dropping.append(tag)
            return
        if tag not in ELEMENTS:
            return
        kept = "".join(f' {_CASE.get(k, k)}="{html.escape(v or "", quote=True)}"' for k, v in attrs
                       if _keep_attribute(tag, k, v))
        name = _CASE.get(tag, tag)
        self.out.append(f"<{name}{kept}{'/' if closed and tag not in VOID else ''}>")
        if not closed and tag not in VOID:
            self.open.append(tag)

    def handle_starttag(self, tag, attrs):
        self._start(tag, attrs, False)

    def handle_startendtag(self, tag, attrs):
        self._start(tag, attrs, True)

    def handle_endtag(self, tag):
        if self.dropping:
            if tag == self.dropping[-1]:
                self.dropping.pop()
            return
        if tag in self.open:
            while self.open:                       # close what was left open inside it
                top = self.open.pop()
                self.out.append(f"</{_CASE.get(top, top)}>")
                if top == tag:
                    break

    def handle_data(self, data):
        if self.dropping:
            return
        if self.open and self.open[-1] == "style":
            self.out.append(data if safe_css(data) else "")
        else:
            self.out.append(html.escape(data, quote=False))

    def handle_decl(self, decl):
        if decl.lower() == "doctype html":
            self.out.append(f"<!{decl}>")

    # comments, processing instructions, CDATA and unknown declarations are dropped
    def handle_comment(self, data):
        pass

    def handle_pi(self, data):
        pass

    def unknown_decl(self, data):
        pass


def sanitize(page: str) -> str:
    """``page`` with only the allowed elements and attributes (see the module's docstring)."""
    parser = _Sanitizer()
    parser.feed(page)
    parser.close()
    while parser.open:
        top = parser.open.pop()
        parser.out.append(f"</{_CASE.get(top, top)}>")
    return "".join(parser.out)
