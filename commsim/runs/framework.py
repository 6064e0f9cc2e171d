"""Trust signals for a model adapted from a framework (PyTorch): how closely commsim's model follows the
framework's own forward on the run's instances (the report's ``torch_agreement``), and a certificate re-checked
with the framework's forward.

The engine never imports a framework.  A model adapted from one offers the hooks of
:class:`~commsim.contract.framework.FrameworkBacked` (:class:`protocols.adapters.torch.trust.TorchTrust` for torch
models); any other model is left alone.  The report's key keeps its name, ``torch_agreement``, whatever the
framework (its ``framework`` field names it): the key is part of the report's published contract.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from commsim.certify.types import Certificate
from commsim.certify.view import problem_name
from commsim.contract.framework import FrameworkBacked

#: instances of the run compared with the framework's forward (a seeded subset when there are more)
AGREEMENT_INSTANCES = 256


def framework_agreement(model, encoded, seed: int = 0) -> dict | None:
    """The report's ``torch_agreement``: the model's agreement with its framework's forward on the run's
    instances (``encoded.tokens``; a seeded subset of :data:`AGREEMENT_INSTANCES` when there are more), at the
    output positions -- the model's ``framework_agreement`` (the one rule's keys, :class:`FrameworkBacked`)
    with ``instances``, ``of_instances`` and ``sampled``; None for a model that is not :class:`FrameworkBacked`
    or keeps no framework forward."""
    if not isinstance(model, FrameworkBacked) or not encoded.batch:
        return None
    count = min(AGREEMENT_INSTANCES, encoded.batch)
    rows = np.arange(encoded.batch) if count == encoded.batch else \
        np.sort(np.random.default_rng(seed + 2).choice(encoded.batch, size=count, replace=False))
    result = model.framework_agreement(encoded.tokens[rows], tuple(encoded.output_positions))
    if result is None:
        return None
    result["instances"] = int(count)
    result["of_instances"] = int(encoded.batch)
    result["sampled"] = count < encoded.batch
    return result


def accuracies_compared(setup, encoded, alice, bob, agreement: dict) -> dict:
    """``agreement`` with the framework module's own accuracy beside commsim's on the same instances (``alice``,
    ``bob``, encoded as ``encoded``): both sides' decisions -- by the model's one rule -- against the answers the
    task wants.  When they differ the module's accuracy is not the one commsim reports: ``ok`` becomes False
    and the note says so with the counts (a check that can fail whatever the output width)."""
    theirs = setup.model.framework_labels(encoded.tokens, tuple(encoded.output_positions))
    if theirs is None:
        return agreement
    expected = np.asarray(setup.reduction.labels(setup.problem, alice, bob)).reshape(len(alice), -1)
    ours = np.asarray(setup.simulator.direct_labels(setup.model, encoded)).reshape(len(alice), -1)
    theirs = np.asarray(theirs).reshape(len(alice), -1)
    right_theirs = int(np.all(theirs == expected, axis=1).sum())
    right_ours = int(np.all(ours == expected, axis=1).sum())
    out = {**agreement, "framework_accuracy": right_theirs / len(alice), "commsim_accuracy": right_ours / len(alice)}
    if right_theirs != right_ours:
        name = setup.model.framework
        judged = setup.model.framework_judged   # else commsim's model is a rounding of the module: expected
        if judged:
            out["ok"] = False
        out["note"] = (f"{agreement.get('note', '')}; on these {len(alice)} instances the {name} module is right on "
                       f"{right_theirs} and commsim's model on {right_ours}" +
                       (": the accuracy reported is not the module's" if judged else
                        f" (commsim's model runs at {setup.model.format.name}, a rounding of the module)")).lstrip("; ")
    return out


def _framework_answer(setup, alice, bob) -> int | None:
    """The framework forward's answer to one instance, decoded as the model's is; None when unavailable."""
    a = np.asarray(alice)[None]
    b = np.asarray(bob).reshape(1, *np.shape(bob))
    encoded = setup.reduction.encode(setup.problem, a, b)
    labels = setup.model.framework_labels(encoded.tokens, tuple(encoded.output_positions))
    return None if labels is None else int(np.asarray(setup.reduction.decode(labels, b))[0])


def recheck_certificate(setup, certificate: Certificate | None) -> Certificate | None:
    """A certificate on a :class:`FrameworkBacked` model, re-checked with the framework's own forward: on
    the certificate's input (and, for a collision, on the colliding input) the framework must answer as
    commsim's model does.  The explanation says so, ``details["framework_check"]`` records it, and when the
    model runs in a judged format (the module's own dtype) a disagreement leaves the certificate unverified:
    it would hold for commsim's model but not for the user's module."""
    model = setup.model
    if certificate is None or not isinstance(model, FrameworkBacked):
        return certificate
    name = model.framework
    stem = certificate.explanation.rstrip()
    stem += "" if stem.endswith(".") else "."
    checks = [("the certificate's input", certificate.alice_input, certificate.bob_input, certificate.model_output)]
    other = certificate.details.get("colliding_alice_input")
    if certificate.kind == "collision" and other is not None:
        checks.append(("the colliding input", other, certificate.bob_input,
                       certificate.details.get("other_model_output")))
    results = []
    for what, a, b, commsim_answer in checks:
        theirs = _framework_answer(setup, a, b)
        if theirs is None:
            return dataclasses.replace(certificate, explanation=stem + (
                f" Not re-checked with the {name} module's own forward: it is not available here."))
        results.append({"input": what, "framework_answer": theirs, "model_answer": commsim_answer,
                        "agrees": commsim_answer is None or theirs == int(commsim_answer)})
    agrees = all(r["agrees"] for r in results)
    inputs = " and ".join(r["input"] for r in results)
    source = problem_name(setup.problem.name)   # both answers decoded into the source problem: "EQ", not "INEQ"
    theirs = [f"{source} = {r['framework_answer']}" for r in results]
    if agrees:
        text = (f" Re-checked with the {name} module's own forward: on {inputs} it answers "
                f"{' and '.join(theirs)}, as commsim's model does.")
    else:
        ours = [f"{source} = {r['model_answer']}" for r in results]
        text = (f" Re-checked with the {name} module's own forward: it answers "
                f"{', '.join(t + ' on ' + r['input'] for t, r in zip(theirs, results))}, where commsim's model "
                f"answers {' and '.join(ours)}" + (
                    " -- so this input is not a failure of the module itself (the certificate is left unverified)."
                    if model.framework_judged else
                    f" -- expected: commsim's model runs at {getattr(getattr(model, 'format', None), 'name', '?')}, "
                    f"a different number format from the module's own, and the certificate is about that model."))
    details = {**certificate.details, "framework_check": {"framework": name, "agrees": agrees, "checks": results}}
    verified = certificate.verified and (agrees or not model.framework_judged)
    return dataclasses.replace(certificate, explanation=stem + text, details=details,
                               verified=verified)
