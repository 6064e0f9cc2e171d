"""Ctrl-C and child processes: the interrupt is never lost, and it is never a worker's to report.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group: to commsim and to every worker
process it started.  The parent owns the interrupt -- it stops the work, closes its workers, prints one line
and exits 130 -- and a worker ignores SIGINT for its whole life.  Two moments need care:

* a worker's start-up: from its creation until it has set SIGINT to ignored, a Python child would die of the
  signal with a ``KeyboardInterrupt`` traceback.  Children started inside :func:`interrupts_held` inherit a
  blocked SIGINT (the signal mask survives fork and exec, and a thread started there passes it on to the
  processes it starts later); :func:`worker_ignores_interrupts` then ignores SIGINT and unblocks it, which
  discards one that arrived in between.
* the parent while it starts them: the signal is held, not ignored.  One that arrives is recorded and
  delivered again -- to the handler that was there before -- when the block ends, so the parent raises
  ``KeyboardInterrupt`` right after the start-up instead of losing it (what ``SIG_IGN`` would do).

A process that was started with SIGINT ignored (a background job of a non-interactive shell, ``nohup``)
keeps ignoring it: that is its parent's choice, and nothing here changes it.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Callable, Iterator

_CAN_BLOCK = hasattr(signal, "pthread_sigmask")   # POSIX; elsewhere there is no process group to signal


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold SIGINT while the block starts worker processes (or threads that start them), then deliver it.

    In this thread SIGINT is blocked, so what the block starts inherits the block; in the main thread a
    SIGINT that still reaches Python meanwhile (through another thread that does not block it) is recorded
    by a stand-in handler.  On the way out the previous handler and mask come back and a held or recorded
    SIGINT is delivered to that handler: ``KeyboardInterrupt`` right after the block, under Python's default.
    """
    if not _CAN_BLOCK:
        yield
        return
    # multiprocessing starts its resource tracker with the first spawned process and unblocks SIGINT in the
    # thread that does it (whatever the mask was before): started here, it is running before the block
    from multiprocessing import resource_tracker
    resource_tracker.ensure_running()
    recorded: list[int] = []
    previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    # only a handler Python can put back is replaced (None: set outside Python); an ignored SIGINT stays ignored
    stand_in = previous is not None and previous is not signal.SIG_IGN
    if stand_in:
        signal.signal(signal.SIGINT, lambda signum, frame: recorded.append(signum))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if stand_in:
            signal.signal(signal.SIGINT, previous)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)   # a SIGINT pending on this thread is delivered here
        if recorded:
            signal.raise_signal(signal.SIGINT)


def worker_ignores_interrupts() -> None:
    """In a worker process, first thing: SIGINT ignored for the rest of its life, and no longer blocked (a
    SIGINT held since its start-up is discarded).  Ctrl-C is the parent's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if _CAN_BLOCK:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextlib.contextmanager
def on_interrupt(action: Callable[[], None]) -> Iterator[None]:
    """While the block runs, Ctrl-C first calls ``action()`` (say, to silence what a library would print in
    its own reaction to the interrupt) and then raises ``KeyboardInterrupt`` as usual.  Only where Python's
    default handler is in place, in the main thread; anywhere else the block runs unchanged."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return

    def handler(signum, frame):
        action()
        signal.default_int_handler(signum, frame)
    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
