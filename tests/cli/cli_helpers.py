"""Helpers the CLI tests share: run the click group in-process, or the console-script entry point."""
from __future__ import annotations

import json

from click.testing import CliRunner

from commsim.cli import cli, main


def _argv(args) -> list[str]:
    return list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)


def invoke(*args):
    """Run the click group in-process (exit 0 required); parsed JSON when --json was given.

    Accepts the arguments one by one or as a single list."""
    argv = _argv(args)
    result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if "--json" in argv else result.stdout


def run_main(capsys, *args) -> tuple[int, str, str]:
    """Call ``main`` like the console script; returns (exit status, stdout, stderr)."""
    try:
        main(_argv(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err
