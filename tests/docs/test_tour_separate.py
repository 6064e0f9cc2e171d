"""The tour's shown outputs and lists stay true.  Its `commsim separate idxl --n 256` block is what the command
prints (at 100 columns, its table at its own width) -- checked without the 30-second verification run: the panel,
the column headings, every size the construction is built with (m, d, width, p, width·p, the recurrent bound:
computed here by building the layer at each N) and the verdict line are rendered by the command's own renderer;
only the measured columns (parameters, exchange, inputs, accuracies) are read from the page.  A changed
construction line, column or size fails here."""
from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console

from commsim.cli import separate as separate_cli
from commsim.plugins import load_plugins
from protocols.separations.base import SeparationRun
from protocols.separations.idxl import IdxlSeparation

TOUR = Path(__file__).resolve().parents[2] / "docs" / "guide" / "tour.md"


def _shown_block() -> list[str]:
    text = TOUR.read_text(encoding="utf-8")
    assert "`commsim separate idxl --n 256`" in text
    block = re.search(r"```\n(╭─+ commsim separate idxl.*?)```", text, re.S).group(1)
    return [line.rstrip() for line in block.splitlines()]


def _rows(shown: list[str], separation: IdxlSeparation) -> list[dict]:
    """Each table row: the sizes computed by building the layer, the measured columns as the page shows them."""
    rows = []
    for line in shown:
        cells = line.split()
        if len(cells) != 13 or not cells[0].isdigit():
            continue
        N = int(cells[0])
        inputs = cells[8]
        exhaustive = inputs.endswith("*")
        rows.append({**separation.sizes(N), "parameter_bits": int(cells[6]), "protocol_bits": int(cells[7]),
                     "inputs_shown": inputs, "instances": "all" if exhaustive else f"{inputs} sampled",
                     "accuracy": float(cells[9]), "protocol_exact": cells[10] == "yes",
                     "memorize_accuracy": float(cells[12]), "memorize_bits": N,   # memorize's state: N bits
                     "verified": True})
    return rows


def test_the_tour_shows_what_separate_idxl_prints(monkeypatch, capsys):
    shown = _shown_block()
    separation = IdxlSeparation()
    rows = _rows(shown, separation)
    assert [row["N"] for row in rows] == separation.lengths(256)
    monkeypatch.setattr(separate_cli, "console", Console(width=100, no_color=True, highlight=False))
    separate_cli.render_separation(separation.result(256, rows, SeparationRun(seed=0, instances=None)).to_dict())
    printed = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    assert printed[:len(shown)] == shown
    table = [line for line in printed if line.lstrip().startswith("N ")]
    assert len(table) == 1 and len(table[0]) > 100, "the tour says the table is wider than 100 columns"
    assert f"{len(table[0])} columns" in " ".join(TOUR.read_text(encoding="utf-8").split())


def test_the_tour_lists_every_teach_topic():
    """The tour's "`commsim teach --list` lists the walkthroughs (...)" names each registered topic."""
    text = " ".join(TOUR.read_text(encoding="utf-8").split())
    listed = re.search(r"`commsim teach --list` lists the walkthroughs \(([^)]*)\)", text).group(1)
    assert set(re.findall(r"`([\w-]+)`", listed)) == set(load_plugins().names("topic"))
