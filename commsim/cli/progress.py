"""The one progress bar of commsim's long work -- runs, sweeps, separations, replications --, on the command line
and in Jupyter.  :class:`ProgressBar` chooses where it is drawn (the commands use it through
:func:`commsim.cli.common.progress_bar`, on their stderr console):

* stderr is a terminal: rich's live bar on stderr, gone when the work ends;
* a Jupyter kernel (a notebook, JupyterLab, VS Code, a notebook run by nbclient): the same rich bar as one output
  of the running cell, redrawn in place (IPython's ``display_id``: no ipywidgets needed) at most every
  :data:`NOTEBOOK_REFRESH_SECONDS` and once more when the work ends, whose last state it then keeps showing;
* anywhere else (a pipe, a file, ``--json``): nothing.

The Python API's ``progress=True`` (``commsim.run``, ``commsim.sweep``, ``commsim.replicate``) is this bar
(:func:`api_progress`); a function there is called as before.
"""
from __future__ import annotations

import contextlib
import io
import sys
import time
from typing import Callable, Iterator

#: the least time between two redraws of a notebook's bar (each is an HTML page of the bar sent to the front end)
NOTEBOOK_REFRESH_SECONDS = 0.2

#: the width, in characters, of the bar drawn in a notebook
NOTEBOOK_WIDTH = 100

#: how a notebook shows the bar's HTML: rich's own Jupyter style (a <pre> in the front end's monospace font)
_NOTEBOOK_HTML = ('<pre style="white-space:pre;overflow-x:auto;line-height:normal;margin:0;'
                  'font-family:Menlo,\'DejaVu Sans Mono\',consolas,\'Courier New\',monospace">{code}</pre>')


def in_jupyter() -> bool:
    """Is this process a Jupyter kernel (IPython's ZMQ shell, which a notebook front end talks to)?  IPython is
    not imported to find out: a kernel has imported it already."""
    ipython = sys.modules.get("IPython")
    shell = None if ipython is None else ipython.get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class _Shown:
    """What a notebook displays: the bar as HTML, with its text for a front end without HTML."""

    def __init__(self, html: str, text: str):
        self.html, self.text = html, text

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self.html, "text/plain": self.text}


class _NotebookDisplay:
    """A rich renderable shown as one output of the running cell, redrawn in place."""

    def __init__(self, renderable: Callable[[], object]):
        self._renderable = renderable
        self._handle = None
        self._drawn = -float("inf")

    def show(self, force: bool = False) -> None:
        """Redraw, unless the last redraw was less than :data:`NOTEBOOK_REFRESH_SECONDS` ago (``force``: always)."""
        now = time.monotonic()
        if not force and now - self._drawn < NOTEBOOK_REFRESH_SECONDS:
            return
        self._drawn = now
        from IPython.display import display
        from rich.console import Console
        recorder = Console(file=io.StringIO(), record=True, width=NOTEBOOK_WIDTH, force_terminal=True,
                           force_jupyter=False, color_system="truecolor")
        recorder.print(self._renderable())
        shown = _Shown(recorder.export_html(inline_styles=True, code_format=_NOTEBOOK_HTML, clear=False),
                       recorder.export_text().rstrip("\n"))
        if self._handle is None:
            self._handle = display(shown, display_id=True)
        else:
            self._handle.update(shown)


class ProgressBar:
    """A progress bar for long work, drawn where it can be seen (see the module's text) -- in a terminal on
    ``console`` (default: a rich console on stderr) --; silent when not ``enabled`` (``--json``) or where it
    cannot be seen.

    Use as ``with ProgressBar("instances", enabled) as update: ... update(done, total)``.
    """

    def __init__(self, description: str, enabled: bool = True, console=None):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
        terminal = Console(stderr=True) if console is None else console
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        self._progress = self._notebook = self._task = None
        self._description = description
        self.enabled = False
        if not enabled:
            return
        if terminal.is_terminal:
            self._progress = Progress(*columns, console=terminal, transient=True)
        elif in_jupyter():
            self._progress = Progress(*columns, auto_refresh=False)     # never started: drawn by the display
            self._notebook = _NotebookDisplay(self._progress.get_renderable)
        self.enabled = self._progress is not None

    def __enter__(self):
        if self._progress is not None:
            if self._notebook is None:
                self._progress.start()
            self._task = self._progress.add_task(self._description, total=None)
            if self._notebook is not None:
                self._notebook.show(force=True)
        return self.update

    def update(self, done: int, total: int, description: str | None = None) -> None:
        if self._progress is not None:
            fields = {} if description is None else {"description": description}
            self._progress.update(self._task, completed=done, total=total, **fields)
            if self._notebook is not None:
                self._notebook.show()

    def __exit__(self, *exc):
        if self._notebook is not None:
            self._notebook.show(force=True)                   # the last state stays in the cell's output
        elif self._progress is not None:
            self._progress.stop()


@contextlib.contextmanager
def api_progress(value, description: str, *, stages: bool = False) -> Iterator:
    """The Python API's ``progress=`` argument: ``True`` is a :class:`ProgressBar` (in a notebook, in the cell's
    output), yielding the callback the pipeline calls -- ``progress(done, total)``, or with ``stages``
    ``progress(stage, done, total)`` --; any other value (None, a function) is yielded as it is."""
    if value is not True:
        yield value
        return
    with ProgressBar(description) as update:
        if stages:
            yield lambda stage, done, total: update(done, total, f"{description}: {stage}")
        else:
            yield lambda done, total: update(done, total)
