"""Small helpers shared by the lessons."""
from __future__ import annotations

import numpy as np

from commsim.core.errors import InputError


def bits_text(a) -> str:
    """A 0/1 array as a bit string."""
    return "".join(str(int(v)) for v in np.asarray(a).reshape(-1))


def size_arg(n: int | None, default: int, minimum: int, maximum: int, topic: str, even: bool = False) -> int:
    """The lesson's instance size: ``--n`` or the default, checked against the range that runs in seconds."""
    n = default if n is None else int(n)
    if n < minimum or n > maximum or (even and n % 2):
        parity = "an even number " if even else ""
        raise InputError(f"--n for {topic} must be {parity}in {minimum}..{maximum}, got {n}", "--n")
    return n
