"""Dyck-(2,2) membership is judged on the language, not only on the fooling set.

Lemma 1 of [BHBK24] bounds a protocol that *decides membership*: a function of every string of length N.
The fooling set holds only members, so a layer answering 1 on every string is right on all of them and wrong
on almost every non-member; ``run dyck22-fooling`` must call it wrong and show a failing string, verified by a
direct forward.  The extra strings are an evaluation hook any reduction may declare
(``Reduction.evaluation_sets``), and the protocol must equal the model on them too.
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from commsim.runs.run import run_reduction
from commsim.runs.stages import (
    EvaluationSet,
    direct_answers,
    prepare,
    run_one_instance,
)
from commsim.plugins import load_plugins
from commsim.theory.dyck import DyckLanguage
from commsim.theory.problems import DyckProblem

#: a probe layer accepting every token at position 0: class 1 on every string (checked below)
CONSTANT_ONE = "attention:probe:at=0,accept=0/1/2/3"


def _strings(N: int) -> np.ndarray:
    codes = np.arange(4 ** N)
    return np.stack([(codes // 4 ** (N - 1 - i)) % 4 for i in range(N)], axis=1).astype(np.uint8)


def test_the_constant_one_layer_answers_one_on_every_string():
    setup = prepare("dyck22-fooling", CONSTANT_ONE, 8)
    A, B = DyckProblem.split(_strings(8))
    assert direct_answers(setup, A, B).all()


def test_constant_one_layer_is_not_correct_and_the_certificate_is_a_verified_non_member():
    d = run_reduction("dyck22-fooling", CONSTANT_ONE, 12).to_dict()
    assert d["accuracy_by_set"]["members"] == 1.0            # right on the whole fooling set ...
    assert d["model_correct"] is False                       # ... and still not a Dyck-(2,2) decider
    assert d["accuracy_by_set"]["random_non_members"] == 0.0
    assert d["protocol_matches_model"] is True
    cert = d["certificate"]
    assert cert["verified"] is True and cert["expected"] == 0 and cert["model_output"] == 1
    string = DyckProblem.interleave(np.array(cert["alice_input"]), np.array(cert["bob_input"]))
    assert DyckLanguage().is_member(string)[0] == 0          # the certificate's string is a non-member
    assert d["model_accuracy"] < 1.0


def test_small_n_is_judged_on_all_four_to_the_n_strings():
    """At N = 8 every one of the 4^8 strings is judged: the constant-1 layer's accuracy on them is exactly
    the members' share, |Dyck-(2,2) of length 8| / 4^8."""
    d = run_reduction("dyck22-fooling", CONSTANT_ONE, 8).to_dict()
    sets = {e["name"]: e for e in d["evaluation_sets"]}
    assert sets["all_strings"]["instances"] == 4 ** 8
    members = DyckLanguage().count(8)
    assert d["accuracy_by_set"]["all_strings"] == members / 4 ** 8
    assert sets["all_strings"]["wrong"] == 4 ** 8 - members
    assert d["model_correct"] is False and d["certificate"]["verified"]


def test_a_layer_that_decides_dyck_is_correct_on_non_members_too():
    for n in (8, 12):
        d = run_reduction("dyck22-fooling", "construct:lookup", n).to_dict()
        assert d["model_correct"] is True and d["protocol_matches_model"] is True
        assert set(d["accuracy_by_set"].values()) == {1.0} and len(d["accuracy_by_set"]) >= 2
        assert d["certificate"] is None


def test_below_the_bound_a_verified_crossing_means_not_correct():
    """The probe layer of the README is right on every member but below Lemma 1's N - 1 bits: the rectangle
    crossing it must get wrong is a string of the language's domain, so the model is not correct."""
    d = run_reduction("dyck22-fooling", n=18).to_dict()
    assert d["accuracy_by_set"]["members"] == 1.0 and not d["budget_ok"]
    cert = d["certificate"]
    assert cert["kind"] == "rectangle" and cert["verified"] is True
    assert d["model_correct"] is False


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), width=st.integers(1, 3), precision=st.integers(2, 8))
def test_protocol_equals_the_model_on_non_members(seed, width, precision):
    spec = f"attention:heads=1,width={width},precision={precision},seed={seed}"
    d = run_reduction("dyck22-fooling", spec, 12, instances=64, seed=seed).to_dict()
    assert all(e["protocol_matches_model"] for e in d["evaluation_sets"]) and d["protocol_matches_model"]
    assert {e["name"] for e in d["evaluation_sets"]} == {"sampled", "crossings", "random_non_members"}
    setup = prepare("dyck22-fooling", spec, 12)
    rng = np.random.default_rng(seed)
    S = rng.integers(0, 4, size=(3, 12)).astype(np.uint8)
    A, B = DyckProblem.split(S)
    for a, b in zip(A, B):
        one = run_one_instance(setup, a, b)
        assert one.answer == one.direct_answer


def test_any_reduction_may_declare_evaluation_sets():
    """The hook is general: a reduction that declares an extra set gets it judged and reported by name."""
    base = type(load_plugins().get("reduction", "index-idxl"))

    class WithRepeat(base):
        def evaluation_sets(self, problem, alice, bob, seed):
            return [EvaluationSet("repeat", alice[:5], bob[:5], "repeated instances")]

    d = run_reduction(WithRepeat(), "memorize:capacity=7", 8).to_dict()
    assert set(d["accuracy_by_set"]) == {"instances", "repeat"}
    assert [e["instances"] for e in d["evaluation_sets"]] == [8 * 2 ** 8, 5]
