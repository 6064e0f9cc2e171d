"""Issue 26.5: an embedded Dask cluster is closed cleanly -- its workers are given the time to stop, not killed in
their teardown -- and a Dask sweep's stderr holds no "Worker process still alive ... killing" (nor any other Dask
log line)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("distributed")
pytest.importorskip("pandas")

#: a worker whose close takes longer than the 4 s distributed gives a worker by default before killing it (what
#: torch's teardown takes on a loaded machine): the sweep's close must wait for it, not kill it
SCRIPT = """\
import time

import commsim
from distributed.diagnostics.plugin import WorkerPlugin
from commsim.core.executors import make_executor


class SlowTeardown(WorkerPlugin):
    def teardown(self, worker):
        time.sleep({delay})
        open("teardown-done", "w").close()               # reached only if the worker is not killed first


if __name__ == "__main__":
    with make_executor("dask", workers=1) as ex:
        ex.client.register_plugin(SlowTeardown())
        frame = commsim.sweep("index-idxl", "memorize:capacity=3", n=3, instances=4, certify=False, executor=ex)
    print("rows", len(frame), frame["error"].isna().all())
"""


def test_a_dask_sweep_closes_its_cluster_without_killing_a_worker(tmp_path):
    script = tmp_path / "dask_sweep.py"
    script.write_text(textwrap.dedent(SCRIPT.format(delay=4.5)), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "rows 1 True"
    assert "still alive" not in done.stderr and "killing" not in done.stderr, done.stderr
    assert "distributed." not in done.stderr, done.stderr            # no other shutdown noise either
    assert (tmp_path / "teardown-done").exists()                      # the worker stopped in its own time


@pytest.mark.parametrize("address", ["run", "tcp://127.0.0.1:1:2"])
def test_a_scheduler_that_cannot_be_reached_leaves_no_client_for_the_garbage_collector(address):
    """A failed ``Client(address)`` used to live on in reference cycles; when the garbage collector ran its
    ``__del__`` inside the next Client's start, both waited for distributed's class-wide LoopRunner lock: a sweep
    after a bad ``--scheduler`` hung (found by the fuzz test on a busy machine).  The failure is collected at once."""
    import gc

    from distributed import Client

    from commsim.core.errors import InputError
    from commsim.core.executors import make_executor

    enabled = gc.isenabled()
    gc.disable()                                  # only the executor's own collection may find the client
    try:
        with pytest.raises(InputError, match="cannot reach a Dask scheduler"):
            make_executor("dask", scheduler=address)
        assert not [o for o in gc.get_objects() if type(o) is Client]     # (isinstance would wake lazy modules)
    finally:
        if enabled:
            gc.enable()
