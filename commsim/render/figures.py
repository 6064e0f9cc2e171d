"""Drawings of a reduction, as SVG written directly (no matplotlib): the input sequence a reduction builds, cell by
cell with its owner, and a layered digraph with its node partition.

A lesson declares what to draw as a figure entry of a step (plain data, see :data:`KINDS`):

* ``{"kind": "tokens", "title", "caption", "cells": [{"text", "owner"}...], "marks": [0-based positions],
  "mark_label", "groups": [{"start", "end", "label", "owner"}...] (0-based, end exclusive), "arcs": [[i, j]...],
  "legend": {"alice": "...", "bob": "...", "public": "..."}}``: the cells flow into rows, numbered 1.. as
  the papers count positions;
* ``{"kind": "digraph", "title", "caption", "layers": [{"name", "owner", "nodes": [...]}...],
  "edges": [[from, to]...], "marks": [node names], "mark_label"}``: the layers side by side, each in a box
  named for its owner; an edge from the last layer back to the first is drawn below the graph.

Every text is escaped here; the page sanitizes the result with the rest of the page.
"""
from __future__ import annotations

import math
from html import escape

from commsim.render.svg import ALICE, BOB, GREY, HIGHLIGHT, MIN_TEXT_PX

KINDS = ("tokens", "digraph")
#: fill and stroke per owner
_FILL = {"alice": "#d4e6f4", "bob": "#f8dcc8", "public": "#ececec", "both": "#ececec"}
_STROKE = {"alice": ALICE, "bob": BOB, "public": GREY, "both": GREY}
_NAMES = {"alice": "Alice", "bob": "Bob", "public": "public", "both": "both"}
MARK = "#b3006b"
#: the widest row the drawing lays out (viewBox units); the smallest font it uses
MAX_WIDTH, SMALL = 600, 11
_CHAR = 0.62          # a monospace character's width, in font sizes


def _text(x, y, body, size=13, anchor="middle", colour="#1b1b1b", weight="normal", mono=False) -> str:
    family = "DejaVu Sans Mono, monospace" if mono else "DejaVu Sans, sans-serif"
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" font-family="{family}" text-anchor="{anchor}" '
            f'font-weight="{weight}" fill="{colour}">{escape(str(body))}</text>')


def _svg(width: float, height: float, body: list[str], label: str) -> str:
    """The drawing at its natural size (one unit a CSS pixel, never scaled up: class ``drawing``), scaled down to
    a narrower box until its smallest text would be unreadable (``--min-width``)."""
    min_width = math.ceil(width * MIN_TEXT_PX / SMALL)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="drawing" viewBox="0 0 {width:.0f} {height:.0f}" '
            f'width="{width:.0f}" height="{height:.0f}" preserveAspectRatio="xMidYMid meet" role="img" '
            f'aria-label="{escape(label)}" '
            f'style="--min-width: {min_width}px">' + "".join(body) + "</svg>")


def _text_width(text: str, size: float = SMALL) -> float:
    """About how wide ``text`` is drawn in DejaVu Sans at ``size``."""
    return len(str(text)) * size * 0.62


def _legend(y: float, entries: list[tuple[str, str, str]], width: float) -> tuple[list[str], float]:
    """Legend swatches (fill, stroke, text) flowing over lines; returns the elements and the height used."""
    out, x, line = [], 8.0, 0
    for fill, stroke, label in entries:
        w = 22 + _text_width(label)
        if x + w > width and x > 8:
            x, line = 8.0, line + 1
        yy = y + line * 20
        out.append(f'<rect x="{x:.1f}" y="{yy - 10:.1f}" width="14" height="12" fill="{fill}" stroke="{stroke}" '
                   f'stroke-width="{2.5 if stroke == MARK else 1.2}"></rect>')
        out.append(_text(x + 19, yy, label, SMALL, "start", "#333"))
        x += w + 10
    return out, (line + 1) * 20


