"""Reductions: a source problem becomes a model task, the model becomes a protocol.

:func:`run_reduction` reads like the picture in DESIGN section 1::

    instances ──encode──▶ model inputs + split ──model protocol──▶ transcripts, outputs
        ──decode──▶ answers ──▶ report (bits vs bound, correctness, exactness, certificate)

Three plugin roles meet here:

* a :class:`Reduction` (``reduction`` registry kind) knows the source problem, how an
  instance is encoded into the model's tokens and who owns which position, how the
  model's output labels decode to the answer, and the lower bound for a model;
* a :class:`ModelProtocol` (``model-protocol`` kind) wraps a model into party programs
  (e.g. the hidden-state handoff, Theorem 2 of [BHBK24]) and sweeps many instances at
  once; it also searches for certificates when the model's budget is below the bound;
* a model (``model`` kind), built from a spec by :func:`commsim.plugins.make_model`.

The engine checks what every plugin claims: a seeded subset of every sweep is re-run
through the real runner (:func:`commsim.runner.run_protocol`), whose outputs and bit
counts must equal the sweep's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from commsim.bounds import LowerBound
from commsim.channel import Transcript
from commsim.communication import RUNNER_CHECKS, select_instances
from commsim.errors import InputError, NotApplicable
from commsim.party import Protocol, ProtocolError
from commsim.plugins import load_plugins, make_model
from commsim.problems import Problem
from commsim.runner import AuditSession, run_protocol

__all__ = ["Encoded", "Sweep", "Certificate", "Report", "Reduction", "ModelProtocol", "run_reduction",
           "protocol_for", "Share"]


@dataclass(frozen=True)
class Share:
    """What one party holds of one model input: the tokens at the positions it owns."""

    positions: np.ndarray
    tokens: np.ndarray
    seq_len: int


@dataclass(frozen=True)
class Encoded:
    """A batch of source instances encoded as model inputs, with the split between the parties.

    ``tokens`` is (batch, seq_len); ``alice_positions`` are the (0-based) positions Alice owns,
    the same for every instance; Bob owns the rest.  ``output_positions`` are where the model's
    decision is read (usually just the last position).
    """

    tokens: np.ndarray
    alice_positions: np.ndarray
    output_positions: tuple[int, ...]

    @property
    def seq_len(self) -> int:
        return int(self.tokens.shape[1])

    @property
    def batch(self) -> int:
        return int(self.tokens.shape[0])

    @property
    def bob_positions(self) -> np.ndarray:
        mask = np.ones(self.seq_len, dtype=bool)
        mask[self.alice_positions] = False
        return np.flatnonzero(mask)

    def shares(self, i: int) -> tuple[Share, Share]:
        a, b = self.alice_positions, self.bob_positions
        row = self.tokens[i]
        return Share(a, row[a].copy(), self.seq_len), Share(b, row[b].copy(), self.seq_len)

    def owner(self, position: int) -> str:
        return "alice" if position in set(self.alice_positions.tolist()) else "bob"

    def subset(self, index) -> "Encoded":
        return Encoded(self.tokens[index], self.alice_positions, self.output_positions)


@dataclass
class Sweep:
    """A model protocol run over a batch: per instance, the protocol's and the direct forward's
    output labels (batch, outputs), whether the raw outputs matched bit for bit, and the bits."""

    protocol_labels: np.ndarray
    direct_labels: np.ndarray
    exact_match: np.ndarray
    alice_to_bob: np.ndarray
    bob_to_alice: np.ndarray
    rounds: np.ndarray
    transcript: Transcript | None = None      # one representative transcript (the costliest)
    details: dict = field(default_factory=dict)  # per-step / per-head bit itemization etc.

    @property
    def total_bits(self) -> np.ndarray:
        return np.asarray(self.alice_to_bob) + np.asarray(self.bob_to_alice)


@dataclass(frozen=True)
class Certificate:
    """An input on which the model must fail, verified by a direct forward.

    ``kind``: ``"collision"`` (two Alice inputs hand off the same message; pigeonhole),
    ``"rectangle"`` (two fooling-set members share a transcript; their crossing), or
    ``"error"`` (the model is simply wrong on an instance).
    """

    kind: str
    alice_input: Any
    bob_input: Any
    expected: int
    model_output: int
    explanation: str
    verified: bool
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "alice_input": self.alice_input, "bob_input": self.bob_input,
                "expected": self.expected, "model_output": self.model_output, "explanation": self.explanation,
                "verified": self.verified, "details": self.details}


@dataclass
class Report:
    """Everything ``commsim run`` reports; :meth:`to_dict` has the contract's keys."""

    reduction: str
    problem: str
    task: str
    protocol: str
    model: str
    n: int
    seq_len: int
    instances: str
    instances_run: int
    bits_used: int
    bits_by_direction: dict
    rounds: int
    bits_formula: int
    bits_formula_text: str
    lower_bound: LowerBound
    model_accuracy: float
    model_correct: bool
    protocol_matches_model: bool
    runner_checked: int
    audited: bool
    certificate: Certificate | None
    certificate_search: str = ""
    transcript: Transcript | None = None
    details: dict = field(default_factory=dict)

    @property
    def budget_ok(self) -> bool | None:
        return self.lower_bound.satisfied_by(self.bits_used)

    def to_dict(self) -> dict:
        lb = self.lower_bound
        return {
            "reduction": self.reduction, "problem": self.problem, "task": self.task, "protocol": self.protocol,
            "model": self.model, "n": self.n, "seq_len": self.seq_len, "instances": self.instances,
            "instances_run": self.instances_run, "bits_used": self.bits_used,
            "bits_by_direction": self.bits_by_direction, "rounds": self.rounds,
            "bits_formula": self.bits_formula, "bits_formula_text": self.bits_formula_text,
            "lower_bound_bits": lb.bits, "lower_bound_source": lb.source, "lower_bound": lb.to_dict(),
            "bound_applies": lb.applies, "bound_note": lb.note, "budget_ok": self.budget_ok,
            "model_accuracy": self.model_accuracy, "model_correct": self.model_correct,
            "protocol_matches_model": self.protocol_matches_model, "runner_checked": self.runner_checked,
            "audited": self.audited,
            "certificate": None if self.certificate is None else self.certificate.to_dict(),
            "certificate_search": self.certificate_search,
            "transcript": None if self.transcript is None else self.transcript.to_dict(),
            "details": self.details,
        }


