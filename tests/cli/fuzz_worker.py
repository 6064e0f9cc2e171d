"""Runs command lines in one process under a memory limit and a per-invocation timeout (the fuzz test).

:class:`Worker` starts it from a test.  Usage: ``python fuzz_worker.py``; each line read from stdin is a JSON argv list, and each answer is one line
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
import subprocess
import sys
import time
from pathlib import Path

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


class Worker:
    """One long-lived worker process (limits set there) that runs the command lines one by one."""

    def __init__(self, tmp: Path):
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "LANG": "C.UTF-8"}
        self.process = subprocess.Popen([sys.executable, __file__], cwd=tmp, env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def run(self, argv: list[str]) -> dict:
        """The worker's result for one command line."""
        self.process.stdin.write(json.dumps(argv) + "\n")
        self.process.stdin.flush()
        for line in self.process.stdout:
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])
        raise AssertionError(f"the fuzz worker died on: commsim {' '.join(argv)}")

    def close(self) -> None:
        """Stop the worker."""
        self.process.stdin.close()
        self.process.wait(timeout=30)


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
