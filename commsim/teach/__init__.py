"""Narrated proofs: each lesson is a list of steps built from the same engine calls a user makes.

A :class:`Step` states a claim, shows the concrete instance and what each party holds, the
messages with their exact bits, the inequality the step establishes, and where the paper proves
it.  A :class:`Lesson` renders as rich terminal text or as Markdown lecture notes with LaTeX math.
Topics register under the ``topic`` registry kind as functions ``build(n: int | None) -> Lesson``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Step", "Lesson", "render_markdown", "render_text"]


@dataclass
class Step:
    title: str
    claim: str
    instance: str = ""
    holdings: dict[str, str] = field(default_factory=dict)    # party -> what it holds
    messages: list[tuple[str, str, str]] = field(default_factory=list)  # (sender, label, bits text)
    inequality: str = ""       # LaTeX, without $ delimiters
    reference: str = ""
    notes: str = ""

    def to_dict(self) -> dict:
        return {"title": self.title, "claim": self.claim, "instance": self.instance, "holdings": self.holdings,
                "messages": [{"sender": s, "label": lab, "bits": b} for s, lab, b in self.messages],
                "inequality": self.inequality, "reference": self.reference, "notes": self.notes}


@dataclass
class Lesson:
    topic: str
    title: str
    summary: str
    steps: list[Step]
    n: int | None = None

    def to_dict(self) -> dict:
        return {"topic": self.topic, "title": self.title, "summary": self.summary, "n": self.n,
                "steps": [s.to_dict() for s in self.steps]}


_LATEX_WORDS = {r"\ge": "≥", r"\le": "≤", r"\cdot": "·", r"\lceil": "⌈", r"\rceil": "⌉", r"\log_2": "log2",
                r"\ne": "≠", r"\quad": "   ", r"\ ": " ", r"\lt": "<", r"\gt": ">", r"\times": "×",
                r"\mathbb{R}": "R", r"\implies": "⇒", r"\sum": "Σ", r"\max": "max", r"\in": "∈"}


def latex_to_text(latex: str) -> str:
    """A readable terminal form of the simple LaTeX the lessons use."""
    import re
    text = latex
    for word, sym in sorted(_LATEX_WORDS.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(word, sym)
    text = re.sub(r"\\(?:mathrm|text|mathbf|operatorname)\{([^{}]*)\}", r"\1", text)
    text = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", text)
    text = re.sub(r"([_^])\{([^{}]*)\}", lambda m: ("^" if m.group(1) == "^" else "_") + m.group(2)
                  if len(m.group(2)) == 1 else ("^" if m.group(1) == "^" else "_") + "(" + m.group(2) + ")", text)
    text = text.replace("{", "").replace("}", "").replace("\\", "")
    return re.sub(r" {4,}", "   ", text)


def _message_line(sender: str, label: str, bits: str) -> str:
    arrow = "Alice → Bob" if sender == "alice" else "Bob → Alice"
    shown = bits if len(bits) <= 64 else bits[:64] + "…"
    count = len(bits) if set(bits) <= {"0", "1"} else None
    size = f"{count} bits" if count is not None else ""
    return f"{arrow}: {label} ({size}) {shown}".replace("() ", "")


def render_markdown(lesson: Lesson) -> str:
    """Lecture notes: one section per step, math in LaTeX ($...$ and $$...$$)."""
    out = [f"# {lesson.title}", "", lesson.summary, ""]
    for i, step in enumerate(lesson.steps, 1):
        out += [f"## Step {i}. {step.title}", "", f"**Claim.** {step.claim}", ""]
        if step.instance:
            out += ["**Instance.**", "", "```", step.instance, "```", ""]
        if step.holdings:
            out += ["| party | holds |", "|---|---|"]
            out += [f"| {party.capitalize()} | `{held}` |" for party, held in step.holdings.items()]
            out.append("")
        if step.messages:
            out += ["**Messages.**", ""]
            out += [f"- {_message_line(*m)}" for m in step.messages]
            out.append("")
        if step.inequality:
            out += ["$$", step.inequality, "$$", ""]
        if step.notes:
            out += [step.notes, ""]
        if step.reference:
            out += [f"*Where it is proved:* {step.reference}", ""]
    return "\n".join(out).rstrip() + "\n"


def render_text(lesson: Lesson, console) -> None:
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table
    console.print(Panel(f"[bold]{escape(lesson.title)}[/]\n{escape(lesson.summary)}", expand=False))
    for i, step in enumerate(lesson.steps, 1):
        body = Table.grid(padding=(0, 1))
        body.add_column(style="bold", no_wrap=True)
        body.add_column()
        body.add_row("claim", escape(step.claim))
        if step.instance:
            body.add_row("instance", escape(step.instance))
        for party, held in step.holdings.items():
            body.add_row(party.capitalize(), escape(held))
        for m in step.messages:
            body.add_row("message", escape(_message_line(*m)))
        if step.inequality:
            body.add_row("so", escape(latex_to_text(step.inequality)))
        if step.notes:
            body.add_row("note", escape(step.notes))
        if step.reference:
            body.add_row("proof", escape(step.reference))
        console.print(Panel(body, title=f"Step {i}. {escape(step.title)}", title_align="left"))
