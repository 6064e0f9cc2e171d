"""The values that pass between the engine and its plugins: the split kinds, a party's share, a batch of encoded
instances, a model's shape and the split a plan is made for, a protocol's message plan, a batch run's result."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from commsim.core.channel import Transcript

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


@dataclass(frozen=True)
class Shape:
    """A model's sizes, all a simulator's :meth:`~commsim.contract.simulator.Simulator.plan` reads: the width m,
    the number format (a :class:`~commsim.core.precision.NumberFormat`, or an ``int`` p for p-bit numbers in any
    format), the heads H, and ``extras`` (further sizes a plan may read, e.g. ``dim``: the embedding width d)."""

    width: int
    format: Any
    heads: int = 1
    extras: dict = field(default_factory=dict)

    @property
    def precision(self) -> int:
        """p: the bits of one number."""
        return int(self.format) if isinstance(self.format, int) else int(self.format.bits)


class Split:
    """Who holds what at length N: Alice's positions, the output positions and the positions both know (sequences
    or ``range`` objects: cheap at any N).  :meth:`of` reads it off an :class:`Encoded` batch; :meth:`at` asks a
    reduction, the positions only when a plan reads them (a paper's count in closed form reads N alone)."""

    def __init__(self, seq_len: int, alice_positions=(), output_positions=(), public_positions=(), *,
                 reduction=None):
        self.seq_len = int(seq_len)
        self._given = (alice_positions, output_positions, public_positions)
        self._reduction = reduction

    @classmethod
    def of(cls, encoded: "Encoded") -> "Split":
        return cls(encoded.seq_len, encoded.alice_positions, tuple(encoded.output_positions),
                   encoded.public_positions)

    @classmethod
    def at(cls, reduction, seq_len: int) -> "Split":
        """The split of ``reduction``'s encoding at the valid length N (its ``split(N)``, asked for when the
        positions are read)."""
        return cls(seq_len, reduction=reduction)

    @cached_property
    def _parts(self) -> tuple:
        if self._reduction is None:
            return self._given
        split = self._reduction.split(self.seq_len)
        return split.alice_positions, split.output_positions, split.public_positions

    @property
    def alice_positions(self):
        return self._parts[0]

    @property
    def output_positions(self):
        return self._parts[1]

    @property
    def public_positions(self):
        return self._parts[2]

    def prefix(self) -> int | None:
        """t when Alice holds exactly x_1..x_t (0-based positions 0..t-1), else None (checked without listing a
        ``range``)."""
        a = self.alice_positions
        if isinstance(a, range):
            return a.stop if a.start == 0 and a.step == 1 else None
        a = np.sort(np.asarray(a, dtype=np.int64).reshape(-1))
        return len(a) if np.array_equal(a, np.arange(len(a))) else None


@dataclass(frozen=True)
class BatchRun:
    """Per instance: the protocol's output, the bits each way and the rounds (a vectorized run's report)."""

    outputs: np.ndarray
    alice_to_bob: np.ndarray
    bob_to_alice: np.ndarray
    rounds: np.ndarray


@dataclass
class BatchResult:
    """A simulator's batch run (:func:`~commsim.contract.simulator.run_batch`): per instance, the protocol's and the
    direct forward's output labels (batch, outputs), whether the raw outputs matched bit for bit, and the bits."""

    protocol_labels: np.ndarray
    direct_labels: np.ndarray
    exact_match: np.ndarray
    alice_to_bob: np.ndarray
    bob_to_alice: np.ndarray
    rounds: np.ndarray
    transcript: Transcript | None = None      # one representative transcript (the costliest)
    details: dict = field(default_factory=dict)  # per-step / per-head bit itemization etc.
    #: per instance, integer keys equal iff the transcripts are equal (None: the simulator gives them apart)
    keys: np.ndarray | None = None

    @property
    def total_bits(self) -> np.ndarray:
        return np.asarray(self.alice_to_bob) + np.asarray(self.bob_to_alice)


@dataclass(frozen=True)
class MessagePlan:
    """What a simulator's protocol sends on one partition, known before running: the bits per direction,
    the rounds, how they are made up (``text``), the papers' count for the same model (``formula``, with
    ``formula_text``), and what the one-way message is called (``message_name``, e.g. "hidden state h_8").

    :meth:`Simulator.plan` gives it for a model's shape on a split (``commsim budget`` reads ``assumptions``
    too).  The engine reads the
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
