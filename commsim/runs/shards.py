"""Sharded, streaming exhaustive sweeps: every instance of a reduction, in bounded memory, on any executor.

An exhaustive run (``run --instances all``) covers the problem's instances in *rank* order: rank r is the
pair (Alice input r // |Bob inputs|, Bob input r % |Bob inputs|), the order of
:meth:`commsim.theory.problems.Problem.all_pairs`.  :func:`plan_shards` cuts the ranks into contiguous
:class:`Shard` s (plain, picklable values); :func:`run_shard` builds the instances of one shard chunk by chunk
(:func:`commsim.theory.ranks.pairs_at`: never the whole input space), runs each chunk through the pipeline's own stages
(:func:`commsim.runs.stages.evaluate`: encode, the simulator's sweep, the runner audit, decode) and keeps
only a :class:`~commsim.runs.tally.Tally` of counts, so a shard's memory is O(chunk) whatever n; :func:`merge_shards`
adds shard results up.  :func:`run_sharded` does all three with any ``map`` (the builtin, a process pool's, a
Dask client's; the results may come in any order): the result does not depend on the executor or on how the
ranks were cut.  :func:`stream_exhaustive` runs the shards on every core by default (:func:`sweep_workers`).
:func:`streamed_report` turns the merged result into the same :class:`~commsim.runs.report.Report` an
in-memory run gives; :func:`commsim.runs.run.run_reduction` takes this path for exhaustive runs
beyond :data:`~commsim.runs.stages.MAX_EXHAUSTIVE_INSTANCES` instances.

Certificate searches stream too: the pigeonhole search (:mod:`commsim.certify.pigeonhole`) and the rectangle
search (:mod:`commsim.certify.rectangle`) digest messages shard by shard
(:func:`commsim.core.digests.digest_shard`) and merge in two phases (:func:`commsim.core.digests.merge_digest_shards`).
"""
from __future__ import annotations

import functools
import os
import resource
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from commsim.core.errors import InputError
from commsim.core.limits import (MAX_LOCAL_STREAMED_INSTANCES, MAX_STREAMED_INSTANCES, check_memory, check_seed, check_size, show_bytes,
                                 show_size)
from commsim.runs.assemble import make_report
from commsim.runs.certificates import find_certificate
from commsim.contract import EvaluationSet, Reduction
from commsim.contract.simulator import run_batch
from commsim.runs.report import Report
from commsim.runs.stages import (
    BYTES_PER_POSITION,
    MAX_EXHAUSTIVE_INSTANCES,
    RUNNER_CHECKS,
    Prepared,
    check_run_size,
    evaluate,
    lower_bound,
    prepare,
)
from commsim.runs.tally import Tally, add_tallies, merge_tallies
from commsim.plugins import load_plugins
from commsim.theory.ranks import pairs_at

#: a shard's result: the tally of its ranks (:class:`commsim.runs.tally.Tally`)
ShardResult = Tally

#: instances per chunk of a shard (the unit of memory: a few dozen bytes per instance and input position)
DEFAULT_CHUNK = 1 << 20

#: bytes one chunk's arrays may take (a longer encoding gets a smaller chunk)
CHUNK_BYTES = 1 << 28

#: chunks per shard when neither the number of shards nor their size is given (few: many shards balance the
#: local worker processes of a sweep on every core)
CHUNKS_PER_SHARD = 2

#: exhaustive runs of at least this many instances use every core by default (:func:`sweep_workers`): the
#: streamed runs (more than :data:`~commsim.runs.stages.MAX_EXHAUSTIVE_INSTANCES`); below it, starting the
#: worker processes (about a second each) costs more than they save
PARALLEL_INSTANCES = 1 << 24


# ---- shards --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Shard:
    """Ranks ``start..stop-1`` of the exhaustive run of ``reduction`` on ``model`` at size ``n``, swept
    ``chunk`` instances at a time; the runner re-runs ``checks`` of them (seeded by ``seed`` and the index)."""

    reduction: str
    model: Any
    n: int
    index: int
    start: int
    stop: int
    chunk: int
    checks: int
    seed: int = 0
    audit: bool = False
    #: the simulator named for the run (None: the model's kind selects it, as ``prepare`` does)
    simulator: str | None = None

    @property
    def size(self) -> int:
        return self.stop - self.start


