"""The qSA steps of ``teach attention-disj``: the searched keys' width and the explicit keys' beside it are the
constructions' own, the run's bits are the run's, and the fully-connected network's kernel certificate is verified;
beyond the q the key search covers, the rip step is left out and the FNN step stays."""
from __future__ import annotations

import re

import pytest
from built_lessons import lesson


def _steps(n):
    return {s.title: s for s in lesson("attention-disj", n).steps}


@pytest.mark.parametrize("n", [2, 3])
def test_the_rip_step_states_the_constructions_widths_and_the_runs_bits(n):
    from commsim.runs.run import run_reduction
    from protocols.constructions.qsa import build_qsa
    step = _steps(n)["The layer with q log N keys, found and checked"]
    rip, lemma2 = build_qsa(2 * n + 1, n, layout="disj", keys="rip"), build_qsa(2 * n + 1, n, layout="disj")
    assert rip.width < lemma2.width
    assert f"k = {rip.width} random sign keys" in step.instance and f"explicit keys: k = {lemma2.width}" in step.instance
    bits = run_reduction("disj-qsa", f"construct:qsa:q={n},keys=rip", n).bits_used
    assert f"bits used {bits} " in step.instance and "model correct True, protocol = model True" in step.instance
    assert rf"k_{{\text{{rip}}}} = {rip.width} \lt" in step.inequality and bits >= n


def test_the_fnn_step_shows_a_verified_kernel_certificate_below_the_width_bound():
    steps = _steps(5)
    assert "The layer with q log N keys, found and checked" not in steps        # q = 5 is past the key search
    step = steps["A fully-connected network needs width N·d′/2"]
    width, bound = map(int, re.search(r"w = (\d+) \\lt N d'/2 = (\d+)", step.inequality).groups())
    assert width < bound == 4
    assert "must fail" in step.instance and "first layers identical: True; certificate verified: True" in step.instance
