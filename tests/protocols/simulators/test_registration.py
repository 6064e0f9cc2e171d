"""The simulators register themselves, through their own entry point; the model modules register models only."""
from __future__ import annotations

from importlib.metadata import entry_points

from commsim.plugins import Registry, load_plugins
from protocols.models import attention_spec, recurrent_spec
from protocols.simulators import register
from protocols.simulators.attention import ATTENTION_EXCHANGE, PUBLIC_QUERY
from protocols.simulators.graph import GRAPH_EXCHANGE
from protocols.simulators.rnn_handoff import RNN_HANDOFF


def test_the_simulators_entry_point_is_installed():
    points = {ep.name: ep.value for ep in entry_points(group="commsim.plugins")}
    assert points.get("simulators") == "protocols.simulators:register"


def test_every_registered_simulator_comes_from_the_simulators_entry_point():
    entries = load_plugins().entries("simulator")
    assert {e.name: e.obj for e in entries} == {"rnn-handoff": RNN_HANDOFF, "attention-exchange": ATTENTION_EXCHANGE,
                                                "attention-public-query": PUBLIC_QUERY, "graph-exchange": GRAPH_EXCHANGE}
    assert [e.name for e in entries if e.obj.selectable] == ["attention-exchange", "graph-exchange", "rnn-handoff"]
    assert {e.plugin for e in entries} == {"protocols.simulators:register"}


def test_the_package_register_function_registers_exactly_the_simulators():
    registry = Registry()
    register(registry)
    assert registry.names("simulator") == ["attention-exchange", "attention-public-query", "graph-exchange",
                                               "rnn-handoff"]
    assert not any(registry.names(kind) for kind in ("model", "reduction", "cc-protocol", "topic", "separation"))


def test_model_spec_modules_register_no_simulator():
    registry = Registry()
    recurrent_spec.register(registry)
    attention_spec.register(registry)
    assert registry.names("simulator") == []
    assert {"elman", "lstm", "gru", "dfa:dyck22", "memorize", "attention", "graph-attention"} <= set(registry.names("model"))


def test_declared_properties_of_the_two_simulators():
    """What the bounds depend on: Theorem 2 needs a contiguous prefix and is one-way there; Theorem 4
    runs on any partition and is one-way only when Alice holds just the query ([SHT23])."""
    assert RNN_HANDOFF.split_direction("contiguous prefix") == "one-way"
    assert RNN_HANDOFF.split_direction("odd-even") is None and RNN_HANDOFF.split_direction("query only") is None
    assert ATTENTION_EXCHANGE.split_direction("contiguous prefix") == "two-way"
    assert ATTENTION_EXCHANGE.split_direction("odd-even") == "two-way"
    assert ATTENTION_EXCHANGE.split_direction("query only") == "one-way"
    assert "heads" not in RNN_HANDOFF.budget_parameters and "heads" in ATTENTION_EXCHANGE.budget_parameters
