"""Figures of one exchange: the protocol as a sequence diagram, and a certificate side by side.

Both draw engine data only: the messages a runner recorded, as the rows of the one exchange view
(:func:`commsim.teach.exchange.exchange_rows`: sender, label, the exact bits, round), and a
:class:`~commsim.certify.view.CertificateView` (rows, decisive positions) with its certificate's details
(the shared transcript or message).
"""
from __future__ import annotations

import re

from commsim.certify.view import FAILING_LABELS
from commsim.render.svg import ALICE, BAD, BOB, GREY, HIGHLIGHT, pyplot
from commsim.teach.exchange import exchange_rows, exchange_totals

#: the most messages one sequence diagram draws, and the most bits of one message it prints
MAX_ARROWS = 40
SHOWN_BITS = 40
#: the most symbols of one party's input the certificate figure draws
MAX_SYMBOLS = 48

_HEAD = re.compile(r"head\s*(\d+)")
_HEAD_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#E69F00", "#000000", "#F0E442")


def head_of(label: str) -> int | None:
    m = _HEAD.search(label)
    return int(m.group(1)) if m else None


def sequence_figure(messages, title: str = ""):
    """Alice | Bob lanes, one arrow per message (label, exact bits, the bits themselves), round bands,
    and (attention) one colour per head.  Returns the matplotlib figure."""
    plt = pyplot()
    rows = exchange_rows(messages)
    shown = rows[:MAX_ARROWS]
    heads = sorted({h for h in (head_of(r.label) for r in shown) if h is not None})
    step = 0.62
    height = 1.3 + step * max(len(shown), 1) + (0.3 if len(rows) > len(shown) else 0)
    fig, ax = plt.subplots(figsize=(7.2, height))
    left, right = 0.18, 0.82
    top = height - 0.7
    bottom = top - step * max(len(shown), 1) - 0.2
    for x, name, colour in ((left, "Alice", ALICE), (right, "Bob", BOB)):
        ax.plot([x, x], [bottom, top + 0.25], color=colour, lw=2)
        ax.text(x, top + 0.35, name, ha="center", va="bottom", fontsize=12, fontweight="bold", color=colour)
    last_round = None
    for i, r in enumerate(shown):
        y = top - step * (i + 0.6)
        if r.round != last_round:
            ax.axhline(y + step * 0.5, xmin=0.02, xmax=0.98, color=GREY, lw=0.6, ls="--")
            ax.text(0.0, y + step * 0.42, f"round {r.round}", fontsize=8, color=GREY, va="top")
            last_round = r.round
        head = head_of(r.label)
        colour = _HEAD_COLOURS[heads.index(head) % len(_HEAD_COLOURS)] if head is not None and len(heads) > 1 \
            else (ALICE if r.sender == "alice" else BOB)
        start, end = (left, right) if r.sender == "alice" else (right, left)
        ax.annotate("", xy=(end, y), xytext=(start, y),
                    arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 1.6, "shrinkA": 0, "shrinkB": 0})
        ax.text(0.5, y + 0.06, f"{r.label} — {r.size()}", ha="center", va="bottom", fontsize=9, color=colour)
        if r.count:
            body = r.shown(SHOWN_BITS)
            ax.text(0.5, y - 0.06, body, ha="center", va="top", fontsize=8, family="DejaVu Sans Mono", color="#333")
    if len(rows) > len(shown):
        ax.text(0.5, bottom + 0.05, f"… {len(rows) - len(shown)} more messages", ha="center", fontsize=9, color=GREY)
    totals = exchange_totals(rows)
    if totals is not None:
        ax.text(0.5, bottom - 0.25, f"total {totals['total']} bits: Alice→Bob {totals['alice_to_bob']}, "
                f"Bob→Alice {totals['bob_to_alice']}, {totals['rounds']} round(s)",
                ha="center", va="top", fontsize=10, fontweight="bold")
    if len(heads) > 1:
        for k, h in enumerate(heads):
            ax.text(0.02 + 0.12 * k, height - 0.15, f"■ head {h}", color=_HEAD_COLOURS[k % len(_HEAD_COLOURS)],
                    fontsize=8, va="top")
    if title:
        ax.set_title(title, fontsize=10)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(bottom - 0.6, height)
    ax.axis("off")
    return fig


def _symbols(symbols, index, marks) -> tuple[list[str], set[int]]:
    """One party's cells: its symbols (or a single index shown as its 1-based position), marked cells."""
    if index is not None:
        return [f"position {index + 1}"], {0} if marks is not None else set()
    return list(symbols)[:MAX_SYMBOLS], {int(i) for i in (marks or ()) if int(i) < MAX_SYMBOLS}


def shared_message(view, details: dict | None) -> str:
    """What the two inputs share, from the certificate's details: the transcript (rectangle) or the
    handed-off message (collision)."""
    d = details or {}
    if d.get("transcript_bits") is not None:
        same = "identical, checked bit for bit" if d.get("transcripts_equal", True) else "NOT identical"
        return f"shared transcript: {d['transcript_bits']} bits, digest {str(d.get('transcript_digest', ''))[:12]} ({same})"
    if d.get("message") is not None:
        return f"shared message: {d.get('message_bits', len(str(d['message'])))} bits = {d['message']}"
    return ""


