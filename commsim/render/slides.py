"""A lesson as a slide deck: one self-contained HTML file, one step a slide.

The deck is built like every page -- Markdown and MathML from the lesson's own text, inline SVG figures, the
instance as HTML -- and the whole of it goes through the page sanitizer.  Only then are two fixed pieces added,
neither holding any text of the lesson: the navigation script (:data:`SCRIPT`, a constant) and a
Content-Security-Policy that lets that one script run (by its SHA-256 hash) and nothing else: no other script,
no network (``default-src 'none'``), no form, no frame.

Keys: → ↓ Space PageDown Enter next; ← ↑ PageUp Backspace previous; Home, End; ``n`` shows or hides the speaker
notes (the step's argument, its note and where it is proved).  A swipe left or right on a touch screen turns the
page.  Printed, every slide is a page and the notes are left out.  Without the script every slide shows, one
after another.
"""
from __future__ import annotations

import base64
import hashlib
import html

from commsim.render.instance import STYLE as INSTANCE_STYLE
from commsim.render.instance import instance_html
from commsim.render.page import STYLE, figure_html, latex_to_mathml, markdown_to_html
from commsim.render.sanitize import sanitize

SCRIPT = """(function () {
  'use strict';
  var slides = Array.prototype.slice.call(document.querySelectorAll('section.slide'));
  var counter = document.getElementById('counter');
  var current = 0;
  function show(k) {
    current = Math.max(0, Math.min(slides.length - 1, k));
    slides.forEach(function (s, i) {
      s.classList.toggle('current', i === current);
      s.setAttribute('aria-hidden', i === current ? 'false' : 'true');
    });
    counter.textContent = (current + 1) + ' / ' + slides.length;
    try { history.replaceState(null, '', '#slide-' + (current + 1)); } catch (e) { /* a file URL may refuse */ }
  }
  var NEXT = ['ArrowRight', 'ArrowDown', 'PageDown', ' ', 'Spacebar', 'Enter'];
  var PREVIOUS = ['ArrowLeft', 'ArrowUp', 'PageUp', 'Backspace'];
  document.addEventListener('keydown', function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) { return; }
    if (NEXT.indexOf(e.key) !== -1) { show(current + 1); }
    else if (PREVIOUS.indexOf(e.key) !== -1) { show(current - 1); }
    else if (e.key === 'Home') { show(0); }
    else if (e.key === 'End') { show(slides.length - 1); }
    else if (e.key === 'n' || e.key === 'N') { document.body.classList.toggle('show-notes'); }
    else { return; }
    e.preventDefault();
  });
  var x0 = null, y0 = null;
  document.addEventListener('touchstart', function (e) {
    x0 = e.changedTouches[0].clientX; y0 = e.changedTouches[0].clientY;
  }, {passive: true});
  document.addEventListener('touchend', function (e) {
    if (x0 === null) { return; }
    var dx = e.changedTouches[0].clientX - x0, dy = e.changedTouches[0].clientY - y0;
    x0 = null;
    if (Math.abs(dx) > 50 && Math.abs(dx) > Math.abs(dy)) { show(current + (dx < 0 ? 1 : -1)); }
  }, {passive: true});
  document.documentElement.classList.add('js');
  var m = /^#slide-(\\d+)$/.exec(location.hash);
  show(m ? parseInt(m[1], 10) - 1 : 0);
})();"""


def script_hash() -> str:
    """The CSP source that lets :data:`SCRIPT` (and only it) run."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii") + "'"


#: the policy the deck carries: its own script, its own inline styles, images as data: URLs; nothing else
def policy() -> str:
    return (f"default-src 'none'; script-src {script_hash()}; style-src 'unsafe-inline'; img-src data:; "
            "base-uri 'none'; form-action 'none'")


SLIDE_STYLE = """
body.deck { max-width: none; padding: 0; margin: 0; }
section.slide { padding: 2rem 3rem 3rem; border-bottom: 1px solid var(--rule); }
html.js section.slide { display: none; min-height: 100vh; border: 0; }
html.js section.slide.current { display: block; }
section.slide h1 { font-size: 2rem; } section.slide h2 { font-size: 1.6rem; border: 0; margin-top: 0; }
section.slide .claim { font-size: 1.1rem; }
section.slide figure.figure svg { max-height: 70vh; }
div.notes { display: none; margin-top: 1.5rem; padding: .6rem 1rem; border-left: 4px solid var(--accent);
            background: var(--code); font-size: .95rem; }
