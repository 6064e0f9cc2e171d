"""The stages of the pipeline, one function per box of the picture in :mod:`commsim.runs.run`.

:func:`commsim.runs.run.run_reduction` composes them: :func:`prepare` (reduction, problem, model,
simulator) -> :func:`select_instances` -> :func:`evaluation_sets` (the instances, and the sets the reduction
adds: a language is judged on all its strings, not only on the fooling set's members) -> :func:`evaluate`
per set (:func:`encode_instances` -> :func:`simulate`, the simulator's batch run, audited against the
runner by :func:`sweep_and_audit`, which ``commsim cc`` shares -> :func:`decode` -> a
:class:`~commsim.runs.tally.Tally`) -> :func:`lower_bound` -> the certificate stage
(:mod:`commsim.runs.certificates`) -> :func:`commsim.runs.assemble.make_report`.
:meth:`Prepared.run_instance` is the whole path for a single instance, through the real runner, and
:meth:`Prepared.direct_answers` the model's own answers from a direct forward: lessons and the certificate
stage use them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np

from commsim.core.channel import Transcript
from commsim.core.errors import InputError, NotApplicable
from commsim.core.limits import (MAX_EXHAUSTIVE_BITS, MAX_INSTANCES, MAX_SEQUENCE_LENGTH, check_memory, check_seed,
                                  check_size, show_size)
from commsim.core.party import Protocol, ProtocolError
from commsim.core.runner import AuditSession, RunResult, run_protocol
from commsim.runs.arguments import given_side
from commsim.contract import (
    BatchResult,
    BatchRun,
    Encoded,
    EvaluationSet,
    MessagePlan,
    Reduction,
    Simulator,
)
from commsim.contract.simulator import run_batch
from commsim.runs.tally import Tally, tally_batch
from commsim.plugins import load_plugins, make_model
from commsim.theory.bounds import LowerBound
from commsim.theory.problems import Problem

#: the most instances ``instances=None`` (``--instances all``) enumerates in memory; beyond, ``run_reduction``
#: streams them in shards (:mod:`commsim.runs.shards`) and the other callers sample
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
    that turns it into party programs (``spec``: the model spec it was built from, when one was given;
    ``chosen``: how the simulator was chosen, in words; ``asked``: the simulator's name when one was named)."""

    reduction: Reduction
    problem: Problem
    model: Any
    simulator: Simulator
    spec: str | None = None
    chosen: str = ""
    asked: str | None = None

    @property
    def model_name(self) -> str:
        """The model as the report names it: its own spec, else the spec given, else its type."""
        return getattr(self.model, "spec", self.spec if self.spec is not None else type(self.model).__name__)

    def plan(self, encoded: Encoded) -> MessagePlan:
        """The simulator's message plan for this model on the encoding's split (NotApplicable if none)."""
        return self.simulator.plan_model(self.model, encoded)

    def direct_answers(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """The model's answers to instances (A, B) from a direct forward (:func:`direct_answers`)."""
        return direct_answers(self, A, B)

    def run_instance(self, alice_input, bob_input, *, audit: bool = False) -> "InstanceRun":
        """One instance through the real runner (:func:`run_one_instance`)."""
        return run_one_instance(self, alice_input, bob_input, audit=audit)


def simulator_for(model, name: str | None = None) -> tuple[Simulator, str]:
    """The simulator that turns ``model`` into party programs, and how it was chosen, in words.

    ``name`` (``run --simulator``) picks a registered simulator, which must accept the model.  Otherwise the
    model's kind selects: of the selectable simulators that accept it, the lowest
    ``precedence`` it registered with wins; two that accept it with the same
    precedence are refused (name one), never chosen silently.  When none accepts, a model may say why in
    ``no_protocol_reason`` (e.g. a two-layer transformer); that reason is the refusal."""
    registry = load_plugins()
    if name is not None:
        simulator = registry.get("simulator", name, param="simulator")
        if not simulator.accepts(model):
            raise InputError(f"simulator: {name} does not wrap a model of type {type(model).__name__}", "simulator")
        return simulator, "by name"
    accepting = sorted((e for e in registry.entries("simulator") if e.obj.selectable and e.obj.accepts(model)),
                       key=lambda e: (e.precedence, e.name))
    if not accepting:
        reason = getattr(model, "no_protocol_reason", None)
        raise NotApplicable(reason or f"no registered simulator wraps a model of type {type(model).__name__}",
                            "model")
    first = accepting[0]
    tied = [e.name for e in accepting[1:] if e.precedence == first.precedence]
    if tied:
        raise InputError(f"simulator: {', '.join([first.name, *tied])} all accept this model with the same "
                         f"precedence; name the one to use (simulator=NAME)", "simulator")
    others = [e.name for e in accepting[1:]]
    return first.obj, ("by the model's kind" + (f" (over {', '.join(others)}: lower precedence)" if others else ""))


def prepare(reduction: str | Reduction, model: str | Any | None = None, n: int | None = None, *,
            simulator: str | None = None) -> Prepared:
    """The reduction (an id or the object), its problem at size ``n`` (default: the reduction's), the model
    (a spec string, sized to the task, or a model object; default: the reduction's default model) and the
    simulator for it (``simulator``: a registered name, else :func:`simulator_for` chooses); raises
    :class:`NotApplicable` when the reduction cannot use the model."""
    if isinstance(reduction, str):
        reduction = load_plugins().get("reduction", reduction, param="reduction")
    n = reduction.default_n if n is None else check_run_size(reduction, n)
    problem = reduction.problem(n)
    spec = model if model is not None else reduction.default_model
    built = make_model(spec, **reduction.model_context(n))
    chosen_simulator, chosen = simulator_for(built, simulator)
    if simulator is None and chosen_simulator.name in reduction.simulator_variants:  # e.g. a public-query protocol
        variant = reduction.simulator_variants[chosen_simulator.name]
        chosen_simulator = load_plugins().get("simulator", variant)
        chosen = f"as the variant {reduction.id} runs for {chosen_simulator.name}"
    reduction.check(built, chosen_simulator, problem)
    return Prepared(reduction, problem, built, chosen_simulator, spec if isinstance(spec, str) else None, chosen,
                    simulator)


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
    """Every (alice, bob) pair when ``instances`` is None (at most :data:`MAX_EXHAUSTIVE_INSTANCES`) or at least
    the number of distinct instances (a sample that large would only repeat them: each runs once, and the
    description says so), else that many seeded samples; the request is checked first (:func:`check_instances`)."""
    check_instances(problem, instances, seed)
    if instances is None:
        return Instances(*problem.all_pairs(), problem.all_description)
    if covers_all(problem, instances):
        return Instances(*problem.all_pairs(), f"{problem.all_description} -- each once, since {instances} samples "
                                               f"would only repeat the {problem.input_pairs} distinct instances")
    return Instances(*problem.sample(np.random.default_rng(seed), instances), f"{instances} sampled (seed {seed})")


def covers_all(problem: Problem, instances: int | None) -> bool:
    """Does the run take every instance (``instances`` None, or a sample at least as large as the space)?"""
    return instances is None or instances >= problem.input_pairs


def given_instances(problem: Problem, alice, bob, described: str, names: tuple[str, str] = ("alice", "bob"), *,
                    single: bool = False) -> Instances:
    """Instances chosen by the caller (:func:`commsim.runs.run.run_instances`, :meth:`Prepared.run_instance`),
    checked before anything is encoded: aligned, non-empty arrays whose rows are inputs of the problem at its size
    (an :class:`InputError` naming ``names[0]`` or ``names[1]``, and the bad row unless ``single``: one instance,
    given as a batch of one), never an error from deep inside the encoding."""
    A = given_side(problem, alice, names[0], "Alice", single)
    B = given_side(problem, bob, names[1], "Bob", single)
    if len(A) != len(B):
        raise InputError(f"{names[1]} must hold one input per row of {names[0]} ({len(A)}), got {len(B)}", names[1])
    return Instances(A, B, described)


def encode_instances(setup: Prepared, chosen: Instances) -> Encoded:
    """The instances as model inputs with the split between the parties; the simulator must have a plan for
    the split (its :meth:`~commsim.contract.Simulator.plan` refuses one that does not fit)."""
    encoded = setup.reduction.encode(setup.problem, chosen.alice, chosen.bob)
    setup.plan(encoded)
    return encoded


# ---- sweep and audit (shared with ``commsim cc``) ----------------------------------------------------------
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
    """Run instances through the real runner and hold the batch run to it.

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
                    raise ProtocolError(f"{protocol.name}: the batch run disagrees with the runner on instance "
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
             checks: int = RUNNER_CHECKS) -> tuple[BatchResult, Audited]:
    """The simulator's batch run over every instance (protocol and direct forward; the runner's, one instance
    after another, for a simulator with no vectorized path: :func:`~commsim.contract.simulator.run_batch`),
    audited against the runner (:func:`sweep_and_audit`): every instance in audit mode when there are at most
    ``checks`` (default :data:`RUNNER_CHECKS`), else a seeded sample of ``checks`` (a streamed shard spreads
    them)."""
    result = run_batch(setup.simulator, setup.model, encoded, progress=stage_progress(progress, "batch"))
    batch = BatchRun(result.protocol_labels, result.alice_to_bob, result.bob_to_alice, result.rounds)
    audited = sweep_and_audit(setup.simulator.protocol(setup.model, encoded), encoded.batch, encoded.shares,
                              batch=batch, read_output=_labels, seed=seed, audit=audit,
                              check_every=audit and encoded.batch <= checks, transcript=result.transcript,
                              progress=stage_progress(progress, "runner check"), checks=checks)
    return result, audited


def stage_progress(progress: Callable[[str, int, int], None] | None, name: str) -> Progress | None:
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


def decode(setup: Prepared, chosen: Instances, sweep: BatchResult) -> Outcome:
    """The model's output labels (from the protocol and from the direct forward) decoded to answers of the
    source problem, beside the problem's own answers."""
    expected = setup.problem.evaluate_batch(chosen.alice, chosen.bob)
    return Outcome(expected, setup.reduction.decode(sweep.protocol_labels, chosen.bob),
                   setup.reduction.decode(sweep.direct_labels, chosen.bob), sweep.exact_match)


