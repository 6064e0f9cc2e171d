"""The attention exchange's partition of the positions 0..N-1 between Alice and Bob, checked.

:func:`validate_partition` lists both parts position by position (the exchange's parties need them);
:func:`partition_counts` gives only what a message plan depends on -- whether Alice holds the query and how
many positions each party holds -- with the same checks and refusals, arithmetically for a ``range`` (no
list of N positions: ``commsim budget`` plans lengths up to 2^20 many times over a search).  Both read a
``range`` or an array of Alice's positions; Bob holds the rest.
"""
from __future__ import annotations

import numpy as np

from commsim.contract import InputError

__all__ = ["PartitionError", "partition_counts", "validate_partition"]


class PartitionError(InputError):
    """The positions given to Alice do not form a valid partition of the sequence."""


def _outside(seq_len: int, lo: int, hi: int) -> None:
    """PartitionError naming the first bad position when Alice's smallest ``lo`` or largest ``hi`` is outside."""
    if lo < 0 or hi >= seq_len:
        raise PartitionError(f"position {lo if lo < 0 else hi} is outside 0..{seq_len - 1}", "partition")


def _array_counts(seq_len: int, alice_positions) -> np.ndarray:
    """How often each position 0..N-1 is given to Alice (each 0 or 1); PartitionError when Alice's positions
    are not distinct integers in 0..N-1."""
    a = (np.arange(alice_positions.start, alice_positions.stop, alice_positions.step, dtype=np.int64)
         if isinstance(alice_positions, range) else np.asarray(alice_positions))   # a range: no Python loop
    if a.ndim != 1:
        raise PartitionError(f"Alice's positions must be a flat list of integers, got shape {a.shape}", "partition")
    if a.size and a.dtype.kind not in "iu":
        if not np.array_equal(a, np.floor(a)):
            raise PartitionError("Alice's positions must be integers", "partition")
        a = a.astype(np.int64)
    a = a.astype(np.int64)
    if a.size:
        _outside(seq_len, int(a.min()), int(a.max()))
    counts = np.bincount(a, minlength=seq_len)
    if a.size and counts.max() > 1:
        dup = int(np.argmax(counts > 1))
        raise PartitionError(f"position {dup} is given to Alice twice (the parts must be disjoint)", "partition")
    return counts


def validate_partition(seq_len: int, alice_positions) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(Alice's positions, Bob's positions), sorted; PartitionError when Alice's are not distinct
    integers in 0..N-1."""
    mask = _array_counts(seq_len, alice_positions) > 0
    return tuple(np.flatnonzero(mask).tolist()), tuple(np.flatnonzero(~mask).tolist())


def partition_counts(seq_len: int, alice_positions, query: int) -> tuple[bool, int, int]:
    """(whether Alice holds ``query``, how many positions Alice holds, how many Bob holds): what
    :func:`validate_partition`'s parts give, with its refusals; a ``range`` is checked from its ends (its
    positions are distinct integers), any other list position by position."""
    if isinstance(alice_positions, range):
        r = alice_positions
        if len(r):
            _outside(seq_len, min(r[0], r[-1]), max(r[0], r[-1]))
        return query in r, len(r), seq_len - len(r)
    counts = _array_counts(seq_len, alice_positions)
    held = int(counts.sum())
    return bool(counts[query]) if 0 <= query < seq_len else False, held, seq_len - held
