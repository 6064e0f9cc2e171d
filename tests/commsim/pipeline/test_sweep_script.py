"""Issue 26.5: a sweep with local worker processes called at the top level of a script, outside
``if __name__ == "__main__":``, is refused with one InputError before any worker starts (each spawned worker
re-imports the script, which would start the sweep again in every worker)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CALL = ('commsim.sweep("index-idxl", "memorize:capacity=3", n=3, instances=4, certify=False, '
        'executor="{executor}", workers=1)')


def _run_script(tmp_path, body: str) -> subprocess.CompletedProcess:
    script = tmp_path / "my_sweep.py"
    script.write_text(textwrap.dedent(body), encoding="utf-8")
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)


@pytest.mark.parametrize("executor, body, line", [
    ("processes", "import commsim\nframe = {call}\nprint('rows', len(frame))\n", 2),
    ("dask", "import commsim\nframe = {call}\nprint('rows', len(frame))\n", 2),
    ("processes", "import commsim\n\n\ndef main():\n    return {call}\n\n\nmain()\n", 8),   # via a function
])
def test_an_unguarded_sweep_in_a_script_is_one_input_error(tmp_path, executor, body, line):
    if executor == "dask":
        pytest.importorskip("distributed")
    done = _run_script(tmp_path, body.format(call=CALL.format(executor=executor)))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("Traceback") == 1, done.stderr          # the script's own, no worker's
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("commsim.core.errors.InputError: executor=")
    assert f"re-import my_sweep.py, whose line {line} would start this call again" in last
    assert "if __name__ == \"__main__\":" in last
    assert "BrokenProcessPool" not in done.stderr and "bootstrapping" not in done.stderr


def test_a_guarded_sweep_in_a_script_runs(tmp_path):
    body = ("import commsim\n\n\ndef main():\n    frame = {call}\n    print('rows', len(frame), frame['error'].isna().all())\n"
            "\n\nif __name__ == \"__main__\":\n    main()\n")
    done = _run_script(tmp_path, body.format(call=CALL.format(executor="processes")))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "rows 1 True"


def test_the_check_passes_where_no_worker_reimports_the_script():
    """inprocess, a running Dask cluster, threads, and a caller that is not a script's top level (here pytest's
    guarded entry point) are never refused."""
    from commsim.core.executors import check_main_guarded
    for args in (("inprocess",), ("dask", "tcp://127.0.0.1:8786"), ("dask", None, False), ("processes",), ("dask",)):
        check_main_guarded(*args)