def lower_bound(setup: Prepared, encoded: Encoded, plan: MessagePlan | None = None) -> LowerBound:
    """The reduction's lower bound for the protocol of this model on the encoding's split (its message plan:
    who speaks, how many bits), or the reason it does not apply."""
    plan = setup.plan(encoded) if plan is None else plan
    return setup.reduction.lower_bound(setup.model, plan, setup.problem, encoded)


# ---- evaluation sets: the instances, and the strings the reduction adds ------------------------------------
def evaluation_sets(setup: Prepared, chosen: Instances, instances: int | None, seed: int) -> list[EvaluationSet]:
    """The chosen instances first, then the sets the reduction declares beyond them.

    A reduction's :meth:`~commsim.contract.Reduction.evaluation_sets` may return more: e.g. Dyck-(2,2), whose fooling set holds only members while membership is
    a function of every string of length N, adds the non-members (Lemma 1 of [BHBK24] bounds a protocol that
    decides membership on all strings).  A problem names its exhaustive set with ``all_set = (name, phrase)`` (:class:`Problem`)."""
    if covers_all(setup.problem, instances):
        name, phrase = setup.problem.all_set
    else:
        name, phrase = "sampled", f"sampled instances (seed {seed})"
    more = list(setup.reduction.evaluation_sets(setup.problem, chosen.alice, chosen.bob, seed))
    return [EvaluationSet(name, chosen.alice, chosen.bob, phrase), *more]


