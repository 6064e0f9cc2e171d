"""The simulator contract: what turns a model into party programs (registry kind ``simulator``)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from commsim.contract.values import ANY_PARTITION, BatchResult, Encoded, MessagePlan
from commsim.core.party import Protocol


class Simulator:
    """What turns a model into party programs (registry kind ``simulator``): a small contract of data hooks.

    A simulator *declares* what the engine needs to choose bounds and certificate searches, and *hands the
    engine data*; it never evaluates a run, searches a certificate or builds a report (the engine does:
    :mod:`commsim.runs.stages`, :mod:`commsim.runs.certificates`).

    Declarations (class attributes): :attr:`name`, :attr:`source`, :attr:`partition_kind` (the splits it has a
    protocol for), :attr:`one_way_splits` (the split kinds on which only Alice speaks), :attr:`precedence`
    (which simulator the model's kind selects when several accept it), and for ``commsim budget`` :attr:`arch`,
    :attr:`budget_parameters`, :attr:`shape_plan_limit`.

    Hooks: :meth:`accepts` (does it wrap this model), :meth:`plan` (the message plan on an encoding's split,
    or :class:`NotApplicable`), :meth:`shape_plan` and :meth:`budget_bits` (the same plan and the paper's count
    from an architecture's sizes), :meth:`make_protocol` (the party programs the runner runs),
    :meth:`run_batch` (the protocol and the direct forward over many instances, vectorized),
    :meth:`transcript_keys` (per instance, the protocol's labels and integer keys equal iff the transcripts
    are equal: what the certificate searches compare) and :meth:`direct_labels` (the model's own forward).
    """

    name: str = ""
    source: str = ""
    #: the architecture name ``commsim budget --arch`` uses for this protocol ("" = not offered)
    arch: str = ""
    #: the longest N at which :meth:`shape_plan` is evaluated (None: any; its plan is laid out per position)
    shape_plan_limit: int | None = None
    #: the parameters of :meth:`budget_bits` that matter ("heads" absent: ``--heads`` must stay 1)
    budget_parameters: tuple[str, ...] = ("width", "precision", "heads")
    #: the splits it has a protocol for: CONTIGUOUS_PREFIX only, or ANY_PARTITION
    partition_kind: str = ANY_PARTITION
    #: the split kinds on which its protocol is one-way (only Alice speaks); two-way on the others
    one_way_splits: tuple[str, ...] = ()
    #: False: never chosen by the model's kind, only as a reduction's :attr:`Reduction.simulator_variants`
    #: or by name (``--simulator``)
    selectable: bool = True
    #: when several selectable simulators accept a model, the lowest precedence wins (then the name);
    #: ``commsim run --simulator NAME`` overrides the choice
    precedence: int = 100

    def split_direction(self, split: str) -> str | None:
        """``"one-way"`` or ``"two-way"``: the direction of its protocol on a split of kind ``split``;
        None when it has no protocol for that split (a contiguous-prefix simulator on any other split)."""
        if self.partition_kind != ANY_PARTITION and split != self.partition_kind:
            return None
        return "one-way" if split in self.one_way_splits else "two-way"

    # ---- hooks ------------------------------------------------------------------------------------------
    def accepts(self, model) -> bool:
        """Does this simulator turn ``model`` into party programs?"""
        raise NotImplementedError

    def plan(self, model, encoded: Encoded) -> MessagePlan:
        """What the protocol sends for this model on the encoding's split (bits per direction, rounds, the
        papers' count); :class:`NotApplicable` (with the reason) when the split or the input does not fit."""
        raise NotImplementedError

    #: does :meth:`shape_plan` plan a float format's own messages (it reads ``number_format=``)?  Else its
    #: messages are p-bit numbers whatever the format (``commsim budget --dtype`` says which)
    plans_number_format = False

    def shape_plan(self, width: int, precision: int, heads: int, seq_len: int,
                   alice_positions, output_positions, **shape) -> MessagePlan:
        """The plan :meth:`plan` gives, for an architecture of these sizes at length N on this partition,
        computed without a model (``commsim budget``); :class:`NotApplicable` when it has no protocol there.
        ``shape`` holds further sizes the plan may read (``dim``: the embedding width d; ``number_format``
        when the simulator declares :attr:`plans_number_format`)."""
        raise NotImplementedError(f"{self.name} gives no protocol plan from a shape")

    def budget_bits(self, width: int, precision: int, heads: int, seq_len: int) -> tuple[int, str]:
        """The theorem's bit count for an architecture of this width/precision/heads at length N,
        and its formula as text (``commsim budget``)."""
        raise NotImplementedError(f"{self.name} gives no budget formula")

    def make_protocol(self, model, encoded: Encoded) -> Protocol:
        """Party programs whose shares are :class:`Share` values; the output party returns
        ``(labels, raw_output)`` with ``labels`` an int array over ``encoded.output_positions``."""
        raise NotImplementedError

    def run_batch(self, model, encoded: Encoded, progress: Callable | None = None) -> BatchResult:
        """The protocol and the direct forward on every instance of the batch (vectorized); the engine
        re-runs a seeded subset through the runner and holds the batch to it."""
        raise NotImplementedError

    def transcript_keys(self, model, encoded: Encoded) -> tuple[np.ndarray, np.ndarray]:
        """Per instance: the protocol's output labels (batch, outputs) and a row of integer keys (batch, k)
        equal iff the transcripts are equal.  For a one-way protocol the transcript is Alice's message, so
        equal keys for two Alice inputs (Bob's input fixed) are a pigeonhole collision."""
        raise NotImplementedError

    def direct_labels(self, model, encoded: Encoded) -> np.ndarray:
        """The model's own decisions (batch, outputs) from a direct forward."""
        raise NotImplementedError
