"""The toy plugin's model kind (a counter of ones) and the simulator that turns it into party programs."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commsim import Bits, NotApplicable, Protocol, Receive, Send
from commsim.contract import CONTIGUOUS_PREFIX, BatchResult, Encoded, MessagePlan, Simulator


@dataclass(frozen=True)
class Counter:
    """Tokens 0/1 are Alice's bits (count +1 on a 1), tokens 2/3 Bob's (count -1 on a 3); label 1 iff the
    count ends at 0.  Its state is the count so far modulo 2^``bits`` (a ``bits``-bit register)."""

    bits: int
    spec: str = "counter"

    def counts(self, tokens: np.ndarray) -> np.ndarray:
        """The register after the given tokens, per row."""
        tokens = np.asarray(tokens, dtype=np.int64)
        return ((tokens == 1).sum(axis=1) - (tokens == 3).sum(axis=1)) % (1 << self.bits)

    def labels(self, tokens: np.ndarray) -> np.ndarray:
        """The model's decision at the last position (batch, 1)."""
        return (self.counts(tokens) == 0).astype(np.int64)[:, None]


def counter_factory(spec, n=None, **context):
    """``counter[:bits=B]``: B defaults to what n + 1 values of Alice's count need."""
    need = max(1, int(n or 1).bit_length())
    return Counter(spec.int("bits", need, minimum=1, maximum=62), spec.text)


class CountProtocol(Protocol):
    """Alice sends her count of ones; Bob subtracts his and answers whether the difference is 0."""

    name = "count-handoff"
    output_party = "bob"

    def __init__(self, model: Counter):
        self.model = model

    def alice(self, share):
        count = self.model.counts(np.asarray(share.tokens)[None])[0]
        yield Send("count", Bits.from_array([(count >> i) & 1 for i in range(self.model.bits)]))

    def bob(self, share):
        digits = (yield Receive("count")).to_array()
        count = sum(int(d) << i for i, d in enumerate(digits))
        label = np.array([int((count + self.model.counts(np.asarray(share.tokens)[None])[0]) % (1 << self.model.bits)
                              == 0)])
        return label, label


class CountHandoff(Simulator):
    """Alice's count of ones, one message of ``bits`` bits (the toy plugin's simulator)."""

    name = "count-handoff"
    source = "toy plugin (docs/EXTENDING.md)"
    arch = "counter"
    budget_parameters = ("width", "precision")
    partition_kind = CONTIGUOUS_PREFIX
    one_way_splits = (CONTIGUOUS_PREFIX,)

    def accepts(self, model) -> bool:
        return isinstance(model, Counter)

    def plan(self, model: Counter, encoded: Encoded) -> MessagePlan:
        alice = np.asarray(encoded.alice_positions)
        if not np.array_equal(alice, np.arange(len(alice))):
            raise NotApplicable("the count handoff needs Alice to hold a prefix", "reduction")
        return MessagePlan(model.bits, 0, 1, f"Alice's count of ones, {model.bits} bits", formula=model.bits,
                           formula_text=f"b = {model.bits} bits: the count", message_name="count")

    def shape_plan(self, width, precision, heads, seq_len, alice_positions, output_positions, **shape):
        bits = width * precision
        return MessagePlan(bits, 0, 1, f"a count of {bits} bits", formula=bits, formula_text=f"m·p = {bits}",
                           message_name="count")

    def budget_bits(self, width, precision, heads, seq_len):
        return width * precision, f"m·p = {width * precision}"

    def make_protocol(self, model: Counter, encoded: Encoded) -> CountProtocol:
        return CountProtocol(model)

    def transcript_keys(self, model: Counter, encoded: Encoded):
        t = len(encoded.alice_positions)
        sent = model.counts(encoded.tokens[:, :t])                    # the message: Alice's register
        left = (sent + model.counts(encoded.tokens[:, t:])) % (1 << model.bits)
        return (left == 0).astype(np.int64)[:, None], sent[:, None]

    def run_batch(self, model: Counter, encoded: Encoded, progress=None) -> BatchResult:
        labels, _ = self.transcript_keys(model, encoded)
        direct = self.direct_labels(model, encoded)
        count = encoded.batch
        return BatchResult(labels, direct, (labels == direct).all(axis=1), np.full(count, model.bits),
                           np.zeros(count, dtype=np.int64), np.ones(count, dtype=np.int64),
                           details={"message_bits": model.bits})

    def direct_labels(self, model: Counter, encoded: Encoded) -> np.ndarray:
        return model.labels(encoded.tokens)


COUNT_HANDOFF = CountHandoff()
