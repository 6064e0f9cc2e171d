"""Shared pieces of the command line: JSON output, argument parsing, the console."""
from __future__ import annotations

from typing import Any

import click
from rich.console import Console

from commsim.cli.progress import ProgressBar
from commsim.core.errors import InputError
from commsim.core.jsonable import to_json
from commsim.theory.problems import PROBLEM_NAMES


class _Console(Console):
    """rich's Console, except that a closed pipe (``commsim list | head -1``) is left to the entry point,
    which ends quietly with exit 0 (rich itself would exit 1), and that emoji codes are off: text such as a
    user's ``--n-range 2:100:0`` is printed as it is, never as an emoji.  (Markup stays on for the commands' own
    styling: text from the user goes through :func:`rich.markup.escape` or ``markup=False``.)"""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("emoji", False)
        super().__init__(*args, **kwargs)

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


console = _Console(highlight=False)
err_console = _Console(stderr=True, highlight=False)

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
plugin_option = click.option("--plugin", "plugins", multiple=True, metavar="MODULE",
                             help="Also load plugins from MODULE (its register(registry) is called). This imports "
                                  "and runs MODULE's code: never pass a module you do not trust.")


def protocol_problem(problem: str, registry) -> str:
    """``cc``'s and ``tree``'s PROBLEM: a problem some registered plain protocol is for (index, eq, disj with
    the installed protocols; a --plugin may add more).  Dyck-(2,2) has a problem class but no plain protocol:
    its bounds are read with ``commsim fooling`` and ``commsim matrix``."""
    served = {p for entry in registry.entries("cc-protocol") for p in getattr(entry.obj, "problems", ())}
    known = [p for p in PROBLEM_NAMES if p in served] + sorted(served.difference(PROBLEM_NAMES))
    if problem not in served:
        raise InputError(f"PROBLEM must be a problem a registered protocol is for ({', '.join(known)}), got "
                         f"{problem!r}", "problem")
    return problem


def emit_json(obj: Any) -> None:
    click.echo(to_json(obj))


def parse_instances(value: str) -> int | None:
    """``all`` -> None (exhaustive), else a positive count."""
    if value is None or str(value).lower() == "all":
        return None
    try:
        count = int(value)
    except ValueError:
        raise InputError(f"--instances must be 'all' or a positive integer, got {value!r}", "--instances") from None
    if count < 1:
        raise InputError(f"--instances must be at least 1, got {count}", "--instances")
    return count


def check_positive(value: int, name: str, minimum: int = 1) -> int:
    if value is None or value < minimum:
        raise InputError(f"{name} must be at least {minimum}, got {value}", name)
    return value


def progress_bar(description: str, enabled: bool = True) -> ProgressBar:
    """The one progress bar of long work (:class:`~commsim.cli.progress.ProgressBar`: a terminal, a notebook, or
    nothing), on the commands' stderr console: ``with progress_bar("instances", enabled) as update: ...``."""
    return ProgressBar(description, enabled, console=err_console)


def render_transcript(transcript, title: str = "transcript", limit: int = 40):
    """A rich table drawing the exchange (:func:`commsim.teach.exchange.exchange_rows`) as a sequence: who
    sent what, how many bits."""
    from rich.table import Table

    from commsim.teach.exchange import exchange_rows
    table = Table(title=title, show_lines=False)
    for col in ("round", "", "label", "bits", "content"):
        table.add_column(col, justify="right" if col in ("round", "bits") else "left")
    rows = exchange_rows(transcript.messages)
    for r in rows[:limit]:
        arrow = "Alice ──▶ Bob" if r.sender == "alice" else "Alice ◀── Bob"
        table.add_row(str(r.round), arrow, r.label, str(r.count if r.count is not None else r.bits), r.shown(48))
    if len(rows) > limit:
        table.add_row("", "…", f"{len(rows) - limit} more messages", "", "")
    table.add_row("", "total", "", str(transcript.total_bits), "", style="bold")
    return table


# ---- the exchange as a sequence diagram ---------------------------------------------------------
DIAGRAM_WIDTH = 64
SHOWN_BITS = 32


def sequence_lines(transcript, width: int = DIAGRAM_WIDTH, limit: int = 40) -> list[str]:
    """The exchange (:func:`commsim.teach.exchange.exchange_rows`) drawn as plain text, one arrow per message
    (``Alice ── label, k bits ──▶ Bob``)."""
    from commsim.teach.exchange import exchange_rows
    lines = ["Alice" + " " * (width - 5) + "Bob", f"  │{' ' * (width - 2)}│"]
    rows = exchange_rows(transcript.messages)
    last_round = None
    for r in rows[:limit]:
        body = f" {r.label}, {r.count} bits: {r.shown(SHOWN_BITS)} " if r.count else f" {r.label}, 0 bits "
        if len(body) > width - 4:
            body = body[:width - 6] + "… "
        fill = "─" * (width - 4 - len(body))
        arrow = f"├─{body}{fill}▶┤" if r.sender == "alice" else f"├◀{fill}{body}─┤"
        tag = f"  round {r.round}" if r.round != last_round else ""
        last_round = r.round
        lines.append(f"  {arrow}{tag}")
    if len(rows) > limit:
        lines.append(f"  │ … {len(rows) - limit} more messages")
    lines.append(f"  │{' ' * (width - 2)}│")
    d = transcript.bits_by_direction
    lines.append(f"total {transcript.total_bits} bits: Alice→Bob {d['alice_to_bob']}, Bob→Alice {d['bob_to_alice']}, "
                 f"{transcript.rounds} round(s)")
    return lines


