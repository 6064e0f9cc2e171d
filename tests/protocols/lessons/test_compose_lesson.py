"""``commsim teach compose``: the prompt, who holds what, the message from a real run, the counting argument
and Theorem 1's bound with the measured error, Theorem 2 stated."""
from __future__ import annotations

import math

from commsim.plugins import load_plugins
from protocols.theorems import composition_error_bound, composition_one_way_bits


def test_compose_lesson_numbers_come_from_the_run():
    lesson = load_plugins().get("topic", "compose")(8)
    titles = [s.title for s in lesson.steps]
    assert lesson.topic == "compose" and lesson.n == 8 and len(titles) == 7
    prompt, holdings, message, counting, theorem1, direction, theorem2 = lesson.steps
    assert prompt.instance.count("g(b") == 8 and prompt.instance.count("f(a") == 8
    assert set(holdings.holdings) == {"alice", "bob"} and "public" in holdings.holdings["alice"]
    sent = sum(len(bits) for sender, _, bits in message.messages)
    assert message.messages and all(sender == "alice" for sender, _, _ in message.messages)
    assert f"C = {sent}" in message.inequality
    assert sent < composition_one_way_bits(8) and f"= {composition_one_way_bits(8)} >" in counting.inequality
    assert "verified by a direct forward: True" in counting.instance
    R, bound = composition_error_bound(8, sent)
    assert f"{bound:.4f}" in theorem1.inequality and "consistent" in theorem1.instance
    assert "Theorem 2" in theorem2.reference and f"{math.sqrt(8 / (1 * 2 * 4)):.3f}" in theorem2.inequality
    assert "two-way" in direction.claim.lower() or "Two-way" in direction.claim


def test_compose_lesson_above_the_bound_says_no_collision_is_forced():
    lesson = load_plugins().get("topic", "compose")(4)
    counting = lesson.steps[3]
    assert "forces no collision" in counting.claim and r"\le" in counting.inequality
