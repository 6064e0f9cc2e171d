"""`commsim run --help`'s --instances default says exactly when a run samples instead of running every instance:
the reductions that declare their own sample size, and the one that needs every instance in one batch (it judges
the model on added sets, so it never streams), are named -- so a new such reduction cannot leave the help wrong."""
from __future__ import annotations

from commsim.cli import cli
from commsim.contract import Reduction
from commsim.plugins import load_plugins


def _instances_help() -> str:
    run = cli.commands["run"]
    return " ".join(next(p for p in run.params if p.name == "instances").help.split())


def test_the_instances_help_names_every_reduction_that_samples_by_default():
    registry = load_plugins()
    reductions = [registry.get("reduction", name) for name in registry.names("reduction")]
    text = _instances_help()
    sampling = {r.id: r.default_instances for r in reductions if r.default_instances is not None}
    assert sampling, "no reduction declares a sample size: say so in the help"
    for rid, size in sampling.items():
        assert rid in text and f"{size} sampled" in text, rid
    one_batch = {r.id for r in reductions if type(r).evaluation_sets is not Reduction.evaluation_sets}
    assert one_batch and all(rid in text for rid in one_batch), one_batch
