"""Lower bounds as values: how many bits, where it is proved, and when it applies."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace


def ceil_log2(x: int) -> int:
    """ceil(log2 x) for a positive integer, exactly (0 for x = 1)."""
    if x < 1:
        raise ValueError(f"ceil_log2 needs a positive integer, got {x}")
    return (int(x) - 1).bit_length()


@dataclass(frozen=True)
class Conditions:
    """When a bound holds.

    ``direction``: ``"one-way"`` (bounds only protocols where Alice speaks once) or ``"two-way"``.
    ``partition``: the split the bound is proved for (``"contiguous"``, ``"odd-even"``, ``"any"``, ...).
    ``deterministic``: the bound is for deterministic protocols (all of commsim's are).
    """

    direction: str = "two-way"
    partition: str = "any"
    deterministic: bool = True

    def __post_init__(self):
        if self.direction not in ("one-way", "two-way"):
            raise ValueError(f"direction must be 'one-way' or 'two-way', got {self.direction!r}")

    def describe(self) -> str:
        kind = "deterministic" if self.deterministic else "randomized"
        return f"{self.direction}, {self.partition} split, {kind}"


#: the kinds of lower bound a report states (``bound_kind``)
BOUND_KINDS = ("deterministic", "distributional", "randomized")


@dataclass(frozen=True)
class LowerBound:
    """A communication lower bound: ``bits`` with its ``source`` and ``conditions``.

    A bound that does not apply to a model or partition is represented as such
    (``applies`` False, with the ``reason``) instead of being silently used;
    ``bits`` may then hold the bound that *does* apply (e.g. the two-way bound).
    """

    bits: int | None
    source: str
    conditions: Conditions = field(default_factory=Conditions)
    statement: str = ""
    applies: bool = True
    reason: str = ""
    #: what the bound bounds: "deterministic" (bits of every exact deterministic protocol),
    #: "distributional" (a floor on the error over an input distribution), "randomized" (bits of every
    #: protocol with bounded error, coins allowed)
    kind: str = "deterministic"
    #: does the bound survive randomness (hold for randomized protocols with small error)? None: not stated
    randomized: bool | None = None
    randomized_reason: str = ""

    def __post_init__(self):
        if self.kind not in BOUND_KINDS:
            raise ValueError(f"kind must be one of {', '.join(BOUND_KINDS)}, got {self.kind!r}")

    def not_applicable(self, reason: str, *, bits: int | None = None, source: str | None = None) -> "LowerBound":
        """This bound marked as not applying, optionally showing another bound in its place."""
        return replace(self, applies=False, reason=reason,
                       bits=self.bits if bits is None else bits, source=source or self.source)

    def satisfied_by(self, bits_used: int) -> bool | None:
        """``bits_used >= bits``; None when the bound does not apply or has no value."""
        if not self.applies or self.bits is None:
            return None
        return bits_used >= self.bits

    @property
    def note(self) -> str:
        if not self.applies:
            return self.reason
        return f"{self.statement} ({self.source}; {self.conditions.describe()})".strip()

    def to_dict(self) -> dict:
        return {"bits": self.bits, "source": self.source, "statement": self.statement,
                "direction": self.conditions.direction, "partition": self.conditions.partition,
                "deterministic": self.conditions.deterministic, "applies": self.applies,
                "reason": self.reason, "kind": self.kind, "randomized": self.randomized,
                "randomized_reason": self.randomized_reason}


def log2_exact(x: int) -> float:
    """log2 of a (possibly huge) positive integer."""
    if x < 1:
        raise ValueError("log2 of a non-positive number")
    shift = max(x.bit_length() - 60, 0)
    return math.log2(x >> shift) + shift
