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

__all__ = [
    "Lesson",
    "Step",
    "mermaid_sequence",
    "message_line",
    "message_runs",
    "render_markdown",
    "render_plain",
    "render_text",
]


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
    #: the theorem the lesson proves, as the paper states it (:class:`commsim.teach.statement.Statement`)
    statement: object | None = None

    def to_dict(self) -> dict:
        return {"topic": self.topic, "title": self.title, "summary": self.summary, "n": self.n,
                "statement": self.statement.to_dict() if self.statement is not None else None,
                "steps": [s.to_dict() for s in self.steps]}


#: commands that stand for a symbol or a word (matched as whole commands: ``\left`` is never ``\le`` + "ft")
_LATEX_WORDS = {"ge": "≥", "geq": "≥", "le": "≤", "leq": "≤", "cdot": "·", "lceil": "⌈", "rceil": "⌉",
                "lfloor": "⌊", "rfloor": "⌋", "ne": "≠", "neq": "≠", "quad": "   ", "qquad": "   ", "lt": "<",
                "gt": ">", "times": "×", "implies": "⇒", "iff": "⇔", "sum": "Σ", "max": "max", "min": "min",
                "log": "log", "exp": "exp", "Pr": "Pr", "in": "∈", "notin": "∉", "epsilon": "ε",
                "varepsilon": "ε", "delta": "δ", "Omega": "Ω", "Theta": "Θ", "approx": "≈", "ll": "≪", "gg": "≫",
                "to": "→", "rightarrow": "→", "infty": "∞", "mid": "|", "ldots": "...", "dots": "...",
                "cdots": "...", "langle": "⟨", "rangle": "⟩", "cap": "∩", "cup": "∪", "exists": "∃",
                "forall": "∀", "Sigma": "Σ", "pm": "±", "equiv": "≡", "sim": "~", "lvert": "|", "rvert": "|"}
#: commands whose one argument is shown as it is
_LATEX_AS_IS = {"text", "mathrm", "mathbf", "mathit", "operatorname", "mathbb", "textbf", "textit", "mbox"}
#: sizing commands and delimiters' wrappers: dropped, the delimiter stays (``\left.`` shows nothing)
_LATEX_SIZING = {"left", "right", "big", "Big", "bigl", "bigr", "Bigl", "Bigr", "middle"}
#: escaped single characters
_LATEX_ESCAPES = {" ": " ", ",": " ", ";": " ", ":": " ", "!": "", "{": "{", "}": "}", "#": "#", "%": "%",
                  "&": "&", "_": "_", "\\": " ", "|": "‖"}


def _latex_command(latex: str, i: int) -> int:
    """The index after the command that starts at ``latex[i]`` (a backslash): its letters, else one character."""
    j = i + 1
    while j < len(latex) and latex[j].isalpha():
        j += 1
    return j if j > i + 1 else min(i + 2, len(latex))


def _latex_group(latex: str, i: int) -> tuple[str, int]:
    """The argument at ``latex[i]`` (spaces skipped): a brace group's inside (braces matched, escaped braces
    skipped), a command, or one character; and the index after it."""
    while i < len(latex) and latex[i] == " ":
        i += 1
    if i >= len(latex):
        return "", i
    if latex[i] == "\\":                                      # a command, with its argument(s) when it takes any
        j = _latex_command(latex, i)
        name = latex[i + 1:j]
        for _ in range({"frac": 2, "sqrt": 1}.get(name, 1 if name in _LATEX_AS_IS else 0)):
            j = _latex_group(latex, j)[1]
        return latex[i:j], j
    if latex[i] != "{":
        return latex[i], i + 1
    depth, j = 0, i
    while j < len(latex):
        if latex[j] == "\\":
            j = _latex_command(latex, j)
            continue
        depth += {"{": 1, "}": -1}.get(latex[j], 0)
        if depth == 0:
            return latex[i + 1:j], j + 1
        j += 1
    return latex[i + 1:], len(latex)                            # unbalanced: the rest


def _factor(text: str) -> str:
    """``text`` as a factor of a fraction: bare when it is one word or number, else in parentheses."""
    return text if re.fullmatch(r"[\w.]+", text) else f"({text})"


