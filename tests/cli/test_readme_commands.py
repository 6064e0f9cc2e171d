"""The example commands of the README and of the manual it links to (``docs/guide/*.md``): every one parses against
the real CLI (its command, options and values), the quick ones run to the end in a scratch folder, and a block that
shows a command's output (its first line ``$ commsim ...``) shows what the command really prints -- so a renamed flag
or command, or a changed output, cannot leave the README or the manual wrong.

The synopsis block (``docs/guide/commands.md``, with ``[...]`` and placeholders) is not an example and is skipped;
commands that need a file the manual has the reader make first, a cluster, or minutes of work are parsed only.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import click
import pytest

from commsim.cli import cli
from commsim.cli.common import parse_instances
from commsim.core.limits import MAX_LOCAL_STREAMED_INSTANCES
from commsim.runs.shards import streams
from commsim.runs.stages import check_instances, check_run_size
from commsim.plugins import load_plugins

from .cli_helpers import run_main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs" / "guide").glob("*.md"))]     # the README and the manual it links to
BLOCK = re.compile(r"```[\w-]*\n(.*?)```", re.S)


def _examples() -> list[str]:
    """``commsim ...`` lines of the pages' code blocks (continuations joined, ``$`` and comments dropped)
    and their inline ``commsim ...`` code spans with arguments, without the synopsis' placeholders."""
    text = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    found = []
    for block in BLOCK.findall(text):
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
    assert len(EXAMPLES) >= 30 and {"tour.md", "real-models.md", "sweeps.md"} <= {p.name for p in PAGES}
    assert "commsim run dyck22-fooling --html report.html" in EXAMPLES
    assert "commsim run index-idxl --model python:examples.research_blocks:nanogpt --n 8 --audit" in EXAMPLES


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


def _run_arguments(command: str) -> dict:
    """The parameters ``commsim run`` parses from an example (its reduction, --n, --instances, ...)."""
    args = shlex.split(command)[1:]
    with click.Context(cli) as ctx:
        return cli.get_command(ctx, "run").make_context("run", args[1:], parent=ctx).params


RUNS = [c for c in EXAMPLES if c.startswith("commsim run ") and "--help" not in c]


@pytest.mark.parametrize("command", RUNS)
def test_every_run_example_has_instances_it_can_run(command):
    """A `commsim run` example without --instances (or with --instances all) runs every instance (unless its
    reduction declares a sample size): their number must be one `run` accepts -- judged by the run's own rule
    (stream or one batch) and limits, without building the model -- so an example cannot exit 2 on "too many
    instances"."""
    params = _run_arguments(command)
    red = load_plugins().get("reduction", params["reduction"], param="reduction")
    given = params["instances"]       # as `commsim run` reads it: --instances all is every instance too
    if (parse_instances(given) if given is not None else red.default_instances) is not None:
        return
    n = red.default_n if params["n"] is None else check_run_size(red, params["n"])
    problem = red.problem(n)
    if streams(SimpleNamespace(problem=problem, reduction=red), None):
        assert problem.input_pairs <= MAX_LOCAL_STREAMED_INSTANCES, f"{command}: give --instances"
    else:
        check_instances(problem, None, 0)


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
    assert command in EXAMPLES, "keep this list to commands the README or the manual shows"
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(capsys, shlex.split(command)[1:])
    assert code == status, err
    for produced in re.findall(r"--(?:html|out) (\S+)", command):
        assert (tmp_path / produced).stat().st_size > 0


def _shown_outputs() -> list[tuple[str, str]]:
    """(command, shown output) of every block whose first line is ``$ commsim ...``."""
    shown = []
    for page in PAGES:
        for block in BLOCK.findall(page.read_text(encoding="utf-8")):
            first, _, rest = block.partition("\n")
            if first.startswith("$ commsim "):
                shown.append((first[2:], rest))
    return shown


SHOWN = _shown_outputs()


def test_the_readme_shows_real_output():
    assert {"commsim run index-idxl", "commsim budget --arch rnn --width 128 --precision 64 --reduction index-idxl"} \
        <= {command for command, _ in SHOWN}


@pytest.mark.parametrize("command, shown", SHOWN, ids=[c for c, _ in SHOWN])
def test_a_shown_output_is_what_the_command_prints(command, shown, tmp_path):
    """The block is the command's output at 100 columns, or its beginning (an excerpt ends at a table's edge)."""
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "commsim", *shlex.split(command)[1:]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    printed = [line.rstrip() for line in done.stdout.splitlines()]
    lines = [line.rstrip() for line in shown.splitlines()]
    assert printed[:len(lines)] == lines
