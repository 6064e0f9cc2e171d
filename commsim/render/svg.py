"""A drawn figure as inline SVG text: matplotlib on the Agg backend, text kept as text (not paths)."""
from __future__ import annotations

import io
import re
from dataclasses import dataclass

#: palette shared by the figures (colour-blind safe: Okabe-Ito)
ALICE = "#0072B2"
BOB = "#D55E00"
HIGHLIGHT = "#F0E442"
GOOD = "#009E73"
BAD = "#CC79A7"
GREY = "#7f7f7f"


@dataclass(frozen=True)
class Figure:
    """One figure of a page: a short id (for anchors and file names), a title, a caption, the SVG text."""

    ident: str
    title: str
    caption: str
    svg: str

    def to_dict(self) -> dict:
        return {"id": self.ident, "title": self.title, "caption": self.caption, "svg_bytes": len(self.svg)}


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend, SVG text as <text> elements, no mathtext."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    matplotlib.rcParams["svg.fonttype"] = "none"
    matplotlib.rcParams["font.family"] = "DejaVu Sans"
    matplotlib.rcParams["text.parse_math"] = False    # a "$" in a label (a model's spec) is text, never mathtext
    return plt


def to_svg(fig) -> str:
    """The figure as one <svg> element (no XML prolog), closed afterwards.  Width and height are dropped
    in favour of the viewBox so the page can scale it."""
    plt = pyplot()
    buffer = io.StringIO()
    try:
        fig.savefig(buffer, format="svg", bbox_inches="tight")
    finally:
        plt.close(fig)
    text = buffer.getvalue()
    start = text.index("<svg")
    svg = text[start:]
    head_end = svg.index(">")
    head = re.sub(r'\s(width|height)="[^"]*"', "", svg[:head_end])
    return head + ' preserveAspectRatio="xMidYMid meet" role="img"' + svg[head_end:]