class Reduction:
    """Base class for reductions (registry kind ``reduction``).  Subclasses set the class
    attributes and implement :meth:`problem`, :meth:`vocabulary`, :meth:`encode`, :meth:`decode`
    and :meth:`lower_bound`."""

    id: str = ""
    problem_name: str = ""
    task: str = ""
    source: str = ""            # where the reduction is proved, e.g. "Theorem 3 of [BHBK24]"
    description: str = ""
    default_model: str = ""     # the spec `commsim run` uses when --model is not given
    default_n: int = 8

    def problem(self, n: int) -> Problem:
        raise NotImplementedError

    def vocabulary(self, n: int) -> list[str]:
        """Names of the task's tokens (token id = index); its length is the vocabulary size."""
        raise NotImplementedError

    def encode(self, problem: Problem, A: np.ndarray, B: np.ndarray) -> Encoded:
        raise NotImplementedError

    def decode(self, labels: np.ndarray, B: np.ndarray) -> np.ndarray:
        """Model output labels (batch, outputs) and Bob's inputs -> answers of the source problem."""
        raise NotImplementedError

    def lower_bound(self, model, wrapper: "ModelProtocol", problem: Problem, encoded: Encoded) -> LowerBound:
        raise NotImplementedError

    def length_bound(self, arch: str, seq_len: int) -> LowerBound:
        """The bound in the theorem's own form, as a function of the model's sequence length N,
        for an architecture ``"rnn"`` (hidden-state handoff) or ``"attention"`` (one layer).
        Used by ``commsim budget``; a bound that does not apply says so."""
        raise NotImplementedError(f"{self.id} gives no bound as a function of the sequence length")

    def check(self, model, wrapper: "ModelProtocol", problem: Problem) -> None:
        """Raise :class:`NotApplicable` (with the paper's reason) when this reduction cannot use the model."""

    def seq_len(self, n: int) -> int:
        problem = self.problem(n)
        A, B = problem.sample(np.random.default_rng(0), 1)
        return self.encode(problem, A, B).seq_len

    def model_context(self, n: int) -> dict:
        """What a model factory may use to size a random model to this task."""
        return {"vocab_size": len(self.vocabulary(n)), "seq_len": self.seq_len(n), "n": n,
                "task": self.task, "reduction": self.id}


