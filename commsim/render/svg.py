"""A drawn figure as inline SVG text: matplotlib on the Agg backend, text kept as text (not paths)."""
from __future__ import annotations

import io
import math
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


#: the smallest size (CSS px) a figure's text is drawn at: below it the page scrolls the figure sideways
MIN_TEXT_PX = 9.5
_FONT_SIZE = re.compile(r"font(?:-size)?:\s*(?:[a-z-]+\s+)*([0-9.]+)px")
_VIEWBOX = re.compile(r'viewBox="[-0-9.]+ [-0-9.]+ ([0-9.]+) [0-9.]+"')


def _power_label(value, _pos=None) -> str:
    """A log axis' tick as plain text (2⁵, 10³, or the number): with mathtext off, matplotlib's own log labels
    would show their TeX source."""
    if value <= 0:
        return ""
    for base in (2, 10):
        exponent = round(math.log(value, base))
        if exponent and abs(base ** exponent - value) <= 1e-9 * value:
            sign = "⁻" if exponent < 0 else ""
            return f"{base}{sign}{str(abs(exponent)).translate(_SUPERSCRIPTS)}"
    return f"{value:g}"


_SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def plain_log_labels(fig) -> None:
    """Every log axis of ``fig`` labelled by :func:`_power_label` (plain text), its minor ticks unlabelled."""
    from matplotlib.ticker import FuncFormatter, NullFormatter
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() == "log":
                axis.set_major_formatter(FuncFormatter(_power_label))
                axis.set_minor_formatter(NullFormatter())


def min_width_px(svg: str) -> int:
    """The width (CSS px) below which the figure's smallest text would be drawn under :data:`MIN_TEXT_PX`."""
    sizes = [float(s) for s in _FONT_SIZE.findall(svg) if float(s) > 0]
    box = _VIEWBOX.search(svg)
    if not sizes or not box:
        return 0
    return math.ceil(float(box.group(1)) * MIN_TEXT_PX / min(sizes))


def to_svg(fig) -> str:
    """The figure as one <svg> element (no XML prolog), closed afterwards.  Width and height are dropped
    in favour of the viewBox so the page can scale it; the width below which its smallest text would be
    unreadable is kept as the CSS variable ``--min-width`` (the page scrolls the figure instead)."""
    plt = pyplot()
    buffer = io.StringIO()
    try:
        plain_log_labels(fig)
        fig.savefig(buffer, format="svg", bbox_inches="tight")
    finally:
        plt.close(fig)
    text = buffer.getvalue()
    start = text.index("<svg")
    svg = text[start:]
    head_end = svg.index(">")
    head = re.sub(r'\s(width|height)="[^"]*"', "", svg[:head_end])
    return (head + f' preserveAspectRatio="xMidYMid meet" role="img" style="--min-width: {min_width_px(svg)}px"'
            + svg[head_end:])
