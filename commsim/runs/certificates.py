"""The certificate stage: the engine's one search for the input on which a model must fail.

No simulator searches certificates.  A simulator hands the engine its message plan (who speaks, how many
bits: :meth:`~commsim.contract.Simulator.plan`) and its per-instance transcript keys
(:func:`~commsim.contract.simulator.transcript_keys`: the vectorized path's, or the digests of the runner's
transcripts); the engine chooses the argument from the plan's direction:

* **one-way** (only Alice speaks, so her message is the whole transcript): pigeonhole over Alice's inputs
  (:func:`commsim.certify.pigeonhole.collision_certificate`) -- two inputs with one message and a Bob input
  that separates them;
* **two-way**: the rectangle argument on the problem's fooling set
  (:func:`commsim.certify.rectangle.rectangle_certificate`) -- two members with one transcript, and their
  crossing.

Either way the candidate is confirmed bit for bit (keys recomputed, transcripts from the real runner), and
by a direct forward of the model; a framework model's own forward re-checks it
(:func:`commsim.runs.framework.recheck_certificate`).  When the model is simply wrong on a tested
instance and no argument from the bound applies, that instance is the certificate (kind ``error``).
Every certificate says what the model itself output on its own task, beside the decoded answer
(``details["task_output"]``), and shows the model input in the task's tokens (``details["model_input"]``).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from commsim.certify.error import error_certificate
from commsim.certify.pigeonhole import collision_certificate
from commsim.certify.rectangle import rectangle_certificate
from commsim.certify.types import Certificate
from commsim.core.errors import InputError
from commsim.runs.framework import recheck_certificate
from commsim.contract import MessagePlan
from commsim.contract.simulator import transcript_keys
from commsim.runs.stages import Prepared, stage_progress
from commsim.runs.tally import Tally
from commsim.theory.bounds import LowerBound

#: instances the transcript keys are computed for at once
KEY_CHUNK = 1 << 15


def _keyed(setup: Prepared) -> Callable:
    """``(A, B) -> (answers, keys)``: the protocol's decoded answers and transcript keys, in chunks."""
    def keyed(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        answers, keys = [], []
        for s in range(0, len(A), KEY_CHUNK):
            a, b = A[s:s + KEY_CHUNK], B[s:s + KEY_CHUNK]
            labels, k = transcript_keys(setup.simulator, setup.model, setup.reduction.encode(setup.problem, a, b))
            answers.append(setup.reduction.decode(labels, b))
            keys.append(np.asarray(k))
        return np.concatenate(answers), np.concatenate(keys)
    return keyed


def search_by_argument(setup: Prepared, plan: MessagePlan, *, seed: int = 0,
                       progress: Callable[[int, int], None] | None = None) -> tuple[Certificate | None, str]:
    """The argument the plan's direction calls for (module docstring): (certificate or None, what was searched)."""
    keyed = _keyed(setup)
    problem = setup.problem
    if plan.direction == "one-way":
        probe_alice, probe_bob = problem.sample(np.random.default_rng(seed), 1)
        if hasattr(problem, "collision_candidates"):   # the problem's own cheapest candidates (composition)
            _, candidates_bob = problem.collision_candidates(np.random.default_rng(seed))
            probe_bob = candidates_bob[:1]
        fixed = np.asarray(probe_bob)[:1]

        def messages(A: np.ndarray, B: np.ndarray | None = None) -> np.ndarray:
            """Alice's one-way messages for her inputs ``A`` (Bob's input fixed unless ``B`` is given)."""
            B = np.repeat(fixed, len(A), axis=0) if B is None else B
            return keyed(A, B)[1]

        return collision_certificate(problem, messages, setup.direct_answers, message_bits=plan.alice_to_bob,
                                     seed=seed, progress=progress, message_name=plan.message_name, bob_like=fixed[0])

    def transcript(a, b):
        """The runner's transcript on one instance."""
        return setup.run_instance(a, b).result.transcript

    return rectangle_certificate(problem, keyed, setup.direct_answers, transcript, one_way=False, progress=progress)


def find_certificate(setup: Prepared, plan: MessagePlan, tallies: list[Tally], bound: LowerBound, *, seed: int = 0,
                     search: bool = True, progress: Callable[[str, int, int], None] | None = None
                     ) -> tuple[Certificate | None, str]:
    """The input on which the model must fail, and what was searched.

    Below the bound (bits used: the worst instance of every set) the argument of the plan's direction comes
    first (it says *why* the model must fail: a collision, a crossing); a plain wrong instance -- the first of
    the first set with one -- is the certificate when that search finds nothing verified."""
    certificate, searched = None, ""
    bits_used = max(t.bits_used for t in tallies if t.instances)
    if search and bound.applies and bound.bits is not None and bits_used < bound.bits:
        certificate, searched = search_by_argument(setup, plan, seed=seed,
                                                   progress=stage_progress(progress, "certificate search"))
    failing = [t for t in tallies if t.wrong]
    if failing and (certificate is None or not certificate.verified):
        t = failing[0]
        alice, bob, expected, answer = t.first_wrong_instance
        certificate = error_certificate(setup.problem, alice, bob, expected, answer, setup.direct_answers,
                                        where=f"the {t.described}", index=t.first_wrong - t.start)
        searched = (f"{searched}; " if searched else "") + "the model is wrong on " + ", ".join(
            f"{f.wrong:,} of the {f.instances:,} {f.described}" for f in failing) + \
            f"; the first of the {t.described} is the certificate"
    return recheck_certificate(setup, in_task_terms(setup, certificate)), searched


def in_task_terms(setup: Prepared, certificate: Certificate | None) -> Certificate | None:
    """The certificate with what the model itself says on its own task: the model input in the task's tokens
    (``model_input``) and the model's output label beside the label a correct model gives (``task_output``),
    since the decoded answer (``model_output``) is in the source problem's terms (e.g. EQ where the model
    computes INEQ)."""
    if certificate is None:
        return None
    details = dict(certificate.details)
    try:
        a = np.asarray(certificate.alice_input)[None]
        b = np.asarray(certificate.bob_input).reshape(1, *np.shape(certificate.bob_input))
        encoded = setup.reduction.encode(setup.problem, a, b)
        names = setup.reduction.vocabulary(setup.problem.n)
        details["model_input"] = " ".join(names[int(t)] for t in encoded.tokens[0])
        details["alice_positions"] = [int(p) for p in encoded.alice_positions]    # 0-based, as all JSON
        details["bob_positions"] = [int(p) for p in encoded.bob_positions]
        label = np.asarray(setup.simulator.direct_labels(setup.model, encoded)).reshape(-1)
        try:
            expected = np.asarray(setup.reduction.labels(setup.problem, a, b)).reshape(-1)
        except NotImplementedError:
            expected = None
        details["task_output"] = {
            "task": setup.reduction.task,
            "model_output": int(label[0]) if label.size == 1 else label.tolist(),
            "expected_output": None if expected is None else (int(expected[0]) if expected.size == 1
                                                              else expected.tolist())}
    except (InputError, IndexError, ValueError):
        return certificate
    return dataclasses.replace(certificate, details=details)