def _chunk_for(reduction: Reduction, n: int, chunk: int | None) -> int:
    """Instances per chunk: ``chunk`` (checked), else :data:`DEFAULT_CHUNK` shrunk to :data:`CHUNK_BYTES`."""
    positions = max(1, (reduction.length_scale or 1) * n + reduction.length_offset)
    if chunk is None:
        return max(1, min(DEFAULT_CHUNK, CHUNK_BYTES // (positions * BYTES_PER_POSITION)))
    chunk = check_size(chunk, "chunk", 1, 1 << 26, "a chunk's arrays are held in memory at once")
    check_memory(chunk * positions * BYTES_PER_POSITION, "chunk", f"a chunk of {show_size(chunk)} instances")
    return chunk


def plan_shards(reduction: str, model: Any = None, n: int | None = None, *, shards: int | None = None,
                shard_size: int | None = None, chunk: int | None = None, seed: int = 0,
                audit: bool = False, limit: int = MAX_STREAMED_INSTANCES, simulator: str | None = None) -> list[Shard]:
    """Cut the exhaustive run of ``reduction`` (an id) on ``model`` (a spec string, or a picklable model)
    at size ``n`` into contiguous shards by instance rank: ``shards`` of them, or shards of ``shard_size``
    instances (default: :data:`CHUNKS_PER_SHARD` chunks each).  Everything is checked before anything is
    built: n, the number of instances (at most ``limit``: :data:`~commsim.core.limits.MAX_STREAMED_INSTANCES`,
    or :data:`~commsim.core.limits.MAX_LOCAL_STREAMED_INSTANCES` for a sweep in one process), the
    chunk's memory.  The runner's :data:`~commsim.runs.stages.RUNNER_CHECKS` re-runs are spread over
    the shards (at least one each)."""
    red = load_plugins().get("reduction", reduction, param="reduction") if isinstance(reduction, str) else reduction
    n = red.default_n if n is None else check_run_size(red, n)
    check_seed(seed, "seed")
    problem = red.problem(n)
    total = problem.input_pairs
    if total > limit:
        where = "in one process" if limit < MAX_STREAMED_INSTANCES else "even sharded"
        raise InputError(f"instances: all {show_size(total)} instances of {problem.name} at n = {n} are too many "
                         f"to sweep {where} (at most {show_size(limit)}); give a number of instances to sample"
                         + (f", or shard the sweep over a cluster (commsim.runs.shards.run_sharded, up to "
                            f"{show_size(MAX_STREAMED_INSTANCES)})" if limit < MAX_STREAMED_INSTANCES else ""),
                         "instances")
    chunk = _chunk_for(red, n, chunk)
    step = problem.bob_input_count if problem.bob_input_count <= chunk else 1
    chunk -= chunk % step  # whole runs of one Alice input per chunk (her message is computed once per run)
    if shards is not None and shard_size is not None:
        raise InputError("shards: give the number of shards or their size, not both", "shards")
    if shards is not None:
        shards = check_size(shards, "shards", 1, 1 << 20, "each shard is one task", noun="number of shards")
        shard_size = -(-total // shards)
        shard_size += -shard_size % step  # whole Alice runs, and never more shards than asked for
    elif shard_size is not None:
        shard_size = check_size(shard_size, "shard_size", 1)
    else:
        shard_size = chunk * CHUNKS_PER_SHARD
    if shard_size >= step:
        shard_size -= shard_size % step
    cuts = list(range(0, total, shard_size)) + [total]
    count = len(cuts) - 1
    if count > 1 << 20:
        raise InputError(f"shard_size: {show_size(count)} shards are too many tasks (at most 2^20); give larger "
                         f"shards", "shard_size")
    per, extra = divmod(RUNNER_CHECKS, count)  # RUNNER_CHECKS in all, as an in-memory run
    rid = red.id
    return [Shard(rid, model, n, i, cuts[i], cuts[i + 1], chunk, per + (i < extra), seed, audit, simulator)
            for i in range(count)]


@functools.lru_cache(maxsize=4)
def _prepared(reduction: str, model: Any, n: int, simulator: str | None) -> Prepared:
    """One prepared setup per (reduction, model spec, n) per process (workers sweep many shards)."""
    return prepare(reduction, model, n, simulator=simulator)


def _setup(shard: Shard) -> Prepared:
    try:
        hash(shard.model)
    except TypeError:  # an unhashable model object: build it for this shard
        return prepare(shard.reduction, shard.model, shard.n, simulator=shard.simulator)
    return _prepared(shard.reduction, shard.model, shard.n, shard.simulator)


def peak_rss_bytes() -> int:
    """This process's peak resident memory so far (bytes)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def run_shard(shard: Shard, setup: Prepared | None = None) -> Tally:
    """Sweep one shard chunk by chunk through :func:`~commsim.runs.stages.evaluate` and keep its tally.

    Memory is one chunk's arrays; the runner re-runs ``shard.checks`` instances of the shard's first chunk."""
    began = time.perf_counter()
    setup = setup or _setup(shard)
    problem = setup.problem
    name, phrase = problem.all_set
    out = Tally(shard.start, shard.start, chunk=shard.chunk, name=name, described=phrase)
    for lo in range(shard.start, shard.stop, shard.chunk):
        hi = min(lo + shard.chunk, shard.stop)
        A, B = pairs_at(problem, lo, hi)
        checks = shard.checks if lo == shard.start else 0
        part = evaluate(setup, EvaluationSet(name, A, B, phrase), seed=shard.seed + shard.index, audit=shard.audit,
                        checks=checks, start=lo, chunk=shard.chunk).tally
        out = add_tallies(out, part)
        del A, B, part
    out.stop, out.shards = shard.stop, 1
    out.peak_rss_bytes = peak_rss_bytes()
    out.seconds = time.perf_counter() - began
    return out


def merged_details(setup: Prepared, merged: Tally) -> dict:
    """The details of a run added up over batches: a value every batch shares stays; an integer that is a
    count over instances is the sum over batches.  A count is an integer that differs between batches, or
    between the simulator's batch runs of the first k and the first 2k instances (a small probe)."""
    if merged.parts <= 1:
        return dict(merged.details)
    k = min(max(2, 2 * setup.problem.bob_input_count), max(1, merged.instances // 2))
    probes = [run_batch(setup.simulator, setup.model, setup.reduction.encode(setup.problem,
                                                                              *pairs_at(setup.problem, 0, m))).details
              for m in (k, 2 * k)]
    counts = {key for key in merged.detail_sums if probes[0].get(key) != probes[1].get(key)}
    out = {key: value for key, value in merged.details.items() if key not in counts}
    out.update({key: merged.detail_sums[key] for key in merged.detail_sums
                if key in counts or key not in merged.details})
    return out


def merge_shards(results: Iterable[Tally]) -> Tally:
    """The shard results as one (in rank order, whatever order they come in); the ranks must tile one range."""
    return merge_tallies(results)


def run_sharded(reduction: str, model: Any = None, n: int | None = None, *, map_fn: Callable = map,
                shards: int | None = None, shard_size: int | None = None, chunk: int | None = None, seed: int = 0,
                audit: bool = False, progress: Callable[[str, int, int], None] | None = None,
                limit: int | None = None, simulator: str | None = None) -> Tally:
    """:func:`plan_shards`, ``map_fn(run_shard, shards)`` (any map, its results in any order: the builtin, a
    process pool's, a Dask client's), :func:`merge_shards`.  ``limit``: the most instances (default
    :data:`~commsim.core.limits.MAX_LOCAL_STREAMED_INSTANCES` with the builtin ``map``, else
    :data:`~commsim.core.limits.MAX_STREAMED_INSTANCES`)."""
    if limit is None:
        limit = MAX_LOCAL_STREAMED_INSTANCES if map_fn is map else MAX_STREAMED_INSTANCES
    planned = plan_shards(reduction, model, n, shards=shards, shard_size=shard_size, chunk=chunk, seed=seed,
                          audit=audit, limit=limit, simulator=simulator)
    total = planned[-1].stop
    results = []
    for result in map_fn(run_shard, planned):
        results.append(result)
        if progress:
            progress("sweep (sharded)", sum(r.instances for r in results), total)
    return merge_shards(results)


# ---- the report of a streamed run ----------------------------------------------------------------------
def streamed_report(setup: Prepared, merged: Tally, *, seed: int = 0, audit: bool = False,
                    certify: bool = True, progress: Callable[[str, int, int], None] | None = None) -> Report:
    """The report of an exhaustive run from its merged tally: the same certificate stage and report builder as
    an in-memory run (:mod:`commsim.runs.certificates`, :func:`commsim.runs.assemble.make_report`)."""
    problem = setup.problem
    if merged.instances != problem.input_pairs:
        raise InputError(f"shards: the results cover {merged.instances} of the {problem.input_pairs} instances",
                         "shards")
    one = setup.reduction.encode(problem, *pairs_at(problem, merged.bits_rank, merged.bits_rank + 1))
    plan = setup.plan(one)
    bound = lower_bound(setup, one, plan)
    certificate, searched = find_certificate(setup, plan, [merged], bound, seed=seed, search=certify,
                                             progress=progress)
    details = merged_details(setup, merged)
    details["streamed"] = {"shards": merged.shards, "chunk": merged.chunk, "peak_rss_bytes": merged.peak_rss_bytes,
                           "peak_memory": show_bytes(merged.peak_rss_bytes), "shard_seconds": round(merged.seconds, 3),
                           "instances_per_shard_second": round(merged.instances / max(merged.seconds, 1e-9))}
    sample = pairs_at(problem, 0, min(problem.input_pairs, 1 << 12))   # the agreement's candidates: the first ranks
    return make_report(setup, plan, [merged], bound, certificate, searched, instances=problem.all_description,
                       seq_len=one.seq_len, details=details, agreement_sample=sample, audit=audit, seed=seed,
                       exhaustive=True)


def streams(setup: Prepared, instances: int | None) -> bool:
    """Does this run take the sharded, streaming path?  An exhaustive run over more than
    :data:`~commsim.runs.stages.MAX_EXHAUSTIVE_INSTANCES` instances of a reduction that judges the model
    on its instances alone (one that adds sets, :meth:`Reduction.evaluation_sets`, needs them all at once)."""
    return instances is None and setup.problem.input_pairs > MAX_EXHAUSTIVE_INSTANCES and \
        type(setup.reduction).evaluation_sets is Reduction.evaluation_sets


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask; the machine's count where there is none)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def sweep_workers(instances: int, workers: int | None = None) -> int:
    """Local worker processes for a streamed sweep of ``instances`` instances: ``workers`` when given (checked:
    at least 1, at most :data:`~commsim.core.executors.WORKERS_PER_CORE` per core and what the memory
    budget holds), else one per usable core when the run has at least :data:`PARALLEL_INSTANCES` instances,
    more than one core is usable and this process is not itself a worker process, else 1 (this process)."""
    from commsim.core.executors import check_workers
    if workers is not None:
        check_workers("processes", workers)
        return int(workers)
    import multiprocessing
    if multiprocessing.parent_process() is not None:    # already a worker (a sweep's cell): no workers of its own
        return 1
    cores = usable_cores()
    return cores if instances >= PARALLEL_INSTANCES and cores > 1 else 1


def stream_exhaustive(setup: Prepared, model: Any = None, *, seed: int = 0, audit: bool = False,
                      certify: bool = True, map_fn: Callable | None = None, workers: int | None = None,
                      shards: int | None = None, shard_size: int | None = None, chunk: int | None = None,
                      progress: Callable[[str, int, int], None] | None = None) -> Report:
    """The exhaustive run of a prepared setup, sharded and streamed: :func:`run_sharded` (the workers build the
    model from ``model``, the spec it was prepared from, or get the model object) then :func:`streamed_report`.

    Where the shards run: ``map_fn`` when given; else :func:`sweep_workers` local processes (``workers``, or
    one per core for a large run of a model given by its spec) -- this process when that is one.  The shards
    are the same whatever runs them, so the report is too."""
    if type(setup.reduction).evaluation_sets is not Reduction.evaluation_sets:
        raise InputError(f"instances: {setup.reduction.id} judges the model on more sets than its instances, which "
                         f"a streamed exhaustive run cannot build; give a number of instances to sample", "instances")
    spec = model if model is None or isinstance(model, str) else setup.model
    options = dict(shards=shards, shard_size=shard_size, chunk=chunk, seed=seed, audit=audit, progress=progress,
                   simulator=setup.asked, limit=MAX_LOCAL_STREAMED_INSTANCES if map_fn is None else None)
    if map_fn is not None and workers is not None:
        raise InputError("workers: give map_fn or workers, not both", "workers")
    count = 1
    # by default only a model given by its spec goes to other processes (a model object may not pickle)
    if map_fn is None and (workers is not None or spec is None or isinstance(spec, str)):
        count = sweep_workers(setup.problem.input_pairs, workers)
    if count > 1 and workers is None:   # a default never refuses: unless spawning is safe, this process sweeps
        from commsim.core.executors import check_main_guarded, spawn_is_safe
        try:
            check_main_guarded("processes")
            count = count if spawn_is_safe() else 1
        except InputError:
            count = 1
    if count > 1:
        from commsim.core.executors import make_executor
        with make_executor("processes", workers=count) as executor:
            merged = run_sharded(setup.reduction.id, spec, setup.problem.n,
                                 map_fn=lambda fn, items: (result for _, result in executor.as_completed(fn, items)),
                                 **options)
    else:
        merged = run_sharded(setup.reduction.id, spec, setup.problem.n, map_fn=map_fn or map, **options)
    return streamed_report(setup, merged, seed=seed, audit=audit, certify=certify, progress=progress)


def run_streamed(reduction: str | Reduction, model: Any = None, n: int | None = None, **options) -> Report:
    """:func:`stream_exhaustive` of ``prepare(reduction, model, n)`` (options: seed, audit, certify, map_fn,
    workers, shards, shard_size, chunk, progress)."""
    return stream_exhaustive(prepare(reduction, model, n), model, **options)
