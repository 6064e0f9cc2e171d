"""Issue 24: lessons say no more than the proof -- Lemma 1 as a bound, Newman's theorem as an upper bound, and
Theorem 5's own max N printed beside the exact exchange's."""
from __future__ import annotations

import re

import pytest
from built_lessons import lesson as built_lesson

from commsim.theory.bounds import ceil_log2


@pytest.fixture(scope="module")
def randomized():
    return built_lesson("randomized", 16)


def test_dyck_deterministic_cost_is_written_as_a_bound(randomized):
    step = next(s for s in randomized.steps if s.title.startswith("Dyck-(2,2)"))
    assert r"D \ge N - 1 = 7" in step.inequality and "D = N - 1" not in step.inequality


def test_newman_is_credited_with_the_upper_bound_only(randomized):
    step = next(s for s in randomized.steps if "public coins" in s.title)
    assert "Newman" in step.notes and "upper bound" in step.notes
    assert not re.search(r"Newman[^.]*Theta", step.notes)


def test_attention_dyck_prints_theorem_5s_max_n_beside_the_exchanges():
    """For m = 64, p = 16, H = 8: Theorem 5's inequality allows N up to 49152; the exact exchange up to 23984."""
    def theorem5(N):
        return 3 * 64 * (16 + ceil_log2(N)) * 8 >= N - 1
    assert theorem5(49152) and not theorem5(49154)
    dyck = built_lesson("attention-dyck")
    step = next(s for s in dyck.steps if s.title.startswith("Theorem 5"))
    line = next(x for x in step.instance.splitlines() if "--width 64 --precision 16 --heads 8" in x)
    assert "Theorem 5's inequality" in line and "N − 1 up to N = 49152;" in line and "paper_max_n" not in line
    assert "N = 23984 (max N)" in line
