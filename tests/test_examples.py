"""The training example (examples/train_lstm_index.py) runs end to end through the public API."""
from __future__ import annotations

import pytest


def test_training_example_trains_saves_and_runs(tmp_path, capsys):
    pytest.importorskip("torch")
    from examples import train_lstm_index

    out = tmp_path / "lstm.pt"
    assert train_lstm_index.main(["--n", "5", "--seconds", "2", "--hidden", "8", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert out.exists() and (tmp_path / "lstm-parts.pt").exists() and (tmp_path / "lstm-tiny.pt").exists()
    # the squeezed one-unit copy hands off 4 state bits < 5: a verified certificate
    assert "4 bits < the bound 5" in printed and "A direct forward of the model confirms this" in printed
