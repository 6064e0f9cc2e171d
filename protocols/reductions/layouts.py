"""Memory layouts: which input bits a memorizing recurrent model must store for each reduction."""
from __future__ import annotations

import numpy as np


# ---- memorizing recurrences ---------------------------------------------------------------------------
class MemoryProgram:
    """How a memorizing recurrence handles one task's tokens (the memorizing recurrences that attain Theorems 3, 8 and 11 of [BHBK24]).

    ``slots`` is the number of bits of Alice's input the task needs.  :meth:`step` updates a batch
    of memories (batch, capacity) of 0/1 values after the tokens at position ``t``; a capacity
    below ``slots`` must drop bits.  The readout is the bit in :meth:`answer_slot`.  Reductions
    provide their program through ``memory_program(n)`` and hand it to the model factory in their
    model context (``memory_program``), so ``protocols.models.memorize`` never imports this module.
    """

    slots: int = 0

    def step(self, mem: np.ndarray, tokens: np.ndarray, t: int) -> np.ndarray:  # pragma: no cover
        """The memories (batch, capacity) after the tokens at position t."""
        raise NotImplementedError

    def answer_slot(self, capacity: int) -> int:
        """The slot the readout reads."""
        return 0

    def describe(self) -> str:
        """What the program does, in words."""
        return type(self).__name__


class _Storing(MemoryProgram):
    """Data bits arrive at known positions: ``store_slot[t]`` is the slot of position t's bit (or -1)
    and ``token_bit[token]`` the bit a data token carries.  Bits whose slot is beyond the capacity
    are dropped."""

    def __init__(self, slots: int, store_slot, token_bit, query_slot):
        """Slots, the slot of each position's bit, the bit each token carries, the slot each query token asks for."""
        self.slots = int(slots)
        self.store_slot = np.asarray(store_slot, dtype=np.int64)
        self.token_bit = np.asarray(token_bit, dtype=np.int64)
        self.query_slot = np.asarray(query_slot, dtype=np.int64)

    def _store(self, mem, tokens, t) -> None:
        """Write position t's data bit into its slot (dropped beyond the capacity)."""
        if t < len(self.store_slot):
            slot = int(self.store_slot[t])
            if 0 <= slot < mem.shape[1]:
                mem[:, slot] = np.clip(self.token_bit[tokens], 0, 1)

    def _lookup(self, mem, tokens) -> tuple[np.ndarray, np.ndarray]:
        """The queried bits (0 when dropped) and the slots the query tokens ask for."""
        slot = self.query_slot[tokens]
        ok = (slot >= 0) & (slot < mem.shape[1])
        got = mem[np.arange(mem.shape[0]), np.clip(slot, 0, mem.shape[1] - 1)]
        return np.where(ok, got, 0.0), slot


class StoreAndLookup(_Storing):
    """Store the data bits; at ``query_position`` write the queried bit (0 if it was dropped) into
    slot 0, the answer slot.  Index lookup, associative recall, q-sparse averaging with q = 1."""

    def __init__(self, slots, store_slot, token_bit, query_slot, query_position: int):
        """A storing program whose query comes at ``query_position``."""
        super().__init__(slots, store_slot, token_bit, query_slot)
        self.query_position = int(query_position)

    def step(self, mem, tokens, t):
        """Store, and at the query position look the bit up into slot 0."""
        self._store(mem, tokens, t)
        if t == self.query_position:
            mem[:, 0] = self._lookup(mem, tokens)[0]
        return mem

    def describe(self) -> str:
        """What the program does, in words."""
        return "stores the data bits, then looks up the queried one"


class StoreAndRecall(_Storing):
    """Store the data bits; at every position from ``query_start`` on, bring the queried bit to slot 0
    by swapping slots 0 and i (a bijection: nothing is lost).  With the queries in increasing order --
    as the MQAR reduction feeds them -- slot 0 holds each queried bit in turn.  A query for a dropped
    slot reads 0."""

    def __init__(self, slots, store_slot, token_bit, query_slot, query_start: int):
        """A storing program whose queries start at ``query_start``."""
        super().__init__(slots, store_slot, token_bit, query_slot)
        self.query_start = int(query_start)

    def step(self, mem, tokens, t):
        """Store, and from query_start on swap each queried bit into slot 0."""
        self._store(mem, tokens, t)
        if t >= self.query_start:
            rows = np.arange(mem.shape[0])
            slot = self.query_slot[tokens]
            ok = (slot >= 0) & (slot < mem.shape[1])
            s = np.clip(slot, 0, mem.shape[1] - 1)
            queried = mem[rows, s]
            first = mem[:, 0].copy()
            mem[rows[ok], s[ok]] = first[ok]
            mem[:, 0] = np.where(ok, queried, 0.0)
        return mem

    def describe(self) -> str:
        """What the program does, in words."""
        return "stores the data bits, then swaps each queried bit into the answer slot"


class StoreAndCompare(MemoryProgram):
    """INEQ on {0,1}^(2n): store the first half; at second-half position n + j compare with slot j
    and keep the running "differs" flag in slot j (freed by the comparison).  The flag after the last
    comparison is the answer.  With capacity K < n only the first K positions are compared."""

    def __init__(self, n: int):
        """INEQ on {0,1}^(2n): n slots."""
        self.slots = int(n)

    def step(self, mem, tokens, t):
        """Store the first half; compare the second half bit by bit."""
        n, k = self.slots, mem.shape[1]
        bit = np.clip(np.asarray(tokens, dtype=np.float64), 0.0, 1.0)
        if t < n:
            if t < k:
                mem[:, t] = bit
        else:
            j = t - n
            if j < min(n, k):
                differs = np.abs(mem[:, j] - bit)
                if j > 0:
                    differs = np.maximum(differs, mem[:, j - 1])
                mem[:, j] = differs
        return mem

    def answer_slot(self, capacity: int) -> int:
        """The slot of the last comparison's flag."""
        return min(self.slots, capacity) - 1

    def describe(self) -> str:
        """What the program does, in words."""
        return "stores the first half, then compares the second half bit by bit"