class ModelProtocol:
    """Base class for model protocols (registry kind ``model-protocol``)."""

    name: str = ""
    source: str = ""
    #: the architecture name ``commsim budget --arch`` uses for this protocol ("" = not offered)
    arch: str = ""

    def budget_bits(self, width: int, precision: int, heads: int, seq_len: int) -> tuple[int, str]:
        """The theorem's bit count for an architecture of this width/precision/heads at length N,
        and its formula as text (``commsim budget``)."""
        raise NotImplementedError(f"{self.name} gives no budget formula")

    def direction(self, model, encoded: Encoded) -> str:
        """``"one-way"`` when only Alice speaks, once, on this split; else ``"two-way"``.
        Reductions use it to pick the bound that applies."""
        return "two-way"

    def accepts(self, model) -> bool:
        raise NotImplementedError

    def check_partition(self, model, encoded: Encoded) -> None:
        """Raise :class:`NotApplicable` when the split does not fit the protocol."""

    def bits_formula(self, model, encoded: Encoded) -> tuple[int, str]:
        """The theorem's bit count for this model and input length, and how it is made up."""
        raise NotImplementedError

    def make_protocol(self, model, encoded: Encoded) -> Protocol:
        """Party programs whose shares are :class:`Share` values; the output party returns
        ``(labels, raw_output)`` with ``labels`` an int array over ``encoded.output_positions``."""
        raise NotImplementedError

    def direct_labels(self, model, encoded: Encoded) -> np.ndarray:
        """The model's own decisions (batch, outputs) from a direct forward."""
        raise NotImplementedError

    def sweep(self, model, encoded: Encoded, progress: Callable | None = None) -> Sweep:
        """The protocol and the direct forward on every instance (vectorized)."""
        raise NotImplementedError

    def certificate(self, model, reduction: Reduction, problem: Problem, bound: LowerBound, *,
                    seed: int = 0, progress: Callable | None = None) -> tuple[Certificate | None, str]:
        """Search for an input on which the model must fail; returns (certificate or None, what was searched)."""
        return None, "no certificate search for this protocol"


def protocol_for(model) -> ModelProtocol:
    """The registered model protocol that accepts this model (the model's kind selects it).

    When none does, a model may say why in ``no_protocol_reason`` (e.g. a two-layer transformer,
    which no protocol of the one-layer kind can simulate); that reason is the refusal."""
    reg = load_plugins()
    for entry in reg.entries("model-protocol"):
        if entry.obj.accepts(model):
            return entry.obj
    reason = getattr(model, "no_protocol_reason", None)
    raise NotApplicable(reason or f"no registered protocol wraps a model of type {type(model).__name__}", "--model")


def error_certificate(reduction: Reduction, problem: Problem, wrapper: ModelProtocol, model, A, B, expected,
                      answers, index: int) -> Certificate:
    """The model is wrong on instance ``index``: confirm with a direct forward of that instance alone."""
    one = reduction.encode(problem, A[index:index + 1], B[index:index + 1])
    direct = reduction.decode(wrapper.direct_labels(model, one), B[index:index + 1])
    model_answer = int(direct[0])
    return Certificate(
        "error", np.asarray(A[index]).tolist(), np.asarray(B[index]).tolist(), int(expected[index]), model_answer,
        f"the model answers {model_answer} but the {problem.name} answer is {int(expected[index])} "
        f"(confirmed by a direct forward of this instance)",
        verified=model_answer != int(expected[index]) and model_answer == int(answers[index]))


def _runner_check(wrapper: ModelProtocol, model, encoded: Encoded, sweep: Sweep, indices, audit: bool,
                  progress: Callable | None) -> None:
    """Re-run some instances through the real runner; they must match the sweep exactly."""
    protocol = wrapper.make_protocol(model, encoded)
    session = AuditSession() if audit else None
    try:
        for step, i in enumerate(indices):
            alice, bob = encoded.shares(int(i))
            result = run_protocol(protocol, alice, bob, audit=session or False)
            labels = np.asarray(result.output[0]).reshape(-1)
            t = result.transcript
            got = (labels.tolist(), t.bits_by_direction["alice_to_bob"], t.bits_by_direction["bob_to_alice"],
                   t.rounds)
            want = (np.asarray(sweep.protocol_labels[i]).reshape(-1).tolist(), int(sweep.alice_to_bob[i]),
                    int(sweep.bob_to_alice[i]), int(sweep.rounds[i]))
            if got != want:
                raise ProtocolError(f"{wrapper.name}: the vectorized sweep disagrees with the runner on instance "
                                    f"{int(i)}: runner (labels, a->b, b->a, rounds) = {got}, sweep = {want}")
            if sweep.transcript is None or t.total_bits > sweep.transcript.total_bits:
                sweep.transcript = t
            if progress:
                progress(step + 1, len(indices))
    finally:
        if session is not None:
            session.close()


