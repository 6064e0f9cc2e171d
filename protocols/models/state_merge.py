"""Children of equal states stepped once: the prefix trie's levels merged by state (a finite-precision model's
states often coincide: a contracting Elman RNN in 16-bit fixed point reaches a few thousand states from a million
prefixes).

A step is a function of the state, the token and the position (:meth:`RecurrentModel.step`), so two prefixes of
one level whose states are bitwise equal have bitwise equal children for equal tokens, and equal readouts: each
such child is computed once and copied.  Equality is bitwise (-0.0 and +0.0 are different states, NaNs with one
pattern the same), found through a 64-bit hash of each state's bits and then verified row by row, so a hash
collision merges nothing.
"""
from __future__ import annotations

import numpy as np

#: the levels are merged when at most this share of their children remains to be stepped
MERGE_SHARE = 0.9

_MULTIPLIERS: dict[int, np.ndarray] = {}


def _multipliers(units: int) -> np.ndarray:
    """Fixed odd 64-bit multipliers, one per state unit (the hash of a state: the wrapped sum over its units of the
    unit's mixed bits times its multiplier)."""
    found = _MULTIPLIERS.get(units)
    if found is None:
        found = np.random.default_rng(units).integers(0, 1 << 63, size=units, dtype=np.uint64) * 2 + 1
        _MULTIPLIERS[units] = found
    return found


def distinct_rows(states: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(representatives, inverse)``: the index of one row per distinct state (bitwise) and, per row, the position
    of its state's representative in that list; None when every row is distinct (or a hash collides)."""
    if len(states) < 2:
        return None
    bits = np.ascontiguousarray(states, dtype=np.float64).view(np.uint64).reshape(len(states), -1)
    # a fixed-point value's float64 pattern has mostly zero low bits: fold the high bits down before multiplying
    mixed = bits >> np.uint64(31)
    mixed ^= bits
    mixed *= _multipliers(bits.shape[1])
    mixed ^= mixed >> np.uint64(29)
    hashes = mixed.sum(axis=1, dtype=np.uint64)
    order = np.argsort(hashes, kind="stable")
    ordered = hashes[order]
    new = np.empty(len(states), dtype=bool)
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    if new.all():
        return None
    representatives = order[new]
    inverse = np.empty(len(states), dtype=np.intp)
    inverse[order] = np.cumsum(new) - 1
    if not np.array_equal(bits[representatives[inverse]], bits):     # a collision: merge nothing
        return None
    return representatives, inverse


def merge_children(states: np.ndarray, parents: np.ndarray, x: np.ndarray, vocab: int):
    """The children ``(parents[i], x[i])`` of a level whose parent states are ``states``, merged by equal parent
    state and token: ``(distinct parent states, per step its parent among them, per step its token, per child its
    step)``; None when merging would leave more than :data:`MERGE_SHARE` of the children to step."""
    distinct = distinct_rows(states)
    if distinct is None:
        return None
    representatives, inverse = distinct
    keys = inverse[parents] * vocab + x.astype(np.intp)
    size = len(representatives) * vocab
    if size <= 4 * len(keys) + 4096:        # a table of the (state, token) pairs, no sort
        used = np.zeros(size, dtype=bool)
        used[keys] = True
        pairs = np.flatnonzero(used)
        which = (np.cumsum(used) - 1)[keys]
    else:
        pairs, which = np.unique(keys, return_inverse=True)
    if len(pairs) > MERGE_SHARE * len(keys):
        return None
    return states[representatives], pairs // vocab, (pairs % vocab).astype(x.dtype), which
