"""Coins for randomized protocols: seeded, addressable by position, and recorded in the transcript.

A randomized party program asks for coins with ``yield Flip(label, count, public=...)`` (see
:mod:`commsim.core.party`); the runner answers from a :class:`CoinSource` and records every coin it hands
out in the transcript (:class:`commsim.core.channel.CoinDraw`).  There are three streams:

* ``"public"``: the shared random string of a public-coin protocol.  Both parties read it from the start,
  each with its own cursor, so Alice's k-th public coin is Bob's k-th public coin.
* ``"alice"`` and ``"bob"``: each party's private coins, which the other party never sees.

Bit ``j`` of a stream is a pure function of ``(seed, instance, stream, j)``: bit j of the SHAKE-256
output on that key (an extendable-output hash, so a longer read extends a shorter one).  The same seed
therefore gives the same coins in-process, in the audit mode's separate processes, and on a vectorized
path that draws the coins of many instances at once (:func:`coin_matrix`).
"""
from __future__ import annotations

import hashlib

import numpy as np

from commsim.core.bits import Bits

#: the coin streams: the shared public string and each party's private coins
STREAMS = ("public", "alice", "bob")


def coin_array(seed: int, instance: int, stream: str, offset: int, count: int) -> np.ndarray:
    """Bits ``offset .. offset + count - 1`` of a stream, as a uint8 0/1 array."""
    if stream not in STREAMS:
        raise ValueError(f"unknown coin stream {stream!r}; streams are {', '.join(STREAMS)}")
    if offset < 0 or count < 0:
        raise ValueError(f"coin positions must be non-negative, got offset {offset}, count {count}")
    key = f"commsim-coins|{int(seed)}|{int(instance)}|{stream}".encode()
    end = offset + count
    data = hashlib.shake_256(key).digest((end + 7) // 8) if count else b""
    return np.unpackbits(np.frombuffer(data, dtype=np.uint8))[offset:end]


def coin_matrix(seed: int, instances: int, stream: str, count: int, offset: int = 0) -> np.ndarray:
    """The same ``count`` positions of a stream for instances ``0 .. instances - 1``: a (instances, count) array.

    A vectorized path reads the coins the runner would hand out, instance by instance, from here."""
    out = np.empty((int(instances), int(count)), dtype=np.uint8)
    for i in range(int(instances)):
        out[i] = coin_array(seed, i, stream, offset, count)
    return out


class CoinSource:
    """The coins of one protocol run: instance ``instance`` of a sweep seeded with ``seed``."""

    def __init__(self, seed: int, instance: int = 0):
        self.seed, self.instance = int(seed), int(instance)

    def bits(self, stream: str, offset: int, count: int) -> Bits:
        """Bits ``offset .. offset + count - 1`` of ``stream``."""
        return Bits.from_array(coin_array(self.seed, self.instance, stream, offset, count))

    def __repr__(self) -> str:
        return f"CoinSource(seed={self.seed}, instance={self.instance})"

