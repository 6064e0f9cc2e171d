"""The engine's size limits a plugin checks against before it allocates (a sequence length, an exhaustive
enumeration, an array's memory), their wording, and the confidence interval of a measured rate."""
from commsim.core.limits import (MAX_EXHAUSTIVE_BITS, MAX_SEQUENCE_LENGTH, check_memory, check_size, show_bytes,
                                 show_size)
from commsim.core.stats import rate_interval

__all__ = ["MAX_EXHAUSTIVE_BITS", "MAX_SEQUENCE_LENGTH", "check_memory", "check_size", "rate_interval", "show_bytes",
           "show_size"]
