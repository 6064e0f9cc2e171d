"""The toy plugin's model kind (a counter of ones) and the simulator that turns it into party programs."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commsim.contract import (CONTIGUOUS_PREFIX, Bits, MessagePlan, NotApplicable, Protocol, Receive, Send, Shape,
                              Simulator)


@dataclass(frozen=True)
class Counter:
    """Tokens 0/1 are Alice's bits (count +1 on a 1), tokens 2/3 Bob's (count -1 on a 3); label 1 iff the
    count ends at 0.  Its state is the count so far modulo 2^``bits`` (a ``bits``-bit register)."""

    bits: int
    spec: str = "counter"

    def counts(self, tokens) -> np.ndarray:
        """The register after the given tokens, per row."""
        tokens = np.asarray(tokens, dtype=np.int64)
        return ((tokens == 1).sum(axis=1) - (tokens == 3).sum(axis=1)) % (1 << self.bits)


def counter_factory(spec, n=None, **context):
    """``counter[:bits=B]``: B defaults to what n + 1 values of Alice's count need."""
    need = max(1, int(n or 1).bit_length())
    return Counter(spec.int("bits", need, minimum=1, maximum=62), spec.text)


class CountProtocol(Protocol):
    """Alice sends her register; Bob adds his tokens' count to it and answers whether it is 0."""

    name = "count-handoff"
    output_party = "bob"

    def __init__(self, model: Counter):
        self.model = model

    def alice(self, share):
        count = int(self.model.counts([share.tokens])[0])
        yield Send("count", Bits.from_array([(count >> i) & 1 for i in range(self.model.bits)]))

    def bob(self, share):
        digits = (yield Receive("count")).to_array()
        count = sum(int(d) << i for i, d in enumerate(digits)) + int(self.model.counts([share.tokens])[0])
        label = np.array([int(count % (1 << self.model.bits) == 0)])
        return label, label


class CountHandoff(Simulator):
    """Alice's count of ones, one message of ``bits`` bits (the toy plugin's simulator)."""

    name = "count-handoff"
    source = "toy plugin (docs/EXTENDING.md)"
    budget_parameters = ("width", "precision")
    partition_kind = CONTIGUOUS_PREFIX
    one_way_splits = (CONTIGUOUS_PREFIX,)

    def accepts(self, model) -> bool:
        return isinstance(model, Counter)

    def shape(self, model: Counter) -> Shape:
        return Shape(width=1, format=model.bits)        # one number: the register

    def plan(self, shape, split) -> MessagePlan:
        if split.prefix() is None:
            raise NotApplicable("the count handoff needs Alice to hold a prefix", "reduction")
        bits = shape.width * shape.precision
        return MessagePlan(bits, 0, 1, f"Alice's count of ones, {bits} bits", formula=bits,
                           formula_text=f"m·p = {bits} bits: the count", message_name="count")

    def protocol(self, model: Counter, encoded) -> CountProtocol:
        return CountProtocol(model)

    def direct_labels(self, model: Counter, encoded) -> np.ndarray:
        return (model.counts(encoded.tokens) == 0).astype(np.int64)[:, None]


COUNT_HANDOFF = CountHandoff()
