"""commsim.core.interrupts: Ctrl-C while workers start is held and delivered afterwards (never lost, never
ignored), what starts inside the hold starts with SIGINT blocked, a worker discards a held SIGINT silently,
and an ignored SIGINT stays ignored.  Each signal here is sent by the test to a known thread: no timing."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from commsim.core.interrupts import interrupts_held, on_interrupt, worker_ignores_interrupts

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")

SIGINT_BIT = 1 << (signal.SIGINT - 1)


def _blocked_here() -> bool:
    return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set())


@pytest.fixture
def other_thread():
    """A thread started before the hold, so SIGINT is not blocked in it; calling the fixture's value makes
    it send SIGINT to itself and returns once its C handler has run.  Python then runs its handler in the
    main thread all the same -- the way a process-directed Ctrl-C reaches a process whose main thread
    blocks it."""
    go, sent, asked = threading.Event(), threading.Event(), []

    def target():
        go.wait()
        if asked:
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)   # delivered before pthread_kill returns
        sent.set()
    thread = threading.Thread(target=target)
    thread.start()

    def send():
        asked.append(True)
        go.set()
        sent.wait()
    yield send
    go.set()
    thread.join()


@pytest.mark.parametrize("target", ["this-thread", "other-thread"])
def test_a_sigint_during_the_hold_is_raised_right_after_it(target, other_thread):
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_held():
            if target == "this-thread":
                signal.raise_signal(signal.SIGINT)          # pending: this thread blocks it
            else:
                other_thread()
            assert _blocked_here()
            reached.append("the end of the block")
    assert reached == ["the end of the block"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler and not _blocked_here()


def test_without_a_sigint_the_hold_changes_nothing():
    with interrupts_held():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler and not _blocked_here()


def test_what_starts_in_the_hold_starts_with_sigint_blocked():
    probe = [sys.executable, "-c", "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('SigBlk')][0])"]
    if not os.path.exists("/proc/self/status"):
        pytest.skip("reads the child's mask from Linux's /proc")
    masks = {}

    def in_a_thread():
        masks["thread"] = _blocked_here()
        masks["thread's child"] = int(subprocess.run(probe, capture_output=True, text=True).stdout, 16)

    with interrupts_held():
        masks["child"] = int(subprocess.run(probe, capture_output=True, text=True).stdout, 16)
        thread = threading.Thread(target=in_a_thread)
        thread.start()
    thread.join()                       # the thread runs on after the hold: it keeps the mask it started with
    assert masks["child"] & SIGINT_BIT and masks["thread's child"] & SIGINT_BIT and masks["thread"]


def test_an_ignored_sigint_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts_held():
            signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN and not _blocked_here()
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_worker_discards_a_sigint_held_since_its_start_silently():
    """A child that starts with SIGINT blocked and gets one before it can ignore it: no traceback, no death."""
    code = textwrap.dedent("""
        import signal
        from commsim.core.interrupts import worker_ignores_interrupts
        signal.raise_signal(signal.SIGINT)          # pending: the mask came from the parent
        worker_ignores_interrupts()
        signal.raise_signal(signal.SIGINT)          # ignored
        print("still here")
    """)
    with interrupts_held():
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (result.returncode, result.stdout, result.stderr) == (0, "still here\n", "")


def test_worker_ignores_interrupts_for_good():
    previous = signal.getsignal(signal.SIGINT)
    try:
        worker_ignores_interrupts()
        signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN and not _blocked_here()
    finally:
        signal.signal(signal.SIGINT, previous)


def test_on_interrupt_acts_first_then_raises_and_leaves_the_default_handler():
    acted = []
    with pytest.raises(KeyboardInterrupt):
        with on_interrupt(lambda: acted.append(True)):
            signal.raise_signal(signal.SIGINT)
    assert acted == [True] and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with on_interrupt(lambda: acted.append(False)):   # a SIGINT someone ignores: not taken over
            signal.raise_signal(signal.SIGINT)
        assert acted == [True] and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
