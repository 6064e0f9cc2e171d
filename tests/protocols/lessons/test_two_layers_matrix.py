"""The two-layers lesson computes the Lemma 5 model's communication matrix on its random split."""
from __future__ import annotations

from protocols.lessons.two_layers import two_layers


def test_lemma5_step_reports_the_computed_rank():
    lesson = two_layers(3)
    step = next(s for s in lesson.steps if "balanced" in s.title)
    assert "rank 8, a verified fooling set of 8 cells" in step.instance
    assert "commsim separate two-layers" in step.instance
