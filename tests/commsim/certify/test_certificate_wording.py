"""A certificate's text names the function each number is an answer of: the source problem's (EQ), decoded from
the model's own task (INEQ) -- a bare "answers 1" beside a table with both EQ and INEQ was read the wrong way."""
from __future__ import annotations

import re

import numpy as np
import pytest

import commsim
from commsim.certify.error import error_certificate
from commsim.theory.problems import Equality


def test_an_error_certificate_names_the_source_problem():
    cert = error_certificate(Equality(4), [0, 0, 0, 0], [0, 0, 1, 0], 0, 1, lambda A, B: np.ones(len(A), dtype=int))
    assert cert.verified and cert.explanation.startswith("the model answers EQ = 1 where the answer is EQ = 0 ")


@pytest.mark.parametrize("seed, agrees", [(1, False), (2, True)])
def test_the_torch_recheck_says_which_function_each_answer_is(seed, agrees):
    """nanoGPT at eq-ineq, p = 2: the module's own forward re-checks the certificate, both answers named EQ."""
    pytest.importorskip("torch")
    from examples.research_blocks import nanogpt
    report = commsim.run("eq-ineq", nanogpt(2, 8, dim=8, heads=1, attn="mha", seed=seed), n=4, precision=2)
    cert = report.certificate
    check = cert.details["framework_check"]
    assert check["agrees"] is agrees
    recheck = cert.explanation[cert.explanation.index("Re-checked"):]
    ours = check["checks"][0]["model_answer"]
    theirs = check["checks"][0]["framework_answer"]
    if agrees:
        assert f"on the certificate's input it answers EQ = {theirs}, as commsim's model does." in recheck
    else:
        assert (f"it answers EQ = {theirs} on the certificate's input, where commsim's model answers EQ = {ours}"
                in recheck) and "differs" not in recheck
    assert not re.search(r"answers \d", cert.explanation)              # every answer carries its function's name
