"""The Dyck-(2,2) automaton as a recurrent model of three one-bit units."""
from __future__ import annotations

import numpy as np

from commsim.core.precision import BitFormat
from protocols.models.recurrent import RecurrentModel


# ---- the Dyck-(2,2) automaton --------------------------------------------------------------------------
class DyckAutomaton(RecurrentModel):
    """The Dyck-(2,2) DFA as an RNN: its 8 states (7 stacks of depth <= 2 and a reject sink) in
    3 one-bit units; the step is the transition table, the readout says "accept" in the empty-stack
    state (Appendix E of [BHBK24]: a constant-size recurrence recognizes bounded Dyck)."""

    kind = "dfa:dyck22"

    def __init__(self, spec: str = "dfa:dyck22"):
        from commsim.theory.dyck import DyckLanguage
        language = DyckLanguage(2, 2)
        table = language.transitions
        units = max(1, (table.shape[0] - 1).bit_length())
        super().__init__(BitFormat(), units, units, table.shape[1], 2, spec)
        self.table = table
        self._weights = 2.0 ** np.arange(units - 1, -1, -1)

    def _index(self, h: np.ndarray) -> np.ndarray:
        """The DFA state number of each state (its bits read as a binary number)."""
        return (h * self._weights).sum(axis=1).astype(np.int64)  # small exact integers

    def _step(self, h, x, t):
        """The transition table, written back as bits."""
        nxt = self.table[self._index(h), x]
        return ((nxt[:, None] >> np.arange(self.state_units - 1, -1, -1)) & 1).astype(np.float64)

    def _readout(self, h):
        """(reject, accept): accept in the empty-stack state."""
        accept = (self._index(h) == 0).astype(np.float64)
        return np.stack([1.0 - accept, accept], axis=1)
