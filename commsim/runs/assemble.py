"""The one report builder: tallies, the bound and the certificate become a :class:`Report`.

Every path of a run ends here -- an in-memory run (one tally per evaluation set), a streamed exhaustive run
(the merged tally of its shards: :mod:`commsim.runs.shards`) and the runs a separation makes on its own
instances (:func:`commsim.runs.run.run_instances`) -- so they carry the same fields for the same
instances: bits used (the worst instance of every set) against the bound, correctness on every set (and none
when a verified certificate shows a failing input), exactness on every set, the trust signals.
"""
from __future__ import annotations

import numpy as np

from commsim.certify.types import Certificate
from commsim.core.decision import Decision
from commsim.runs.framework import accuracies_compared, framework_agreement
from commsim.contract import MessagePlan
from commsim.runs.measured import measured_error
from commsim.runs.report import Report
from commsim.runs.stages import Prepared
from commsim.runs.tally import Tally
from commsim.theory.bounds import LowerBound

#: instances of a run compared with a framework model's own forward (a seeded subset when there are more)
AGREEMENT_INSTANCES = 256


def make_report(setup: Prepared, plan: MessagePlan, tallies: list[Tally], bound: LowerBound,
                certificate: Certificate | None, searched: str, *, instances: str, seq_len: int,
                details: dict, agreement_sample: tuple[np.ndarray, np.ndarray] | None, audit: bool = False,
                seed: int = 0, exhaustive: bool = True) -> Report:
    """The report of a run from the tallies of its evaluation sets (the first: the run's own instances).

    ``instances`` says how the instances were chosen; ``details`` are the simulator's (merged over batches);
    ``agreement_sample`` holds instances (A, B) of the first set a framework model's forward is compared on."""
    main = tallies[0]
    ran = [t for t in tallies if t.instances]
    costliest = max(ran, key=lambda t: (t.bits_used, -tallies.index(t))) if ran else main
    transcripts = [t.transcript for t in tallies if t.transcript is not None]
    sets = [t.set_row() for t in tallies]
    total = sum(t.instances for t in tallies)
    refuted = certificate is not None and certificate.verified
    wrong = sum(t.wrong for t in tallies)
    return Report(
        reduction=setup.reduction.id, problem=setup.problem.name, task=setup.reduction.task,
        protocol=setup.simulator.name, model=setup.model_name, n=setup.problem.n, seq_len=seq_len,
        instances=instances, instances_run=main.instances, bits_used=max(costliest.bits_used, 0),
        bits_by_direction={"alice_to_bob": costliest.alice_to_bob, "bob_to_alice": costliest.bob_to_alice},
        rounds=max((t.rounds for t in ran), default=0),
        bits_formula=plan.formula if plan.formula is not None else plan.bits, bits_formula_text=plan.formula_text,
        lower_bound=bound, model_accuracy=(total - wrong) / total if total else 1.0,
        model_correct=wrong == 0 and not refuted,
        protocol_matches_model=all(s["protocol_matches_model"] for s in sets),
        runner_checked=sum(t.runner_checked for t in tallies), audited=audit,
        certificate=certificate, certificate_search=searched,
        transcript=max(transcripts, key=lambda t: t.total_bits) if transcripts else None, details=details,
        accuracy_by_set={s["name"]: s["accuracy"] for s in sets}, evaluation_sets=sets,
        simulator_choice=setup.chosen, decision=model_decision(setup.model),
        **trust_signals(setup, plan, main, agreement_sample, seed=seed, exhaustive=exhaustive))


def model_decision(model) -> dict | None:
    """The rule the model's outputs were decided by (``decision`` of a model that decides from output values,
    :class:`commsim.core.decision.Decision`; the plugins' models carry it), as the report states it; None for a
    model that carries none."""
    rule = getattr(model, "decision", None)
    return rule.to_dict() if isinstance(rule, Decision) else None


def trust_signals(setup: Prepared, plan: MessagePlan, main: Tally, sample: tuple[np.ndarray, np.ndarray] | None, *,
                  seed: int = 0, exhaustive: bool) -> dict:
    """The report fields every run carries beside its counts: ``measured_error`` against the reduction's
    distributional bound (if it has one) and ``torch_agreement`` with a framework model's own forward, on a
    seeded subset of at most :data:`AGREEMENT_INSTANCES` of the run's instances."""
    one = None
    agreement = None
    if sample is not None and len(sample[0]):
        A, B = sample
        rows = np.arange(len(A)) if len(A) <= AGREEMENT_INSTANCES else \
            np.sort(np.random.default_rng(seed + 2).choice(len(A), size=AGREEMENT_INSTANCES, replace=False))
        one = setup.reduction.encode(setup.problem, A[rows], B[rows])
        agreement = framework_agreement(setup.model, one, seed)
        if agreement is not None:
            agreement = accuracies_compared(setup, one, A[rows], B[rows], agreement)
            agreement.update({"instances": int(len(rows)), "of_instances": int(main.instances),
                              "sampled": len(rows) < main.instances})
    err = None
    if one is not None:
        err = setup.reduction.error_bound(setup.model, plan, setup.problem, one, max(main.bits_used, 0))
    return {"measured_error": None if err is None else measured_error(err, main.wrong, main.instances,
                                                                      exhaustive=exhaustive),
            "torch_agreement": agreement}
