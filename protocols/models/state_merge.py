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

import weakref

import numpy as np

#: the levels are merged when at most this share of their children remains to be stepped
MERGE_SHARE = 0.9

#: the most readout values a :class:`ReadoutMemo` holds (32 MB of float64)
MEMO_VALUES = 1 << 22

_MULTIPLIERS: dict[int, np.ndarray] = {}

#: models whose states a :class:`ReadoutMemo` found not to recur, held weakly: a later batch run of the same model
#: object in this process (the next shard of an exhaustive run) starts with its memo off.  Only the work depends on
#: it, never a readout
_NOT_RECURRING: "weakref.WeakSet" = weakref.WeakSet()


def _multipliers(units: int) -> np.ndarray:
    """Fixed odd 64-bit multipliers, one per state unit (the hash of a state: the wrapped sum over its units of the
    unit's mixed bits times its multiplier)."""
    found = _MULTIPLIERS.get(units)
    if found is None:
        found = np.random.default_rng(units).integers(0, 1 << 63, size=units, dtype=np.uint64) * 2 + 1
        _MULTIPLIERS[units] = found
    return found


def state_bits(states: np.ndarray) -> np.ndarray:
    """The states' float64 bit patterns, (rows, units) uint64."""
    return np.ascontiguousarray(states, dtype=np.float64).view(np.uint64).reshape(len(states), -1)


