"""Digests of messages and transcripts, and the one collision search every certificate uses."""
from __future__ import annotations

import numpy as np

from commsim.core.bits import Bits

#: colliding groups tried (in order of their first member) before giving up on verification
GROUPS_TRIED = 16

#: SplitMix64 finalizer constants (digest mixing)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


# ---- certificates: transcript collisions and crossings -------------------------------
def find_transcript_collision(digests) -> tuple[int, int] | None:
    """Two members with equal transcripts: ``(i, j)``, i < j, or None when all are distinct.

    ``digests`` holds one digest per member (str / bytes / ints, or a 2-D array with one row per
    member).  Returns the first j (in member order) whose digest occurred before, and the first i
    with that digest.  Vectorized (one sort).
    """
    arr = np.asarray(digests)
    if arr.ndim == 0 or len(arr) < 2:
        return None
    if arr.ndim > 1:
        arr = np.ascontiguousarray(arr.reshape(len(arr), -1))
        arr = arr.view(np.dtype((np.void, arr.dtype.itemsize * arr.shape[1]))).reshape(-1)
    if arr.dtype == object:
        arr = arr.astype(str) if all(isinstance(x, str) for x in arr) else arr
    _, first, inverse = np.unique(arr, return_index=True, return_inverse=True)
    first_of = first[inverse.reshape(-1)]
    dup = np.flatnonzero(first_of != np.arange(len(arr)))
    if not dup.size:
        return None
    j = int(dup[0])
    return int(first_of[j]), j


def message_rows(bits: Bits, count: int) -> np.ndarray:
    """Split one bit string holding ``count`` equal-length messages into rows of packed bytes
    (count, ceil(L / 8)); pad bits are zero, so equal rows mean equal messages."""
    if count == 0:
        return np.zeros((0, 0), dtype=np.uint8)
    if len(bits) % count:
        raise ValueError(f"{len(bits)} bits do not split into {count} equal messages")
    length = len(bits) // count
    if length % 8 == 0:
        return np.asarray(bits.packed).reshape(count, length // 8).copy()
    return np.packbits(bits.to_array().reshape(count, length), axis=1)


def digest_rows(rows: np.ndarray) -> np.ndarray:
    """A uint64 per row: the row itself when it fits in 8 bytes (exact), else a 64-bit hash."""
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    count, width = rows.shape
    words = max(1, -(-width // 8))
    padded = np.zeros((count, 8 * words), dtype=np.uint8)
    padded[:, :width] = rows
    w = padded.view(">u8").astype(np.uint64)
    if words == 1:
        return w[:, 0].copy()
    h = np.full(count, 0x9E3779B97F4A7C15, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(words):
            h ^= w[:, j]
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(31)
    return h


def find_collisions(rows: np.ndarray, inputs: np.ndarray, limit: int = GROUPS_TRIED) -> tuple[list, int]:
    """Pairs (i, j) of different inputs with bit-identical message rows, one per colliding group,
    groups ordered by their first member; also the number of colliding digest groups."""
    digests = digest_rows(rows)
    order = np.argsort(digests, kind="stable")
    d = digests[order]
    starts = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
    sizes = np.diff(np.r_[starts, len(d)])
    multi = starts[sizes >= 2]
    multi_sizes = sizes[sizes >= 2]
    by_first = np.argsort(order[multi], kind="stable")
    pairs = []
    flat = np.asarray(inputs).reshape(len(inputs), -1)
    for g in by_first:
        members = np.sort(order[multi[g]:multi[g] + min(int(multi_sizes[g]), 256)])
        found = None
        for a_pos, i in enumerate(members):
            for j in members[a_pos + 1:]:
                if np.array_equal(rows[i], rows[j]) and not np.array_equal(flat[i], flat[j]):
                    found = (int(i), int(j))
                    break
            if found:
                break
        if found:
            pairs.append(found)
            if len(pairs) >= limit:
                break
    return pairs, len(multi)


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finalizer, elementwise on uint64 (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def row_digests(keys: np.ndarray) -> np.ndarray:
    """A 128-bit digest (two uint64 columns) of each row of integer keys, vectorized over rows.

    Equal rows give equal digests; different rows collide with probability about 2^-128 per
    pair (and every collision used for a certificate is re-checked on real transcripts).
    """
    keys = np.asarray(keys)
    rows = keys.shape[0]
    cols = keys.reshape(rows, -1).astype(np.int64).view(np.uint64)
    h1 = np.full(rows, np.uint64(0x243F6A8885A308D3) ^ np.uint64(cols.shape[1]), dtype=np.uint64)
    h2 = np.full(rows, np.uint64(0x13198A2E03707344), dtype=np.uint64)
    for c in range(cols.shape[1]):
        col = cols[:, c]
        h1 = _mix(h1 ^ col)
        h2 = _mix(h2 + col * _GOLDEN + np.uint64(c + 1))
    return np.stack([h1, h2], axis=1)
