"""The simulator contract: what turns a model into party programs (registry kind ``simulator``).

A simulator states its protocol once (:meth:`Simulator.protocol`, the party programs the runner runs) and its bit
count once (:meth:`Simulator.plan`, from a model's :class:`Shape` and a :class:`Split`, carrying the paper's count).
Everything else the engine derives: the message plan for a model (:meth:`Simulator.plan_model`), the batch run and
the transcript keys the certificate searches compare (through the runner, :func:`reference_batch`), the paper's count
``commsim budget`` prints (:meth:`Simulator.paper_count`).  A simulator that can run many instances at once mixes in
:class:`Vectorized`; the engine then holds that path to the runner on a seeded subset (and on every instance in
audit mode), as it does the runner itself -- the runner is the reference the fast path must equal.

How the model's kind selects among simulators (``precedence``) and the ``commsim budget --arch`` name (``arch``)
are given when it registers: ``registry.register("simulator", name, obj, description, precedence=10, arch="x")``.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from commsim.contract.values import ANY_PARTITION, BatchResult, Encoded, MessagePlan, Shape, Split
from commsim.core.party import Protocol
from commsim.core.runner import run_protocol


class Simulator:
    """Declarations: :attr:`name`, :attr:`source`, :attr:`partition_kind`, :attr:`one_way_splits`; for ``commsim
    budget`` (defaults fit most) :attr:`budget_parameters`, :attr:`plan_limit`, :attr:`plans_number_format`,
    :attr:`budget_arches`, :attr:`paper_form_text`; :attr:`selectable`.

    Hooks: :meth:`accepts`, :meth:`shape`, :meth:`plan`, :meth:`protocol`, :meth:`direct_labels`.  Optional:
    :meth:`plan_model` (a plan that reads more of the model than its shape), :meth:`paper_count` (the paper's
    count in closed form at any N), :meth:`paper_form_bits`."""

    name: str = ""
    source: str = ""
    #: the splits it has a protocol for: CONTIGUOUS_PREFIX only, or ANY_PARTITION
    partition_kind: str = ANY_PARTITION
    #: the split kinds on which its protocol is one-way (only Alice speaks); two-way on the others
    one_way_splits: tuple[str, ...] = ()
    #: False: never chosen by the model's kind, only as a reduction's :attr:`Reduction.simulator_variants`
    #: or by name (``--simulator``)
    selectable: bool = True
    #: the sizes its count depends on ("heads" absent: ``budget --heads`` must stay 1)
    budget_parameters: tuple[str, ...] = ("width", "precision", "heads")
    #: the longest N at which ``commsim budget`` evaluates :meth:`plan` (None: any; a plan laid out per position)
    plan_limit: int | None = None
    #: does :meth:`plan` plan a float format's own messages (its :class:`Shape` then carries the format)?  Else
    #: its messages are p-bit numbers whatever the format (the shape's format is the int p)
    plans_number_format: bool = False
    #: further ``budget --arch`` names it serves: name -> an entry saying what ``--width`` means there
    #: (``width_meaning``, ``options``, ``state_units(width, options)``, ``symbol(options)``,
    #: ``state_text(width, options)``)
    budget_arches: dict = {}
    #: the paper's count in its own form (e.g. log N unrounded), in words; "" when the simulator states none
    paper_form_text: str = ""

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

    def shape(self, model) -> Shape:
        """The model's sizes, as :meth:`plan` reads them."""
        raise NotImplementedError(f"{self.name} reads no shape off a model")

    def plan(self, shape: Shape, split: Split) -> MessagePlan:
        """What the protocol sends for a model of this shape on this split (bits per direction, rounds, the
        paper's count in :attr:`MessagePlan.formula` or None), computed without a model: the one statement of
        the bit count (``commsim run`` and ``commsim budget`` both read it); :class:`NotApplicable` with the
        reason when it has no protocol there."""
        raise NotImplementedError

    def protocol(self, model, encoded: Encoded) -> Protocol:
        """Party programs whose shares are :class:`Share` values; the output party returns
        ``(labels, raw_output)`` with ``labels`` an int array over ``encoded.output_positions``."""
        raise NotImplementedError

    def direct_labels(self, model, encoded: Encoded) -> np.ndarray:
        """The model's own decisions (batch, outputs) from a direct forward."""
        raise NotImplementedError

    # ---- optional, derived by default ---------------------------------------------------------------------
    def plan_model(self, model, encoded: Encoded) -> MessagePlan:
        """The plan for this model on the encoding's split: :meth:`plan` of its :meth:`shape`.  A simulator whose
        plan reads more of the model (the tokens it takes, its state's description) overrides this."""
        return self.plan(self.shape(model), Split.of(encoded))

    def paper_count(self, shape: Shape, split: Split) -> tuple[int, str] | None:
        """The paper's count for this shape at the split's N and its formula as text: the plan's
        :attr:`~MessagePlan.formula`.  A simulator whose plan is laid out per position (:attr:`plan_limit`)
        gives the count in closed form here, so that ``budget`` searches the paper's inequality at any N."""
        plan = self.plan(shape, split)
        return None if plan.formula is None else (plan.formula, plan.formula_text)

    def paper_form_bits(self, shape: Shape, seq_len: int) -> float:
        """The count as the paper writes it (:attr:`paper_form_text`), when the simulator declares one."""
        raise NotImplementedError(f"{self.name} states no paper's own form of its count")


