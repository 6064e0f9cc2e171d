"""Lesson claims checked against the engine: counts the text states are recomputed here, and a pigeonhole
reason is given only where counting really forces a collision."""
from __future__ import annotations

import re

import pytest

from commsim.plugins import load_plugins


def build(topic, n=None):
    return load_plugins().get("topic", topic)(n)


@pytest.mark.parametrize("n", [2, 3, 4, 6, 8])
def test_attention_disj_step7_counts_transcripts_and_gives_the_true_reason(n):
    from commsim.theory.fooling import fooling_set
    from protocols.lessons.attention_disj import QSA_PROBE
    from protocols.lessons.common import engine, run_one
    step = [s for s in build("attention-disj", n).steps if s.title == "Right on the fooling set is not enough"][0]
    stated = re.search(r"give the (\d+) members only (\d+) distinct transcript", step.claim)
    assert stated, step.claim
    r, p, m, w = engine("disj-qsa", QSA_PROBE, n)
    A, B = fooling_set("disj", n).member_arrays()
    seen = {tuple(str(mm.bits) for mm in run_one(r, p, m, w, a, b)[1].transcript.messages) for a, b in zip(A, B)}
    assert (int(stated.group(1)), int(stated.group(2))) == (len(A), len(seen)) and len(seen) < len(A)
    assert "ignores" in step.claim
    for inputs, messages in re.findall(r"2\^(\d+) Alice inputs outnumber the 2\^(\d+)", step.notes + step.claim):
        assert int(inputs) > int(messages)            # "outnumber" only where it is true
    bits = int(re.search(r"Its (\d+)-bit messages", step.claim).group(1))
    assert ("not forced by counting" in step.notes) == (n <= bits)
    assert "Fact 4 of [BHBK24]" in step.reference and "Facts 1-3" not in step.reference
