"""The plugin interfaces the pipeline composes: a Reduction, a Simulator, and the values between them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np

from commsim.core.channel import Transcript
from commsim.core.errors import InputError
from commsim.core.limits import MAX_SEQUENCE_LENGTH
from commsim.core.party import Protocol
from commsim.theory.bounds import ErrorBound, LowerBound
from commsim.theory.problems import Problem

#: Kinds of split between Alice and Bob, as simulators and reductions declare them (the bounds depend on them).
CONTIGUOUS_PREFIX = "contiguous prefix"   # Alice holds x_1..x_t, Bob the rest (with the output positions)
QUERY_ONLY = "query only"                 # Alice holds only the output (query) position, Bob every other
ODD_EVEN = "odd-even"                     # Alice holds the odd positions, Bob the even ones
ANY_PARTITION = "any"                     # a simulator's partition_kind: it runs on every partition


@dataclass(frozen=True)
class Share:
    """What one party holds of one model input: the tokens at the positions it owns."""

    positions: np.ndarray
    tokens: np.ndarray
    seq_len: int
    #: (position, token) pairs of the other party's positions that this party knows too (public side
    #: information, e.g. the query of [PNP24]'s composition task, known to both); empty for most tasks
    public: tuple = ()


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
    #: positions whose tokens both parties know (each share lists them in ``Share.public``)
    public_positions: tuple[int, ...] = ()

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
        public = tuple((int(p), int(row[p])) for p in self.public_positions)
        return Share(a, row[a].copy(), self.seq_len, public), Share(b, row[b].copy(), self.seq_len, public)

    def owner(self, position: int) -> str:
        return "alice" if position in set(self.alice_positions.tolist()) else "bob"

    def subset(self, index) -> "Encoded":
        return Encoded(self.tokens[index], self.alice_positions, self.output_positions, self.public_positions)


@dataclass
class BatchResult:
    """A simulator's batch run (:meth:`Simulator.run_batch`): per instance, the protocol's and the direct
    forward's output labels (batch, outputs), whether the raw outputs matched bit for bit, and the bits."""

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
class MessagePlan:
    """What a simulator's protocol sends on one partition, known before running: the bits per direction,
    the rounds, how they are made up (``text``), the papers' count for the same model (``formula``, with
    ``formula_text``), and what the one-way message is called (``message_name``, e.g. "hidden state h_8").

    :meth:`Simulator.plan` gives it for a model and an encoding, :meth:`Simulator.shape_plan` for an
    architecture's sizes (``commsim budget``, which reads ``assumptions`` too).  The engine reads the
    direction, the senders and the bits from it: which bound applies, which certificate search runs."""

    alice_to_bob: int
    bob_to_alice: int
    rounds: int
    text: str
    assumptions: dict = field(default_factory=dict)
    formula: int | None = None
    formula_text: str = ""
    message_name: str = "message"

    @property
    def bits(self) -> int:
        return self.alice_to_bob + self.bob_to_alice

    @property
    def senders(self) -> frozenset:
        """The parties that send at least one bit."""
        return frozenset(p for p, b in (("alice", self.alice_to_bob), ("bob", self.bob_to_alice)) if b)

    @property
    def direction(self) -> str:
        """``"one-way"`` when only Alice speaks (or nobody does), else ``"two-way"``: how the bounds and the
        certificate searches read the protocol."""
        return "one-way" if self.senders <= {"alice"} else "two-way"


class EvaluationSet(NamedTuple):
    """(Alice, Bob) instances the model is judged on: ``name`` (its key in ``accuracy_by_set``), the aligned
    inputs, and ``described``, what they are as a plural noun phrase ("random non-members (seed 0)")."""

    name: str
    alice: np.ndarray
    bob: np.ndarray
    described: str


