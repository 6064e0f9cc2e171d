"""The sweep's terminal table at a narrow console (issue 26.5): model names are shortened to what differs
between them and broken onto lines only after a ``:``, ``,``, ``/`` -- never inside a word --, and no column is cut."""
from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

pytest.importorskip("pandas")

import commsim  # noqa: E402
from commsim.cli import sweep as sweep_cli  # noqa: E402
from commsim.cli.sweep import SPEC_BREAKS, spec_pieces, wrap_spec  # noqa: E402

#: specs of different kinds (no common part: the column shows each whole), one much wider than the column
SPECS = ["elman:width=1,precision=2,activation=tanh,seed=3", "lstm:width=1,precision=2,seed=12345",
         "memorize:capacity=3"]


def _render(frame, width: int) -> list[str]:
    recorder = Console(width=width, record=True)
    original = sweep_cli.console
    sweep_cli.console = recorder
    try:
        sweep_cli.render_sweep(frame)
    finally:
        sweep_cli.console = original
    return recorder.export_text().splitlines()


def _model_column(lines: list[str]) -> list[list[str]]:
    """Per table row, the lines of its model cell (the text between the model and n headers)."""
    header = next(i for i, line in enumerate(lines) if re.search(r"\bmodel\b.*\bn\b", line))
    start, n_at = lines[header].index("model"), re.search(r"\bn\b", lines[header]).start()
    cells: list[list[str]] = []
    for line in lines[header + 2:]:
        if not line.strip():
            break
        fragment = line[start:n_at].rstrip()
        if line[n_at].isdigit():
            cells.append([fragment])
        else:
            cells[-1].append(fragment)
    return cells


def test_at_80_columns_no_spec_is_split_inside_a_word_and_nothing_is_cut():
    frame = commsim.sweep("index-idxl", SPECS, 3, certify=True)
    lines = _render(frame, 80)
    assert max(len(line) for line in lines) <= 80
    cells = _model_column(lines)
    assert len(cells) == len(SPECS)
    for spec, cell in zip(SPECS, cells):
        assert len(cell) > 1 or len(spec) <= 30                        # the long ones do go over lines
        assert "".join(part.strip() for part in cell) == spec.replace(" ", "")
        assert all(part.rstrip()[-1] in SPEC_BREAKS for part in cell[:-1]), cell   # broken after a separator only
    for kind in frame["certificate_kind"].dropna():
        assert any(kind in line for line in lines)                      # the certificate column is whole


def test_specs_of_one_kind_are_named_by_what_differs_with_the_shared_part_in_the_title():
    frame = commsim.sweep("index-idxl", "elman:width=1..2,precision=2,activation=tanh,seed=7", 3, certify=False)
    lines = _render(frame, 80)
    assert any("models elman:precision=2,activation=tanh,seed=7" in line for line in lines)
    assert [cell for cell in _model_column(lines)] == [["width=1"], ["width=2"]]


@given(st.lists(st.sampled_from(["python", "mine.py", "elman", "width=12", "precision=8", "a/b", "x", "relu|tanh",
                                 "activation=tanh"]), min_size=1, max_size=8),
       st.lists(st.sampled_from(":,/"), min_size=8, max_size=8), st.integers(1, 40))
def test_wrap_spec_breaks_only_after_a_separator(words, separators, width):
    text = "".join(word + separator for word, separator in zip(words, separators))[:-1]
    lines = wrap_spec(text, width).split("\n")
    assert "".join(lines) == text
    assert all(line[-1] in SPEC_BREAKS for line in lines[:-1])
    assert all(len(line) <= width or len(spec_pieces(line)) == 1 for line in lines)   # longer: one piece alone
