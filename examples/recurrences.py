"""Your own recurrence as a commsim model (Theorem 2 of [BHBK24] holds for any recurrent model): a step
function in numpy (:class:`protocols.models.step.StepModel`), here a shift register of the last K bits.
Run from the repository root::

    commsim run index-idxl --model python:examples.recurrences:shift_register --n 8              # K = n: solves it
    commsim run index-idxl --model python:examples.recurrences:shift_register:capacity=6 --n 8   # must fail

A torch module exposing ``initial_state`` / ``step`` / ``readout`` instead: ``examples/step_modules.py``.
"""
from __future__ import annotations

import numpy as np

from protocols.models.step import StepModel


# ---- a numpy step function --------------------------------------------------------------------------------
class ShiftRegister:
    """The step of a K-bit shift register for index lookup over n bits: bit tokens (0, 1) shift in; the
    index token #i (token i + 1, 1-based i) writes the queried bit s_i, if still held, to the answer slot.
    State: K bits of the register, then the answer bit (K + 1 bits)."""

    def __init__(self, n: int, capacity: int):
        self.n, self.capacity = n, capacity

    def __call__(self, state: np.ndarray, token: int) -> np.ndarray:
        k = self.capacity
        new = state.copy()
        if token < 2:                       # a bit of s: shift it in
            new[:k - 1], new[k - 1] = state[1:k], token
        else:                               # the index token #i asks for s_i: held at k - 1 - (n - i)
            slot = k - 1 - (self.n - (token - 1))
            new[k] = state[slot] if slot >= 0 else 0.0
        return new


def answer_scores(state: np.ndarray) -> np.ndarray:
    """(1 - a, a) for the answer bit a (the last unit)."""
    return np.array([1.0 - state[-1], state[-1]])


def shift_register(n: int = 8, vocab_size: int | None = None, capacity: int | None = None) -> StepModel:
    """A ``StepModel`` storing the last ``capacity`` (default n) input bits in one-bit units."""
    k = n if capacity is None else int(capacity)
    return StepModel(ShiftRegister(n, k), answer_scores, initial_state=np.zeros(k + 1), state_format="bit",
                     vocab_size=vocab_size or n + 2, spec=f"shift-register:capacity={k}")
