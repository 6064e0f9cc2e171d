"""The sanitizer's pass: read a page with :mod:`html.parser`, write back only what :mod:`.allow` lets through.

The page written back is canonical, so that a browser builds from it the tree that was checked:
every text is escaped (``&``, ``<``, ``>``), every attribute value is quoted and escaped, every non-void
element gets an explicit end tag (never ``/>``, which HTML ignores), comments, CDATA and processing
instructions are gone.  The only raw text left is the page's own stylesheet, a ``<style>`` directly inside
``<head>`` that holds no ``<``, no backslash and no comment (:func:`.css.safe_stylesheet`).

Each element is checked in its namespace, tracked as a browser tracks it: ``<svg>`` opens SVG, ``<math>``
opens MathML, and inside them only that namespace's allowed elements are kept (an HTML element there would
make a browser leave foreign content, a ``<style>`` there would be parsed as markup): the rest is dropped
(with its content when it is a raw-text, frame, form, template or script-like element, otherwise the tag alone,
its text kept as text).
"""
from __future__ import annotations

import html
import re
from html.parser import HTMLParser

from commsim.render.sanitize import allow
from commsim.render.sanitize.css import clean_style, clean_value, decode_escapes, safe_stylesheet

_DATA_IMAGE = re.compile(r"data:image/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*", re.IGNORECASE)
_FRAGMENT = re.compile(r"#[A-Za-z_][\w.:-]*")
_CONTROL = re.compile(r"[\x00-\x20\x7f]+")
_UNSAFE_TEXT = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_DATA_NAME = re.compile(r"(?:data|aria)-[a-z0-9-]{1,40}")
#: elements that hold text only: MathML's token elements, the page's title
_TEXT_ONLY = frozenset({(t, allow.MATHML_NS) for t in allow.MATHML_TEXT_ONLY} | {("title", allow.HTML_NS)})
_SCHEMES = ("javascript:", "vbscript:", "data:", "livescript:", "mocha:")


def safe_url(value: str, image: bool = False) -> bool:
    """A ``#fragment`` anchor, or (``image``) a base64 ``data:image/...`` raster URL; nothing else."""
    v = _CONTROL.sub("", value or "")
    return bool(_FRAGMENT.fullmatch(v) or (image and _DATA_IMAGE.fullmatch((value or "").strip())))


def clean_attribute(namespace: str, tag: str, name: str, value: str | None) -> str | None:
    """The value attribute ``name`` keeps on element ``tag`` of ``namespace`` (None: the attribute goes)."""
    value = _UNSAFE_TEXT.sub("", value or "")
    if name.startswith("on") or not (name in allow.attributes(namespace, tag) or _DATA_NAME.fullmatch(name)):
        return None
    if name in allow.URL_ATTRIBUTES:              # written back without the blanks a browser would skip
        return _CONTROL.sub("", value) if safe_url(value, image=tag in ("img", "image")) else None
    if name in ("xmlns", "xmlns:xlink"):
        return value if value in allow.NAMESPACES else None
    if name == "style":
        return clean_style(value) or None
    if name in allow.CSS_VALUED and namespace != allow.HTML_NS:
        return clean_value(value, urls=name in ("fill", "stroke", "clip-path", "mask"))
    plain = _CONTROL.sub("", decode_escapes(value)).lower()
    if plain.startswith(_SCHEMES) or any(w in plain for w in ("url(", "image-set(", "expression(", "@import")):
        return None
    return value


