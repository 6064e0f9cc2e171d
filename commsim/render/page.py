"""One self-contained HTML page: Markdown (markdown-it-py) with LaTeX math turned into MathML
(latex2mathml), figures as inline SVG, a stylesheet with light and dark themes, a phone layout and a
print layout.  Nothing is fetched at view time: no script, no font, no CDN.

User-controlled text (a model's spec, a file name, a plugin's names) never goes through Markdown or
latex2mathml: a page's Markdown carries it as :func:`text_token` / :func:`code_token` placeholders, replaced by
the escaped text after rendering; and every finished page is passed through
:func:`commsim.render.sanitize.sanitize` (an allow-list of elements and attributes).
"""
from __future__ import annotations

import html
import re

from commsim.render.instance import STYLE as INSTANCE_STYLE
from commsim.render.sanitize import sanitize
from commsim.render.svg import Figure

#: a display block ($$ ... $$) and inline math ($...$, no newline, not touching a space inside)
_DISPLAY = re.compile(r"\$\$\s*(.+?)\s*\$\$", re.DOTALL)
_INLINE = re.compile(r"(?<![\\$])\$(?![\s$])([^$\n]{1,400}?)(?<![\s\\])\$(?!\$)")
_TOKEN = "MATHTOKEN{:05d}Z"
_FIGURE_TOKEN = "FIGURETOKEN{}Z"
_BLOCK_TOKEN = "BLOCKTOKEN{}Z"
#: on a phone a figure scales down to the width until its smallest text would be drawn under this share of
#: its legible size (``--min-width``); past it the figure's box scrolls sideways, and says so
PHONE_SCALE = 0.7
#: the width (CSS px) a phone gives a figure (390 px less the page's and the figure box's padding)
PHONE_FIGURE_PX = 350
#: verbatim text (and code) carried through Markdown and math as hex: letters and digits only
_USER = re.compile(r"USER(TEXT|CODE)([0-9a-f]*)Z")


def text_token(text) -> str:
    """``text`` as a placeholder that Markdown and the math pass leave alone; the page shows it escaped,
    verbatim (no emphasis, no math, no HTML)."""
    return "USERTEXT" + str(text).encode("utf-8").hex() + "Z"


def code_token(text) -> str:
    """As :func:`text_token`, shown as ``<code>``."""
    return "USERCODE" + str(text).encode("utf-8").hex() + "Z"


def _user_html(m: re.Match) -> str:
    text = html.escape(bytes.fromhex(m.group(2)).decode("utf-8"))
    return f"<code>{text}</code>" if m.group(1) == "CODE" else text


def latex_to_mathml(latex: str, display: bool) -> str:
    """MathML for ``latex``; LaTeX latex2mathml cannot read stays visible as code (never as raw $$)."""
    from latex2mathml.converter import convert
    try:
        mathml = convert(latex, display="block" if display else "inline")
    except Exception:       # noqa: BLE001 -- any parse failure of a third-party converter: show the source
        return f'<code class="latex">{html.escape(latex)}</code>'
    return _ARROW.sub(r'<mo lspace="0.6em" rspace="0.6em">\1</mo>', mathml)


#: the arrows between statements (⟹ ⟺ ⇒ ⇔), which latex2mathml writes as identifiers (no space around them):
#: operators with room on both sides
_ARROW = re.compile(r"<m[io]>(&#x0*(?:27F9|27FA|21D2|21D4);|[⟹⟺⇒⇔])</m[io]>", re.IGNORECASE)


def block_token(ident: str) -> str:
    """The placeholder a Markdown text carries where the ready HTML block ``blocks[ident]`` goes (a paragraph of
    its own; the HTML is built by commsim from escaped text, and sanitized with the page)."""
    return _BLOCK_TOKEN.format(re.sub(r"\W", "", ident))


