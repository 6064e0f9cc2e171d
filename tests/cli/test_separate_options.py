"""``commsim separate`` builds a flag from every option a separation declares (its type, help and check): a
separation from a ``--plugin`` module gets its own flags, checked as it says, with no change to the command."""
from __future__ import annotations

import json
import sys

import pytest
from cli_helpers import run_main

PROBE = '''
from commsim.contract.options import Option
from protocols.separations.base import Separation, SeparationResult

DEPTH = Option("depth", int, "How many steps a row of the probe takes.", default=1, metavar="STEPS",
               check=lambda value: "" if value >= 1 else f"must be at least 1, got {value}")


class Probe(Separation):
    name = "option-probe"
    description = "a separation that declares one option"
    options = (DEPTH,)
    samples = False

    def row(self, N, run, *, depth=DEPTH.default):
        return {"N": N, "depth": depth, "seed": run.seed, "verified": True}

    def result(self, n, rows, run):
        return SeparationResult("option-probe", "probe", "a claim", n,
                                {"arch": "a", "source": "s", "formula": "f", "verdict": "at N = {N}: depth {depth}"},
                                {"arch": "b", "source": "s", "formula": "f"},
                                [{"key": "N", "label": "N"}, {"key": "depth", "label": "depth"}], rows,
                                {"x": "N", "series": [], "ylabel": "y"})


def register(registry):
    registry.register("separation", Probe.name, Probe(), Probe.description)
'''


@pytest.fixture
def probe(monkeypatch, tmp_path):
    """The probe plugin in the current directory; the registry, sys.path and sys.modules restored after."""
    from commsim import plugins
    reg = plugins.registry
    monkeypatch.setattr(reg, "_entries", {kind: dict(entries) for kind, entries in reg._entries.items()})
    monkeypatch.setattr(reg, "_loaded", set(reg._loaded))
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".")])
    (tmp_path / "separate_option_probe.py").write_text(PROBE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    yield ["--plugin", "separate_option_probe"]
    sys.modules.pop("separate_option_probe", None)


def test_a_plugins_declared_option_is_a_flag_with_its_value(probe, capsys):
    code, out, err = run_main(capsys, "separate", "option-probe", "--n", "4", "--depth", "3", *probe, "--json")
    assert code == 0, err
    assert [(row["N"], row["depth"]) for row in json.loads(out)["rows"]] == [(2, 3), (4, 3)]
    code, out, err = run_main(capsys, "separate", "option-probe", "--n", "4", *probe, "--json")
    assert code == 0, err
    assert {row["depth"] for row in json.loads(out)["rows"]} == {1}           # not given: the declared default


@pytest.mark.parametrize("args, message", [
    (("option-probe", "--n", "4", "--depth", "0"), "--depth must be at least 1, got 0"),       # its own check
    (("idxl", "--n", "8", "--depth", "2"), "--depth does not apply to idxl"),                  # not idxl's option
    (("option-probe", "--n", "4", "--gamma", "0.5"), "--gamma does not apply to option-probe"),
    (("option-probe", "--n", "4", "--depth", "deep"), "'deep' is not a valid integer"),        # its type
])
def test_a_plugins_option_is_checked_as_it_declares(probe, capsys, args, message):
    code, out, err = run_main(capsys, "separate", *args, *probe)
    assert code == 2, (out, err)
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_the_help_shows_a_plugins_option_with_its_value_name_and_help(probe, capsys):
    code, out, _ = run_main(capsys, "separate", "--help", *probe)
    assert code == 0
    text = " ".join(out.split())
    assert "--depth STEPS How many steps a row of the probe takes." in text
    assert text.index("--gamma FLOAT") < text.index("--depth STEPS") < text.index("--html FILE")
