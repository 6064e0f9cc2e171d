"""Where a sweep's work runs: in this process, in local processes, or on a Dask cluster.

:func:`make_executor` returns an :class:`Executor`, a context manager with

* ``map(fn, items)`` -- the results in the order of ``items`` (what a sharded search's ``map_fn`` takes);
* ``as_completed(fn, items)`` -- ``(index, result)`` pairs as the work finishes (progress, saving as it goes).

``fn`` and the items must pickle for the ``processes`` and ``dask`` executors (a module-level function, a
``functools.partial`` of one).  Nothing here schedules or transports work itself: processes are a
:class:`concurrent.futures.ProcessPoolExecutor` (spawned: no fork of a threaded parent), Dask is
``distributed.Client`` -- on an embedded ``LocalCluster`` (no dashboard, one thread per worker) or, given
``scheduler="tcp://host:port"``, on a cluster that is already running (started with ``dask scheduler`` /
``dask worker`` by hand or by ``dask-jobqueue`` on SLURM/PBS).  An exception raised by ``fn`` reaches the
caller unchanged; leaving the ``with`` block (also by Ctrl-C) cancels what has not run and shuts down what
the executor started -- never a cluster it was only given the address of.
"""
from __future__ import annotations

import contextlib
import gc
import logging
import os
import sys
import threading
import warnings
from typing import Any, Callable, Iterable, Iterator

from commsim.core.errors import InputError
from commsim.core.interrupts import interrupts_held, on_interrupt, worker_ignores_interrupts
from commsim.core.limits import check_memory, check_size, show_bytes

#: the executors :func:`make_executor` knows
EXECUTORS = ("inprocess", "processes", "dask")

#: the most local workers one executor starts
MAX_WORKERS = 1024

#: the memory one local worker takes once it has run a cell, rounded up from what was measured (peak RSS of
#: a small index-idxl cell: 45 MB for a spawned process; 71 MB for a Dask worker, about 110 MB with its nanny)
WORKER_BYTES = {"processes": 64 * 2**20, "dask": 128 * 2**20}

#: the most local workers per CPU core: more only share the cores (every cell is CPU-bound)
WORKERS_PER_CORE = 4


#: how often (seconds) a worker looks whether the process that started it is still alive
PARENT_CHECK_SECONDS = 0.5


