"""One report builder: an in-memory run, a streamed run, a run on given instances (what separations use) and a
separation's row report the same fields for the same model and instances."""
from __future__ import annotations

import numpy as np
import pytest

from commsim import run_instances
from commsim.runs.run import run_reduction
from commsim.runs.shards import run_streamed
from commsim.plugins import load_plugins

#: what depends on how a path samples the runner's re-runs or names its instances, not on the result
PATH_KEYS = ("transcript", "runner_checked", "instances", "evaluation_sets", "accuracy_by_set", "details")


def _same_fields(a: dict, b: dict) -> None:
    for key in PATH_KEYS:
        a.pop(key), b.pop(key)
    assert a == b


@pytest.mark.parametrize("model", ["elman:width=2,precision=4", "memorize:capacity=5", "memorize"])
def test_in_memory_streamed_and_given_instances_report_the_same(model):
    problem = load_plugins().get("reduction", "index-idxl").problem(6)
    A, B = problem.all_pairs()
    memory = run_reduction("index-idxl", model, 6).to_dict()
    streamed = run_streamed("index-idxl", model, 6, shard_size=64, chunk=32).to_dict()
    given = run_instances("index-idxl", model, 6, A, B, certify=True, described=problem.all_set[1]).to_dict()
    assert [s["instances"] for s in given["evaluation_sets"]] == [len(A)]
    assert given["evaluation_sets"][0]["wrong"] == memory["evaluation_sets"][0]["wrong"]
    streamed["details"].pop("streamed")
    assert streamed["details"] == memory["details"]
    memory_copy = dict(memory)
    _same_fields(memory, streamed)
    _same_fields(memory_copy, given)


def test_a_separation_row_is_the_engines_report_on_its_inputs():
    from protocols.constructions.idxl import build_idxl
    from protocols.separations.base import SeparationRun, attention_check
    from protocols.separations.idxl import IdxlSeparation
    row = IdxlSeparation().row(8, SeparationRun(seed=0, instances=None))
    reduction = load_plugins().get("reduction", "index-idxl")
    A, B = reduction.problem(8).all_pairs()
    accuracy, exact, report = attention_check(reduction, build_idxl(8, seed=0), 8, A, B)
    direct = run_reduction("index-idxl", build_idxl(8, seed=0), 8)
    assert (row["accuracy"], row["protocol_exact"]) == (accuracy, exact) == (direct.model_accuracy,
                                                                           direct.protocol_matches_model)
    assert report.runner_checked == direct.runner_checked > 0 and report.bits_used == direct.bits_used
    assert np.isclose(accuracy, 1.0)