@dataclass(frozen=True)
class Evaluated:
    """One evaluation set through encode -> simulate (audited) -> decode, and its :class:`Tally`."""

    which: EvaluationSet
    encoded: Encoded
    batch: BatchResult
    audited: Audited
    outcome: Outcome
    tally: Tally


def evaluate(setup: Prepared, which: EvaluationSet, *, seed: int = 0, audit: bool = False,
             progress: Callable[[str, int, int], None] | None = None, checks: int = RUNNER_CHECKS,
             start: int = 0, chunk: int = 0) -> Evaluated:
    """Encode one set, run the simulator's audited batch on it (the protocol must equal the direct forward
    on these strings too), decode the answers and tally them (``checks``: instances the runner re-runs, see
    :func:`simulate`; ``start``: the rank of the set's first instance in a streamed run)."""
    chosen = Instances(which.alice, which.bob, which.described)
    encoded = encode_instances(setup, chosen)
    named = (lambda stage, done, total: progress(f"{stage} ({which.name})", done, total)) if progress else None
    batch, audited = simulate(setup, encoded, seed=seed, audit=audit, progress=named, checks=checks)
    outcome = decode(setup, chosen, batch)
    tally = tally_batch(batch, outcome, which.alice, which.bob, start=start, runner_checked=audited.runner_checked,
                        transcript=audited.transcript, name=which.name, described=which.described, chunk=chunk)
    return Evaluated(which, encoded, batch, audited, outcome, tally)


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
    A, B, _ = given_instances(setup.problem, [alice_input], [bob_input], "one instance", ("alice_input", "bob_input"),
                              single=True)
    encoded = setup.reduction.encode(setup.problem, A, B)
    result = run_protocol(setup.simulator.protocol(setup.model, encoded), *encoded.shares(0), audit=audit)
    answer = int(setup.reduction.decode(_labels(result.output)[None], B)[0])
    return InstanceRun(encoded, result, answer, int(direct_answers(setup, A, B, encoded)[0]))