def state_hashes(bits: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of :func:`state_bits` (equal states, equal hashes)."""
    # a fixed-point value's float64 pattern has mostly zero low bits: fold the high bits down before multiplying
    mixed = bits >> np.uint64(31)
    mixed ^= bits
    mixed *= _multipliers(bits.shape[1])
    mixed ^= mixed >> np.uint64(29)
    return mixed.sum(axis=1, dtype=np.uint64)


def distinct_rows(states: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(representatives, inverse)``: the index of one row per distinct state (bitwise) and, per row, the position
    of its state's representative in that list; None when every row is distinct (or a hash collides)."""
    if len(states) < 2:
        return None
    bits = state_bits(states)
    hashes = state_hashes(bits)
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


class ReadoutMemo:
    """The last level's readouts by (parent state, token), kept across the blocks of one batch run.

    The prefix trie merges equal states within a block (:func:`merge_children`); states also recur across blocks
    (prefixes that end alike reach one state).  The last level needs only its children's readouts (and the check
    that no state is NaN, made when a child is first stepped), and a readout is a function of the parent state,
    the token and the position: one computed in an earlier block for bitwise the same state and token at the same
    position is the readout.  Holds at most ``limit`` states; stops looking up once fewer than ``min_share`` of
    its lookups have hit after ``trial`` blocks (the states of the run do not recur), and then says so of its
    ``model`` for the rest of the process (:meth:`for_model`).  The first block can hit only what it merged itself,
    so the verdict waits for a second."""

    def __init__(self, limit: int = 1 << 15, trial: int = 2, min_share: float = 0.2, model=None):
        self.limit, self.trial, self.min_share = limit, trial, min_share
        self.keys = np.zeros(0, dtype=np.uint64)          # the remembered states' hashes (with the position), sorted
        self.key_slots = np.zeros(0, dtype=np.intp)       # each key's slot
        self.bits: np.ndarray | None = None                # (slots, units): each slot's state bits
        self.table: np.ndarray | None = None               # (slots, vocab, classes) readouts
        self.known: np.ndarray | None = None               # (slots, vocab): computed?
        self.blocks = self.lookups = self.hits = 0
        self.enabled = True
        self.model = model

    @classmethod
    def for_model(cls, model) -> "ReadoutMemo":
        """A memo for one batch run of ``model``: off from the start when an earlier run of this model object
        found that its states do not recur (an LSTM's (h, c) at 16 bits: fewer than 0.2% of lookups hit)."""
        memo = cls(model=model)
        try:
            memo.enabled = model not in _NOT_RECURRING
        except TypeError:          # a model that cannot be weakly referenced: judged afresh every run
            memo.model = None
        return memo

    def _slots(self, bits: np.ndarray, position: int) -> np.ndarray:
        """Each state's slot (bitwise the same state at the same position), new states given free slots; -1 where
        the memo is full or a hash collides (those children are computed and not remembered)."""
        hashes = state_hashes(bits) ^ np.uint64((position * 0x9E3779B97F4A7C15) & ((1 << 64) - 1))
        at = np.minimum(np.searchsorted(self.keys, hashes), max(len(self.keys) - 1, 0))
        slots = np.full(len(bits), -1, dtype=np.intp)
        if len(self.keys):
            found = self.keys[at] == hashes
            slots[found] = self.key_slots[at[found]]
            wrong = found.copy()
            wrong[found] = ~np.all(self.bits[slots[found]] == bits[found], axis=1)   # a collision: not this state
            slots[wrong] = -1
            new = ~found
        else:
            new = np.ones(len(bits), dtype=bool)
        fresh, first = np.unique(hashes[new], return_index=True)
        free = self.limit - len(self.keys)
        if len(fresh) and free > 0:
            fresh, first = fresh[:free], first[:free]
            rows = np.flatnonzero(new)[first]
            assigned = np.arange(len(self.keys), len(self.keys) + len(fresh))
            self.bits[assigned] = bits[rows]
            slots[rows] = assigned
            order = np.argsort(np.concatenate([self.keys, fresh]), kind="stable")
            self.keys = np.concatenate([self.keys, fresh])[order]
            self.key_slots = np.concatenate([self.key_slots, assigned])[order]
            # another state of the block with a fresh hash is that slot's only if bitwise the same
            again = new & (slots < 0)
            if again.any():
                at = np.searchsorted(self.keys, hashes[again])
                candidate = self.key_slots[np.minimum(at, len(self.keys) - 1)]
                same = (self.keys[np.minimum(at, len(self.keys) - 1)] == hashes[again]) & \
                    np.all(self.bits[candidate] == bits[again], axis=1)
                slots[np.flatnonzero(again)[same]] = candidate[same]
        return slots

    @property
    def recurring(self) -> bool:
        """Whether states still recur: the memo is on and at least ``min_share`` of its lookups have hit (or it has
        not looked yet)."""
        return self.enabled and self.hits >= self.min_share * self.lookups

    def readouts(self, base: np.ndarray, parents: np.ndarray, x: np.ndarray, position: int, vocab: int,
                 classes: int, compute) -> np.ndarray:
        """The readouts (len(parents), classes) of the children ``(base[parents[i]], x[i])`` at ``position``:
        remembered ones copied, the others ``compute(indices)`` (the readouts of those children, computed by
        stepping them) and remembered."""
        if not self.enabled:
            return compute(np.arange(len(parents)))
        bits = state_bits(base)
        if self.table is None:     # at most MEMO_VALUES remembered readout values (a large vocabulary: fewer states)
            self.limit = max(1, min(self.limit, MEMO_VALUES // max(1, vocab * classes)))
            self.bits = np.empty((self.limit, bits.shape[1]), dtype=np.uint64)
            self.table = np.empty((self.limit, vocab, classes))
            self.known = np.zeros((self.limit, vocab), dtype=bool)
        slot_of = self._slots(bits, position)[parents]
        have = slot_of >= 0
        have[have] = self.known[slot_of[have], x[have]]
        out = np.empty((len(parents), classes))
        out[have] = self.table[slot_of[have], x[have]]
        need = np.flatnonzero(~have)
        if len(need):
            out[need] = compute(need)
            keep = need[slot_of[need] >= 0]
            self.table[slot_of[keep], x[keep]] = out[keep]
            self.known[slot_of[keep], x[keep]] = True
        self.blocks += 1
        self.lookups += len(parents)
        self.hits += len(parents) - len(need)
        if self.blocks >= self.trial and self.hits < self.min_share * self.lookups:
            self.enabled = False
            if self.model is not None:
                _NOT_RECURRING.add(self.model)
        return out