class Reduction:
    """A communication problem mapped into a model's task (registry kind ``reduction``): data hooks.

    Required: the declarations (:attr:`id`, :attr:`problem_name`, :attr:`task`, :attr:`source`, :attr:`split`,
    :attr:`default_model`; :attr:`length_scale`/:attr:`length_offset` for ``commsim budget``) and the hooks
    :meth:`problem`, :meth:`vocabulary`, :meth:`encode` (instances -> model inputs and the split),
    :meth:`decode` (model labels -> answers) and :meth:`lower_bound` (from the simulator's :class:`MessagePlan`).
    Optional: :meth:`length_bound` (``budget``), :meth:`error_bound` (a distributional bound),
    :meth:`evaluation_sets` (more inputs to judge the model on), :meth:`labels` (the task's labels when
    :meth:`decode` does not determine them), :meth:`check` (refuse a model with the paper's reason).
    The rest (valid lengths, the partition at N, the model context) the base class derives from these."""

    id: str = ""
    problem_name: str = ""
    task: str = ""
    source: str = ""            # where the reduction is proved, e.g. "Theorem 3 of [BHBK24]"
    description: str = ""
    default_model: str = ""     # the spec `commsim run` uses when --model is not given
    default_n: int = 8
    #: ``commsim run``'s --instances when not given: None (every instance) or a sample size
    default_instances: int | None = None
    split: str = ""             # the kind of split its encoding gives (CONTIGUOUS_PREFIX, QUERY_ONLY, ODD_EVEN, ...)

    def problem(self, n: int) -> Problem:
        """The source problem at size n."""
        raise NotImplementedError

    def vocabulary(self, n: int) -> list[str]:
        """Names of the task's tokens (token id = index); its length is the vocabulary size."""
        raise NotImplementedError

    def encode(self, problem: Problem, A: np.ndarray, B: np.ndarray) -> Encoded:
        """Source instances (A, B) -> model inputs, with the split between the parties."""
        raise NotImplementedError

    def decode(self, labels: np.ndarray, B: np.ndarray) -> np.ndarray:
        """Model output labels (batch, outputs) and Bob's inputs -> answers of the source problem."""
        raise NotImplementedError

    def lower_bound(self, model, plan: MessagePlan, problem: Problem, encoded: Encoded) -> LowerBound:
        """The bound that applies to the protocol whose message plan on this encoding is ``plan`` (the
        parties that speak, the bits: :class:`MessagePlan`), or why none does."""
        raise NotImplementedError

    def length_bound(self, simulator: "Simulator", seq_len: int, senders: frozenset | None = None) -> LowerBound:
        """The bound in the theorem's own form, as a function of the model's sequence length N, for the
        protocols of ``simulator`` -- chosen from what the simulator declares about this reduction's
        :attr:`split` (:meth:`Simulator.split_direction`), never from its name, or, when ``senders`` is
        given, from the parties that really speak in the protocol at N (a :class:`MessagePlan`'s).  Used by
        ``commsim budget``; a bound that does not apply says so."""
        raise NotImplementedError(f"{self.id} gives no bound as a function of the sequence length")

    # ---- valid lengths (``commsim budget``): N = length_scale·n + length_offset tokens, n >= min_size --------
    #: tokens per unit of the source problem's size n, and the tokens besides (N = scale·n + offset)
    length_scale: int = 0
    length_offset: int = 0
    #: the smallest source size the encoding takes
    min_size: int = 1
    #: what N counts for this task, in words (tokens, with the source problem's size beside it)
    n_meaning: str = ""

    def length_for_size(self, n: int) -> int:
        """The sequence length N (tokens) of the encoding of a size-n source instance."""
        if not self.length_scale:
            raise NotImplementedError(f"{self.id} declares no valid lengths")
        return self.length_scale * int(n) + self.length_offset

    def is_valid_length(self, seq_len: int) -> bool:
        """Is N the length (in tokens) of some encoded instance?"""
        if not self.length_scale:
            raise NotImplementedError(f"{self.id} declares no valid lengths")
        n, rest = divmod(int(seq_len) - self.length_offset, self.length_scale)
        return rest == 0 and n >= self.min_size

    def partition(self, seq_len: int):
        """(Alice's positions, the output positions) of the encoding at a valid length N, without
        encoding tokens (sequences or ``range`` objects, cheap at any N).  The default encodes one
        sampled instance (up to :data:`~commsim.core.limits.MAX_SEQUENCE_LENGTH` tokens); reductions compute it
        directly, at any N."""
        if int(seq_len) > MAX_SEQUENCE_LENGTH:
            raise InputError(f"n: {self.id} gives its partition only by encoding an instance, which stops at "
                             f"{MAX_SEQUENCE_LENGTH} tokens (N = {seq_len} asked); the reduction can declare "
                             f"partition(seq_len) to be planned at any N", "n")
        n = (int(seq_len) - self.length_offset) // self.length_scale
        problem = self.problem(n)
        A, B = problem.sample(np.random.default_rng(0), 1)
        encoded = self.encode(problem, A, B)
        return encoded.alice_positions, tuple(encoded.output_positions)

    def public_positions(self, seq_len: int):
        """The positions both parties know at a valid length N (none by default), as the encoding's
        :attr:`Encoded.public_positions` has them; ``commsim budget`` hands them to the simulator's plan."""
        return ()

    def check(self, model, simulator: "Simulator", problem: Problem) -> None:
        """Raise :class:`NotApplicable` (with the paper's reason) when this reduction cannot use the model."""

    def labels(self, problem: Problem, alice: np.ndarray, bob: np.ndarray) -> np.ndarray:
        """The labels (batch, output positions) a correct model outputs on these instances (``commsim.sample``).
        Default, one output position: per instance the one class in {0, 1} that :meth:`decode` turns into the
        answer; a task with several outputs declares its own."""
        expected = problem.evaluate_batch(alice, bob)
        fits = np.stack([self.decode(np.full((len(expected), 1), c), bob) == expected for c in (0, 1)], axis=1)
        if not np.all(fits.sum(axis=1) == 1):
            raise NotImplementedError(f"{self.id}: its decode does not determine the model's label from the answer")
        return np.argmax(fits, axis=1)[:, None]

    #: simulator name -> the registered variant this reduction runs instead (e.g. a one-way protocol that uses
    #: the public query of :attr:`Encoded.public_positions`); the model's kind still selects the first
    simulator_variants: dict = {}

    #: the options ``commsim run`` passes on to :meth:`direct_report` (e.g. ``("q", "value_dim")``); none by default
    options: tuple[str, ...] = ()
    #: True for a reduction whose runs are :meth:`direct_report`'s: no source problem, tokens or protocol
    judged_directly: bool = False

    def direct_report(self, model, n: int | None, *, instances: int | None, seed: int, certify: bool, **options):
        """For a reduction judged by a bound on the model's own size rather than on a protocol's bits (a width
        bound, with no split between parties): the whole :class:`~commsim.runs.report.Report` of the run,
        certificate included.  None (the default): the run is the pipeline's protocol run."""
        return None

    def error_bound(self, model, plan: MessagePlan, problem: Problem, encoded: Encoded,
                    bits_used: int) -> ErrorBound | None:
        """A distributional bound (a floor on the error rate over the run's instance distribution) for a
        protocol that really sent ``bits_used`` bits, or None (the default: the reduction states none).  When
        given, the report's ``measured_error`` sets the measured error rate and its interval beside it."""
        return None

    def evaluation_sets(self, problem: Problem, alice: np.ndarray, bob: np.ndarray, seed: int) -> list[EvaluationSet]:
        """Inputs beyond the run's instances the model is judged on (none by default): a task whose answer
        is defined on more inputs than the source problem's instances declares them here (Dyck-(2,2))."""
        return []

    def seq_len(self, n: int) -> int:
        """N for source size n."""
        problem = self.problem(n)
        A, B = problem.sample(np.random.default_rng(0), 1)
        return self.encode(problem, A, B).seq_len

    def model_context(self, n: int) -> dict:
        """What a model factory may use to size a random model to this task."""
        return {"vocab_size": len(self.vocabulary(n)), "seq_len": self.seq_len(n), "n": n,
                "task": self.task, "reduction": self.id}


