"""One exchange as rows: the single source the text diagram, the tables, the lesson notes, the mermaid block
and the SVG sequence figure lay out.

:func:`exchange_rows` reads messages in any of the forms they come in -- a
:class:`~commsim.core.channel.Transcript`'s messages, their ``to_dict()`` rows, or a lesson step's
``(sender, label, bits text)`` triples -- and gives :class:`ExchangeRow` s: who sent it, its label, the bits
as text, how many bits (None when the text is a summary, not a bit string) and its round (a recorded round,
else counted at each change of sender).  The renderers only draw these rows.
"""
from __future__ import annotations

from dataclasses import dataclass

ARROWS = {"alice": "Alice → Bob", "bob": "Bob → Alice"}


def bit_count(bits: str) -> int | None:
    """The number of bits of a message text (None when it is not a bit string, e.g. a summary)."""
    return len(bits) if set(bits) <= {"0", "1"} else None


@dataclass(frozen=True)
class ExchangeRow:
    """One message: sender ("alice" or "bob"), label, the bits as text, their count (None: not a bit string)
    and the round."""

    sender: str
    label: str
    bits: str
    count: int | None
    round: int

    @property
    def arrow(self) -> str:
        """"Alice → Bob" or "Bob → Alice"."""
        return ARROWS.get(self.sender, f"{self.sender} →")

    def size(self) -> str:
        """"5 bits", "1 bit", or the text itself when it is not a bit string."""
        if self.count is None:
            return self.bits
        return f"{self.count} bit{'s' if self.count != 1 else ''}"

    def shown(self, limit: int) -> str:
        """The bits, cut after ``limit`` characters with an ellipsis."""
        return self.bits if len(self.bits) <= limit else self.bits[:limit] + "…"

    def to_dict(self) -> dict:
        return {"sender": self.sender, "label": self.label, "bits": self.bits, "count": self.count,
                "round": self.round}


def exchange_rows(messages) -> list[ExchangeRow]:
    """The messages as rows (see the module's docstring)."""
    rows, last_sender, round_no = [], None, 0
    for m in messages:
        if isinstance(m, (tuple, list)):
            sender, label, bits, rnd = m[0], m[1], str(m[2]), None
        elif isinstance(m, dict):
            sender, label, bits, rnd = m["sender"], m["label"], str(m["bits"]), m.get("round")
        else:
            sender, label, bits, rnd = m.sender, m.label, str(m.bits), m.round
        if sender != last_sender:
            round_no += 1
            last_sender = sender
        rows.append(ExchangeRow(sender, str(label), bits, bit_count(bits), int(rnd) if rnd is not None else round_no))
    return rows


def exchange_totals(rows: list[ExchangeRow]) -> dict | None:
    """Bits per direction and rounds of the rows (None when a row is not a bit string)."""
    if any(r.count is None for r in rows):
        return None
    a2b = sum(r.count for r in rows if r.sender == "alice")
    b2a = sum(r.count for r in rows if r.sender != "alice")
    return {"total": a2b + b2a, "alice_to_bob": a2b, "bob_to_alice": b2a, "rounds": len({r.round for r in rows})}
