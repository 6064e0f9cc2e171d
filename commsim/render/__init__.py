"""Presentation: self-contained HTML pages and SVG figures drawn from the engine's own data.

Nothing here computes a result.  Each figure function takes what a command or lesson already produced
(a transcript's messages, a :class:`~commsim.certify.view.CertificateView`, a budget report, a
communication matrix, a protocol tree, a DFA) and draws it with matplotlib (networkx for graph
layouts); :mod:`commsim.render.page` turns Markdown with LaTeX into one HTML file (MathML from
latex2mathml, inline SVG, no network at view time, light and dark themes, a print stylesheet).

Layer: above ``commsim.batch``, ``commsim.runs``, ``commsim.budget`` and ``commsim.teach`` (it reads their objects), below ``commsim.cli``;
the pipeline never imports it.  Needs the ``html`` extra (jinja2, markdown-it-py, latex2mathml,
matplotlib); :func:`require` turns a missing one into an :class:`InputError` naming the option.
"""
from __future__ import annotations

from commsim.core.errors import InputError

__all__ = ["require"]

#: the modules the HTML pages need, and the pip extra that installs them
NEEDED = ("jinja2", "markdown_it", "latex2mathml", "matplotlib")


def require(option: str) -> None:
    """An :class:`InputError` naming ``option`` when a module of the ``html`` extra is missing."""
    import importlib.util
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    if missing:
        raise InputError(f"{option} needs {', '.join(missing)}: pip install 'commsim[html]'", option)
