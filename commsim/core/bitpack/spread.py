"""Spread words: fields too wide for a byte window (59, 61, 62 or 63 bits, and every width on a big-endian
host) packed into whole 64-bit words, ``64 / gcd(width, 64)`` fields to ``width / gcd(width, 64)`` words."""
from __future__ import annotations

import functools
import math

import numpy as np


def _group_values(arr: np.ndarray, g0: int, m: int, group: int) -> np.ndarray:
    """The values of groups g0..g0+m-1 as a (m, group) uint64 array; a partial last group is padded with 0."""
    block = arr[g0 * group:(g0 + m) * group].astype(np.uint64)
    if block.size < m * group:
        block = np.concatenate([block, np.zeros(m * group - block.size, dtype=np.uint64)])
    return block.reshape(m, group)


def _group_bytes(packed: np.ndarray, first_byte: int, end_byte: int, g0: int, m: int, nbytes: int) -> np.ndarray:
    """The bytes of groups g0..g0+m-1 (``nbytes`` each) as a (m, nbytes) array; bytes past ``end_byte``
    (the missing part of a partial last group) read as 0."""
    lo = first_byte + g0 * nbytes
    raw = packed[lo:min(lo + m * nbytes, end_byte)]
    if raw.size < m * nbytes:
        raw = np.concatenate([raw, np.zeros(m * nbytes - raw.size, dtype=np.uint8)])
    return raw.reshape(m, nbytes)


@functools.lru_cache(maxsize=None)
def _spread_plan(width: int) -> tuple[int, int, tuple]:
    """Wider widths: ``group`` values fill ``words`` whole 64-bit words (group * width = 64 * words).

    For each value j of a group: (j, word, shift, None, None) when it lies inside one word, ending
    ``shift`` bits before the word's end; (j, word, None, next word, low) when it straddles two words
    with its ``low`` last bits at the start of the next one.
    """
    group = 64 // math.gcd(width, 64)
    steps = []
    for j in range(group):
        start, end = width * j, width * (j + 1)
        word = start // 64
        if end <= 64 * (word + 1):
            steps.append((j, word, 64 * (word + 1) - end, None, None))
        else:
            steps.append((j, word, None, word + 1, end - 64 * (word + 1)))
    return group, group * width // 64, tuple(steps)


def pack_spread(arr: np.ndarray, width: int) -> np.ndarray:
    """Pack values into 64-bit words with vectorized shifts, one row per position in the group."""
    group, nwords, steps = _spread_plan(width)
    n = arr.size
    ngroups = -(-n // group)
    out = np.empty(ngroups * nwords * 8, dtype=np.uint8)
    mask = np.uint64((1 << width) - 1)
    step = max(1, (1 << 18) // group)
    tmp = np.empty(min(step, ngroups), dtype=np.uint64)
    for g0 in range(0, ngroups, step):
        m = min(step, ngroups - g0)
        values = _group_values(arr, g0, m, group).T.copy()  # row j: the j-th value of every group
        np.bitwise_and(values, mask, out=values)  # keep the low bits: two's complement codes pack as is
        words = np.zeros((nwords, m), dtype=np.uint64)
        t = tmp[:m]
        for j, word, shift, nxt, low in steps:
            if nxt is None:
                np.left_shift(values[j], np.uint64(shift), out=t)
                np.bitwise_or(words[word], t, out=words[word])
            else:
                np.right_shift(values[j], np.uint64(low), out=t)
                np.bitwise_or(words[word], t, out=words[word])
                np.left_shift(values[j], np.uint64(64 - low), out=t)
                np.bitwise_or(words[nxt], t, out=words[nxt])
        out[g0 * nwords * 8:(g0 + m) * nwords * 8] = words.T.astype(">u8", order="C").view(np.uint8).reshape(-1)
    return out[:(n * width + 7) // 8]


def unpack_spread(packed: np.ndarray, width: int, count: int, first_byte: int, out: np.ndarray) -> None:
    """Inverse of :func:`pack_spread` for ``count`` values starting at byte ``first_byte``."""
    group, nwords, steps = _spread_plan(width)
    ngroups = -(-count // group)
    group_bytes = nwords * 8
    mask = np.uint64((1 << width) - 1)
    step = max(1, (1 << 18) // group)
    end_byte = first_byte + (count * width + 7) // 8
    tmp = np.empty(min(step, ngroups), dtype=np.uint64)
    for g0 in range(0, ngroups, step):
        m = min(step, ngroups - g0)
        raw = _group_bytes(packed, first_byte, end_byte, g0, m, group_bytes).reshape(-1)
        words = raw.view(">u8").reshape(m, nwords).T.astype(np.uint64, order="C")  # row t: word t of each group
        values = np.empty((group, m), dtype=np.uint64)
        t = tmp[:m]
        for j, word, shift, nxt, low in steps:
            if nxt is None:
                np.right_shift(words[word], np.uint64(shift), out=values[j])
            else:
                np.left_shift(words[word], np.uint64(low), out=values[j])
                np.right_shift(words[nxt], np.uint64(64 - low), out=t)
                np.bitwise_or(values[j], t, out=values[j])
        np.bitwise_and(values, mask, out=values)
        first = g0 * group
        full = min(m, (count - first) // group)  # complete groups (all but perhaps the very last)
        out[first:first + full * group].reshape(full, group)[...] = values[:, :full].T
        if full < m:
            out[first + full * group:count] = values[:count - first - full * group, full]
