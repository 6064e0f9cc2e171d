"""What a page may hold, by namespace: the elements and attributes of HTML, SVG and MathML the sanitizer keeps.

Names are the lower-case forms :mod:`html.parser` reports; :data:`CASE` gives the SVG names written back in their
camel case.  Nothing here fetches or runs anything: no ``script``/``style`` outside the page's head, no event
handler, no form, frame, object, ``base`` or ``http-equiv`` meta, no animation element (``set``/``animate`` can
rewrite an ``href``), no ``foreignObject``/``desc``/``title`` inside SVG (they would switch the browser back
to HTML parsing), and MathML token elements (``mi``, ``mo``, ``mtext``...) hold text only for the same reason.
"""
from __future__ import annotations

HTML_NS, SVG_NS, MATHML_NS = "html", "svg", "math"

#: HTML elements (``style``, ``title``, ``meta`` only directly inside ``head``; ``html``/``head``/``body`` only
#: at their places in the document)
HTML_ELEMENTS = frozenset({
    "html", "head", "meta", "title", "style", "body", "main", "footer", "nav", "header", "section", "article",
    "h1", "h2", "h3", "h4", "h5", "h6", "p", "a", "code", "pre", "strong", "em", "b", "i", "ul", "ol", "li",
    "table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption", "div", "span", "figure", "figcaption", "br",
    "hr", "img", "blockquote", "sup", "sub", "small", "dl", "dt", "dd", "kbd", "samp", "abbr", "details", "summary"})
#: HTML elements that must sit directly inside the given parent
HTML_PLACES = {"head": "html", "body": "html", "style": "head", "title": "head", "meta": "head"}
#: HTML elements without an end tag (the kept ones, then all of them)
VOID = frozenset({"meta", "br", "hr", "img"})
HTML_VOID = VOID | {"area", "base", "col", "embed", "input", "link", "source", "track", "wbr", "param", "keygen",
                    "frame", "basefont", "bgsound"}

SVG_ELEMENTS = frozenset({
    "svg", "g", "path", "rect", "circle", "ellipse", "line", "polyline", "polygon", "text", "tspan", "defs",
    "clippath", "use", "image", "lineargradient", "radialgradient", "stop", "pattern", "marker", "mask", "symbol"})

MATHML_ELEMENTS = frozenset({
    "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msub", "msup", "msubsup", "mfrac", "msqrt",
    "mroot", "mstyle", "mtable", "mtr", "mtd", "munder", "mover", "munderover", "mpadded", "mphantom", "menclose",
    "semantics", "mfenced"})
#: MathML elements a browser reads as HTML integration points: they keep text, never child elements
MATHML_TEXT_ONLY = frozenset({"mi", "mn", "mo", "ms", "mtext", "mspace"})

#: elements dropped together with everything inside them, wherever they appear
DROP_WITH_CONTENT = frozenset({
    "script", "style", "noscript", "iframe", "object", "embed", "template", "metadata", "foreignobject", "textarea",
    "xmp", "noembed", "noframes", "plaintext", "frameset", "frame", "applet", "set", "animate", "animatetransform",
    "animatemotion", "handler", "listener", "desc", "title", "select", "option",
    "annotation", "annotation-xml", "mglyph", "malignmark", "form", "button", "input", "audio", "video",
    "source", "track", "canvas", "portal", "fencedframe", "dialog", "search", "selectedcontent"})

