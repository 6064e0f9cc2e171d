"""The decision rule a model carries (:class:`commsim.core.decision.Decision`): how its output values become class
labels, the same in the protocol's parties, the direct forward, the agreement check and a certificate's re-check.

A model mixing in :class:`Decides` names its output width (:attr:`Decides.output_width`, None when only a run shows
it) and how its raw outputs read as values (:meth:`Decides.decision_values`); the rule is the one its output shape
calls for unless one was given (:meth:`Decides.decided_by`, the ``decision=`` spec key and keyword).
"""
from __future__ import annotations

import copy

import numpy as np

from commsim.contract import Decision


class Decides:
    """A model's decision rule (module docstring)."""

    #: a rule given by the user (None: the one the output's shape calls for)
    given_decision: Decision | None = None
    #: is the one output a probability (a sigmoid head)?  Adapters set it from the head they read.
    output_probability: bool = False
    #: the output width the last decision saw, for a model whose width only a run shows
    seen_width: int | None = None

    @property
    def output_width(self) -> int | None:
        """How many output values the model decides from (None: known only from a run's outputs)."""
        return None

    @property
    def decision(self) -> Decision | None:
        """The rule in force: the given one, else the one the output shape calls for (None while the width is
        unknown; :meth:`decide` then reads it from the outputs)."""
        if self.given_decision is not None:
            return self.given_decision
        width = self.output_width or self.seen_width
        return None if width is None else Decision.for_outputs(width, probability=self.output_probability)

    def decided_by(self, decision) -> "Decides":
        """A copy of the model deciding by ``decision`` (a rule's name or a Decision); InputError naming
        ``decision`` for a rule that cannot decide this model's outputs."""
        rule = Decision.parse(decision)
        if self.output_width is not None:
            rule.check_width(self.output_width)
        model = copy.copy(self)
        model.given_decision = rule
        return model

    def decision_values(self, raw: np.ndarray) -> np.ndarray:
        """The output values (..., outputs) of raw outputs (the identity; fixed-point models convert codes)."""
        return np.asarray(raw)

    def decide_raw(self, raw, dtype=np.int64) -> np.ndarray:
        """The labels of raw outputs (..., outputs), by the rule in force."""
        return self.decide_values(self.decision_values(raw), dtype)

    def decide_values(self, values, dtype=np.int64) -> np.ndarray:
        """The labels of output values (..., outputs), by the rule in force."""
        values = np.asarray(values)
        if self.output_width is None:
            self.seen_width = int(values.shape[-1])
        rule = self.decision or Decision.for_outputs(values.shape[-1], probability=self.output_probability)
        if self.given_decision is not None:
            rule.check_width(values.shape[-1])
        return rule(values, dtype)
