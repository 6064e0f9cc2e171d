"""The reduction contract: a communication problem mapped into a model's task (registry kind ``reduction``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from commsim.contract.values import Encoded, EvaluationSet, MessagePlan, Split
from commsim.core.errors import InputError
from commsim.core.limits import MAX_SEQUENCE_LENGTH
from commsim.theory.bounds import ErrorBound, LowerBound
from commsim.theory.problems import Problem

if TYPE_CHECKING:
    from commsim.contract.simulator import Simulator


class Reduction:
    """A communication problem mapped into a model's task (registry kind ``reduction``): data hooks.

    Required: the declarations (:attr:`id`, :attr:`problem_name`, :attr:`task`, :attr:`source`,
    :attr:`split_kind`, :attr:`default_model`; :attr:`length_scale`/:attr:`length_offset` for ``commsim budget``)
    and the hooks :meth:`problem`, :meth:`vocabulary`, :meth:`encode` (instances -> model inputs and the split),
    :meth:`decode` (model labels -> answers) and :meth:`bound` (the bound at size n for the parties that speak).
    For ``commsim budget`` at any N: :meth:`split` (who holds what at length N) and :meth:`size` (n at N), whose
    defaults encode an instance and read the declared lengths.  Optional: :meth:`error_bound` (a distributional
    bound), :meth:`evaluation_sets` (more inputs to judge the model on), :meth:`check` (refuse a model with the
    paper's reason), :meth:`labels` (the task's labels when :meth:`decode` does not determine them).
    The engine derives the rest: the bound for a run (:meth:`lower_bound`, at n for the plan's senders) and for
    ``budget`` (:meth:`length_bound`, at N for the senders its simulator declares), the valid lengths, the model
    context.  A reduction whose bound's wording reads the model or the plan overrides :meth:`lower_bound`."""

    id: str = ""
    problem_name: str = ""
    task: str = ""
    source: str = ""            # where the reduction is proved, e.g. "Theorem 3 of [BHBK24]"
    description: str = ""
    default_model: str = ""     # the spec `commsim run` uses when --model is not given
    default_n: int = 8
    #: ``commsim run``'s --instances when not given: None (every instance) or a sample size
    default_instances: int | None = None
    split_kind: str = ""        # the kind of split its encoding gives (CONTIGUOUS_PREFIX, QUERY_ONLY, ODD_EVEN, ...)

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

    def bound(self, n: int, senders: frozenset) -> LowerBound:
        """The bound at source size n on the protocols in which exactly ``senders`` speak (Alice alone or nobody:
        one-way; Bob alone; both), or why none applies (:meth:`LowerBound.not_applicable`)."""
        raise NotImplementedError(f"{self.id} states no bound")

    def lower_bound(self, model, plan: MessagePlan, problem: Problem, encoded: Encoded) -> LowerBound:
        """The bound that applies to the protocol whose message plan on this encoding is ``plan``:
        :meth:`bound` at the problem's n for the parties that speak in it."""
        return self.bound(problem.n, plan.senders)

    def length_bound(self, simulator: Simulator, seq_len: int, senders: frozenset | None = None) -> LowerBound:
        """The bound as a function of the model's sequence length N (``commsim budget``): :meth:`bound` at
        n = :meth:`size` (N) for ``senders`` (the parties that speak in the protocol at N), else for the direction
        ``simulator`` declares on this reduction's :attr:`split_kind` (:meth:`Simulator.split_direction`), never
        from its name; not applicable when the simulator has no protocol for that split."""
        n = max(self.size(seq_len), 0)
        direction = simulator.split_direction(self.split_kind)
        if direction is None:
            return self.bound(n, frozenset({"alice"})).not_applicable(
                f"{simulator.name} has no protocol for a {self.split_kind} split")
        if senders is None:
            senders = {"alice"} if direction == "one-way" else {"alice", "bob"}
        return self.bound(n, frozenset(senders))

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

    def size(self, seq_len: int) -> int:
        """The source size n whose encoding has length N (from the declared lengths: N = scale·n + offset)."""
        if not self.length_scale:
            raise NotImplementedError(f"{self.id} declares no valid lengths")
        return (int(seq_len) - self.length_offset) // self.length_scale

    def split(self, seq_len: int) -> Split:
        """Who holds what at a valid length N -- Alice's positions, the output positions, the positions both know
        -- without encoding tokens (sequences or ``range`` objects, cheap at any N).  The default encodes one
        sampled instance (up to :data:`~commsim.core.limits.MAX_SEQUENCE_LENGTH` tokens); reductions compute it
        directly, at any N."""
        if int(seq_len) > MAX_SEQUENCE_LENGTH:
            raise InputError(f"n: {self.id} gives its split only by encoding an instance, which stops at "
                             f"{MAX_SEQUENCE_LENGTH} tokens (N = {seq_len} asked); the reduction can declare "
                             f"split(seq_len) to be planned at any N", "n")
        problem = self.problem(self.size(seq_len))
        A, B = problem.sample(np.random.default_rng(0), 1)
        return Split.of(self.encode(problem, A, B))

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
