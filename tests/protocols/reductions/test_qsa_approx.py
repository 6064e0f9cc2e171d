"""qsa-approx: the [SHT23] width bound for fully-connected networks, and the exact kernel certificate, checked
independently of the code that found it (the kernel vector in integers, both inputs by a direct forward)."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from cli_helpers import invoke, run_main
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel_checks import _model, check_certificate
from commsim.runs.run import run_reduction
from protocols.reductions.kernel import integer_kernel_vector, is_kernel_vector, nullspace, scale_into_ball
from protocols.theorems import fnn_qsa_kernel_width, fnn_qsa_width


# ---- the exact linear algebra -----------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(1, 7), st.integers(0, 2 ** 16), st.integers(1, 3))
def test_the_nullspace_is_exact_and_complete(rows, cols, seed, block):
    rng = np.random.default_rng(seed)
    A = rng.integers(-300, 301, size=(rows, cols)).tolist()
    if seed % 3 == 0 and rows > 1:
        A[-1] = [2 * x - y for x, y in zip(A[0], A[1 % rows])]               # a dependent row now and then
    basis = nullspace(A, cols)
    rank = int(np.linalg.matrix_rank(np.array(A, dtype=float)))
    assert len(basis) == cols - rank
    for v in basis:
        assert is_kernel_vector(A, v)
        k = integer_kernel_vector(v)
        assert is_kernel_vector(A, k) and any(k)
        assert np.gcd.reduce(np.abs(k)) == 1
        padded = k + [0] * (-len(k) % block)
        scaled, exponent = scale_into_ball(padded, block)
        norms = [sum(x * x for x in scaled[s:s + block]) for s in range(0, len(scaled), block)]
        assert max(norms) <= 1 and max(norms) > Fraction(1, 4)               # max block norm in (1/2, 1]
        assert all(x * (1 << exponent) == y for x, y in zip(scaled, padded))


def test_the_theorem_formulas():
    assert fnn_qsa_width(8, 1) == 4 and fnn_qsa_width(7, 1) == 4 and fnn_qsa_width(6, 3) == 9
    assert fnn_qsa_kernel_width(8, 1, 1) == 8 and fnn_qsa_kernel_width(8, 3, 2) == 12
    for N in range(3, 20):          # commsim's own bound is the stronger one wherever the paper's holds (q < N/2)
        for q in range(1, (N + 1) // 2):
            if 2 * q < N:
                assert fnn_qsa_kernel_width(N, q, 2) >= fnn_qsa_width(N, 2)


# ---- commsim run: below the bound, at it, beyond the kernel argument ----------------------------------------
def test_below_the_width_bound_the_run_must_fail_with_a_verified_kernel_certificate():
    d = invoke("run", "qsa-approx", "--model", "fnn:width=3,precision=16,seed=2", "--n", "8", "--q", "1", "--json")
    assert d["verdict"]["outcome"] == "must_fail" and d["bound_applies"] and d["lower_bound_bits"] == 4
    assert d["lower_bound"]["unit"] == "width" and d["lower_bound"]["measured"] == 3
    assert "[SHT23]" in d["lower_bound_source"] and "q-sparse averaging" in d["lower_bound_source"]
    cert = d["certificate"]
    assert cert["kind"] == "kernel" and cert["verified"]
    check_certificate(_model("fnn:width=3,precision=16,seed=2", 8, 1, 1), cert, 8, 1, 1)


def test_at_the_width_bound_it_does_not_apply_and_a_kernel_pair_is_only_a_wrong_answer_shown():
    d = invoke("run", "qsa-approx", "--model", "fnn:width=4,precision=16", "--n", "8", "--q", "1", "--json")
    assert not d["bound_applies"] and "does not apply" in d["bound_note"] and "N·d'/2 = 4" in d["bound_note"]
    assert d["verdict"]["outcome"] == "wrong_not_forced"
    assert d["certificate"]["kind"] == "kernel" and d["certificate"]["verified"]
    assert "not a failure the bound forces" in d["certificate_search"]
    check_certificate(_model("fnn:width=4,precision=16", 8, 1, 1), d["certificate"], 8, 1, 1)


def test_a_full_rank_first_layer_at_commsim_width_gives_no_certificate():
    """Width (N - q + 1)·d' = 8: a random first layer is injective on the read values, so no kernel pair exists
    and none is claimed."""
    report = run_reduction("qsa-approx", "fnn:width=8,precision=16", 8, q=1, instances=4)
    assert report.certificate is None and "no kernel vector" in report.certificate_search
    assert not report.lower_bound.applies and report.outcome in ("wrong_not_forced", "bound_does_not_apply")


@settings(max_examples=12, deadline=None)
@given(st.integers(5, 9), st.integers(1, 3), st.integers(1, 2), st.integers(0, 1000), st.sampled_from(
    ["relu", "tanh", "identity"]), st.integers(2, 3))
def test_below_the_bound_every_size_and_seed_gives_a_verified_kernel_certificate(rows, q, value_dim, seed, act, depth):
    if not 2 * q < rows:
        q = 1
    width = max(fnn_qsa_width(rows, value_dim) - 1 - seed % 2, 1)
    spec = f"fnn:width={width},depth={depth},activation={act},precision=20,seed={seed}"
    report = run_reduction("qsa-approx", spec, rows, q=q, value_dim=value_dim, instances=2)
    assert report.outcome == "must_fail" and report.lower_bound.applies
    cert = report.certificate.to_dict()
    assert cert["kind"] == "kernel" and cert["verified"]
    check_certificate(_model(spec, rows, q, value_dim), cert, rows, q, value_dim)


def test_the_terminal_report_shows_the_width_beside_the_bound():
    out = invoke("run", "qsa-approx", "--model", "fnn:width=2,precision=16", "--n", "6", "--q", "2")
    assert "2 used / 3 needed" in out and "must fail" in out and "kernel" in out


@pytest.mark.parametrize("args, param", [
    (["--n", "6", "--q", "3"], "--q"),
    (["--n", "2"], "--n"),
    (["--n", "6", "--value-dim", "0"], "--value-dim"),
    (["--n", "6", "--model", "fnn:width=2,depth=1"], "depth"),
    (["--n", "6", "--model", "lstm:width=2,precision=4"], "fully-connected"),
])
def test_bad_input_exits_2_naming_it(capsys, args, param):
    code, _, err = run_main(capsys, "run", "qsa-approx", *args)
    assert code == 2 and param in err and len(err.strip().splitlines()) == 1


def test_other_reductions_refuse_the_options(capsys):
    code, _, err = run_main(capsys, "run", "index-idxl", "--q", "1")
    assert code == 2 and "q: index-idxl takes no such option" in err
    code, _, err = run_main(capsys, "budget", "--arch", "rnn", "--width", "3", "--precision", "8", "--task",
                            "qsa-approx")
    assert code == 2 and "judged directly" in err


def test_the_html_page_sets_the_width_against_the_bound_not_bits(tmp_path):
    path = tmp_path / "run.html"
    invoke("run", "qsa-approx", "--model", "fnn:width=3,precision=16", "--n", "8", "--html", str(path))
    text = path.read_text()
    assert "<mtext>width</mtext><mo>=</mo><mn>3</mn>" in text and "<mtext>bits used</mtext>" not in text
    assert "Certificate (kernel)" in text
