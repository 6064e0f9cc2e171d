"""Size limits: how much work commsim does before it refuses and says how to ask for less."""
from __future__ import annotations

#: the largest number of free input bits an exhaustive enumeration will materialize
MAX_EXHAUSTIVE_BITS = 24
