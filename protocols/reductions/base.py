"""The base the INDEX, EQ and DISJ reductions share: a contiguous split, the memory program handed to
``memorize``, and the bound for the parties that speak (the engine derives the bound at n and at N from it)."""
from __future__ import annotations

import numpy as np

from commsim.contract import CONTIGUOUS_PREFIX, NotApplicable, Reduction, Split
from commsim.theory.bounds import Conditions, LowerBound
from commsim.theory.problems import Problem
from protocols.reductions.layouts import MemoryProgram

ONE_WAY_CONTIGUOUS = Conditions(direction="one-way", partition="contiguous", deterministic=True)


def token_dtype(vocab_size: int) -> np.dtype:
    """The smallest unsigned type that holds the token ids."""
    return np.dtype(np.uint8 if vocab_size <= 256 else np.uint16 if vocab_size <= 65536 else np.int32)


class SourceReduction(Reduction):
    """What the INDEX / EQ / DISJ reductions share: the defaults of ``commsim run``, the vocabulary
    check, the memory program handed to ``memorize``, and the choice between the one-way and two-way
    bound by the protocol's declared direction.

    Every encoding gives Alice a prefix and Bob the rest, the outputs included (a contiguous split).
    Default model: ``memorize:capacity=7`` at n = 8 -- a state one bit short of the bound, so
    ``commsim run REDUCTION`` finishes in a second and shows the pigeonhole certificate.
    """

    default_model = "memorize:capacity=7"
    default_n = 8
    split_kind = CONTIGUOUS_PREFIX

    def check(self, model, simulator, problem: Problem) -> None:
        """Refuse a model that reads fewer tokens than the task uses."""
        vocab = getattr(model, "vocab_size", None)
        need = len(self.vocabulary(problem.n))
        if vocab is not None and vocab < need:
            raise NotApplicable(f"{self.id} with n = {problem.n} uses {need} input tokens but the model reads only "
                                f"{vocab}", "model")

    def memory_program(self, n: int) -> MemoryProgram:  # pragma: no cover - abstract
        """The memorizing recurrence's layout for this task (see ``protocols.models.memorize.Memorize``)."""
        raise NotImplementedError

    def model_context(self, n: int) -> dict:
        """The base context, and the ``memory_program`` the ``memorize`` model stores the task's bits by."""
        return {**super().model_context(n), "memory_program": self.memory_program(n)}

    # ---- bounds ------------------------------------------------------------------------------
    def one_way_bound(self, n: int) -> LowerBound:  # pragma: no cover - abstract
        """The bound on one-way protocols (Alice speaks once), with the theorem it gives."""
        raise NotImplementedError

    def two_way_bound(self, n: int, one_way: LowerBound) -> LowerBound:  # pragma: no cover - abstract
        """The bound on two-way protocols (or ``one_way`` marked not applicable, with the reason)."""
        raise NotImplementedError

    def bob_one_way_bound(self, n: int, one_way: LowerBound) -> LowerBound:
        """The bound on protocols where only Bob speaks (Bob -> Alice); by default the two-way one, which
        binds every protocol."""
        return self.two_way_bound(n, one_way)

    def bound(self, n: int, senders: frozenset) -> LowerBound:
        """The bound for a protocol in which exactly ``senders`` speak: Alice alone (or nobody), the
        one-way bound; Bob alone, :meth:`bob_one_way_bound`; both, the two-way bound."""
        one_way = self.one_way_bound(n)
        if senders <= {"alice"}:
            return one_way
        if senders == {"bob"}:
            return self.bob_one_way_bound(n, one_way)
        return self.two_way_bound(n, one_way)

    def split(self, seq_len: int) -> Split:
        """Alice holds the prefix of :meth:`alice_length` positions; the outputs are :meth:`output_positions`."""
        n = (int(seq_len) - self.length_offset) // self.length_scale
        return Split(seq_len, range(self.alice_length(n)), self.output_positions(n))

    def alice_length(self, n: int) -> int:  # pragma: no cover - abstract
        """How many positions (a prefix) Alice holds at source size n."""
        raise NotImplementedError

    def output_positions(self, n: int) -> tuple[int, ...]:
        """Where the decision is read at source size n: the last position."""
        return (self.length_for_size(n) - 1,)

    def size(self, seq_len: int) -> int:  # pragma: no cover - abstract
        """The source problem's n for a model sequence length N, as the theorem states it."""
        raise NotImplementedError