class Simulator:
    """What turns a model into party programs (registry kind ``simulator``): a small contract of data hooks.

    A simulator *declares* what the engine needs to choose bounds and certificate searches, and *hands the
    engine data*; it never evaluates a run, searches a certificate or builds a report (the engine does:
    :mod:`commsim.runs.stages`, :mod:`commsim.runs.certificates`).

    Declarations (class attributes): :attr:`name`, :attr:`source`, :attr:`partition_kind` (the splits it has a
    protocol for), :attr:`one_way_splits` (the split kinds on which only Alice speaks), :attr:`precedence`
    (which simulator the model's kind selects when several accept it), and for ``commsim budget`` :attr:`arch`,
    :attr:`budget_parameters`, :attr:`shape_plan_limit`.

    Hooks: :meth:`accepts` (does it wrap this model), :meth:`plan` (the message plan on an encoding's split,
    or :class:`NotApplicable`), :meth:`shape_plan` and :meth:`budget_bits` (the same plan and the paper's count
    from an architecture's sizes), :meth:`make_protocol` (the party programs the runner runs),
    :meth:`run_batch` (the protocol and the direct forward over many instances, vectorized),
    :meth:`transcript_keys` (per instance, the protocol's labels and integer keys equal iff the transcripts
    are equal: what the certificate searches compare) and :meth:`direct_labels` (the model's own forward).
    """

    name: str = ""
    source: str = ""
    #: the architecture name ``commsim budget --arch`` uses for this protocol ("" = not offered)
    arch: str = ""
    #: the longest N at which :meth:`shape_plan` is evaluated (None: any; its plan is laid out per position)
    shape_plan_limit: int | None = None
    #: the parameters of :meth:`budget_bits` that matter ("heads" absent: ``--heads`` must stay 1)
    budget_parameters: tuple[str, ...] = ("width", "precision", "heads")
    #: the splits it has a protocol for: CONTIGUOUS_PREFIX only, or ANY_PARTITION
    partition_kind: str = ANY_PARTITION
    #: the split kinds on which its protocol is one-way (only Alice speaks); two-way on the others
    one_way_splits: tuple[str, ...] = ()
    #: False: never chosen by the model's kind, only as a reduction's :attr:`Reduction.simulator_variants`
    #: or by name (``--simulator``)
    selectable: bool = True
    #: when several selectable simulators accept a model, the lowest precedence wins (then the name);
    #: ``commsim run --simulator NAME`` overrides the choice
    precedence: int = 100

    def split_direction(self, split: str) -> str | None:
        """``"one-way"`` or ``"two-way"``: the direction of its protocol on a split of kind ``split``;
        None when it has no protocol for that split (a contiguous-prefix simulator on any other split)."""
        if self.partition_kind != ANY_PARTITION and split != self.partition_kind:
            return None
        return "one-way" if split in self.one_way_splits else "two-way"

    # ---- hooks ------------------------------------------------------------------------------------------
    def accepts(self, model) -> bool:
        """Does this simulator turn ``model`` into party programs?"""
        raise NotImplementedError

    def plan(self, model, encoded: Encoded) -> MessagePlan:
        """What the protocol sends for this model on the encoding's split (bits per direction, rounds, the
        papers' count); :class:`NotApplicable` (with the reason) when the split or the input does not fit."""
        raise NotImplementedError

    #: does :meth:`shape_plan` plan a float format's own messages (it reads ``number_format=``)?  Else its
    #: messages are p-bit numbers whatever the format (``commsim budget --dtype`` says which)
    plans_number_format = False

    def shape_plan(self, width: int, precision: int, heads: int, seq_len: int,
                   alice_positions, output_positions, **shape) -> MessagePlan:
        """The plan :meth:`plan` gives, for an architecture of these sizes at length N on this partition,
        computed without a model (``commsim budget``); :class:`NotApplicable` when it has no protocol there.
        ``shape`` holds further sizes the plan may read (``dim``: the embedding width d; ``number_format``
        when the simulator declares :attr:`plans_number_format`)."""
        raise NotImplementedError(f"{self.name} gives no protocol plan from a shape")

    def budget_bits(self, width: int, precision: int, heads: int, seq_len: int) -> tuple[int, str]:
        """The theorem's bit count for an architecture of this width/precision/heads at length N,
        and its formula as text (``commsim budget``)."""
        raise NotImplementedError(f"{self.name} gives no budget formula")

    def make_protocol(self, model, encoded: Encoded) -> Protocol:
        """Party programs whose shares are :class:`Share` values; the output party returns
        ``(labels, raw_output)`` with ``labels`` an int array over ``encoded.output_positions``."""
        raise NotImplementedError

    def run_batch(self, model, encoded: Encoded, progress: Callable | None = None) -> BatchResult:
        """The protocol and the direct forward on every instance of the batch (vectorized); the engine
        re-runs a seeded subset through the runner and holds the batch to it."""
        raise NotImplementedError

    def transcript_keys(self, model, encoded: Encoded) -> tuple[np.ndarray, np.ndarray]:
        """Per instance: the protocol's output labels (batch, outputs) and a row of integer keys (batch, k)
        equal iff the transcripts are equal.  For a one-way protocol the transcript is Alice's message, so
        equal keys for two Alice inputs (Bob's input fixed) are a pigeonhole collision."""
        raise NotImplementedError

    def direct_labels(self, model, encoded: Encoded) -> np.ndarray:
        """The model's own decisions (batch, outputs) from a direct forward."""
        raise NotImplementedError
