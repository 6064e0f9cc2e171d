"""The stages of the pipeline, one function per box of the picture in :mod:`commsim.pipeline.run`.

:func:`commsim.pipeline.run.run_reduction` composes them: :func:`prepare` (reduction, problem, model,
simulator) -> :func:`select_instances` -> :func:`evaluation_sets` (the instances, and the sets the reduction
adds: a language is judged on all its strings, not only on the fooling set's members) -> :func:`evaluate`
per set (:func:`encode_instances` -> :func:`simulate`, the simulator's vectorized sweep, audited against the
runner by :func:`sweep_and_audit`, which ``commsim cc`` shares -> :func:`decode`) -> :func:`lower_bound` ->
:func:`find_certificate` -> :func:`make_report`.
:func:`run_one_instance` is the whole path for a single instance, through the real runner; lessons and
certificate searches use it, and :func:`direct_answers` (the model's own answers from a direct forward).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np

from commsim.certify.error import error_certificate
from commsim.certify.types import Certificate
from commsim.core.channel import Transcript
from commsim.core.errors import InputError, NotApplicable
from commsim.core.limits import (MAX_EXHAUSTIVE_BITS, MAX_INSTANCES, MAX_SEQUENCE_LENGTH, check_memory, check_seed,
                                  check_size, show_size)
from commsim.core.party import Protocol, ProtocolError
from commsim.core.runner import AuditSession, RunResult, run_protocol
from commsim.pipeline.interfaces import (
    Encoded,
    EvaluationSet,
    Reduction,
    Simulator,
    Sweep,
)
from commsim.pipeline.framework import framework_agreement, recheck_certificate
from commsim.pipeline.measured import measured_error
from commsim.pipeline.report import Report
from commsim.plugins import load_plugins, make_model
from commsim.theory.bounds import LowerBound
from commsim.theory.problems import Problem

#: the most instances ``instances=None`` (``--instances all``) enumerates in memory; beyond, ``run_reduction``
#: streams them in shards (:mod:`commsim.pipeline.shards`) and the other callers sample
MAX_EXHAUSTIVE_INSTANCES = 1 << 24

#: bytes a run holds per instance and input position (inputs, tokens, per-position outputs), for the budget
BYTES_PER_POSITION = 32

#: instances of every batch sweep that also go through the per-instance runner
RUNNER_CHECKS = 64

Progress = Callable[[int, int], None]


# ---- prepare: reduction, problem, model, simulator ----------------------------------------------------
@dataclass(frozen=True)
class Prepared:
    """What every later stage works on: the reduction, its problem at size n, the model and the simulator
    that turns it into party programs (``spec``: the model spec it was built from, when one was given)."""

    reduction: Reduction
    problem: Problem
    model: Any
    simulator: Simulator
    spec: str | None = None

    @property
    def model_name(self) -> str:
        """The model as the report names it: its own spec, else the spec given, else its type."""
        return getattr(self.model, "spec", self.spec if self.spec is not None else type(self.model).__name__)


def simulator_for(model) -> Simulator:
    """The registered simulator that accepts this model (the model's kind selects it).

    When none does, a model may say why in ``no_protocol_reason`` (e.g. a two-layer transformer,
    which no simulator of the one-layer kind can run); that reason is the refusal."""
    for entry in load_plugins().entries("simulator"):
        if entry.obj.selectable and entry.obj.accepts(model):
            return entry.obj
    reason = getattr(model, "no_protocol_reason", None)
    raise NotApplicable(reason or f"no registered simulator wraps a model of type {type(model).__name__}", "model")


def prepare(reduction: str | Reduction, model: str | Any | None = None, n: int | None = None) -> Prepared:
    """The reduction (an id or the object), its problem at size ``n`` (default: the reduction's), the model
    (a spec string, sized to the task, or a model object; default: the reduction's default model) and the
    simulator for it; raises :class:`NotApplicable` when the reduction cannot use the model."""
    if isinstance(reduction, str):
        reduction = load_plugins().get("reduction", reduction, param="reduction")
    n = reduction.default_n if n is None else check_run_size(reduction, n)
    problem = reduction.problem(n)
    spec = model if model is not None else reduction.default_model
    built = make_model(spec, **reduction.model_context(n))
    simulator = simulator_for(built)
    if simulator.name in reduction.simulator_variants:   # e.g. a one-way protocol that uses a public query
        simulator = load_plugins().get("simulator", reduction.simulator_variants[simulator.name])
    reduction.check(built, simulator, problem)
    return Prepared(reduction, problem, built, simulator, spec if isinstance(spec, str) else None)


# ---- select instances ------------------------------------------------------------------------------------
class Instances(NamedTuple):
    """The (Alice, Bob) instances a run covers, as aligned arrays, and how they were chosen."""

    alice: np.ndarray
    bob: np.ndarray
    described: str


def check_run_size(reduction: Reduction, n) -> int:
    """``n`` when the reduction's encoding at size n stays within :data:`MAX_SEQUENCE_LENGTH` tokens;
    checked before the problem, the vocabulary or the model is built (an :class:`InputError` naming n)."""
    n = check_size(n, "n", 1)
    scale, offset = reduction.length_scale or 1, reduction.length_offset
    top = max((MAX_SEQUENCE_LENGTH - offset) // scale, 1)
    return check_size(n, "n", 1, top, f"{reduction.id} encodes it in about {scale}n + "
                                      f"{offset} tokens, and runs take sequences of at most {MAX_SEQUENCE_LENGTH} tokens")


def check_instances(problem: Problem, instances: int | None, seed: int) -> None:
    """Refuse (naming ``instances`` or ``seed``) what cannot run: a bad seed, more than :data:`MAX_INSTANCES`
    samples, samples whose arrays would pass the memory budget, or an exhaustive run over more than
    :data:`MAX_EXHAUSTIVE_INSTANCES` pairs -- all judged before anything is sampled or enumerated."""
    check_seed(seed, "seed")
    if instances is None:
        if problem.n > 2 * MAX_EXHAUSTIVE_BITS or problem.input_pairs > MAX_EXHAUSTIVE_INSTANCES:
            count = show_size(problem.input_pairs) if problem.n <= 64 else "more than 2^64"
            raise InputError(f"instances: all {count} instances of {problem.name} at n = {problem.n} "
                             f"are too many to run exhaustively (at most {MAX_EXHAUSTIVE_INSTANCES}); give a number "
                             f"of instances to sample", "instances")
        return
    check_size(instances, "instances", 1, MAX_INSTANCES, "each instance is a full model run and protocol run",
               noun="number of instances")
    # the inputs, the tokens and the model's per-position outputs: a few dozen bytes per input position
    check_memory(instances * max(int(problem.n), 1) * BYTES_PER_POSITION, "instances",
                 f"{show_size(instances)} instances of size n = {show_size(problem.n)}")


def select_instances(problem: Problem, instances: int | None, seed: int) -> Instances:
    """Every (alice, bob) pair when ``instances`` is None (at most :data:`MAX_EXHAUSTIVE_INSTANCES`),
    else that many seeded samples; the request is checked first (:func:`check_instances`)."""
    check_instances(problem, instances, seed)
    if instances is None:
        return Instances(*problem.all_pairs(), problem.all_description)
    return Instances(*problem.sample(np.random.default_rng(seed), instances), f"{instances} sampled (seed {seed})")


def encode_instances(setup: Prepared, chosen: Instances) -> Encoded:
    """The instances as model inputs with the split between the parties; the simulator must accept the split."""
    encoded = setup.reduction.encode(setup.problem, chosen.alice, chosen.bob)
    setup.simulator.check_partition(setup.model, encoded)
    return encoded


# ---- sweep and audit (shared with ``commsim cc``) ----------------------------------------------------------
@dataclass(frozen=True)
class BatchRun:
    """Per instance: the protocol's output, the bits each way and the rounds (a vectorized run's report)."""

    outputs: np.ndarray
    alice_to_bob: np.ndarray
    bob_to_alice: np.ndarray
    rounds: np.ndarray


@dataclass(frozen=True)
class Audited:
    """A sweep checked against the runner: the per-instance results (the batch's, or the runner's when there
    was no batch), the costliest transcript seen, and how many instances the runner ran."""

    run: BatchRun
    transcript: Transcript | None
    runner_checked: int


def runner_checks(count: int, seed: int, every: bool, checks: int = RUNNER_CHECKS) -> np.ndarray:
    """The instances the runner re-runs: all of them (``every``), else a seeded sample of ``checks``
    (default :data:`RUNNER_CHECKS`; all, in a seeded order, when there are no more)."""
    if every:
        return np.arange(count)
    return np.random.default_rng(seed + 1).choice(count, size=min(checks, count), replace=False)


def sweep_and_audit(protocol: Protocol, count: int, shares: Callable[[int], tuple], *, batch: BatchRun | None,
                    read_output: Callable[[Any], Any] = lambda out: out, seed: int = 0, audit: bool = False,
                    check_every: bool = False, transcript: Transcript | None = None,
                    progress: Progress | None = None, checks: int = RUNNER_CHECKS,
                    coins: Callable[[int], Any] | None = None) -> Audited:
    """Run instances through the real runner and hold the vectorized sweep to it.

    ``batch`` is the vectorized path's result for all ``count`` instances; a seeded subset
    (:func:`runner_checks`) is re-run by the runner on ``shares(i)`` and must agree in output
    (``read_output`` of the runner's output), bits each way and rounds, or a :class:`ProtocolError` (an
    internal fault) is raised.  Without a batch every instance goes through the runner, which then gives
    the results.  ``audit`` runs the parties in separate processes.  ``transcript`` is the costliest
    transcript known so far; the costliest seen is returned.  ``coins(i)``, for a randomized protocol, is
    instance i's :class:`~commsim.core.coins.CoinSource` (the batch must have drawn the same coins).
    """
    checks = runner_checks(count, seed, every=check_every or batch is None, checks=checks)
    results: list | None = None if batch is not None else [None] * count
    session = AuditSession() if audit else None
    try:
        for step, i in enumerate(checks):
            i = int(i)
            result = run_protocol(protocol, *shares(i), audit=session or False,
                                  coins=None if coins is None else coins(i))
            t = result.transcript
            output = read_output(result.output)
            if batch is not None:
                got = (np.asarray(output).reshape(-1).tolist(), t.bits_by_direction["alice_to_bob"],
                       t.bits_by_direction["bob_to_alice"], t.rounds)
                want = (np.asarray(batch.outputs[i]).reshape(-1).tolist(), int(batch.alice_to_bob[i]),
                        int(batch.bob_to_alice[i]), int(batch.rounds[i]))
                if got != want:
                    raise ProtocolError(f"{protocol.name}: the vectorized sweep disagrees with the runner on instance "
                                        f"{i}: runner (output, a->b, b->a, rounds) = {got}, sweep = {want}")
            else:
                results[i] = (output, t.bits_by_direction["alice_to_bob"], t.bits_by_direction["bob_to_alice"],
                              t.rounds)
            if transcript is None or t.total_bits > transcript.total_bits:
                transcript = t
            if progress:
                progress(step + 1, len(checks))
    finally:
        if session is not None:
            session.close()
    if batch is None:
        batch = BatchRun(np.array([r[0] for r in results]) if results else np.zeros(0, dtype=np.int64),
                         *(np.array([r[k] for r in results], dtype=np.int64) for k in (1, 2, 3)))
    return Audited(batch, transcript, len(checks))


def _labels(output) -> np.ndarray:
    """The output labels of a simulator's party programs (they return ``(labels, raw_output)``)."""
    return np.asarray(output[0]).reshape(-1)


def simulate(setup: Prepared, encoded: Encoded, *, seed: int = 0, audit: bool = False,
             progress: Callable[[str, int, int], None] | None = None,
             checks: int = RUNNER_CHECKS) -> tuple[Sweep, Audited]:
    """The simulator's vectorized sweep over every instance (protocol and direct forward), audited against
    the runner (:func:`sweep_and_audit`): every instance in audit mode when there are at most ``checks``
    (default :data:`RUNNER_CHECKS`), else a seeded sample of ``checks`` (a streamed shard spreads them)."""
    sweep = setup.simulator.sweep(setup.model, encoded, progress=_stage(progress, "sweep"))
    batch = BatchRun(sweep.protocol_labels, sweep.alice_to_bob, sweep.bob_to_alice, sweep.rounds)
    audited = sweep_and_audit(setup.simulator.make_protocol(setup.model, encoded), encoded.batch, encoded.shares,
                              batch=batch, read_output=_labels, seed=seed, audit=audit,
                              check_every=audit and encoded.batch <= checks, transcript=sweep.transcript,
                              progress=_stage(progress, "runner check"), checks=checks)
    return sweep, audited


def _stage(progress: Callable[[str, int, int], None] | None, name: str) -> Progress | None:
    """``progress(stage, done, total)`` narrowed to one stage."""
    return (lambda done, total: progress(name, done, total)) if progress else None


# ---- decode, bound -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """The decoded answers: the problem's own, the protocol's, the direct forward's, and whether the
    protocol's raw outputs matched the direct forward bit for bit."""

    expected: np.ndarray
    answers: np.ndarray
    direct: np.ndarray
    exact_match: np.ndarray

    @property
    def correct(self) -> np.ndarray:
        """Per instance: the protocol's answer is the problem's."""
        return self.answers == self.expected

    @property
    def matches(self) -> np.ndarray:
        """Per instance: the protocol equals the model (raw outputs bit for bit, and the decoded answers)."""
        return np.asarray(self.exact_match, dtype=bool) & (self.answers == self.direct)


def decode(setup: Prepared, chosen: Instances, sweep: Sweep) -> Outcome:
    """The model's output labels (from the protocol and from the direct forward) decoded to answers of the
    source problem, beside the problem's own answers."""
    expected = setup.problem.evaluate_batch(chosen.alice, chosen.bob)
    return Outcome(expected, setup.reduction.decode(sweep.protocol_labels, chosen.bob),
                   setup.reduction.decode(sweep.direct_labels, chosen.bob), sweep.exact_match)


def lower_bound(setup: Prepared, encoded: Encoded) -> LowerBound:
    """The reduction's lower bound for this model and split (or the reason it does not apply)."""
    return setup.reduction.lower_bound(setup.model, setup.simulator, setup.problem, encoded)


# ---- evaluation sets: the instances, and the strings the reduction adds ------------------------------------
def evaluation_sets(setup: Prepared, chosen: Instances, instances: int | None, seed: int) -> list[EvaluationSet]:
    """The chosen instances first, then the sets the reduction declares beyond them.

    A reduction's :meth:`~commsim.pipeline.interfaces.Reduction.evaluation_sets` may return more: e.g. Dyck-(2,2), whose fooling set holds only members while membership is
    a function of every string of length N, adds the non-members (Lemma 1 of [BHBK24] bounds a protocol that
    decides membership on all strings).  A problem names its exhaustive set with ``all_set = (name, phrase)`` (:class:`Problem`)."""
    if instances is None:
        name, phrase = setup.problem.all_set
    else:
        name, phrase = "sampled", f"sampled instances (seed {seed})"
    more = list(setup.reduction.evaluation_sets(setup.problem, chosen.alice, chosen.bob, seed))
    return [EvaluationSet(name, chosen.alice, chosen.bob, phrase), *more]


@dataclass(frozen=True)
class Evaluated:
    """One evaluation set through encode -> simulate (audited) -> decode."""

    which: EvaluationSet
    chosen: Instances
    encoded: Encoded
    sweep: Sweep
    audited: Audited
    outcome: Outcome

    @property
    def wrong(self) -> np.ndarray:
        """The indices of the instances the model gets wrong."""
        return np.flatnonzero(~self.outcome.correct)


def evaluate(setup: Prepared, which: EvaluationSet, *, seed: int = 0, audit: bool = False,
             progress: Callable[[str, int, int], None] | None = None, checks: int = RUNNER_CHECKS) -> Evaluated:
    """Encode one set, run the simulator's audited sweep on it (the protocol must equal the direct forward
    on these strings too) and decode the answers (``checks``: instances the runner re-runs, see :func:`simulate`)."""
    chosen = Instances(which.alice, which.bob, which.described)
    encoded = encode_instances(setup, chosen)
    named = (lambda stage, done, total: progress(f"{stage} ({which.name})", done, total)) if progress else None
    sweep, audited = simulate(setup, encoded, seed=seed, audit=audit, progress=named, checks=checks)
    return Evaluated(which, chosen, encoded, sweep, audited, decode(setup, chosen, sweep))


# ---- one instance end to end, and the direct forward -----------------------------------------------------
class InstanceRun(NamedTuple):
    """One instance through the pipeline: its model input and split, the runner's result (transcript and
    outputs), the decoded answer of the protocol and the direct forward's."""

    encoded: Encoded
    result: RunResult
    answer: int
    direct_answer: int


def _one(a, b) -> tuple[np.ndarray, np.ndarray]:
    """One (Alice, Bob) instance as batches of one."""
    return np.asarray(a)[None], np.asarray(b).reshape(1, *np.shape(b))


def direct_answers(setup: Prepared, A: np.ndarray, B: np.ndarray, encoded: Encoded | None = None) -> np.ndarray:
    """The model's answers to instances (A, B) from a direct forward: encode, run the model, decode."""
    encoded = setup.reduction.encode(setup.problem, A, B) if encoded is None else encoded
    return setup.reduction.decode(setup.simulator.direct_labels(setup.model, encoded), B)


def run_one_instance(setup: Prepared, alice_input, bob_input, *, audit: bool = False) -> InstanceRun:
    """Encode one instance, split it between the parties, run the simulator's party programs through the
    runner (``audit``: in separate processes), decode the output; also the direct forward's answer."""
    A, B = _one(alice_input, bob_input)
    encoded = setup.reduction.encode(setup.problem, A, B)
    result = run_protocol(setup.simulator.make_protocol(setup.model, encoded), *encoded.shares(0), audit=audit)
    answer = int(setup.reduction.decode(_labels(result.output)[None], B)[0])
    return InstanceRun(encoded, result, answer, int(direct_answers(setup, A, B, encoded)[0]))


# ---- certificate, report -----------------------------------------------------------------------------------
def find_certificate(setup: Prepared, evaluated: list[Evaluated], bound: LowerBound, *, seed: int = 0,
                     search: bool = True,
                     progress: Callable[[str, int, int], None] | None = None) -> tuple[Certificate | None, str]:
    """The input on which the model must fail, and what was searched.

    Below the bound (bits used: the worst instance of every set) the simulator's own search comes first (it
    says *why* the model must fail: a collision, a crossing); a plain wrong instance -- of the first set with
    one -- is the certificate when that search finds nothing verified."""
    certificate, searched = None, ""
    bits_used = max(int(e.sweep.total_bits.max()) for e in evaluated if e.chosen.alice.shape[0])
    if search and bound.applies and bound.bits is not None and bits_used < bound.bits:
        certificate, searched = setup.simulator.certificate(setup.model, setup.reduction, setup.problem, bound,
                                                            seed=seed, progress=_stage(progress, "certificate search"))
    failing = [e for e in evaluated if e.wrong.size]
    if failing and (certificate is None or not certificate.verified):
        e = failing[0]
        certificate = error_certificate(setup.problem, e.chosen.alice, e.chosen.bob, e.outcome.expected,
                                        e.outcome.answers, int(e.wrong[0]), lambda A, B: direct_answers(setup, A, B),
                                        where=f"the {e.which.described}")
        searched = (f"{searched}; " if searched else "") + "the model is wrong on " + ", ".join(
            f"{f.wrong.size:,} of the {len(f.chosen.alice):,} {f.which.described}" for f in failing) + \
            f"; the first of the {e.which.described} is the certificate"
    return recheck_certificate(setup, certificate), searched   # a framework model's forward re-checks it


def make_report(setup: Prepared, chosen: Instances, evaluated: list[Evaluated], bound: LowerBound,
                certificate: Certificate | None, searched: str, *, audit: bool = False) -> Report:
    """The report: bits used (worst instance of every set) against the bound, correctness on every set (and
    none when a verified certificate shows a failing input), exactness on every set, the certificate."""
    main = evaluated[0]
    costliest = max((e for e in evaluated if e.chosen.alice.shape[0]), key=lambda e: int(e.sweep.total_bits.max()))
    worst = int(np.argmax(costliest.sweep.total_bits))
    formula, formula_text = setup.simulator.bits_formula(setup.model, main.encoded)
    correct = np.concatenate([e.outcome.correct for e in evaluated])
    transcripts = [e.audited.transcript for e in evaluated if e.audited.transcript is not None]
    sets = [{"name": e.which.name, "description": e.which.described, "instances": len(e.chosen.alice),
             "wrong": int(e.wrong.size), "accuracy": float(e.outcome.correct.mean()) if len(e.chosen.alice) else 1.0,
             "protocol_matches_model": bool(e.outcome.matches.all())} for e in evaluated]
    refuted = certificate is not None and certificate.verified
    signals = trust_signals(setup, main.encoded, int(main.sweep.total_bits.max()) if len(main.chosen.alice) else 0,
                            int(main.wrong.size), len(main.chosen.alice), exhaustive=main.which.name != "sampled")
    return Report(
        reduction=setup.reduction.id, problem=setup.problem.name, task=setup.reduction.task,
        protocol=setup.simulator.name, model=setup.model_name, n=setup.problem.n, seq_len=main.encoded.seq_len,
        instances=chosen.described, instances_run=len(main.chosen.alice),
        bits_used=int(costliest.sweep.total_bits[worst]),
        bits_by_direction={"alice_to_bob": int(costliest.sweep.alice_to_bob[worst]),
                           "bob_to_alice": int(costliest.sweep.bob_to_alice[worst])},
        rounds=max(int(np.max(e.sweep.rounds)) for e in evaluated if e.chosen.alice.shape[0]),
        bits_formula=formula, bits_formula_text=formula_text,
        lower_bound=bound, model_accuracy=float(correct.mean()), model_correct=bool(correct.all()) and not refuted,
        protocol_matches_model=all(s["protocol_matches_model"] for s in sets),
        runner_checked=sum(e.audited.runner_checked for e in evaluated), audited=audit,
        certificate=certificate, certificate_search=searched,
        transcript=max(transcripts, key=lambda t: t.total_bits) if transcripts else None, details=main.sweep.details,
        accuracy_by_set={s["name"]: s["accuracy"] for s in sets}, evaluation_sets=sets, **signals)


def trust_signals(setup: Prepared, encoded: Encoded, bits: int, wrong: int, trials: int, *, exhaustive: bool) -> dict:
    """The report fields every run (in memory or streamed) carries beside its counts: ``measured_error`` against
    the reduction's distributional bound (if it has one) and ``torch_agreement`` with a framework's forward."""
    err = setup.reduction.error_bound(setup.model, setup.simulator, setup.problem, encoded, bits)
    return {"measured_error": None if err is None else measured_error(err, wrong, trials, exhaustive=exhaustive),
            "torch_agreement": framework_agreement(setup.model, encoded)}