class Sanitizer(HTMLParser):
    """Feed a page, then :meth:`result`: the page with only allowed elements and attributes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[tuple[str, str]] = []     # (tag, namespace) of the kept elements open, outermost first
        self.dropping: list[str] = []             # the elements dropped with their content we are inside
        self.started = False                      # an element was kept (``<html>`` only comes first)

    # ---- where we are -----------------------------------------------------------------------------------
    def _namespace(self) -> str:
        return self.open[-1][1] if self.open else allow.HTML_NS

    def _placed(self, tag: str) -> bool:
        """An HTML element with a fixed place (``head``, ``style``...) is kept only there."""
        parent = self.open[-1][0] if self.open else None
        if tag == "html":
            return not self.started
        need = allow.HTML_PLACES.get(tag)
        return need is None or (parent == need and self._namespace() == allow.HTML_NS)

    def _kind(self, tag: str) -> str | None:
        """The namespace element ``tag`` is kept in here, "drop" (with its content) or None (the tag alone)."""
        ns = self._namespace()
        if self.open and self.open[-1] in _TEXT_ONLY:
            return "drop" if tag in allow.DROP_WITH_CONTENT else None
        if ns == allow.HTML_NS:
            if tag == "svg":
                return allow.SVG_NS
            if tag == "math":
                return allow.MATHML_NS
            if tag in allow.HTML_ELEMENTS and self._placed(tag):
                return allow.HTML_NS
        elif ns == allow.SVG_NS and tag in allow.SVG_ELEMENTS:
            return allow.SVG_NS
        elif ns == allow.MATHML_NS and tag in allow.MATHML_ELEMENTS and tag != "math":
            return allow.MATHML_NS
        return "drop" if tag in allow.DROP_WITH_CONTENT else None

    # ---- the parser's events ----------------------------------------------------------------------------
    def _start(self, tag: str, attrs, closed: bool) -> None:
        if self.dropping:
            if tag in allow.DROP_WITH_CONTENT and not closed and tag not in allow.HTML_VOID:
                self.dropping.append(tag)
            return
        kind = self._kind(tag)
        if kind is None:
            return
        if kind == "drop":
            if not closed and tag not in allow.HTML_VOID:
                self.dropping.append(tag)
            return
        kept, seen = [], set()
        for name, value in attrs:
            if name in seen:
                continue                          # a browser keeps the first of two same-named attributes
            seen.add(name)
            clean = clean_attribute(kind, tag, name, value)
            if clean is not None:
                kept.append(f' {allow.CASE.get(name, name)}="{html.escape(clean, quote=True)}"')
        name = allow.CASE.get(tag, tag) if kind == allow.SVG_NS else tag
        void = kind == allow.HTML_NS and tag in allow.VOID
        self.out.append(f"<{name}{''.join(kept)}>" + ("" if void or not closed else f"</{name}>"))
        self.started = True
        if not void and not closed:
            self.open.append((tag, kind))

    def handle_starttag(self, tag, attrs):
        self._start(tag, attrs, False)

    def handle_startendtag(self, tag, attrs):
        self._start(tag, attrs, True)

    def handle_endtag(self, tag):
        if self.dropping:
            if tag in self.dropping:                 # the dropped element ends (with what it left open)
                del self.dropping[len(self.dropping) - 1 - self.dropping[::-1].index(tag):]
            return
        if any(t == tag for t, _ in self.open):
            while self.open:                      # close what was left open inside it
                if self._close() == tag:
                    break

    def _close(self) -> str:
        tag, ns = self.open.pop()
        self.out.append(f"</{allow.CASE.get(tag, tag) if ns == allow.SVG_NS else tag}>")
        return tag

    def handle_data(self, data):
        if self.dropping:
            return
        data = _UNSAFE_TEXT.sub("", data)
        if self.open and self.open[-1] == ("style", allow.HTML_NS):
            self.out.append(data if safe_stylesheet(data) else "")
        else:
            self.out.append(html.escape(data, quote=False))

    def handle_decl(self, decl):
        if decl.lower() == "doctype html" and not self.out:
            self.out.append(f"<!{decl}>")

    # comments, processing instructions, CDATA sections and other declarations are dropped
    def handle_comment(self, data):
        pass

    def handle_pi(self, data):
        pass

    def unknown_decl(self, data):
        pass

    def result(self) -> str:
        self.close()
        while self.open:
            self._close()
        return "".join(self.out)