body.show-notes div.notes { display: block; }
div.notes::before { content: "Speaker notes"; display: block; font-weight: bold; color: var(--muted); }
#counter { position: fixed; right: 1rem; bottom: .6rem; color: var(--muted); font-size: .9rem; }
p.keys { color: var(--muted); font-size: .9rem; }
@media (max-width: 600px) { section.slide { padding: 1rem .7rem 2.5rem; } section.slide h1 { font-size: 1.4rem; }
                            section.slide h2 { font-size: 1.2rem; } }
@media print {
  html.js section.slide, section.slide { display: block; min-height: 0; break-after: page; border: 0;
                                         padding: 0; }
  div.notes, body.show-notes div.notes, #counter, p.keys { display: none; }
}
"""

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="commsim">
<title>{title}</title>
<style>{style}</style>
</head>
<body class="deck">
<main>
{slides}
</main>
<div id="counter" aria-live="polite"></div>
</body>
</html>
"""


def _slide(k: int, heading: str, body: str, notes: str) -> str:
    return (f'<section class="slide" id="slide-{k}" data-slide="{k}">{heading}{body}'
            f'<div class="notes">{notes}</div></section>')


def _notes(step) -> str:
    """The speaker notes of a step, the proof sketch: the inequality it establishes in words, its note, and
    where it is proved."""
    from commsim.teach import latex_to_text
    parts = []
    if step.inequality:
        parts.append(f"<p>So: {html.escape(latex_to_text(step.inequality))}</p>")
    if step.notes:
        from commsim.render.lesson import prose_math
        parts.append(markdown_to_html(prose_math(step.notes)))
    if step.reference:
        parts.append(f"<p><em>Where it is proved:</em> {html.escape(step.reference)}</p>")
    return "".join(parts)


def _holdings(step) -> str:
    if not step.holdings:
        return ""
    rows = "".join(f"<tr><th scope=\"row\">{html.escape(p.capitalize())}</th><td><code>{html.escape(h)}</code></td>"
                   "</tr>" for p, h in step.holdings.items())
    return f'<div class="scroll" data-scroll="sideways"><table class="holdings">{rows}</table></div>'


def lesson_slides(lesson, command: str) -> str:
    """The deck (see the module's docstring)."""
    from commsim.render.lesson import lesson_figures, prose_math
    from commsim.teach.exchange import exchange_rows, exchange_totals
    figures: dict[int, list] = {}
    for step_no, fig in lesson_figures(lesson):
        figures.setdefault(step_no, []).append(fig)
    titles = "".join(f"<li>{html.escape(s.title)}</li>" for s in lesson.steps)
    slides = [_slide(1, f"<h1>{html.escape(lesson.title)}</h1>",
                     markdown_to_html(lesson.summary) + f"<ol>{titles}</ol>"
                     '<p class="keys">→ / Space: next · ←: previous · n: speaker notes · swipe on a touch screen</p>',
                     f"<p>{len(lesson.steps)} steps. Made by <code>{html.escape(command)}</code>.</p>")]
    for i, step in enumerate(lesson.steps, 1):
        body = [f'<div class="claim">{markdown_to_html(prose_math(step.claim))}</div>']
        if step.instance:
            body.append(instance_html(step.instance))
        body.append(_holdings(step))
        if step.messages:
            rows = exchange_rows(step.messages)
            totals = exchange_totals(rows)
            body.append(f"<p>{len(rows)} message{'s' if len(rows) != 1 else ''}"
                        + (f", {totals['total']} bits in {totals['rounds']} round(s)" if totals else "") + "</p>")
        body += [figure_html(f) for f in figures.get(i, [])]
        if step.inequality:
            body.append(f'<div class="math" data-scroll="sideways">{latex_to_mathml(step.inequality, True)}</div>')
        slides.append(_slide(i + 1, f"<h2>Step {i}. {html.escape(step.title)}</h2>", "".join(body), _notes(step)))
    page = TEMPLATE.format(title=html.escape(lesson.title), style=STYLE + INSTANCE_STYLE + SLIDE_STYLE,
                           slides="\n".join(slides))
    clean = sanitize(page)
    head = '<meta charset="utf-8">'
    if head not in clean or "</body>" not in clean:
        raise ValueError("the sanitized deck lost its head or body")     # cannot happen: both are in TEMPLATE
    csp = f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy(), quote=True)}">'
    return clean.replace(head, head + csp, 1).replace("</body>", f"<script>{SCRIPT}</script></body>", 1)
