"""Plain two-party protocols for the source problems (``commsim cc``): deterministic and randomized.

* :mod:`protocols.baseline.deterministic`: Alice sends everything (``one-way``), INDEX two-way.
* :mod:`protocols.baseline.randomized`: EQ by random inner products (public coins), EQ by polynomial
  fingerprints (private coins), INDEX one-way by a random sample of Alice's bits (public coins).
"""
from __future__ import annotations

from protocols.baseline.deterministic import BobSendsIndex, SendEverything
from protocols.baseline.randomized import (
    FingerprintEquality,
    InnerProductEquality,
    SampledIndex,
)

__all__ = ["BobSendsIndex", "SendEverything", "InnerProductEquality", "FingerprintEquality", "SampledIndex",
           "register"]


def register(registry) -> None:
    """The baseline cc protocols."""
    registry.register("cc-protocol", SendEverything.name, SendEverything,
                      "Alice sends her whole input (n bits, one-way); for index, eq, disj")
    registry.register("cc-protocol", BobSendsIndex.name, BobSendsIndex,
                      "INDEX: Bob sends b (ceil(log2 n) bits), Alice answers a_b (1 bit)")
    for cls in (InnerProductEquality, FingerprintEquality, SampledIndex):
        registry.register("cc-protocol", cls.name, cls, cls.description)
