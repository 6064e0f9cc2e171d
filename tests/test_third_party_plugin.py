"""A third-party plugin, installed the way any package is (a dist-info with a ``commsim.plugins`` entry point),
registers a model kind, a simulator and a reduction from outside commsim -- two files for the simulator
(``counter.py`` holds the model and the simulator), one for the reduction -- and runs through ``run``,
``budget``, ``--audit`` and the engine's certificate search.  docs/EXTENDING.md walks through it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = Path(__file__).parent / "plugin_example"


def _commsim(*args: str) -> dict:
    """``commsim ARGS --json`` in a fresh process that sees the plugin's dist-info on its path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGIN), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "commsim", *args, "--json"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_entry_point_registers_the_plugin_and_list_shows_where_each_entry_comes_from():
    listed = _commsim("list")
    plugins = {kind: {e["name"]: e["plugin"] for e in listed[kind]} for kind in ("reductions", "models", "simulators")}
    assert plugins["reductions"]["eq-count"] == plugins["simulators"]["count-handoff"] == "toy_commsim:register"
    assert plugins["models"]["counter"] == "toy_commsim:register"


def test_run_audit_and_the_engines_certificate_search_take_the_plugin_as_they_take_the_papers():
    d = _commsim("run", "eq-count", "--n", "6", "--audit")
    assert (d["protocol"], d["bits_used"], d["lower_bound_bits"], d["budget_ok"]) == ("count-handoff", 3, 6, False)
    assert d["audited"] and d["protocol_matches_model"] and d["instances_run"] == 4096
    cert = d["certificate"]              # chosen by the engine from the one-way plan: pigeonhole
    assert cert["kind"] == "collision" and cert["verified"]
    assert cert["details"]["task_output"]["task"] == "equal halves"
    assert cert["details"]["model_input"].split()[-1].startswith("b")
    wide = _commsim("run", "eq-count", "--model", "counter:bits=6", "--n", "6")
    assert wide["bits_used"] == 6 and wide["budget_ok"] is True and wide["model_correct"] is False


def test_budget_plans_the_plugins_architecture_from_its_shape():
    d = _commsim("budget", "--arch", "counter", "--width", "3", "--precision", "1", "--task", "eq-count", "--n", "12")
    assert (d["protocol_bits"], d["lower_bound_bits"], d["max_n"]) == (3, 6, 6)


@pytest.mark.parametrize("module", ["counter.py", "reduction.py"])
def test_the_plugin_needs_no_engine_internals(module):
    """Only the front doors: the contract (commsim.contract) and the public package."""
    text = (PLUGIN / "toy_commsim" / module).read_text()
    imports = [line for line in text.splitlines() if line.startswith(("from commsim", "import commsim"))]
    assert imports and all(line.startswith(("from commsim import", "from commsim.contract import",
                                            "from commsim.theory.")) for line in imports), imports


def _load(module: str, monkeypatch):
    """A module of the toy plugin, loaded from its file (the plugin's directory stays off ``sys.path``)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(f"toy_file_{module[:-3]}", PLUGIN / "toy_commsim" / module)
    loaded = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, loaded)      # its dataclasses look their module up there
    spec.loader.exec_module(loaded)
    return loaded


def _code_lines(module: str) -> int:
    """The lines of a module that hold something (blank lines not counted)."""
    return sum(1 for line in (PLUGIN / "toy_commsim" / module).read_text().splitlines() if line.strip())


def test_the_plugin_states_a_model_kind_and_simulator_in_60_lines_and_a_reduction_in_40(monkeypatch):
    """The contract is small: a model kind and its simulator fit in 60 lines, a reduction in 40 -- the protocol
    stated once (``protocol``: no batch path, no transcript keys) and the bit count once (``plan``: run and
    budget both read it), the bound once (``bound``: at n for a run, at N for budget)."""
    assert _code_lines("counter.py") <= 60 and _code_lines("reduction.py") <= 40
    CountHandoff, EqByCount = _load("counter.py", monkeypatch).CountHandoff, _load("reduction.py", monkeypatch).EqByCount
    hooks = {name for name in vars(CountHandoff) if callable(vars(CountHandoff)[name])}
    assert hooks == {"accepts", "shape", "plan", "protocol", "direct_labels"}
    assert {name for name in vars(EqByCount) if callable(vars(EqByCount)[name])} == {
        "problem", "vocabulary", "encode", "decode", "split", "bound"}
