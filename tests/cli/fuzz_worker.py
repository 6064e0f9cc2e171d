"""Runs command lines (and Python API calls) in one process under a memory limit and a per-invocation
time limit (the fuzz test, and the tests of inputs that once hung or ate memory): :data:`SECONDS` of CPU time
(so a machine busy with other work does not make a command "time out"), and :data:`WALL_SECONDS` of wall time for
an invocation that waits without computing (a read that blocks).

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
import zipfile
from pathlib import Path

ADDRESS_SPACE = int(os.environ.get("FUZZ_ADDRESS_SPACE", 2 << 30))
SECONDS = int(os.environ.get("FUZZ_SECONDS", 5))
WALL_SECONDS = int(os.environ.get("FUZZ_WALL_SECONDS", 120))


class _Timeout(BaseException):
    """Raised by either timer: an invocation ran past its time."""


def _alarm(signum, frame):
    raise _Timeout()


def _arm() -> None:
    """Start both timers: CPU time of this process (SIGPROF) and wall time (SIGALRM)."""
    signal.setitimer(signal.ITIMER_PROF, SECONDS)
    signal.alarm(WALL_SECONDS)


def _disarm() -> None:
    signal.setitimer(signal.ITIMER_PROF, 0)
    signal.alarm(0)


class RaisingGetattr:
    """A model object whose ``__getattr__`` raises something other than AttributeError."""

    def __getattr__(self, name):
        raise RuntimeError(f"no {name} here")


#: Python values an API case names by a token (JSON carries only plain values)
API_VALUES = {"@none": None, "@object": object(), "@getattr": RaisingGetattr(), "@bytes": b"index-idxl",
              "@big": 10 ** 30, "@tuple": (1, 2), "@set": {"index-idxl"}}


def run_api(case: dict) -> dict:
    """One Python API call, ``{"api": NAME, "args": [...], "kwargs": {...}}`` (tokens of :data:`API_VALUES`
    stand for values JSON cannot carry): code 0 when it returns, 2 for commsim's InputError (its message as
    the error line), 1 for any other exception -- in the form of :func:`run_one`'s results."""
    import commsim
    from commsim.core.errors import InputError

    def value(v):
        return API_VALUES.get(v, v) if isinstance(v, str) else v

    args = [value(v) for v in case.get("args", [])]
    kwargs = {k: value(v) for k, v in case.get("kwargs", {}).items()}
    err, code = "", 0
    start = time.perf_counter()
    _arm()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            getattr(commsim, case["api"])(*args, **kwargs)
    except InputError as exc:
        code, err = 2, f"Error: {' '.join(str(exc).split())}\n"
    except _Timeout:
        code = "timeout"
    except MemoryError:
        code = "memory"
    except Exception as exc:
        code, err = 1, f"{type(exc).__name__}: {exc}\n"
    finally:
        _disarm()
    return {"argv": [f"api:{case['api']}", json.dumps(case.get("args", [])), json.dumps(case.get("kwargs", {}))],
            "code": code, "stdout": "", "stderr": err, "seconds": round(time.perf_counter() - start, 3)}


def crafted_npz(path, base, member: str, shape=(100000, 100000)) -> None:
    """A copy of the .npz ``base`` whose ``member`` has a header claiming ``shape`` float64 over 8 bytes."""
    import numpy as np
    arrays = dict(np.load(base))
    with zipfile.ZipFile(path, "w") as archive:
        for key, array in arrays.items():
            if key != member:
                buffer = io.BytesIO()
                np.lib.format.write_array(buffer, array)
                archive.writestr(key + ".npy", buffer.getvalue())
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": shape})
        archive.writestr(member + ".npy", header.getvalue() + b"\0" * 8)


#: model specs that once hung, ate memory or exited 1 (issue 29 items 6-10, issue 24 defect 6); the files
#: they name are made by :func:`make_hazard_files` in the worker's folder
HAZARD_MODELS = ["elman:weights=fifo.npz", "attention:weights=fifo.npz", "hf-gpt2:config=fifo.json",
                 "hf-gpt2:config=/dev/zero", "elman:weights=/dev/zero", "python:fifo.py:f", "torch:fifo.pt",
                 "elman:weights=bigelman.npz", "attention:weights=bigatt.npz", "hf-gpt2:config=big.json",
                 "hf-gpt2:config=odd.json", "python:factory.txt:f", "python:exits.py:zero", "python:exits.py:five",
                 "python:exits_on_import.py:f", "lstm:weights=elman.npz", "gru:weights=elman.npz",
                 "construct:idxl:gamma=1e-300", "construct:idxl:gamma=1e-30"]
#: output targets that are not regular files to write
HAZARD_TARGETS = ["fifo.html", "fifo.csv", "zero.csv", "/dev/full", "out.html/", "adir"]


def make_hazard_files(folder: Path) -> Path:
    """The files :data:`HAZARD_MODELS` and :data:`HAZARD_TARGETS` name: FIFOs, .npz files whose headers claim
    74.5 GiB over 8 bytes, GPT-2 configs too wide or of a width no multiple of the heads, factories that are
    not .py files or call sys.exit, an Elman weights file."""
    from commsim.core.precision import FixedPoint
    from protocols.models.attention import random_layer
    from protocols.models.trainable import random_model
    for name in ("fifo.npz", "fifo.json", "fifo.py", "fifo.pt", "fifo.html", "fifo.csv"):
        if not (folder / name).exists():
            os.mkfifo(folder / name)
    if not (folder / "zero.csv").is_symlink():
        (folder / "zero.csv").symlink_to("/dev/zero")
    (folder / "adir").mkdir(exist_ok=True)
    random_model("elman", 4, "8", vocab=6).save(str(folder / "elman.npz"))
    random_layer(FixedPoint.with_bits(8), vocab=6, positions=8).save(str(folder / "att.npz"))
    crafted_npz(folder / "bigelman.npz", folder / "elman.npz", "recurrent")
    crafted_npz(folder / "bigatt.npz", folder / "att.npz", "W_V")
    (folder / "big.json").write_text(json.dumps({"n_embd": 65536, "n_head": 8, "n_layer": 1}))
    (folder / "odd.json").write_text(json.dumps({"n_embd": 10, "n_head": 3, "n_layer": 1}))
    (folder / "factory.txt").write_text("def f():\n    return None\n")
    (folder / "exits.py").write_text("import sys\n\ndef zero():\n    sys.exit(0)\n\ndef five():\n    sys.exit(5)\n")
    (folder / "exits_on_import.py").write_text("import sys\nsys.exit(7)\n\ndef f():\n    return None\n")
    return folder


def run_one(argv: list[str]) -> dict:
    """One command line through ``commsim.cli.main``: exit code, output, time."""
    from commsim.cli import main
    out, err = io.StringIO(), io.StringIO()
    code: object = 0
    start = time.perf_counter()
    _arm()
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
        _disarm()
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

    def run(self, argv: list[str] | dict) -> dict:
        """The worker's result for one command line (or one API case, a dict: :func:`run_api`)."""
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
    signal.signal(signal.SIGPROF, _alarm)
    os.environ["COLUMNS"] = "100"
    import commsim.cli  # noqa: F401  (imported before the clock starts)
    real = sys.stdout
    for line in sys.stdin:
        case = json.loads(line)
        result = run_api(case) if isinstance(case, dict) else run_one(list(case))
        real.write(MARK + json.dumps(result) + "\n")
        real.flush()


if __name__ == "__main__":
    main()