def markdown_to_html(text: str, figures: dict[str, Figure] | None = None, blocks: dict[str, str] | None = None) -> str:
    """Markdown with $$...$$ / $...$ math to HTML; a paragraph holding only ``figure_token(id)`` becomes the
    figure ``figures[id]``, one holding only ``block_token(id)`` the HTML ``blocks[id]``."""
    from markdown_it import MarkdownIt
    maths: list[str] = []

    def stash(display: bool):
        def put(m):
            maths.append(latex_to_mathml(m.group(1), display))
            return _TOKEN.format(len(maths) - 1)
        return put
    body = _DISPLAY.sub(lambda m: "\n\n" + stash(True)(m) + "\n\n", text)     # alone in a paragraph
    body = _INLINE.sub(stash(False), body)
    rendered = MarkdownIt("commonmark", {"html": False}).enable("table").render(body)
    rendered = re.sub(r"<p>(MATHTOKEN\d{5}Z)</p>", r'<div class="math" data-scroll="sideways">\1</div>', rendered)   # scrolls on a phone
    rendered = re.sub(r"MATHTOKEN(\d{5})Z", lambda m: maths[int(m.group(1))], rendered)
    for ident, fig in (figures or {}).items():
        rendered = rendered.replace(f"<p>{figure_token(ident)}</p>", figure_html(fig))
    for ident, block in (blocks or {}).items():
        rendered = rendered.replace(f"<p>{block_token(ident)}</p>", block)
    rendered = re.sub(r"<table>", '<div class="scroll" data-scroll="sideways"><table>', rendered)
    rendered = rendered.replace("<pre>", '<pre data-scroll="sideways">').replace("</table>", "</table></div>")
    return _USER.sub(_user_html, rendered)          # last: the user's text is never read as Markdown or math


def figure_token(ident: str) -> str:
    """The placeholder a Markdown text carries where figure ``ident`` goes."""
    return _FIGURE_TOKEN.format(re.sub(r"\W", "", ident))


_MIN_WIDTH = re.compile(r"--min-width:\s*([0-9.]+)px")


def figure_html(fig: Figure) -> str:
    """The figure in its box.  A figure scales to the width; one whose text would get too small on a phone keeps
    a legible width there, its box scrolls sideways (``data-scroll``) and its caption says so on a phone."""
    m = _MIN_WIDTH.search(fig.svg[:2000])
    wide = bool(m) and float(m.group(1)) * PHONE_SCALE > PHONE_FIGURE_PX
    hint = '<span class="scroll-hint"> (wider than a phone: scroll it sideways)</span>' if wide else ""
    return (f'<figure class="figure" id="{html.escape(fig.ident)}" data-figure="{html.escape(fig.ident)}">'
            f'<div class="svg" data-scroll="sideways">{fig.svg}</div><figcaption><strong>'
            f'{html.escape(fig.title)}.</strong> {html.escape(fig.caption)}{hint}</figcaption></figure>')


