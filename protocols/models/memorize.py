"""A recurrent model that stores the input bits a task needs (a memory program says which).

The memory programs live with the reductions (``protocols.reductions.layouts``): a reduction hands its
program to the model factory through its model context.  This module does not import them; a program
is any object with ``slots``, ``step(mem, tokens, t)`` and ``answer_slot(capacity)``.
"""
from __future__ import annotations

import numpy as np

from commsim.contract import ModelError
from commsim.core.precision import BitFormat
from protocols.models.recurrent import RecurrentModel


class Memorize(RecurrentModel):
    """A recurrence whose state simply stores the input bits the task needs: ``capacity`` one-bit
    units (m = capacity, p = 1).  With capacity n it solves the task with exactly the lower bound's
    budget (the bound is tight); with capacity < n it drops bits and must fail somewhere."""

    kind = "memorize"

    def __init__(self, program, capacity: int | None = None, vocab_size: int = 2, spec: str = ""):
        """A memory of ``capacity`` one-bit units (default: the program's slots) run by ``program``."""
        capacity = program.slots if capacity is None else int(capacity)
        if capacity < 1:
            raise ModelError(f"memorize capacity must be at least 1 bit, got {capacity}", "model")
        super().__init__(BitFormat(), capacity, capacity, vocab_size, 2, spec or f"memorize:capacity={capacity}")
        self.program = program
        self.capacity = capacity

    def describe_state(self) -> str:
        """The state's units and how many the task needs."""
        return f"{self.capacity} one-bit unit{'s' if self.capacity != 1 else ''} (the task needs {self.program.slots})"

    def _step(self, h, x, t):
        """The program's step on the memories after the tokens at position t."""
        return self.program.step(np.array(h, dtype=np.float64), np.asarray(x), t)

    def _readout(self, h):
        """Class scores (1 - v, v) for the bit v in the program's answer slot."""
        v = h[:, self.program.answer_slot(self.capacity)]
        return np.stack([1.0 - v, v], axis=1)
