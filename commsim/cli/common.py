"""Shared pieces of the command line: JSON output, argument parsing, the console."""
from __future__ import annotations

import json
import math
from typing import Any

import click
import numpy as np
from rich.console import Console

from ..errors import InputError

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
plugin_option = click.option("--plugin", "plugins", multiple=True, metavar="MODULE",
                             help="Also load plugins from MODULE (its register(registry) is called).")


def to_jsonable(obj: Any) -> Any:
    """numpy scalars/arrays, dataclass-like objects and huge ints made JSON-safe."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, np.integer):
        obj = int(obj)
    if isinstance(obj, int):
        return obj if abs(obj) < 2 ** 53 else str(obj)
    if isinstance(obj, np.floating):
        obj = float(obj)
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else str(obj)
    if hasattr(obj, "to_dict"):
        return to_jsonable(obj.to_dict())
    return obj


def emit_json(obj: Any) -> None:
    click.echo(json.dumps(to_jsonable(obj), indent=2))


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


class progress_bar:
    """A rich progress bar on stderr for long sweeps; silent under --json or without a terminal.

    Use as ``with progress_bar("instances", enabled) as update: ... update(done, total)``.
    """

    def __init__(self, description: str, enabled: bool = True):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
        self.enabled = enabled and err_console.is_terminal
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TimeRemainingColumn(), console=err_console, transient=True) \
            if self.enabled else None
        self._description = description
        self._task = None

    def __enter__(self):
        if self._progress is not None:
            self._progress.start()
            self._task = self._progress.add_task(self._description, total=None)
        return self.update

    def update(self, done: int, total: int) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=done, total=total)

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.stop()


def render_transcript(transcript, title: str = "transcript", limit: int = 40):
    """A rich table drawing the exchange as a sequence: who sent what, how many bits."""
    from rich.table import Table
    table = Table(title=title, show_lines=False)
    for col in ("round", "", "label", "bits", "content"):
        table.add_column(col, justify="right" if col in ("round", "bits") else "left")
    for m in list(transcript.messages)[:limit]:
        arrow = "Alice ──▶ Bob" if m.sender == "alice" else "Alice ◀── Bob"
        shown = str(m.bits) if len(m.bits) <= 48 else str(m.bits[:48]) + "…"
        table.add_row(str(m.round), arrow, m.label, str(len(m.bits)), shown)
    if len(transcript.messages) > limit:
        table.add_row("", "…", f"{len(transcript.messages) - limit} more messages", "", "")
    table.add_row("", "total", "", str(transcript.total_bits), "", style="bold")
    return table