def start_worker(parent: int) -> None:
    """A local worker's first act: Ctrl-C is its parent's to handle (:func:`worker_ignores_interrupts`), and a
    daemon thread ends the worker as soon as its parent is gone -- killed with SIGKILL, it cannot stop its
    workers itself, and a worker left running a cell would hold its memory for as long as the cell takes."""
    worker_ignores_interrupts()
    threading.Thread(target=_exit_with_parent, args=(parent,), name="commsim-parent-watch", daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    """Wait until this process's parent is no longer ``parent`` (it died: the process was handed to another),
    then end this process at once."""
    import time
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(70)


class Executor:
    """Runs ``fn`` over items; use as a context manager (``with make_executor(...) as ex: ex.map(f, xs)``)."""

    name = "executor"
    workers = 1

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Release what this executor started (processes, a local cluster)."""

    def as_completed(self, fn: Callable, items: Iterable) -> Iterator[tuple[int, Any]]:
        """``(index, fn(item))`` for every item, in the order the work finishes."""
        raise NotImplementedError

    def map(self, fn: Callable, items: Iterable) -> list:
        """``[fn(item) for item in items]``, computed by this executor, in the order of ``items``."""
        items = list(items)
        results: list = [None] * len(items)
        for index, result in self.as_completed(fn, items):
            results[index] = result
        return results

    def describe(self) -> str:
        """One line: which executor, how many workers."""
        return f"{self.name} ({self.workers} worker{'s' if self.workers != 1 else ''})"


class InProcess(Executor):
    """Everything in this process, one item after the other (the default; no pickling)."""

    name = "inprocess"

    def as_completed(self, fn, items):
        for index, item in enumerate(items):
            yield index, fn(item)


class Processes(Executor):
    """Local worker processes (``concurrent.futures.ProcessPoolExecutor``, spawn start method)."""

    name = "processes"

    def __init__(self, workers: int | None = None):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        self.workers = workers or os.cpu_count() or 1
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=start_worker, initargs=(os.getpid(),))
        self._failed = False

    def as_completed(self, fn, items):
        from concurrent.futures import as_completed
        with interrupts_held():   # submit starts the workers (and the pool's manager thread): Ctrl-C held
            futures = {self._pool.submit(fn, item): index for index, item in enumerate(items)}
        try:
            for future in as_completed(futures):
                yield futures[future], future.result()
        except BaseException:
            self._failed = True
            raise
        finally:
            for future in futures:
                future.cancel()

    def __exit__(self, kind, value, traceback) -> None:
        self._failed = self._failed or kind is not None
        self.close()

    def close(self):
        """Wait for the workers -- or, after an error or Ctrl-C, stop the ones still running a task."""
        if not self._failed:
            self._pool.shutdown(wait=True, cancel_futures=True)
            return
        workers = dict(getattr(self._pool, "_processes", None) or {})   # the pool's own processes, by pid
        self._pool.shutdown(wait=False, cancel_futures=True)
        for process in workers.values():
            if process.is_alive():
                process.terminate()
        for process in workers.values():
            process.join(timeout=5)


class Dask(Executor):
    """A ``distributed.Client``: on an embedded ``LocalCluster`` (``workers`` processes, one thread each, or
    threads in this process with ``processes=False``), or on the scheduler at ``scheduler``
    (``tcp://host:port``; also a running ``LocalCluster`` or ``Client`` object)."""

    name = "dask"

    def __init__(self, scheduler=None, workers: int | None = None, processes: bool = True):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise InputError('the dask executor needs dask.distributed: pip install "commsim[sweep]"',
                             "executor") from None
        self._cluster = self.client = None
        self._own_client, self._failed = True, False
        self._own_processes = scheduler is None and processes   # worker processes this executor started
        self._logs = _DaskLogs()
        if scheduler is None:
            # no dashboard; the scheduler's small HTTP server (health, metrics) on a free local port.  The
            # worker processes start with Ctrl-C held (commsim.core.interrupts): it is this process's to handle
            # -- it cancels the work and closes the cluster -- not theirs to die of with a traceback.  Held,
            # not ignored: a Ctrl-C during the start-up is raised right after it, and the cluster closed
            try:
                with interrupts_held(), _no_slow_scratch_warning():
                    self._cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                                 processes=processes, dashboard_address=None,
                                                 scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
                    self.client = Client(self._cluster)
            except BaseException:
                self._failed = True
                self.close()
                raise
            self.where = "embedded LocalCluster"
        elif isinstance(scheduler, Client):
            self.client, self._own_client = scheduler, False
            self.where = f"client of {scheduler.scheduler.address}"
        else:
            address = getattr(scheduler, "scheduler_address", scheduler)
            if not isinstance(address, str) or not address.strip():
                raise InputError(f"scheduler must be an address such as tcp://host:8786, got {scheduler!r}",
                                 "scheduler")
            try:
                self.client = Client(address.strip(), timeout="10s")
                problem = None
            except Exception as exc:  # an address that does not parse, resolve or answer: the caller's to fix
                problem = f"{type(exc).__name__}: {exc}"
            if problem is not None:
                # the half-made Client lives on in the error's reference cycles; its __del__ closes its event loop
                # under distributed's class-wide LoopRunner lock, and run by the garbage collector inside the next
                # Client's start (which holds that lock) it deadlocks.  So it is collected here, holding nothing.
                gc.collect()
                raise InputError(f"scheduler: cannot reach a Dask scheduler at {address.strip()!r} ({problem})",
                                 "scheduler")
            self.where = f"scheduler {address.strip()}"
        self.workers = len(self.client.scheduler_info(n_workers=-1)["workers"])

    def as_completed(self, fn, items):
        from distributed import as_completed
        # from the moment of a Ctrl-C Dask's loggers are off: its own reaction to an interrupted wait (a
        # callback that fails in the client's event loop) is not the user's to read
        with on_interrupt(self._logs.silence):
            futures = self.client.map(fn, list(items), pure=False)
            index = {future.key: i for i, future in enumerate(futures)}
            try:
                for future in as_completed(futures):
                    yield index[future.key], future.result()
            except BaseException:
                self._failed = True
                raise
            finally:
                self.client.cancel([f for f in futures if not f.done()])

    def describe(self) -> str:
        return f"dask ({self.workers} worker{'s' if self.workers != 1 else ''}, {self.where})"

    def __exit__(self, kind, value, traceback) -> None:
        self._failed = self._failed or kind is not None
        self.close()

    def close(self):
        """Close the client, then the cluster this executor started: its workers first, each given
        :data:`WORKER_CLOSE_SECONDS` to stop (never killed in the middle of its teardown: no "still alive ...
        killing").  Quietly: once the work is over, what Dask says while an embedded cluster stops (on a loaded
        machine, a worker's heartbeat that meets the closing scheduler) is not the user's to read; after an error
        or Ctrl-C -- the caller reports it in one line -- neither is what it adds while it stops workers in the
        middle of a task (a warning per cancelled task, a closed connection), from any cluster."""
        try:
            if self._failed or self._cluster is not None:
                self._logs.silence()
                if self._own_processes and self.client is not None:
                    _silence_workers(self.client)
            if self._own_client and self.client is not None:
                self.client.close()
            if self._cluster is not None:
                try:
                    if not self._failed:                 # the work done: the workers stop in their own time
                        _stop_workers(self._cluster, WORKER_CLOSE_SECONDS)
                finally:
                    self._cluster.close()
        finally:
            self._logs.restore()


#: how long an embedded cluster's worker is given to stop after its work is done before it is killed:
#: distributed's own close gives it 4 s, which a worker that imported torch can take on a loaded machine, and
#: then warns "Worker process still alive after 4.0 seconds, killing"
WORKER_CLOSE_SECONDS = 60.0


def _stop_workers(cluster, timeout: float) -> None:
    """Close the workers (nannies) of an embedded ``cluster`` -- its work done, the client closed -- giving each
    ``timeout`` seconds to stop before it is killed; the cluster's own close then finds them stopped."""
    import asyncio

    async def stop():
        await asyncio.gather(*(worker.close(timeout=timeout) for worker in list(cluster.workers.values())))

    cluster.sync(stop)


#: what Dask warns when making a server's scratch directory takes over a second: on a busy machine too, not
#: only on a network file system; an embedded cluster's directory is local, and the warning is only noise
_SLOW_SCRATCH = "Creating scratch directories is taking a surprisingly long time"


@contextlib.contextmanager
def _no_slow_scratch_warning():
    """While an embedded cluster starts: no :data:`_SLOW_SCRATCH` warning from the scheduler and nannies in
    this process, nor from the worker processes (a warnings filter in the environment they start with; the
    nannies put it into this process's environment to pass it on, and it is taken out again)."""
    import dask
    before = os.environ.get("PYTHONWARNINGS")
    try:
        with warnings.catch_warnings(), dask.config.set({"distributed.nanny.pre-spawn-environ.PYTHONWARNINGS":
                                                         f"ignore:{_SLOW_SCRATCH}:UserWarning"}):
            warnings.filterwarnings("ignore", message=_SLOW_SCRATCH, category=UserWarning)
            yield
    finally:
        if before is None:
            os.environ.pop("PYTHONWARNINGS", None)
        else:
            os.environ["PYTHONWARNINGS"] = before


def _quiet_worker() -> None:
    """On a worker process about to be stopped: its stdout and stderr go to the null device."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                stream.flush()
                os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def _silence_workers(client, timeout: float = 10.0) -> None:
    """:func:`_quiet_worker` on every worker of ``client`` -- processes this executor started, never a
    cluster's it was given -- waiting at most ``timeout`` seconds (a worker that does not answer is stopped
    by the cluster's close all the same)."""
    thread = threading.Thread(target=client.run, args=(_quiet_worker,), kwargs={"on_error": "ignore"},
                              daemon=True, name="commsim-quiet-workers")
    thread.start()
    thread.join(timeout)


class _DaskLogs:
    """The loggers of Dask (and of tornado, its event loop) in this process -- the client's, and the
    scheduler's and nannies' of an embedded cluster -- switched off after an error or Ctrl-C and back on as
    they were once the executor is closed."""

    NAMES = ("distributed", "tornado")

    def __init__(self):
        self._before: dict[str, bool] | None = None

    def silence(self) -> None:
        if self._before is not None:
            return
        names = [name for name in (*self.NAMES, *list(logging.root.manager.loggerDict))
                 if name.split(".")[0] in self.NAMES]
        self._before = {name: logging.getLogger(name).disabled for name in names}
        for name in names:
            logging.getLogger(name).disabled = True

    def restore(self) -> None:
        for name, was in (self._before or {}).items():
            logging.getLogger(name).disabled = was
        self._before = None


def check_workers(kind: str, workers: int | None) -> None:
    """Refuse (an InputError naming ``workers``), before anything starts, more local workers than the memory
    budget holds (:data:`WORKER_BYTES` each, :func:`~commsim.core.limits.check_memory`) or than
    :data:`WORKERS_PER_CORE` per CPU core this process may use; None (one per core) always passes."""
    if workers is None:
        return
    check_size(workers, "workers", 1, MAX_WORKERS, why="local workers on one machine")
    if kind not in WORKER_BYTES:
        return
    what = f"{workers} {'worker processes' if kind == 'processes' else 'Dask workers'}"
    check_memory(workers * WORKER_BYTES[kind], "workers", f"{what} (about {show_bytes(WORKER_BYTES[kind])} each)")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if workers > WORKERS_PER_CORE * cores:
        raise InputError(f"workers = {workers}: more than {WORKERS_PER_CORE} per core ({cores} core"
                         f"{'s' if cores != 1 else ''} here), and every cell is CPU-bound; give at most "
                         f"{WORKERS_PER_CORE * cores}", "workers")


def _is_main_guard(test) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    import ast
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = {ast.dump(side) for side in (test.left, test.comparators[0])}
    return sides == {ast.dump(ast.Name("__name__", ast.Load())), ast.dump(ast.Constant("__main__"))}


def spawn_is_safe() -> bool:
    """May a default start local worker processes (each re-imports ``__main__``)?  Yes when ``__main__`` has no
    file (an interactive session, ``python -c``) or its file guards its work with ``if __name__ == "__main__":``
    (a script that does not might start its work again in every worker: a default then stays in this process)."""
    import ast
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    if path is None:
        return True
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
    except (OSError, SyntaxError, ValueError):
        return False
    return any(isinstance(node, ast.If) and _is_main_guard(node.test) for node in ast.walk(tree))


def check_main_guarded(kind: str, scheduler=None, processes: bool = True) -> None:
    """Refuse (an InputError naming ``executor``), before any process starts, an executor that starts local
    worker processes (``processes``, ``dask`` without a ``scheduler``) when it is called from the top level of a
    script outside ``if __name__ == "__main__":`` -- each spawned worker re-imports the script, which would
    start the call again in every worker (the workers die bootstrapping and the call fails with their
    tracebacks).  Nothing is refused when the script's call site cannot be found or read (a notebook, exec)."""
    if kind not in ("processes", "dask") or (kind == "dask" and (scheduler is not None or not processes)):
        return
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path is None:
        return
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_globals is vars(main) and frame.f_code.co_name == "<module>"):
        frame = frame.f_back
    if frame is None or os.path.abspath(frame.f_code.co_filename) != os.path.abspath(path):
        return
    import ast
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
    except (OSError, SyntaxError, ValueError):
        return
    line = frame.f_lineno
    if any(isinstance(node, ast.If) and _is_main_guard(node.test) and node.lineno <= line <= node.end_lineno
           for node in ast.walk(tree)):
        return
    raise InputError(f"executor={kind!r} starts worker processes that re-import {os.path.basename(path)}, "
                     f"whose line {line} would start this call again in every worker: put the call under "
                     f"'if __name__ == \"__main__\":'", "executor")


def make_executor(kind: str = "inprocess", scheduler=None, workers: int | None = None, *,
                  processes: bool = True) -> Executor:
    """An executor by name: ``inprocess`` (default), ``processes`` (``workers`` local processes, default one
    per core), ``dask`` (an embedded ``LocalCluster`` of ``workers`` workers -- ``processes=False`` runs
    them as threads of this process -- or the running cluster at ``scheduler``)."""
    if kind not in EXECUTORS:
        raise InputError(f"executor must be one of {', '.join(EXECUTORS)}, got {kind!r}", "executor")
    check_workers(kind, workers)
    check_main_guarded(kind, scheduler, processes)
    if scheduler is not None and kind != "dask":
        raise InputError(f"scheduler is a Dask scheduler's address: use it with the dask executor, not {kind!r}",
                         "scheduler")
    if kind == "inprocess":
        if workers not in (None, 1):
            raise InputError("workers: the inprocess executor has one worker; use processes or dask for more",
                             "workers")
        return InProcess()
    if kind == "processes":
        return Processes(workers)
    if scheduler is not None and workers is not None:
        raise InputError("workers: a running Dask cluster has its own workers; give either scheduler or workers",
                         "workers")
    return Dask(scheduler, workers, processes)
