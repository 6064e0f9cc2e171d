"""cc/tree take only problems some registered protocol is for; --plugin imports from the current directory."""
from __future__ import annotations

import re

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