def tokens_svg(entry: dict) -> str:
    """The ``tokens`` drawing (see the module's docstring)."""
    cells = entry["cells"]
    marks = {int(i) for i in entry.get("marks", ())}
    longest = max([len(str(c["text"])) for c in cells] + [2])
    cell_w = max(30.0, longest * 13 * _CHAR + 12)
    per_row = max(1, min(len(cells), int((MAX_WIDTH - 16) // cell_w)))
    rows = math.ceil(len(cells) / per_row)
    arcs = [(int(i), int(j)) for i, j in entry.get("arcs", ())] if rows == 1 else []
    arc_h = 14 + 10 * len(arcs) if arcs else 0
    groups = entry.get("groups", ())
    # a label wider than its bracket would run into the next one: the labels then alternate between two lines
    stagger = any(_text_width(g["label"]) > (int(g["end"]) - int(g["start"])) * cell_w - 6 for g in groups)
    row_h = 30 + 18 + (22 if groups else 0) + (13 if stagger else 0)     # number, cell, bracket and label(s)
    width = 16 + per_row * cell_w
    top = 8 + arc_h
    body: list[str] = []
    where = {}
    for k, c in enumerate(cells):
        r, col = divmod(k, per_row)
        x, y = 8 + col * cell_w, top + r * row_h + 14
        where[k] = (x, y)
        owner = c.get("owner", "public")
        body.append(_text(x + cell_w / 2, y - 3, k + 1, SMALL - 1 if k + 1 >= 100 else SMALL, colour=GREY))
        body.append(f'<rect x="{x + 1:.1f}" y="{y + 2:.1f}" width="{cell_w - 2:.1f}" height="26" rx="3" '
                    f'fill="{HIGHLIGHT if k in marks else _FILL.get(owner, "#fff")}" '
                    f'stroke="{MARK if k in marks else _STROKE.get(owner, GREY)}" '
                    f'stroke-width="{2.5 if k in marks else 1.2}"></rect>')
        body.append(_text(x + cell_w / 2, y + 20, c["text"], 13, mono=True))
    for k, g in enumerate(groups):
        start, end = int(g["start"]), int(g["end"]) - 1
        colour = _STROKE.get(g.get("owner", "public"), GREY)
        first = True
        for r in range(start // per_row, end // per_row + 1):
            a, b = max(start, r * per_row), min(end, (r + 1) * per_row - 1)
            (xa, y), (xb, _) = where[a], where[b]
            yb = y + 34
            body.append(f'<path d="M{xa + 3:.1f},{yb - 4:.1f} L{xa + 3:.1f},{yb:.1f} L{xb + cell_w - 3:.1f},{yb:.1f} '
                        f'L{xb + cell_w - 3:.1f},{yb - 4:.1f}" fill="none" stroke="{colour}" stroke-width="1.5"></path>')
            if first:
                right = xa + 3 + _text_width(g["label"]) > width - 4
                body.append(_text(xb + cell_w - 3 if right else xa + 3, yb + 14 + (13 if stagger and k % 2 else 0),
                                  g["label"], SMALL,
                                  "end" if right else "start", colour))
                first = False
    for k, (i, j) in enumerate(arcs):
        (xi, y), (xj, _) = where[i], where[j]
        lift = 14 + 10 * k
        body.append(f'<path d="M{xi + cell_w / 2:.1f},{y - 14:.1f} C{xi + cell_w / 2:.1f},{y - 14 - lift:.1f} '
                    f'{xj + cell_w / 2:.1f},{y - 14 - lift:.1f} {xj + cell_w / 2:.1f},{y - 14:.1f}" fill="none" '
                    f'stroke="{MARK}" stroke-width="1.5"></path>')
    legend_y = top + rows * row_h + 16
    names = entry.get("legend") or {}
    owners = [o for o in ("alice", "bob", "public", "both") if any(c.get("owner", "public") == o for c in cells)]
    swatches = [(_FILL[o], _STROKE[o], names.get(o, _NAMES[o])) for o in owners]
    if marks:
        swatches.append((HIGHLIGHT, MARK, entry.get("mark_label", "marked")))
    width = max(width, 46 + max(_text_width(label) for _, _, label in swatches))
    legend, used = _legend(legend_y, swatches, width)
    return _svg(width, legend_y + used, body + legend, entry.get("title", "input sequence"))


def _arrow(x1, y1, x2, y2, colour, width=1.4, dash="") -> str:
    """A straight edge ending in an arrowhead (stopping at a node's rim)."""
    d = math.hypot(x2 - x1, y2 - y1) or 1
    ux, uy = (x2 - x1) / d, (y2 - y1) / d
    sx, sy, ex, ey = x1 + ux * 17, y1 + uy * 17, x2 - ux * 18, y2 - uy * 18
    return _line_and_head(f"M{sx:.1f},{sy:.1f} L{ex:.1f},{ey:.1f}", ex, ey, ux, uy, colour, width, dash)


def _line_and_head(path, ex, ey, ux, uy, colour, width, dash) -> str:
    px, py = -uy, ux
    head = (f"{ex + ux * 7:.1f},{ey + uy * 7:.1f} {ex - ux * 3 + px * 4.5:.1f},{ey - uy * 3 + py * 4.5:.1f} "
            f"{ex - ux * 3 - px * 4.5:.1f},{ey - uy * 3 - py * 4.5:.1f}")
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="{width}"{dashed}></path>'
            f'<polygon points="{head}" fill="{colour}"></polygon>')


def digraph_svg(entry: dict) -> str:
    """The ``digraph`` drawing (see the module's docstring)."""
    layers = entry["layers"]
    marks = set(entry.get("marks", ()))
    gap = min(220.0, (MAX_WIDTH - 80) / max(len(layers) - 1, 1))
    depth = max(len(layer["nodes"]) for layer in layers)
    top, step = 46.0, 52.0
    pos, owner_of, body = {}, {}, []
    for c, layer in enumerate(layers):
        x = 68 + c * gap
        owner = layer.get("owner", "public")
        colour = _STROKE.get(owner, GREY)
        body.append(f'<rect x="{x - 34:.1f}" y="{top - 36:.1f}" width="68" height="{depth * step + 34:.1f}" rx="8" '
                    f'fill="none" stroke="{colour}" stroke-width="1.2" stroke-dasharray="5 3"></rect>')
        body.append(_text(x, top - 20, layer["name"], 13, colour=colour, weight="bold"))
        for r, node in enumerate(layer["nodes"]):
            pos[node] = (x, top + 10 + r * step)
            owner_of[node] = owner
    bottom = top + depth * step
    back = []
    for k, (a, b) in enumerate(entry["edges"]):
        (x1, y1), (x2, y2) = pos[a], pos[b]
        on = a in marks and b in marks
        colour = MARK if on else _STROKE.get(owner_of[a], GREY)
        w = 2.6 if on else 1.3
        if x2 < x1:                                     # back to an earlier layer: below the graph
            back.append((a, b, colour, w))
            continue
        body.append(_arrow(x1, y1, x2, y2, colour, w))
    for k, (a, b, colour, w) in enumerate(back):
        (x1, y1), (x2, y2) = pos[a], pos[b]
        cy, lane, exit_ = bottom + 16 + 14 * k, x2 - 42 - 5 * k, x1 + 42 + 5 * k   # round the graph's outside
        path = (f"M{x1 + 17:.1f},{y1:.1f} L{exit_ - 6:.1f},{y1:.1f} Q{exit_:.1f},{y1:.1f} {exit_:.1f},{y1 + 6:.1f} "
                f"L{exit_:.1f},{cy - 6:.1f} Q{exit_:.1f},{cy:.1f} {exit_ - 6:.1f},{cy:.1f} "
                f"L{lane + 6:.1f},{cy:.1f} Q{lane:.1f},{cy:.1f} {lane:.1f},{cy - 6:.1f} L{lane:.1f},{y2 + 6:.1f} "
                f"Q{lane:.1f},{y2:.1f} {lane + 6:.1f},{y2:.1f} L{x2 - 25:.1f},{y2:.1f}")
        body.append(_line_and_head(path, x2 - 25, y2, 1, 0, colour, w, "" if colour == MARK else "4 3"))
    for node, (x, y) in pos.items():
        owner = owner_of[node]
        on = node in marks
        body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="16" fill="{HIGHLIGHT if on else _FILL.get(owner, "#fff")}" '
                    f'stroke="{MARK if on else _STROKE.get(owner, GREY)}" stroke-width="{2.5 if on else 1.2}"></circle>')
        body.append(_text(x, y + 4.5, node, 12, mono=True))
    width = 136 + 5 * len(back) + gap * (len(layers) - 1)
    legend_y = bottom + 30 + 16 * len(back)
    swatches = [(_FILL[o], _STROKE[o], f"{layer['name']}: {_NAMES.get(o, o)}")
                for layer in layers for o in [layer.get("owner", "public")]]
    if marks:
        swatches.append((HIGHLIGHT, MARK, entry.get("mark_label", "marked")))
    legend, used = _legend(legend_y, swatches, max(width, 300))
    return _svg(max(width, 300), legend_y + used, body + legend, entry.get("title", "digraph"))


def drawing_svg(entry: dict) -> str:
    """The SVG of a declared drawing entry (its ``kind`` is one of :data:`KINDS`)."""
    return {"tokens": tokens_svg, "digraph": digraph_svg}[entry["kind"]](entry)
