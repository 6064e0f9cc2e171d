"""cc/tree take only problems some registered protocol is for; --plugin imports from the current directory."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from commsim.plugins import load_plugins
from tests.cli.cli_helpers import invoke, run_main


def _served() -> list[str]:
    return sorted({p for e in load_plugins().entries("cc-protocol") for p in e.obj.problems})


@pytest.mark.parametrize("command", ["cc", "tree"])
def test_cc_and_tree_offer_only_the_problems_a_protocol_is_for(command, capsys):
    assert "dyck22" not in _served()
    code, out, err = run_main(capsys, command, "dyck22", "--n", "4", "--protocol", "one-way")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "PROBLEM must be a problem a registered protocol is for (index, eq, disj), got 'dyck22'" in err
    help_text = " ".join(invoke(command, "--help").split())
    assert "dyck22" not in help_text
    listed = re.search(r"PROBLEM \(([a-z, ]+) or ([a-z]+):", help_text)
    assert listed and sorted(listed.group(1).split(", ") + [listed.group(2)]) == _served(), help_text


# ---- --plugin: imported from the current directory, as python: specs are -----------------------------------
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def plugin_sandbox(monkeypatch):
    """The registry, sys.path and sys.modules as they were before the test (a --plugin registers for good)."""
    from commsim import plugins
    reg = plugins.registry
    monkeypatch.setattr(reg, "_entries", {kind: dict(entries) for kind, entries in reg._entries.items()})
    monkeypatch.setattr(reg, "_loaded", set(reg._loaded))
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".")])
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("toy_commsim", "cwd_plugin_probe")):
            del sys.modules[name]


def test_plugin_module_in_the_current_directory_imports(plugin_sandbox, tmp_path, monkeypatch, capsys):
    (tmp_path / "cwd_plugin_probe.py").write_text(
        "def make(spec, **context):\n    raise NotImplementedError\n\n"
        "def register(registry):\n    registry.register('model', 'cwd-plugin-probe', make, 'a probe')\n")
    monkeypatch.chdir(tmp_path)
    assert str(tmp_path) not in sys.path
    code, out, err = run_main(capsys, "list", "--plugin", "cwd_plugin_probe", "--json")
    assert code == 0, err
    assert "cwd-plugin-probe" in [m["name"] for m in json.loads(out)["models"]]


def test_matrix_takes_a_plugin_model_and_reduction_from_the_plugin_s_directory(plugin_sandbox, monkeypatch,
                                                                                 capsys):
    """The example plugin, run from its own directory (where its entry-point metadata also is: the module and
    its entry point are one plugin, loaded once)."""
    monkeypatch.chdir(ROOT / "tests" / "plugin_example")
    code, out, err = run_main(capsys, "matrix", "--plugin", "toy_commsim", "--model", "counter",
                              "--reduction", "eq-count", "--n", "2", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert (d["model"], d["reduction"], d["cells"]) == ("counter", "eq-count", 16)
    assert d["task"]["rank_real"] == 4                                  # EQ_2: the 4 x 4 identity


def test_extending_guide_gives_plugin_as_a_command_s_option():
    text = (ROOT / "docs" / "EXTENDING.md").read_text()
    assert "`commsim --plugin" not in text and "commsim list\n--plugin MODULE" in text
