"""The formal statement a lesson opens with: the theorem in the paper's notation, where it is stated, and how
the papers' conventions differ.  The lesson's plugin supplies the text; the renderers here lay it out the same
way in Markdown (LaTeX math), plain text and the rich terminal form."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Statement", "statement_markdown", "statement_plain", "statement_rows"]


@dataclass(frozen=True)
class Statement:
    name: str                # "Theorem 3 of [BHBK24]: recurrent models and index lookup"
    text: str                # the statement in words, in the paper's notation
    latex: str               # its inequality, LaTeX without $ delimiters ("" when none)
    source: str              # paper, result number, section
    notation: str = ""       # what the symbols mean (the model class, the precision assumption, the partition)
    conventions: str = ""    # where the papers or commsim differ (DISJ's value, n against N, ...)

    def to_dict(self) -> dict:
        return {"name": self.name, "text": self.text, "latex": self.latex, "source": self.source,
                "notation": self.notation, "conventions": self.conventions}


def statement_markdown(s: Statement) -> list[str]:
    out = [f"**{s.name}.** {s.text}", ""]
    if s.latex:
        out += ["$$", s.latex, "$$", ""]
    if s.notation:
        out += [f"*Notation.* {s.notation}", ""]
    out += [f"*Source.* {s.source}", ""]
    if s.conventions:
        out += [f"*Conventions.* {s.conventions}", ""]
    return out


def statement_rows(s: Statement) -> list[tuple[str, str]]:
    """(label, text) rows for the plain and terminal forms (the LaTeX read as text)."""
    from commsim.teach import latex_to_text
    rows = [("theorem", f"{s.name}. {s.text}")]
    if s.latex:
        rows.append(("formally", latex_to_text(s.latex)))
    if s.notation:
        rows.append(("notation", s.notation))
    rows.append(("source", s.source))
    if s.conventions:
        rows.append(("convention", s.conventions))
    return rows


def statement_plain(s: Statement) -> list[str]:
    return [f"  {label + ':':11} {text}" for label, text in statement_rows(s)] + [""]
