"""The README's example commands: every one parses against the real CLI (its command, options and values), and
the quick ones run to the end in a scratch folder -- so a renamed flag or command cannot leave the README wrong.

The synopsis block (``## Commands``, with ``[...]`` and placeholders) is not an example and is skipped; commands
that need a file the README has the reader make first, a cluster, or minutes of work are parsed only.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from commsim.cli import cli

from .cli_helpers import run_main

README = Path(__file__).resolve().parents[2] / "README.md"


def _examples() -> list[str]:
    """``commsim ...`` lines of the README's code blocks (continuations joined, ``$`` and comments dropped)
    and its inline ``commsim ...`` code spans with arguments, without the synopsis' placeholders."""
    text = README.read_text(encoding="utf-8")
    found = []
    for block in re.findall(r"```[\w-]*\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"^\$\s*", "", line.strip())
            if line.startswith("commsim "):
                found.append(re.split(r"\s+#\s", line)[0].strip())
    # inline spans: "`commsim run`" names a command; one with arguments is an example
    found += [c for c in re.findall(r"`(commsim [^`\n]+)`", text) if len(c.split()) > 2]
    placeholder = re.compile(r"\[|\||\.\.\.|\b[A-Z]{2,}\b")
    return sorted({c for c in found if not placeholder.search(c.replace("--n", ""))})


EXAMPLES = _examples()


def test_the_readme_has_examples_to_check():
    assert len(EXAMPLES) >= 20
    assert "commsim run dyck22-fooling --html report.html" in EXAMPLES


@pytest.mark.parametrize("command", EXAMPLES)
def test_every_readme_example_parses(command):
    args = shlex.split(command)[1:]
    if args[0].startswith("-"):                    # a group option such as --version
        assert args[0] in {opt for p in cli.params for opt in p.opts}
        return
    with click.Context(cli) as ctx:
        sub = cli.get_command(ctx, args[0])
        assert sub is not None, f"no command {args[0]!r}"
        try:
            sub.make_context(args[0], args[1:], parent=ctx)     # options, values and their types
        except click.exceptions.Exit as done:                     # --help and --list end parsing on purpose
            assert done.exit_code == 0


QUICK = [
    ("commsim --version", 0),
    ("commsim budget --arch rnn --width 128 --precision 64 --reduction index-idxl", 0),
    ("commsim run dyck22-fooling --html report.html", 0),
    ("commsim teach attention-protocol --format html --out notes.html", 0),
    ("commsim teach attention-dyck --format markdown --out dyck.md", 0),
    ("commsim automaton dyck22 --n 8", 0),
    ("commsim teach --list", 0),
    ("commsim fooling dyck22 --n 1000 --json", 0),
]


@pytest.mark.parametrize("command, status", QUICK)
def test_quick_readme_examples_run(command, status, capsys, tmp_path, monkeypatch):
    assert command in EXAMPLES, "keep this list to commands the README shows"
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(capsys, shlex.split(command)[1:])
    assert code == status, err
    for produced in re.findall(r"--(?:html|out) (\S+)", command):
        assert (tmp_path / produced).stat().st_size > 0
