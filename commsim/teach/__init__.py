"""Narrated proofs: each lesson is a list of steps built from the same engine calls a user makes.

A :class:`Step` states a claim, shows the concrete instance and what each party holds, the
messages with their exact bits, the inequality the step establishes, and where the paper proves
it.  A :class:`Lesson` renders as rich terminal text or as Markdown lecture notes with LaTeX math.
Topics register under the ``topic`` registry kind as functions ``build(n: int | None) -> Lesson``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from commsim.teach.exchange import ExchangeRow, exchange_rows

__all__ = ["Step", "Lesson", "render_markdown", "render_plain", "render_text", "mermaid_sequence", "message_runs",
           "message_line"]


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
    #: engine data a page draws beside the messages, e.g. {"kind": "certificate", "certificate": cert.to_dict(),
    #: "problem": "dyck22"}, {"kind": "dfa", "language": "dyck22", "n": 8}, {"kind": "matrix", "problem": "eq", "n": 3}
    figures: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"title": self.title, "claim": self.claim, "instance": self.instance, "holdings": self.holdings,
                "messages": [{"sender": s, "label": lab, "bits": b} for s, lab, b in self.messages],
                "inequality": self.inequality, "reference": self.reference, "notes": self.notes,
                "figures": self.figures}


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


def message_line(row: ExchangeRow) -> str:
    """One message of a step as text: ``Alice → Bob: label (k bits) 0101…``."""
    size = f"{row.count} bits" if row.count is not None else ""
    return f"{row.arrow}: {row.label} ({size}) {row.shown(64)}".replace("() ", "")


def _mermaid_text(text: str) -> str:
    """A message text mermaid reads as plain text (no statement break, comment or entity)."""
    return text.replace(";", ",").replace("#", "no. ").replace("%", " percent").replace("\n", " ")


#: a message label's run qualifier: a step showing two runs side by side labels each message with its run
_RUN = re.compile(r"\s(\((?:member|run) [^()]*\)|for Alice's .*)$")


def message_runs(messages) -> list[tuple[str, list]]:
    """A step's messages split into the runs they came from (by the label's qualifier, e.g. "(member 3)" or
    "for Alice's x = 0101"), qualifiers removed; one run with an empty name when there is no qualifier."""
    runs: dict[str, list] = {}
    for sender, label, bits in messages:
        m = _RUN.search(label)
        name = m.group(1).strip("()") if m else ""
        runs.setdefault(name, []).append((sender, label[:m.start()] if m else label, bits))
    return list(runs.items())


def mermaid_sequence(messages) -> list[str]:
    """A step's messages as a ``mermaid`` sequence diagram block: rounds as notes at each change of sender,
    counted per run when the step shows several runs (each announced by a note)."""
    lines = ["```mermaid", "sequenceDiagram", "    participant A as Alice", "    participant B as Bob"]
    for run, msgs in message_runs(messages):
        if run:
            lines.append(f"    Note over A,B: {_mermaid_text(run)}")
        last_round = None
        for r in exchange_rows(msgs):             # rounds counted per run, at each change of sender
            if r.round != last_round:
                lines.append(f"    Note over A,B: round {r.round}")
                last_round = r.round
            size = f"{r.count} bits" if r.count is not None else _mermaid_text(r.bits)
            arrow = "A->>B" if r.sender == "alice" else "B->>A"
            lines.append(f"    {arrow}: {_mermaid_text(r.label)} ({size})")
    return lines + ["```"]


def render_markdown(lesson: Lesson, figures: dict[int, list[str]] | None = None,
                    figure_list: list[str] | None = None, mermaid: bool = True) -> str:
    """Lecture notes: one section per step, math in LaTeX ($...$ and $$...$$).

    ``figures`` maps a step number (1-based) to Markdown lines placed after its messages (image links, or a
    page's figure placeholders); ``figure_list`` is the list of figures shown after the summary;
    ``mermaid`` adds each step's messages as a mermaid sequence diagram."""
    figures = figures or {}
    out = [f"# {lesson.title}", "", lesson.summary, ""]
    if figure_list is not None:
        out += ["**Figures.**", ""] + (figure_list or ["none"]) + [""]
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
            out += [f"- {message_line(r)}" for r in exchange_rows(step.messages)]
            out.append("")
            if mermaid:
                out += mermaid_sequence(step.messages) + [""]
        for line in figures.get(i, []):
            out += [line, ""]
        if step.inequality:
            out += ["$$", step.inequality, "$$", ""]
        if step.notes:
            out += [step.notes, ""]
        if step.reference:
            out += [f"*Where it is proved:* {step.reference}", ""]
    return "\n".join(out).rstrip() + "\n"


def render_plain(lesson: Lesson) -> str:
    """The walkthrough as plain text for a pipe or a file: no boxes, no wrapping (a line is as long as its
    content, so no row of a message list is broken at the terminal's width)."""
    out = [lesson.title, lesson.summary, ""]
    for i, step in enumerate(lesson.steps, 1):
        out += [f"Step {i}. {step.title}", f"  claim:    {step.claim}"]
        if step.instance:
            lines = step.instance.splitlines()
            out += [f"  instance: {lines[0]}"] + [f"            {line}" for line in lines[1:]]
        out += [f"  {party.capitalize() + ':':9} {held}" for party, held in step.holdings.items()]
        out += [f"  message:  {message_line(r)}" for r in exchange_rows(step.messages)]
        if step.inequality:
            out.append(f"  so:       {latex_to_text(step.inequality)}")
        if step.notes:
            out.append(f"  note:     {step.notes}")
        if step.reference:
            out.append(f"  proof:    {step.reference}")
        out.append("")
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
        for r in exchange_rows(step.messages):
            body.add_row("message", escape(message_line(r)))
        if step.inequality:
            body.add_row("so", escape(latex_to_text(step.inequality)))
        if step.notes:
            body.add_row("note", escape(step.notes))
        if step.reference:
            body.add_row("proof", escape(step.reference))
        console.print(Panel(body, title=f"Step {i}. {escape(step.title)}", title_align="left"))
