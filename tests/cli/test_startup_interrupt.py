"""Ctrl-C while the command is still importing: one line, exit 130 -- never a traceback, never death by the
signal.  The command is held inside one of its heavy imports (``commsim.runs.stages``) by an import hook
that a ``sitecustomize`` on PYTHONPATH installs: the hook writes a file when the import starts and then waits
for a signal.  The test sends SIGINT once that file exists (an observed event, not a sleep)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from interrupts import ROOT, _as_a_foreground_job, under

HOOK = textwrap.dedent('''
    import os, signal, sys

    class HoldImport:
        """Hold the import of {module} until a signal arrives, after saying so in {ready}."""
        def find_spec(self, name, path=None, target=None):
            if name == {module!r}:
                with open({ready!r}, "w") as f:
                    f.write(str(os.getpid()))
                signal.pause()      # returns only if the handler returns (it should end the process)
            return None

    sys.meta_path.insert(0, HoldImport())
''')

SCRIPT = textwrap.dedent('''
    import re
    import sys
    from commsim.cli import main
    if __name__ == '__main__':
        sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
        sys.exit(main())
''')


def _wait_for(path, proc, limit: float = 120.0) -> None:
    """Until ``path`` exists (the hook reached the import), failing if the process ends first; the limit
    only bounds a failure."""
    end = time.monotonic() + limit
    while not path.exists():
        if proc.poll() is not None:
            pytest.fail(f"the command ended before reaching the import: {proc.communicate()}")
        if time.monotonic() > end:
            proc.kill()
            pytest.fail("the command never reached the held import")
        time.sleep(0.01)


@pytest.mark.parametrize("load", ["quiet", "loaded"])
@pytest.mark.parametrize("how", ["module", "script", "json"])
def test_ctrl_c_during_the_imports_is_one_line_and_exit_130(tmp_path, how, load):
    ready = tmp_path / "ready"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(HOOK.format(module="commsim.runs.stages", ready=str(ready)))
    (tmp_path / "commsim").write_text(SCRIPT)          # what pip writes as the console script
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hooks), str(ROOT)])}
    args = ["run", "index-idxl", "--n", "4"] + (["--json"] if how == "json" else [])
    command = [sys.executable, str(tmp_path / "commsim"), *args] if how == "script" else \
        [sys.executable, "-m", "commsim", *args]
    with under(load):
        proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True,
                                preexec_fn=_as_a_foreground_job)
        _wait_for(ready, proc)
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert err == "Error: interrupted\n", err[-2000:]
    if how == "json":
        assert '"exit_code": 130' in out and '"error": "interrupted"' in out
    else:
        assert out == ""


def test_the_guard_is_only_for_the_command():
    """Importing commsim as a library leaves SIGINT's handler alone; the command is recognised from the
    interpreter's own command line."""
    from commsim.startup import is_command

    assert is_command(["python", "-m", "commsim", "run"], "-m")
    assert is_command(["python", "-X", "importtime", "-mcommsim"], "-m")
    assert is_command(["python", "/venv/bin/commsim", "run"], "/venv/bin/commsim")
    assert not is_command(["python", "-m", "pytest", "-q"], "/venv/bin/pytest")
    assert not is_command(["python", "-c", "import commsim", "-m", "commsim"], "-c")
    assert not is_command(["python", "script.py", "-m", "commsim"], "script.py")
    code = ("import signal, commsim.cli; "
            "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=_as_a_foreground_job)
    assert done.stdout.strip() == "True", done.stderr