STYLE = """
:root { --fg: #1b1b1b; --bg: #ffffff; --muted: #5c5c5c; --rule: #d0d0d0; --code: #f3f3f3; --accent: #0b5cad;
        --card: #ffffff; color-scheme: light dark; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6e6e6; --bg: #15171a; --muted: #a9a9a9; --rule: #3a3d42; --code: #23262b; --accent: #7ab8ff;
          --card: #f7f7f7; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 54rem; padding: 1.2rem 1rem 3rem; font: 16px/1.55 system-ui, -apple-system,
       "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--fg); background: var(--bg);
       overflow-wrap: break-word; }
h1 { font-size: 1.6rem; line-height: 1.25; } h2 { font-size: 1.25rem; margin-top: 2rem;
     border-bottom: 1px solid var(--rule); padding-bottom: .2rem; }
a { color: var(--accent); }
pre, code { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: .88rem; }
code { overflow-wrap: anywhere; }
pre { background: var(--code); padding: .6rem .8rem; overflow-x: auto; white-space: pre; border-radius: 4px; }
pre code { overflow-wrap: normal; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: .6rem 0; }
th, td { border: 1px solid var(--rule); padding: .25rem .6rem; text-align: left; vertical-align: top; }
div.math { overflow-x: auto; overflow-y: hidden; margin: .8rem 0; padding: .1rem 0; }
math[display="block"] { display: block math; margin: 0; font-size: 1.1rem; }
figure.figure { margin: 1.2rem 0; }
figure.figure .svg { background: var(--card); border: 1px solid var(--rule); border-radius: 6px; padding: .4rem;
                     overflow-x: auto; }
figure.figure svg { display: block; width: 100%; min-width: var(--min-width, 0); height: auto; }
figure.figure svg.drawing { width: auto; max-width: 100%; margin: 0 auto; }
.scroll-hint { display: none; }
figure.figure svg * { stroke-linejoin: round; stroke-linecap: butt; }
figcaption { color: var(--muted); font-size: .9rem; margin-top: .35rem; }
nav.figures { border: 1px solid var(--rule); border-radius: 6px; padding: .4rem 1rem; font-size: .92rem; }
nav.figures ol { margin: .3rem 0; padding-left: 1.3rem; }
footer { margin-top: 3rem; color: var(--muted); font-size: .8rem; border-top: 1px solid var(--rule); }
@media (max-width: 600px) { body { font-size: 15px; padding: .8rem .6rem; } h1 { font-size: 1.3rem; }
                            math[display="block"] { font-size: 1rem; }
                            figure.figure svg { min-width: calc(var(--min-width, 0px) * 0.7); }
                            .scroll-hint { display: inline; } }
@media print {
  :root { --fg: #000; --bg: #fff; --muted: #333; --rule: #999; --code: #f4f4f4; --card: #fff; }
  body { max-width: none; padding: 0; font-size: 11pt; }
  nav.figures, footer { display: none; }
  h2 { break-after: avoid; } figure, pre, table, math { break-inside: avoid; }
  a { color: inherit; text-decoration: none; }
  pre { white-space: pre-wrap; overflow: visible; }
  pre code, th, td { overflow-wrap: anywhere; }
  .scroll, div.math, figure.figure .svg { overflow: visible; }
  math[display="block"] { font-size: .95rem; }
  figure.figure svg { min-width: 0; }
}
"""

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="commsim">
<title>{{ title }}</title>
<style>{{ style }}</style>
</head>
<body>
<main>
{{ body }}
</main>
<footer><p>Made by <code>{{ command }}</code>. Self-contained: math is MathML, figures are inline SVG.</p></footer>
</body>
</html>
"""


def figure_list_html(figures: list[Figure]) -> str:
    """The page's list of figures, each linking to its anchor."""
    if not figures:
        return '<nav class="figures"><p><strong>Figures:</strong> none on this page.</p></nav>'
    items = "".join(f'<li><a href="#{html.escape(f.ident)}">{html.escape(f.title)}</a></li>' for f in figures)
    return f'<nav class="figures"><strong>Figures</strong><ol>{items}</ol></nav>'


def page(title: str, markdown: str, figures: list[Figure], command: str, blocks: dict[str, str] | None = None,
         figure_list: bool = True) -> str:
    """The whole HTML document: the Markdown (with figure and block tokens) rendered, the figure list after the
    first heading's paragraph block (``figure_list=False``: none, for a page that never has figures)."""
    from jinja2 import Environment
    from markupsafe import Markup
    body = markdown_to_html(markdown, {f.ident: f for f in figures}, blocks)
    nav = figure_list_html(figures) if figure_list else ""
    cut = body.find("<h2")
    if cut < 0:
        cut = body.find("</h1>") + len("</h1>") if "</h1>" in body else 0
    body = body[:cut] + nav + body[cut:]
    env = Environment(autoescape=True)
    return sanitize(env.from_string(TEMPLATE).render(title=title, style=Markup(STYLE + INSTANCE_STYLE), body=Markup(body),
                                                     command=command))