#: the most instances ``--instances all`` enumerates (beyond: sample with ``--instances K``)
MAX_EXHAUSTIVE_INSTANCES = 1 << 24


def run_reduction(reduction_id: str, model_spec: str | Any | None = None, n: int | None = None, *,
                  instances: int | None = None, seed: int = 0, audit: bool = False, certify: bool = True,
                  progress: Callable[[str, int, int], None] | None = None) -> Report:
    """Run a reduction end to end and report bits used against the lower bound.

    ``instances`` None means every instance; ``audit`` re-runs the checked instances with each
    party in its own process; ``progress(stage, done, total)`` is called during long work.
    """
    reg = load_plugins()
    reduction: Reduction = reg.get("reduction", reduction_id, param="REDUCTION")
    n = reduction.default_n if n is None else int(n)
    if n < 1:
        raise InputError(f"--n must be at least 1, got {n}", "--n")
    problem = reduction.problem(n)
    spec = model_spec if model_spec is not None else reduction.default_model
    model = make_model(spec, **reduction.model_context(n)) if isinstance(spec, str) else spec
    wrapper = protocol_for(model)
    reduction.check(model, wrapper, problem)

    if instances is None and problem.input_pairs > MAX_EXHAUSTIVE_INSTANCES:
        raise InputError(f"--instances all: the {problem.input_pairs} instances of {problem.name} at n = {n} are too "
                         f"many to run exhaustively (at most {MAX_EXHAUSTIVE_INSTANCES}); use --instances K to sample",
                         "--instances")
    A, B, described = select_instances(problem, instances, seed)
    expected = problem.evaluate_batch(A, B)
    encoded = reduction.encode(problem, A, B)
    wrapper.check_partition(model, encoded)

    stage = (lambda name: (lambda done, total: progress(name, done, total))) if progress else (lambda name: None)
    sweep = wrapper.sweep(model, encoded, progress=stage("sweep"))
    checks = np.arange(encoded.batch) if audit and encoded.batch <= RUNNER_CHECKS else \
        np.random.default_rng(seed + 1).choice(encoded.batch, size=min(RUNNER_CHECKS, encoded.batch), replace=False)
    _runner_check(wrapper, model, encoded, sweep, checks, audit, stage("runner check"))

    answers = reduction.decode(sweep.protocol_labels, B)
    direct_answers = reduction.decode(sweep.direct_labels, B)
    matches = np.asarray(sweep.exact_match, dtype=bool) & (answers == direct_answers)
    correct = answers == expected
    bound = reduction.lower_bound(model, wrapper, problem, encoded)
    totals = sweep.total_bits
    worst = int(np.argmax(totals))
    formula, formula_text = wrapper.bits_formula(model, encoded)

    certificate, searched = None, ""
    wrong = np.flatnonzero(~correct)
    # below the bound, the protocol's own certificate (it says *why* the model must fail) comes first;
    # a plain wrong instance is the certificate when that search finds nothing verified
    if certify and bound.applies and bound.bits is not None and int(totals.max()) < bound.bits:
        certificate, searched = wrapper.certificate(model, reduction, problem, bound, seed=seed,
                                                    progress=stage("certificate search"))
    if wrong.size and (certificate is None or not certificate.verified):
        certificate = error_certificate(reduction, problem, wrapper, model, A, B, expected, answers, int(wrong[0]))
        searched = (f"{searched}; " if searched else "") + \
            f"the model is wrong on {wrong.size} of {len(A)} instances; the first is the certificate"
    return Report(
        reduction=reduction.id, problem=problem.name, task=reduction.task, protocol=wrapper.name,
        model=getattr(model, "spec", spec if isinstance(spec, str) else type(model).__name__), n=n,
        seq_len=encoded.seq_len, instances=described, instances_run=len(A), bits_used=int(totals.max()),
        bits_by_direction={"alice_to_bob": int(sweep.alice_to_bob[worst]),
                           "bob_to_alice": int(sweep.bob_to_alice[worst])},
        rounds=int(np.max(sweep.rounds)), bits_formula=formula, bits_formula_text=formula_text,
        lower_bound=bound, model_accuracy=float(correct.mean()), model_correct=bool(correct.all()),
        protocol_matches_model=bool(matches.all()), runner_checked=len(checks), audited=audit,
        certificate=certificate, certificate_search=searched, transcript=sweep.transcript, details=sweep.details)
