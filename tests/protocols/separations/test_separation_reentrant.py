"""One registered separation run twice at once (two threads, as two Dask tasks in one worker would): each run keeps
its own settings -- the options, the instances asked for, the crossing advice -- because a run's state is a value
per call (:class:`protocols.separations.base.SeparationRun`), never an attribute of the shared object."""
from __future__ import annotations

import threading

from commsim.plugins import load_plugins

#: (keyword arguments of one run) for the two runs: other gamma, other instances_given
RUNS = ({"gamma": 0.25, "instances": 50, "instances_given": True},
        {"gamma": 0.5, "instances": 50, "instances_given": False})


def _data(result) -> dict:
    data = result.to_dict()
    del data["seconds"]
    return data


def test_two_interleaved_runs_of_one_separation_each_get_their_own_results():
    separation = load_plugins().get("separation", "idxl")
    alone = [_data(separation.run(8, seed=0, **kwargs)) for kwargs in RUNS]
    assert alone[0] != alone[1]                                   # the two settings give different results
    both_started = threading.Barrier(2, timeout=120)              # each waits, after its first row, for the other
    results: list = [None, None]
    errors: list = []

    def run(i: int) -> None:
        def progress(done: int, total: int) -> None:
            if done == 1:
                both_started.wait()

        try:
            results[i] = _data(separation.run(8, seed=0, progress=progress, **RUNS[i]))
        except BaseException as exc:  # noqa: BLE001 -- reported below, with the other thread released
            both_started.abort()
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert results == alone
    assert [row["instances"] for row in results[0]["rows"]] == ["50 sampled", "50 sampled"]   # given: capped
    assert [row["instances"] for row in results[1]["rows"]] == ["all", "all"]                # not given: all
    assert {row["gamma"] for row in results[1]["rows"]} == {0.5}