class Vectorized:
    """Optional mixin: the protocol and the direct forward over many instances at once.  The engine holds
    :meth:`run_batch` to the runner (:meth:`Simulator.protocol`) on a seeded subset of every run."""

    def run_batch(self, model, encoded: Encoded, progress: Callable | None = None) -> BatchResult:
        """The protocol and the direct forward on every instance of the batch (vectorized); ``keys`` (when
        given) as :meth:`transcript_keys` has them."""
        raise NotImplementedError

    def transcript_keys(self, model, encoded: Encoded) -> tuple[np.ndarray, np.ndarray]:
        """Per instance: the protocol's output labels (batch, outputs) and a row of integer keys (batch, k)
        equal iff the transcripts are equal (for a one-way protocol, Alice's message).  Default: the batch
        run's ``keys``."""
        result = self.run_batch(model, encoded)
        if result.keys is None:
            raise NotImplementedError(f"{type(self).__name__}: its run_batch gives no transcript keys")
        return result.protocol_labels, result.keys


def transcript_key(transcript) -> list[int]:
    """A transcript's digest (senders, labels and bits of every message) as two int64 keys."""
    digest = transcript.digest()
    return [int(np.uint64(int(digest[i:i + 16], 16)).astype(np.int64)) for i in (0, 16)]


def reference_batch(simulator: Simulator, model, encoded: Encoded,
                    progress: Callable | None = None) -> BatchResult:
    """The batch run through the runner, one instance after another: the reference a :class:`Vectorized` path
    must equal, and the engine's batch run for a simulator without one.  ``exact_match``: the protocol's labels
    equal the direct forward's."""
    protocol = simulator.protocol(model, encoded)
    labels, bits, keys, costliest = [], [], [], None
    for i in range(encoded.batch):
        result = run_protocol(protocol, *encoded.shares(i))
        t = result.transcript
        labels.append(np.asarray(result.output[0]).reshape(-1))
        bits.append((t.bits_by_direction["alice_to_bob"], t.bits_by_direction["bob_to_alice"], t.rounds))
        keys.append(transcript_key(t))
        costliest = t if costliest is None or t.total_bits > costliest.total_bits else costliest
        if progress:
            progress(i + 1, encoded.batch)
    count, outputs = encoded.batch, len(encoded.output_positions)
    ours = np.stack(labels) if labels else np.zeros((0, outputs), dtype=np.int64)
    direct = np.asarray(simulator.direct_labels(model, encoded)).reshape(count, -1)
    a2b, b2a, rounds = (np.array([b[k] for b in bits], dtype=np.int64) for k in range(3))
    return BatchResult(ours, direct, (ours == direct).all(axis=1), a2b, b2a, rounds, costliest,
                       keys=np.array(keys, dtype=np.int64).reshape(count, 2))


def run_batch(simulator: Simulator, model, encoded: Encoded, progress: Callable | None = None) -> BatchResult:
    """The simulator's vectorized batch run, or the runner's (:func:`reference_batch`) when it has none."""
    if isinstance(simulator, Vectorized):
        return simulator.run_batch(model, encoded, progress=progress)
    return reference_batch(simulator, model, encoded, progress)


def transcript_keys(simulator: Simulator, model, encoded: Encoded) -> tuple[np.ndarray, np.ndarray]:
    """Per instance the protocol's labels and keys equal iff the transcripts are (:meth:`Vectorized.
    transcript_keys`, or the runner's transcripts' digests)."""
    if isinstance(simulator, Vectorized):
        return simulator.transcript_keys(model, encoded)
    result = reference_batch(simulator, model, encoded)
    return result.protocol_labels, result.keys
