"""docs/guide/commands.md names what `commsim list` lists: every reduction, every model kind, every separation
task, and `run --json`'s verdict as the object it is -- so a new plugin or a changed key cannot leave the page
short or wrong."""
from __future__ import annotations

import re
from pathlib import Path

from commsim.runs.verdict import OUTCOMES, Verdict
from commsim.plugins import Registry

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "commands.md"


def _section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    return re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M).group(1)


def installed() -> Registry:
    """The installed plugins alone: a fresh registry, so a test plugin another test loaded into the process's
    registry (tests/cli/verdict_plugin.py) is not taken for a built-in the page must name."""
    registry = Registry()
    registry.load_entry_points()
    return registry


def _spans(text: str) -> set[str]:
    return set(re.findall(r"`([^`]+)`", text))


def test_every_reduction_is_listed():
    assert set(installed().names("reduction")) <= _spans(_section("Reductions"))


def test_every_model_kind_is_listed():
    """A kind is named as itself or as its spec's start (`memorize[:capacity=K]`, `python:MODULE:FACTORY`)."""
    spans = _spans(_section("Models"))
    missing = [kind for kind in installed().names("model")
               if not any(span == kind or re.match(rf"{re.escape(kind)}[:\[]", span) for span in spans)]
    assert not missing, missing


def test_every_separation_task_is_in_the_synopsis():
    synopsis = re.search(r"^commsim separate .*?(?=^commsim teach )", PAGE.read_text(encoding="utf-8"), re.S | re.M)
    tasks = set(re.findall(r"[\w-]+", synopsis.group(0).split("both sides of a separation:")[1]))
    assert set(installed().names("separation")) <= tasks


def test_the_verdict_is_documented_as_the_object_run_json_prints():
    text = " ".join(_section("Conventions: positions, JSON, exit statuses").split())
    keys = Verdict(OUTCOMES[0], "").to_dict().keys()
    assert "{" + ", ".join(f'"{key}": ...' for key in keys) + "}" in text
    assert all(f"`{outcome}`" in text for outcome in OUTCOMES)