def latex_to_text(latex: str) -> str:
    """A readable terminal form of the LaTeX the lessons use.  Commands are matched whole (``\\left(`` reads
    "(", never "≤ft("); ``\\frac{a}{b}`` reads a/b, ``\\underbrace{x}_{y}`` reads "x [y]", ``\\log_2`` reads
    log2, ``_{xy}`` reads _(xy); no backslash or brace is left over."""
    out, i = [], 0
    while i < len(latex):
        c = latex[i]
        if c == "\\":
            j = _latex_command(latex, i)
            name, i = latex[i + 1:j], j
            if not name.isalpha():                              # \  \, \{ ...
                out.append(_LATEX_ESCAPES.get(name, name))
            elif name in _LATEX_SIZING:
                if latex[i:i + 1] == ".":
                    i += 1
            elif name in _LATEX_AS_IS:
                arg, i = _latex_group(latex, i)
                out.append(latex_to_text(arg))
            elif name == "frac":
                top, i = _latex_group(latex, i)
                bottom, i = _latex_group(latex, i)
                out.append(f"{_factor(latex_to_text(top))}/{_factor(latex_to_text(bottom))}")
            elif name == "sqrt":
                arg, i = _latex_group(latex, i)
                out.append(f"√{_factor(latex_to_text(arg))}")
            elif name in ("underbrace", "overbrace"):
                body, i = _latex_group(latex, i)
                k = i
                while k < len(latex) and latex[k] == " ":
                    k += 1
                label = ""
                if latex[k:k + 1] in ("_", "^") and k < len(latex):
                    label, i = _latex_group(latex, k + 1)
                out.append(latex_to_text(body) + (f" [{latex_to_text(label)}]" if label else ""))
            elif name == "log" and re.match(r"_(\{2\}|2)", latex[i:]):
                out.append("log2")
                i += 4 if latex[i + 1] == "{" else 2
            else:
                out.append(_LATEX_WORDS.get(name, name))
        elif c in "_^":
            arg, i = _latex_group(latex, i + 1)
            arg = latex_to_text(arg)
            out.append(c + (arg if len(arg) == 1 else f"({arg})"))
        elif c == "{":
            arg, i = _latex_group(latex, i)
            out.append(latex_to_text(arg))
        elif c == "}":                                          # unbalanced: dropped
            i += 1
        else:
            out.append(c)
            i += 1
    return re.sub(r" {4,}", "   ", "".join(out))


def message_line(row: ExchangeRow) -> str:
    """One message of a step as text: ``Alice → Bob: label (k bits) 0101…``."""
    size = row.size() if row.count is not None else ""
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
            size = r.size() if r.count is not None else _mermaid_text(r.bits)
            arrow = "A->>B" if r.sender == "alice" else "B->>A"
            lines.append(f"    {arrow}: {_mermaid_text(r.label)} ({size})")
    return lines + ["```"]


def render_markdown(lesson: Lesson, figures: dict[int, list[str]] | None = None,
                    figure_list: list[str] | None = None, mermaid: bool = True,
                    instances: dict[int, str] | None = None) -> str:
    """Lecture notes: one section per step, math in LaTeX ($...$ and $$...$$).

    ``figures`` maps a step number (1-based) to Markdown lines placed after its messages (image links, or a
    page's figure placeholders); ``figure_list`` is the list of figures shown after the summary;
    ``mermaid`` adds each step's messages as a mermaid sequence diagram; ``instances`` maps a step number to
    what stands for its instance instead of the fenced block (a page's placeholder for its HTML form)."""
    figures, instances = figures or {}, instances or {}
    out = [f"# {lesson.title}", "", lesson.summary, ""]
    if lesson.statement is not None:
        from commsim.teach.statement import statement_markdown
        out += statement_markdown(lesson.statement)
    if figure_list is not None:
        out += ["**Figures.**", ""] + (figure_list or ["none"]) + [""]
    for i, step in enumerate(lesson.steps, 1):
        out += [f"## Step {i}. {step.title}", "", f"**Claim.** {step.claim}", ""]
        if step.instance:
            out += ["**Instance.**", ""] + ([instances[i]] if i in instances else ["```", step.instance, "```"]) + [""]
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
    if lesson.statement is not None:
        from commsim.teach.statement import statement_plain
        out += statement_plain(lesson.statement)
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
    if lesson.statement is not None:
        from commsim.teach.statement import statement_rows
        head = Table.grid(padding=(0, 1))
        head.add_column(style="bold", no_wrap=True)
        head.add_column()
        for label, text in statement_rows(lesson.statement):
            head.add_row(label, escape(text))
        console.print(Panel(head, title="The statement", title_align="left"))
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
