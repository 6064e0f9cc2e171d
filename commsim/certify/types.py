"""The certificate: an input on which the model must fail, verified by a direct forward."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
