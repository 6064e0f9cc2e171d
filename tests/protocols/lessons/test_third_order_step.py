"""The third-order step of ``teach attention-protocol``: its numbers checked independently (the match, the Z split by
who holds the pair, the logit's interaction term), and the step in text, Markdown and HTML."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from click.testing import CliRunner

from commsim.cli import cli
from commsim.plugins import load_plugins
from protocols.constructions.match3 import match3_all_positions
from protocols.lessons.third_order_step import MODULUS, third_order_step

TITLE = "Where the exchange stops: third-order attention"


@pytest.mark.parametrize("n", [3, 6, 16])
def test_the_numbers_of_the_step(n):
    step = third_order_step(n)
    text = step.instance
    z = np.array([int(v) for v in re.search(r"z = ([\d ]+) \(mod", text).group(1).split()])
    M = MODULUS
    assert (z[0] + z[2] + z[1]) % M == 0                                   # the matching pair (3, 2) is mixed
    assert match3_all_positions(z[None], M)[0, 0] == 1
    assert "the unit decides 1 at position 1" in text
    parts = {g: int(v) for g, v in re.findall(r"^(Alice's|Bob's|mixed|blank)\s+\d+\s+\S+\s+(\d+)$", text, re.M)}
    assert parts["Alice's"] == parts["Bob's"] == parts["blank"] == 0 and parts["mixed"] > 0
    assert f"Z = {parts['mixed']} units" in text
    # the interaction a(x, y) + a(x', y') - a(x, y') - a(x', y) of c cos(2 pi (z_1 + z_3 + z_2) / M), c = 64
    c = float(re.search(r"c = (\d+)", text).group(1))
    exact = c * (1 + math.cos(4 * math.pi / M) - 2 * math.cos(2 * math.pi / M))
    measured = float(re.search(r"= (-?[\d.]+), not 0", text).group(1))
    assert abs(measured - exact) < 1.0 and abs(measured) > 10
    assert "does not factor" in step.notes and "separate match3" in step.notes


def test_the_step_ends_the_lesson_in_every_format():
    lesson = load_plugins().get("topic", "attention-protocol")(4)
    assert lesson.steps[-1].title == TITLE
    runner = CliRunner()
    for fmt in ("text", "markdown"):
        result = runner.invoke(cli, ["teach", "attention-protocol", "--n", "4", "--format", fmt],
                               catch_exceptions=False)
        assert result.exit_code == 0 and TITLE in result.output and "not 0" in result.output
    pytest.importorskip("jinja2")
    result = runner.invoke(cli, ["teach", "attention-protocol", "--n", "4", "--format", "html"], catch_exceptions=False)
    assert result.exit_code == 0 and "third-order attention" in result.output
