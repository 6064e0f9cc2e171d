"""A lesson step's instance block as HTML that fits any width: column-aligned lines as a table (stacked into one
card per row on a phone), every other line wrapped, and a very long line folded (its ends, and where two bit
strings differ, shown; the whole line behind a "show all" toggle).

The input is the instance text the terminal and Markdown forms show as it is (aligned with spaces); every piece
of it is escaped here, and the page is sanitized after.
"""
from __future__ import annotations

import html
import re
from itertools import pairwise

#: a line longer than this is folded (its ends shown, the rest behind a toggle)
FOLD_AT = 160
#: characters kept at each end of a folded line, and around each differing position of two bit strings
END_CHARS, DIFF_WINDOW = 56, 6
_BITS = re.compile(r"[01]{24,}")
_GUTTER = 2          # a column boundary: a run of at least this many spaces in every line of the block


def _columns(lines: list[str]) -> list[tuple[int, int]] | None:
    """The (start, end) character spans of the columns of an aligned block (None: not a table).  The columns
    are found in the data rows (all but the first): a boundary is a run of at least :data:`_GUTTER` positions
    blank in every data row, or one such position after a lone number in every data row (``1 Alice``: the row
    number, then the owner); the cut is made at the first position of the run that is blank in the first row too,
    in a gap of two spaces there when it has one (a header may be wider than its column, never across a cut)."""
    width = max(len(line) for line in lines)
    padded = [line.ljust(width) for line in lines]
    blank = [all(line[i] == " " for line in padded[1:]) for i in range(width)]
    cuts, seen_text, i = [0], False, 0
    while i < width:
        if not blank[i]:
            seen_text = True
            i += 1
            continue
        j = i
        while j < width and blank[j]:
            j += 1
        free = [k for k in range(i, j) if padded[0][k] == " "]
        wide = [k for k in free if padded[0][k - 1:k + 1] == "  " or padded[0][k:k + 2] == "  "]
        if seen_text and j < width and free and (j - i >= _GUTTER or _after_numbers(padded[1:], i)):
            cuts.append((wide or free)[0])
        i = j
    cuts.append(width)
    spans = [(x, y) for x, y in pairwise(cuts) if y > x]
    return spans if len(spans) >= 3 else None


def _after_numbers(rows: list[str], i: int) -> bool:
    words = [row[:i].split() for row in rows]
    return all(w and re.fullmatch(r"-?[\d.]+", w[-1]) and len(w) == 1 for w in words)


def _aligned(line: str) -> bool:
    """A line that can be a row of a table: fields apart by two spaces or more, or by " | "."""
    return bool(re.search(r"\S {2,}\S|\s\|\s", line.strip()))


def _rows(lines: list[str]) -> list[list[str]] | None:
    """The block's cells, row by row (None: not a table)."""
    if all(" | " in line for line in lines):
        return [[c.strip() for c in line.split("|")] for line in lines]
    spans = _columns(lines)
    if spans is None:
        return None
    width = max(len(line) for line in lines)
    return [[line.ljust(width)[x:y].strip() for x, y in spans] for line in lines]


def _table_html(rows: list[list[str]]) -> str:
    """A table; with a header row, each cell also carries its column's name, shown on a phone where the rows
    stack into cards."""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    number = re.compile(r"[-+(]?\d")
    header = rows[0] if any(number.match(c) for c in rows[1]) and not any(number.match(c) for c in rows[0]) \
        else None
    body = rows[1:] if header else rows
    head = ("<thead><tr>" + "".join(f'<th scope="col">{html.escape(c)}</th>' for c in header) + "</tr></thead>"
            if header else "")
    cells = "".join("<tr>" + "".join(
        (f'<td><span class="label">{html.escape(header[k])}: </span>{html.escape(c)}</td>' if header and header[k]
         else f"<td>{html.escape(c)}</td>") for k, c in enumerate(r)) + "</tr>" for r in body)
    return f'<table class="instance-table{" headed" if header else ""}">{head}<tbody>{cells}</tbody></table>'


