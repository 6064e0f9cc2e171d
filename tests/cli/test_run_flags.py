"""``run --fail-on-certificate`` (exit 3 when the model must fail, for CI) and a printing python: factory
under ``--json`` (its output must not reach stdout)."""
from __future__ import annotations

import json
import textwrap

import pytest

from tests.cli.cli_helpers import run_main


def test_fail_on_certificate_exits_3_when_the_model_must_fail(capsys):
    """memorize:capacity=7 keeps 7 bits, below the n = 8 one-way bits INDEX_8 needs (Theorem 2 of [BHBK24]):
    a verified certificate exists, so CI fails."""
    code, out, _ = run_main(capsys, "run", "index-idxl", "--fail-on-certificate", "--json")
    d = json.loads(out)
    assert code == 3 and d["certificate"]["verified"] is True and d["model_correct"] is False
    code, out, _ = run_main(capsys, "run", "index-idxl", "--fail-on-certificate")
    assert code == 3 and "certificate" in out
    code, out, _ = run_main(capsys, "run", "index-idxl")          # without the flag: a completed run
    assert code == 0


def test_fail_on_certificate_exits_0_on_a_correct_model(capsys):
    code, out, _ = run_main(capsys, "run", "index-idxl", "--model", "memorize:capacity=8", "--fail-on-certificate",
                            "--json")
    d = json.loads(out)
    assert code == 0 and d["model_correct"] is True and d["certificate"] is None


def test_fail_on_certificate_needs_the_search(capsys):
    code, out, err = run_main(capsys, "run", "index-idxl", "--fail-on-certificate", "--no-certificate")
    assert code == 2 and err.count("\n") == 1 and "--no-certificate" in err


def test_exit_status_3_is_documented(capsys):
    code, out, _ = run_main(capsys, "run", "--help")
    assert code == 0 and "--fail-on-certificate" in out and "3" in out.split("Exit status")[1].split("Examples")[0]


def test_a_printing_factory_does_not_break_json(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    (tmp_path / "noisy.py").write_text(textwrap.dedent("""
        import torch
        print("importing noisy")

        def factory(vocab_size, seq_len):
            print("building the model", vocab_size, seq_len)
            torch.manual_seed(0)
            return {"embedding": torch.nn.Embedding(vocab_size, 4),
                                        "core": torch.nn.GRU(4, 3, batch_first=True),
                                        "head": torch.nn.Linear(3, 2)}
    """))
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(capsys, "run", "index-idxl", "--model", "python:noisy.py:factory", "--n", "4",
                              "--no-certificate", "--json")
    assert code == 0, err
    d = json.loads(out)                                   # stdout is exactly one JSON object
    assert d["reduction"] == "index-idxl" and d["protocol_matches_model"] is True
    assert "importing noisy" in err and "building the model" in err and "building" not in out
