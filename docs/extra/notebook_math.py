"""An mkdocs hook (mkdocs.yml ``hooks:``): the math of a tutorial notebook's Markdown cells (``$...$`` and
``$$...$$``) becomes MathML when the site is built (latex2mathml), so the page shows it with no script and
nothing fetched at view time.  The MathJax loader the notebook converter writes (a script tag with an empty
``src``) is dropped.  Only Markdown cells are read: a ``$`` in code or in a cell's output stays as it is."""
from __future__ import annotations

import html
import re

#: one notebook cell of mkdocs-jupyter's page; a Markdown cell's class names it
_CELL = re.compile(r'(<div class="jp-Cell [^"]*"[^>]*>)(.*?)(?=<div class="jp-Cell |\Z)', re.S)
#: what the math pass leaves alone inside a Markdown cell: code, preformatted text, scripts, styles and tags
_VERBATIM = re.compile(r"(<pre\b.*?</pre>|<code\b.*?</code>|<script\b.*?</script>|<style\b.*?</style>|<[^>]*>)",
                       re.S)
_DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)
#: inline math: no newline inside, not opening or closing on a space (a price "$5 and $6" is not math)
_INLINE = re.compile(r"(?<![\\$])\$(?![\s$])([^$\n]+?)(?<![\s\\])\$(?!\$)")
_MATHJAX = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.S)


def mathml(latex: str, display: bool) -> str:
    """MathML for the (HTML-escaped) ``latex`` of a page; LaTeX latex2mathml cannot read stays visible as code."""
    from latex2mathml.converter import convert
    source = html.unescape(latex).strip()
    try:
        return convert(source, display="block" if display else "inline")
    except Exception:       # noqa: BLE001 -- any parse failure of the converter: show the source, never raw $
        return f'<code class="latex">{html.escape(source)}</code>'


def _text_math(text: str) -> str:
    text = _DISPLAY.sub(lambda m: mathml(m.group(1), True), text)
    return _INLINE.sub(lambda m: mathml(m.group(1), False), text)


def render_math(content: str) -> str:
    """``content`` (a converted notebook) with its Markdown cells' math as MathML and no MathJax loader."""
    def cell(m: re.Match) -> str:
        if "jp-MarkdownCell" not in m.group(1):
            return m.group(0)
        parts = _VERBATIM.split(m.group(2))
        return m.group(1) + "".join(p if i % 2 else _text_math(p) for i, p in enumerate(parts))
    return _CELL.sub(cell, _MATHJAX.sub("", content))


def on_page_content(content: str, page, config, files) -> str:
    if not page.file.src_uri.endswith(".ipynb"):
        return content
    return render_math(content)