def _fold(line: str, others: list[str]) -> str:
    """The short form of a long line: its ends, and a window around each position where its long bit string
    differs from an equally long bit string of another line."""
    m = _BITS.search(line)
    twin = None
    if m:
        for other in others:
            o = _BITS.search(other)
            if o and o.group(0) != m.group(0) and len(o.group(0)) == len(m.group(0)):
                twin = o.group(0)
                break
    if twin is None:
        return line[:END_CHARS].rstrip() + " … " + line[-END_CHARS // 2:].lstrip()
    bits = m.group(0)
    diffs = [k for k in range(len(bits)) if bits[k] != twin[k]]
    keep = set(range(4)) | set(range(len(bits) - 4, len(bits)))
    for k in diffs[:8]:
        keep |= set(range(max(0, k - DIFF_WINDOW), min(len(bits), k + DIFF_WINDOW + 1)))
    shown, last = [], -1
    for k in sorted(keep):
        if k != last + 1:
            shown.append("…")
        shown.append(f"[{bits[k]}]" if k in diffs else bits[k])
        last = k
    where = ", ".join(str(k + 1) for k in diffs[:8])
    head = line[:m.start()] + "".join(shown) + line[m.end():]
    short = head if len(head) <= FOLD_AT else head[:FOLD_AT - 40] + " … " + head[-30:]
    return f"{short}  (differs at position{'s' if len(diffs) != 1 else ''} {where})"


def _line_html(line: str, others: list[str]) -> str:
    if len(line) <= FOLD_AT and not _BITS.search(line[FOLD_AT // 2:]):
        return f'<div class="line">{html.escape(line) or "&#160;"}</div>'
    return (f'<details class="line fold"><summary>{html.escape(_fold(line, others))} '
            f'<span class="show-all">show all {len(line)} characters</span></summary>'
            f'<div class="full">{html.escape(line)}</div></details><div class="line print-full">{html.escape(line)}</div>')


def instance_html(text: str) -> str:
    """The instance block (see the module's docstring)."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        j = i
        while j < len(lines) and _aligned(lines[j]):
            j += 1
        rows = _rows(lines[i:j]) if j - i >= 3 else None
        if rows is not None:
            out.append(_table_html(rows))
            i = j
            continue
        out.append(_line_html(lines[i], lines[:i] + lines[i + 1:]))
        i += 1
    return f'<div class="instance">{"".join(out)}</div>'


STYLE = """
div.instance { background: var(--code); padding: .5rem .8rem; border-radius: 4px; margin: .6rem 0;
               font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: .86rem; }
div.instance .line, div.instance .full { white-space: pre-wrap; overflow-wrap: anywhere; }
div.instance div.line { padding-left: 1.5em; text-indent: -1.5em; }
div.instance details.fold summary { cursor: pointer; white-space: pre-wrap; overflow-wrap: anywhere; }
div.instance .show-all { color: var(--accent); font-family: system-ui, sans-serif; font-size: .8rem; }
table.instance-table { margin: .3rem 0; font-size: .84rem; }
table.instance-table td, table.instance-table th { padding: .15rem .5rem; overflow-wrap: anywhere; }
table.instance-table .label, div.instance .print-full { display: none; }
table.instance-table .label { color: var(--muted); }
@media (max-width: 600px) {
  table.instance-table.headed thead { display: none; }
  table.instance-table, table.instance-table tbody, table.instance-table tr { display: block; width: 100%; }
  table.instance-table tr { border: 1px solid var(--rule); margin: .3rem 0; padding: .1rem 0; }
  table.instance-table td { display: inline-block; border: 0; padding: .05rem .5rem; }
  table.instance-table .label { display: inline; }
}
@media print { div.instance details.fold { display: none; } div.instance .line.print-full { display: block; } }
"""