GLOBAL = frozenset({"id", "class", "style", "lang", "title", "role", "dir"})
_SVG_ATTRIBUTES = frozenset({
    "viewbox", "preserveaspectratio", "version", "d", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry",
    "width", "height", "transform", "points", "fill", "fill-opacity", "fill-rule", "stroke", "stroke-width",
    "stroke-opacity", "stroke-linecap", "stroke-linejoin", "stroke-dasharray", "stroke-dashoffset",
    "stroke-miterlimit", "opacity", "clip-path", "clip-rule", "clippathunits", "font-family", "font-size",
    "font-weight", "font-style", "text-anchor", "dominant-baseline", "alignment-baseline", "dx", "dy", "rotate",
    "offset", "stop-color", "stop-opacity", "gradientunits", "gradienttransform", "patternunits",
    "patterntransform", "markerwidth", "markerheight", "refx", "refy", "orient", "markerunits", "mask",
    "xml:space", "letter-spacing", "word-spacing", "visibility", "display", "overflow", "color", "fx", "fy",
    "spreadmethod", "image-rendering", "shape-rendering", "text-rendering", "vector-effect", "paint-order",
    "xlink:href", "href", "xmlns", "xmlns:xlink"})
_MATHML_ATTRIBUTES = frozenset({
    "display", "mathvariant", "stretchy", "fence", "separator", "separators", "lspace", "rspace", "columnalign",
    "rowalign", "columnspacing", "rowspacing", "columnlines", "rowlines", "frame", "framespacing", "width",
    "height", "depth", "voffset", "displaystyle", "scriptlevel", "accent", "accentunder", "movablelimits", "form",
    "largeop", "symmetric", "minsize", "maxsize", "linethickness", "notation", "open", "close", "mathsize",
    "mathcolor", "mathbackground", "align", "numalign", "denomalign", "bevelled", "columnspan", "rowspan",
    "lquote", "rquote", "href", "xmlns"})
_HTML_ATTRIBUTES = {
    "html": GLOBAL | {"xmlns"},
    "meta": GLOBAL | {"charset", "name", "content"},
    "a": GLOBAL | {"href"},
    "img": GLOBAL | {"src", "alt", "width", "height"},
    "th": GLOBAL | {"colspan", "rowspan", "align", "scope"},
    "td": GLOBAL | {"colspan", "rowspan", "align"},
    "ol": GLOBAL | {"start"},
    "details": GLOBAL | {"open"},
    "style": frozenset({"type", "media"}),
}


def attributes(namespace: str, tag: str) -> frozenset:
    """The attributes element ``tag`` of ``namespace`` may keep (``data-*``/``aria-*`` besides)."""
    if namespace == SVG_NS:
        return GLOBAL | _SVG_ATTRIBUTES
    if namespace == MATHML_NS:
        return GLOBAL | _MATHML_ATTRIBUTES
    return _HTML_ATTRIBUTES.get(tag, GLOBAL)


#: attributes holding a URL: kept only as a ``#fragment`` (or, on ``img``/``image``, a base64 raster image)
URL_ATTRIBUTES = frozenset({"href", "xlink:href", "src"})
#: attributes whose value is a CSS value (colours, paint, lengths): checked as one CSS value
CSS_VALUED = frozenset({
    "fill", "stroke", "clip-path", "mask", "color", "stop-color", "mathcolor", "mathbackground", "font-family",
    "font-size", "font-weight", "font-style", "opacity", "fill-opacity", "stroke-opacity", "stroke-width",
    "stroke-dasharray", "stroke-dashoffset", "stroke-linecap", "stroke-linejoin", "display", "visibility",
    "overflow", "letter-spacing", "word-spacing", "paint-order"})
#: the namespaces an ``xmlns`` attribute may declare
NAMESPACES = frozenset({"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink",
                        "http://www.w3.org/1998/Math/MathML", "http://www.w3.org/1999/xhtml"})

#: SVG names html.parser lowercases, written back in their case
CASE = {"viewbox": "viewBox", "preserveaspectratio": "preserveAspectRatio", "clippath": "clipPath",
        "clippathunits": "clipPathUnits", "lineargradient": "linearGradient", "radialgradient": "radialGradient",
        "gradientunits": "gradientUnits", "gradienttransform": "gradientTransform", "patternunits": "patternUnits",
        "patterntransform": "patternTransform", "markerwidth": "markerWidth", "markerheight": "markerHeight",
        "refx": "refX", "refy": "refY", "markerunits": "markerUnits", "spreadmethod": "spreadMethod"}