def bit_breakdown(transcript, details: dict | None = None) -> dict:
    """Bits per protocol step and per head.  Taken from the protocol's itemization in the report's
    details (``bits_by_step``, ``bits_by_head``: the attention exchange) when present, else per
    message label of the transcript (e.g. the hidden-state handoff's one message)."""
    details = details or {}
    steps = details.get("bits_by_step")
    if not steps:
        steps = transcript.bits_by_label() if transcript is not None else {}
    heads = details.get("bits_by_head") or []
    return {"bits_by_step": dict(steps), "bits_by_head": [dict(h) for h in heads],
            "total_bits": sum(steps.values()),
            "theorem_bits": details.get("theorem_bits"), "theorem_text": details.get("theorem_text")}


def render_exchange(transcript, details: dict | None = None, title: str = "transcript"):
    """``--transcript``: the sequence diagram of one exchange, then its bits per step and per head."""
    from rich.console import Group
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text
    parts = [Text("\n".join(sequence_lines(transcript)))]
    split = bit_breakdown(transcript, details)
    heads = split["bits_by_head"]
    table = Table(title="bits per step" + (" and per head" if heads else ""), title_justify="left")
    table.add_column("step")
    for h in range(len(heads)):
        table.add_column(f"head {h}", justify="right")
    table.add_column("total", justify="right", style="bold")
    for step, bits in split["bits_by_step"].items():
        table.add_row(escape(str(step)), *[str(h.get(step, 0)) for h in heads], str(bits))
    table.add_row("all", *[str(h.get("total", sum(v for k, v in h.items() if k != "total"))) for h in heads],
                  str(split["total_bits"]), style="bold")
    parts.append(table)
    if split["theorem_bits"] is not None:
        within = split["total_bits"] <= split["theorem_bits"]
        parts.append(Text(f"theorem's count: {split['theorem_text']} — this exchange uses {split['total_bits']}"
                          f"{' (within it)' if within else ' (MORE than the theorem counts)'}"))
    return Panel(Group(*parts), title=escape(title), title_align="left", expand=False)



# ---- certificates: Alice's and Bob's inputs side by side, the decisive positions marked ----------
HIGHLIGHT = "bold black on yellow"


def _marked(symbols: tuple[str, ...], index: int | None, marks, scalar_note: bool = False):
    """One party's input of a certificate row (:class:`commsim.certify.view.ViewRow`), decisive positions
    highlighted; an index is shown as such (highlighted when it is the decisive one)."""
    from rich.text import Text
    if index is not None:
        return Text(f"position {index + 1}", style=HIGHLIGHT if scalar_note else "")   # Bob's index, 1-based
    if not symbols:
        return Text("—")
    sep = "" if all(len(s) == 1 for s in symbols) else " "
    text = Text()
    marks = set(marks)
    for i, s in enumerate(symbols):
        if i and sep:
            text.append(sep)
        text.append(s, style=HIGHLIGHT if i in marks else "")
    return text


def render_certificate(view):
    """A :class:`commsim.certify.view.CertificateView` as a table: Alice's and Bob's inputs side by side,
    decisive positions highlighted, then the caption and the explanation."""
    from rich.console import Group
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text
    status = "verified by a direct forward" if view.verified else "NOT verified"
    table = Table(title=f"certificate: {view.kind} ({status})", title_justify="left")
    table.add_column("")
    table.add_column("Alice holds")
    table.add_column("Bob holds")
    own = bool(view.task)        # the model's own output on its task is known: label both sides of it
    table.add_column(f"answer ({view.source})" if own else "answer", justify="right")
    table.add_column(f"model → {view.source}" if own else "model", justify="right")
    if own:
        table.add_column(f"model's {view.task}", justify="right")
    for row in view.rows:
        cells = [escape(row.label), _marked(row.alice_symbols, row.alice_index, view.alice_marks),
                 _marked(row.bob_symbols, row.bob_index, view.bob_marks, scalar_note=row.bob_index is not None),
                 "" if row.answer is None else str(row.answer),
                 "" if row.model is None else escape(str(row.model))]
        if own:
            cells.append("" if row.task_model is None else escape(str(row.task_model)))
        table.add_row(*cells)
    parts = [table]
    if view.caption:   # "highlighted" only when a position is marked (the caption then names it)
        marked = bool(view.alice_marks or view.bob_marks)
        parts.append(Text(("highlighted: " if marked else "") + view.caption, style="dim"))
    if view.model_input:
        parts.append(Text(f"model input: {view.model_input}"))
    if view.task_output:
        parts.append(Text(view.task_output))
    parts.append(Text(view.explanation))
    return Group(*parts)

