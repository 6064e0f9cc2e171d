"""How a model's output values become a decision (a class label): the one rule every model, protocol, agreement
check and certificate re-check applies.

A trained classifier is decided the way it was trained, which its output shape says:

``argmax``
    V >= 2 outputs (logits or scores, trained with cross-entropy): the class with the largest value, ties to the
    lowest class;
``sign``
    one output that is a logit (trained with ``binary_cross_entropy_with_logits``): class 1 iff the value > 0;
``threshold``
    one output that is a probability (a sigmoid head, trained with ``binary_cross_entropy``): class 1 iff the
    value >= 1/2.

:meth:`Decision.for_outputs` picks the rule from the shape (a probability only when the caller knows the output
is one); a user overrides it (``decision=`` in a model spec, ``commsim.run(..., decision=...)``), and
:meth:`Decision.check_width` refuses a rule that cannot decide that many outputs (an argmax over one output is
always class 0).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commsim.core.errors import InputError

#: the rules, with what each decides in words
RULES = {
    "argmax": "the class with the largest output, ties to the lowest class",
    "sign": "one logit: class 1 iff it is > 0",
    "threshold": "one probability: class 1 iff it is >= 1/2",
}

#: how the rule was chosen, in words
CHOSEN_BY_SHAPE = "chosen from the output's shape"
CHOSEN_BY_USER = "given"


@dataclass(frozen=True)
class Decision:
    """A decision rule (module docstring): ``rule`` one of :data:`RULES`; ``chosen`` says how it was chosen."""

    rule: str
    chosen: str = CHOSEN_BY_SHAPE

    def __post_init__(self):
        if self.rule not in RULES:
            raise InputError(f"decision must be one of {', '.join(RULES)}; got {self.rule!r}", "decision")

    @classmethod
    def for_outputs(cls, width: int, *, probability: bool = False) -> "Decision":
        """The rule a model with ``width`` outputs was trained for: argmax for V >= 2, else the sign of the one
        logit, or its threshold at 1/2 when the output is a ``probability``."""
        if width >= 2:
            return cls("argmax")
        return cls("threshold" if probability else "sign")

    @classmethod
    def parse(cls, value) -> "Decision":
        """A user's ``decision=`` (a rule's name, or a Decision) as a given Decision; InputError naming
        ``decision`` for anything else."""
        if isinstance(value, Decision):
            return cls(value.rule, CHOSEN_BY_USER)
        if not isinstance(value, str):
            raise InputError(f"decision must be one of {', '.join(RULES)}; got {value!r}", "decision")
        return cls(value.strip().lower(), CHOSEN_BY_USER)

    def check_width(self, width: int) -> "Decision":
        """This rule, or an InputError when it cannot decide ``width`` outputs."""
        if self.rule == "argmax" and width < 2:
            raise InputError("decision=argmax needs two or more outputs: over one output it is always class 0 "
                             "(use sign for one logit, threshold for one probability)", "decision")
        if self.rule != "argmax" and width != 1:
            raise InputError(f"decision={self.rule} decides one output; the model has {width} (use argmax)",
                             "decision")
        return self

    def __call__(self, values, dtype=np.int64) -> np.ndarray:
        """The labels of output ``values`` (..., outputs) as ``dtype`` (...): the rule along the last axis."""
        values = np.asarray(values)
        if self.rule == "argmax":
            return np.argmax(values, axis=-1).astype(dtype, copy=False)
        if values.shape[-1] != 1:
            raise ValueError(f"decision={self.rule} decides one output; got {values.shape[-1]}")
        one = values[..., 0]
        return (one > 0 if self.rule == "sign" else one >= 0.5).astype(dtype)

    def margin(self, values) -> np.ndarray:
        """How far each decision (...) is from flipping: the largest output less the runner-up (argmax), the
        logit's distance from 0 (sign), the probability's from 1/2 (threshold)."""
        values = np.asarray(values, dtype=np.float64)
        if self.rule == "argmax":
            top = np.sort(values, axis=-1)
            return top[..., -1] - top[..., -2] if values.shape[-1] > 1 else np.full(values.shape[:-1], np.inf)
        return np.abs(values[..., 0] - (0.0 if self.rule == "sign" else 0.5))

    @property
    def text(self) -> str:
        """The rule in words, with how it was chosen."""
        return f"{self.rule}: {RULES[self.rule]} ({self.chosen})"

    def to_dict(self) -> dict:
        return {"rule": self.rule, "text": RULES[self.rule], "chosen": self.chosen}
