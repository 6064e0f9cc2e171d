"""Size limits: how much work commsim does before it refuses and says how to ask for less.

Every size a user can ask for (``n``, ``instances``, a model's ``width``/``vocab``/``heads``, a
construction's length, a seed) is checked here, cheaply and before anything is allocated:

* :func:`check_size` -- an integer in ``[minimum, maximum]``; the error is an :class:`InputError` naming
  the parameter and the limit, with the reason.
* :func:`check_memory` -- an estimate in bytes against :data:`MEMORY_BUDGET_BYTES` (4 GiB), the most one
  request may allocate.
* :func:`check_seed` -- a seed numpy accepts (``0 <= seed < 2^63``).
* :func:`show_size` -- a number as the user should read it in an error: never a 300,000-digit integer
  (``2^1000000``, ``more than 10^18``).

Nothing here builds a number as large as the one it is judging (no ``2**n`` to compare with a limit):
exponents are compared instead, so ``n = 10^100`` is refused as fast as ``n = 40``.
"""
from __future__ import annotations

import math
import operator

from commsim.core.errors import InputError

__all__ = ["MAX_EXHAUSTIVE_BITS", "MAX_STREAMED_INSTANCES", "MAX_LOCAL_STREAMED_INSTANCES", "MEMORY_BUDGET_BYTES",
           "MAX_INSTANCES", "MAX_SEED", "MAX_SEQUENCE_LENGTH", "MAX_HEADS",
           "check_size", "check_memory", "check_seed", "check_pow2", "show_size", "show_bytes"]

#: the largest number of free input bits an exhaustive enumeration will materialize
MAX_EXHAUSTIVE_BITS = 24

#: the most instances a sharded, streaming exhaustive sweep covers (its memory is one chunk's, whatever the
#: count; the limit is the work: 2^40 instances is about a day on 512 workers)
MAX_STREAMED_INSTANCES = 1 << 40

#: the most instances one process sweeps (``run --instances all``): 2^32 is a few hours on one core
MAX_LOCAL_STREAMED_INSTANCES = 1 << 32

#: the most memory one request may allocate (arrays, weights, instance batches): 4 GiB
MEMORY_BUDGET_BYTES = 4 * 2**30

#: the most sampled instances one run checks (each is a full forward pass and a protocol run)
MAX_INSTANCES = 1_000_000

#: the longest token sequence a model is run on (the token arrays alone are then a few MB per instance)
MAX_SEQUENCE_LENGTH = 1 << 12

#: the most attention heads ``budget`` plans for: the exchange's message plan holds every head's messages and is
#: rebuilt at each length the max-N search judges (8,192 heads: about 12 s and 140 MB; 10^9 would need terabytes)
MAX_HEADS = 1 << 13

#: seeds are numpy seeds: non-negative, below 2^63
MAX_SEED = (1 << 63) - 1

#: integers shown in full up to this many digits; beyond, as a power
_SHOWN_DIGITS = 18


def show_size(value) -> str:
    """``value`` as short text: in full when it has at most 18 digits, else ``2^k`` (an exact power of two)
    or ``more than 10^k`` -- computed from the bit length, never by printing the integer."""
    if isinstance(value, float):
        return f"{value:.3g}"
    value = int(value)
    if value < 0:
        return "-" + show_size(-value)
    bits = value.bit_length()
    if bits <= 59:                                 # < 5.7e17: at most 18 digits
        return str(value)
    if value & (value - 1) == 0:
        return f"2^{bits - 1}"
    k = int((bits - 1) * math.log10(2))               # 10^k <= value, from the bit length
    if bits < 100_000 and value >= 10 ** (k + 1):       # one step up when the estimate fell short
        k += 1
    return f"more than 10^{k}"


def show_bytes(count) -> str:
    """A byte count as KiB/MiB/GiB/TiB text (``more than 10^k bytes`` when absurd)."""
    count = int(count)
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            if count >= 1 << (shift + 20) and unit == "TiB":
                return f"{show_size(count)} bytes"
            return f"{count / (1 << shift):.1f} {unit}"
    return f"{count} bytes"


def _as_int(value, param: str) -> int:
    if isinstance(value, bool):
        raise InputError(f"{param} must be an integer, got {value!r}", param)
    try:
        return operator.index(value)
    except TypeError:
        shown = float.__repr__(value) if isinstance(value, float) else repr(value)[:40]   # 8.0, never "8"
        raise InputError(f"{param} must be an integer, got {shown}", param) from None


def check_size(value, param: str, minimum: int = 1, maximum: int | None = None, why: str = "",
               noun: str | None = None) -> int:
    """``value`` as an int when ``minimum <= value <= maximum``; otherwise an :class:`InputError` naming
    ``param``, the limit and ``why`` it is the limit (e.g. ``"the matrix has 2^n rows"``): ``"n = 2^1000000:
    too large (the matrix has 2^n rows); the largest n that runs is 10"`` (``noun`` names it there, when
    the parameter's name does not read as one)."""
    value = _as_int(value, param)
    if value < minimum:
        raise InputError(f"{param} must be at least {show_size(minimum)}, got {show_size(value)}", param)
    if maximum is not None and value > maximum:
        reason = f" ({why})" if why else ""
        raise InputError(f"{param} = {show_size(value)}: too large{reason}; the largest {noun or param} that runs is "
                         f"{show_size(maximum)}", param)
    return value


def check_memory(bytes_estimate, param: str, what: str, budget: int = MEMORY_BUDGET_BYTES) -> None:
    """Refuse (an :class:`InputError` naming ``param``) when building ``what`` would take more than
    ``budget`` bytes (default :data:`MEMORY_BUDGET_BYTES`, 4 GiB)."""
    if bytes_estimate > budget:
        raise InputError(f"{param}: {what} would need about {show_bytes(bytes_estimate)}; one request may use "
                         f"at most {show_bytes(budget)}", param)


def check_pow2(bits, param: str, max_bits: int, what: str) -> None:
    """Refuse when ``what`` has 2^``bits`` elements and ``bits > max_bits`` (compares exponents only)."""
    if bits > max_bits:
        raise InputError(f"{param}: {what} would have 2^{show_size(bits)} elements, more than 2^{max_bits}", param)


def check_seed(value, param: str = "seed") -> int:
    """A seed numpy accepts: an integer in ``[0, 2^63 - 1]``."""
    return check_size(value, param, 0, MAX_SEED, "numpy seeds are below 2^63")