def _text_units(text: str, size: float = 9, bold: bool = False) -> float:
    """The drawn width of ``text`` in the certificate figure's x units (0.45 inch)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextPath
    if not text:
        return 0.0
    prop = FontProperties(family="DejaVu Sans", weight="bold" if bold else "normal")
    return TextPath((0, 0), text, size=size, prop=prop).get_extents().width / 72 / 0.45


def certificate_figure(view, details: dict | None = None):
    """The certificate: each row's Alice input and Bob input side by side (1-based positions on top), the
    decisive positions highlighted, the crossed (failing) row outlined, the shared message below."""
    plt = pyplot()
    rows = list(view.rows)
    cells = [(_symbols(r.alice_symbols, r.alice_index, view.alice_marks if r.alice_index is None else
                       ([r.alice_index] if r.alice_index in view.alice_marks else None)),
              _symbols(r.bob_symbols, r.bob_index, view.bob_marks if r.bob_index is None else [r.bob_index]))
             for r in rows]
    def widths(syms):
        return [0.42 if len(s) <= 2 else 0.16 * len(s) + 0.3 for s in syms]
    span_a = max([sum(widths(a[0])) for a, _ in cells] + [2.6])       # at least the "Alice holds" header
    span_b = max([sum(widths(b[0])) for _, b in cells] + [2.4])
    # the row labels' drawn width (bold 9 pt), so the failing row's outline starts right of its label
    label_w = 0.05 + max([_text_units(r.label, bold=True) for r in rows] + [1.0]) + 0.35
    own = bool(getattr(view, "task", ""))    # the model's own output on its task: a column of its own
    head = f"answer / model ({view.source})" if own else "answer / model"
    own_head = f"model's {view.task}" if own else ""
    gap = 0.8
    tail = max(3.0, _text_units(head, size=9) + 0.4) + (_text_units(own_head, size=9) + 0.4 if own else 0)
    fig_w = (label_w + span_a + gap + span_b + tail) * 0.45    # one unit = 0.45 inch: fonts keep their size
    fig, ax = plt.subplots(figsize=(fig_w, 1.2 + 0.55 * len(rows) + 0.5))
    fig.subplots_adjust(left=0, right=1, bottom=0, top=0.88)          # one x unit = 0.45 inch exactly
    x_a = label_w
    x_b = x_a + span_a + gap
    x_t = x_b + span_b + 0.4
    top = len(rows)
    ax.text(x_a, top + 0.75, "Alice holds", color=ALICE, fontweight="bold", fontsize=10)
    ax.text(x_b, top + 0.75, "Bob holds", color=BOB, fontweight="bold", fontsize=10)
    ax.text(x_t, top + 0.75, head, fontsize=9, color=GREY)
    x_own = x_t + max(3.0, _text_units(head, size=9) + 0.4)
    if own:
        ax.text(x_own, top + 0.75, own_head, fontsize=9, color=GREY)
    for x0, side in ((x_a, 0), (x_b, 1)):
        longest = max((c[side][0] for c in cells), key=len, default=[])
        # a party holding interleaved positions of the model input (Dyck-(2,2): Alice 1, 3, 5, ..., Bob 2, 4, 6, ...)
        # is labelled by the string's own positions; a contiguous block by its input's positions; both from 1
        held = (details or {}).get("alice_positions" if side == 0 else "bob_positions")
        interleaved = isinstance(held, list) and len(held) == len(longest) and len(held) > 1 and \
            any(int(b) - int(a) != 1 for a, b in zip(held, held[1:]))
        numbers = [int(p) + 1 for p in held] if interleaved else list(range(1, len(longest) + 1))
        if longest and all(len(s) <= 2 for s in longest):
            for i in range(len(longest)):
                ax.text(x0 + (i + 0.5) * 0.42, top + 0.2, str(numbers[i]), ha="center", fontsize=6, color=GREY)
    for k, (row, ((a_syms, a_marks), (b_syms, b_marks))) in enumerate(zip(rows, cells)):
        y = top - k - 0.5
        failing = row.label in FAILING_LABELS
        ax.text(0.05, y, row.label, va="center", fontsize=9, fontweight="bold" if failing else "normal",
                color=BAD if failing else "#222")
        for x0, syms, marks, colour in ((x_a, a_syms, a_marks, ALICE), (x_b, b_syms, b_marks, BOB)):
            x = x0
            for i, (s, w) in enumerate(zip(syms, widths(syms))):
                face = HIGHLIGHT if i in marks else "white"
                ax.add_patch(plt.Rectangle((x, y - 0.35), w, 0.7, facecolor=face, edgecolor=colour, lw=0.6))
                ax.text(x + w / 2, y, s, ha="center", va="center", fontsize=9, family="DejaVu Sans Mono")
                x += w
        if failing:
            ax.add_patch(plt.Rectangle((x_a - 0.12, y - 0.45), x_b + span_b - x_a + 0.24, 0.9, fill=False,
                                       edgecolor=BAD, lw=1.8))
        answer = "" if row.answer is None else str(row.answer)
        model = "" if row.model is None else str(row.model)
        ax.text(x_t, y, f"{answer}{' / ' if answer and model else ''}{model}", va="center", fontsize=9)
        if own and row.task_model is not None:
            ax.text(x_own, y, f"{view.task} = {row.task_model}", va="center", fontsize=9)
    foot = [shared_message(view, details)]
    if view.alice_marks or view.bob_marks:
        foot.append("highlighted: the decisive positions")
    ax.text(0.05, -0.35, ";  ".join(f for f in foot if f), fontsize=8.5, va="top")
    ax.set_xlim(0, x_t + tail)
    ax.set_ylim(-0.9, top + 1.1)
    ax.set_title(f"certificate: {view.kind} ({'verified by a direct forward' if view.verified else 'NOT verified'})",
                 fontsize=10)
    ax.axis("off")
    return fig
