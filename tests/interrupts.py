"""Ctrl-C in tests: sent the way a terminal sends it, at a moment the test has observed (never after a fixed
sleep), and repeated under artificial load -- busy processes on every core, started and stopped by the test.

Timeouts here only bound a failure; no test waits for time to pass.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: the two conditions every interrupt test runs under
LOADS = ["quiet", "loaded"]


@contextlib.contextmanager
def busy_cores(count: int | None = None):
    """``count`` processes (default: one per core) that spin until the block ends; they are this block's
    children and it kills them (by their own pids) on the way out."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for _ in range(count or os.cpu_count() or 1)]
    try:
        yield spinners
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait()


def under(load: str):
    """The context a test runs its interrupt in: ``quiet``, or ``loaded`` (every core held by a busy process)."""
    return busy_cores() if load == "loaded" else contextlib.nullcontext()


def _as_a_foreground_job() -> None:
    """In the child, before exec: SIGINT at its default and not blocked, as in a terminal's foreground job.
    A test run as a background job of a non-interactive shell (a CI script) has SIGINT *ignored*, and a
    Python started so ignores Ctrl-C for good: the interrupt would be lost to the test, not to commsim."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def start_commsim(args: list[str], cwd=ROOT) -> subprocess.Popen:
    """``python -m commsim ARGS`` as a terminal starts it: a session (process group) of its own, SIGINT at
    its default; stdout and stderr are read back as text."""
    return subprocess.Popen([sys.executable, "-m", "commsim", *args], cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_as_a_foreground_job)


def wait_for(condition: Callable[[], bool], what: str, proc: subprocess.Popen | None = None,
             bound: float = 300.0) -> None:
    """Poll ``condition()`` until it holds; fail if ``proc`` ends first (the work was too short to interrupt,
    or it failed) or after ``bound`` seconds (a bound on a failure, not a wait)."""
    deadline = time.monotonic() + bound
    while not condition():
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"commsim ended (exit {proc.returncode}) before {what}:\n{err}{out[-2000:]}")
        if time.monotonic() > deadline:
            if proc is not None:
                proc.kill()
                proc.communicate()
            pytest.fail(f"no {what} within {bound:.0f} s")
        time.sleep(0.02)


def ctrl_c(proc: subprocess.Popen, bound: float = 300.0, then: Callable[[], object] | None = None) -> tuple[str, str]:
    """What a terminal's Ctrl-C does -- SIGINT to the whole process group, workers included -- then
    ``then()`` (once the signal is sent: such as opening a gate the remaining work waits on), then wait for
    the end: (stdout, stderr)."""
    os.killpg(proc.pid, signal.SIGINT)
    if then is not None:
        then()
    try:
        return proc.communicate(timeout=bound)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"still running {bound:.0f} s after Ctrl-C:\n{err}")


# ---- what /proc says about a process's children ------------------------------------------------------
def _status(pid: int) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:                       # gone meanwhile
        return {}
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def spawned_children(pid: int) -> list[int]:
    """The pids of ``pid``'s children that run multiprocessing's spawn entry point (its workers; not the
    resource tracker), once they have exec'd it."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _status(int(entry.name)).get("PPid") == str(pid):
            with contextlib.suppress(OSError):
                if b"spawn_main" in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def ignores_sigint(pid: int) -> bool:
    """Whether the process has set SIGINT to ignored (a commsim worker does, first thing)."""
    ignored = _status(pid).get("SigIgn")
    return ignored is not None and bool(int(ignored, 16) & (1 << (signal.SIGINT - 1)))


def gone(pid: int) -> bool:
    """Whether the process has ended (and been reaped, or is a zombie nobody will run again)."""
    state = _status(pid).get("State", "")
    return state == "" or state.startswith("Z")


needs_proc = pytest.mark.skipif(not Path("/proc/self/status").exists() or os.name != "posix",
                                reason="watches worker processes through Linux's /proc")
