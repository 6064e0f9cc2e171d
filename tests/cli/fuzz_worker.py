"""Runs command lines in one process under a memory limit and a per-invocation timeout (the fuzz test).

Usage: ``python fuzz_worker.py``; each line read from stdin is a JSON argv list, and each answer is one line
``@@FUZZ@@ {json}`` on the real stdout: the exit code (``"timeout"`` / ``"memory"`` when a limit hit), what
the command printed on stdout and stderr, and the seconds it took.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import signal
import sys
import time

ADDRESS_SPACE = int(os.environ.get("FUZZ_ADDRESS_SPACE", 2 << 30))
SECONDS = int(os.environ.get("FUZZ_SECONDS", 5))


class _Timeout(BaseException):
    """Raised by the alarm: an invocation ran past its time."""


def _alarm(signum, frame):
    raise _Timeout()


def run_one(argv: list[str]) -> dict:
    """One command line through ``commsim.cli.main``: exit code, output, time."""
    from commsim.cli import main
    out, err = io.StringIO(), io.StringIO()
    code: object = 0
    start = time.perf_counter()
    signal.alarm(SECONDS)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except _Timeout:
        code = "timeout"
    except MemoryError:
        code = "memory"
    finally:
        signal.alarm(0)
    return {"argv": argv, "code": code, "stdout": out.getvalue(), "stderr": err.getvalue(),
            "seconds": round(time.perf_counter() - start, 3)}


MARK = "@@FUZZ@@ "


def main() -> None:
    """Set the limits, then answer every command line read from stdin."""
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    signal.signal(signal.SIGALRM, _alarm)
    os.environ["COLUMNS"] = "100"
    import commsim.cli  # noqa: F401  (imported before the clock starts)
    real = sys.stdout
    for line in sys.stdin:
        result = run_one(list(json.loads(line)))
        real.write(MARK + json.dumps(result) + "\n")
        real.flush()


if __name__ == "__main__":
    main()
