"""The vectorized kernels behind :func:`commsim.core.bits.pack_uints` and :func:`~commsim.core.bits.unpack_uints`
for widths that are not a whole number of bytes.

Widths up to 32 bits go through a SWAR tree (:func:`pack_swar`): the values sit in lanes of their
container size (8, 16 or 32 bits) of 64-bit words, and a few whole-array shifts and masks per level merge
neighbouring lanes until each word holds one right-aligned field of ``64 / lane * width`` bits, first value
most significant -- so each numpy operation handles 2, 4 or 8 values at once.  Fields that are a whole
number of bytes are then written as big-endian bytes; other fields (and widths 33..63) are spread over
whole 64-bit words (:func:`pack_spread`: ``64 / gcd(width, 64)`` fields fill whole words).  Every
unpacking kernel is the exact inverse.  Work is done in cache-sized chunks.
"""
from __future__ import annotations

import functools
import math

import numpy as np

#: values per step of the chunked paths (a multiple of 64, so every chunk fills whole bytes and words)
_CHUNK = 1 << 15

#: the SWAR lanes are read as a little-endian view of the values (else the spread kernels are used)
LITTLE = np.little_endian


def lane_bits(width: int) -> int:
    """The container size (8, 16, 32 or 64 bits) of a ``width``-bit value."""
    return max(8, 1 << (width - 1).bit_length())


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


def _lane_masks(width: int, lane: int) -> list[tuple[int, int, np.uint64]]:
    """The merge levels of a SWAR tree for ``width``-bit values in ``lane``-bit lanes of a 64-bit word:
    (lane size, bits per value in it, mask of those bits in every double lane), lane by lane up to 64 bits."""
    levels, bits = [], width
    while lane < 64:
        pattern = 0
        for start in range(0, 64, 2 * lane):
            pattern |= ((1 << bits) - 1) << start
        levels.append((lane, bits, np.uint64(pattern)))
        lane, bits = 2 * lane, 2 * bits
    return levels


def _merge_lanes(words: np.ndarray, width: int, lane: int) -> int:
    """In place: every 64-bit word's ``64 // lane`` lanes (the first value in the lowest lane, as a
    little-endian view of the values lays them) become one right-aligned field of ``64 // lane * width``
    bits, the first value most significant; bits above ``width`` in a lane are dropped.  Returns the field's width."""
    tmp = np.empty_like(words)
    bits = width
    for size, bits, mask in _lane_masks(width, lane):
        np.right_shift(words, np.uint64(size), out=tmp)
        np.bitwise_and(tmp, mask, out=tmp)                    # the later value of each pair
        np.bitwise_and(words, mask, out=words)                 # the earlier value
        np.left_shift(words, np.uint64(bits), out=words)
        np.bitwise_or(words, tmp, out=words)
    return (64 // lane) * width if lane < 64 else width


def _split_lanes(words: np.ndarray, width: int, lane: int) -> None:
    """Inverse of :func:`_merge_lanes` (in place): fields back to one value per lane."""
    tmp = np.empty_like(words)
    for size, bits, mask in reversed(_lane_masks(width, lane)):
        np.bitwise_and(words, mask, out=tmp)                   # the later value
        np.right_shift(words, np.uint64(bits), out=words)
        np.bitwise_and(words, mask, out=words)                 # the earlier value, in the lower lane
        np.left_shift(tmp, np.uint64(size), out=tmp)
        np.bitwise_or(words, tmp, out=words)


def _pack_fields(fields: np.ndarray, bits: int) -> np.ndarray:
    """Right-aligned fields of ``bits`` bits (one per uint64) as a packed MSB-first byte string."""
    if bits % 8:
        return pack_spread(fields, bits)
    nbytes = bits // 8
    big = fields.astype(">u8")
    return np.ascontiguousarray(big.view(_tail_bytes(nbytes))["f"]).view(np.uint8).reshape(-1)


@functools.lru_cache(maxsize=None)
def _tail_bytes(nbytes: int) -> np.dtype:
    """The last ``nbytes`` bytes of each 8-byte word, as one opaque field (numpy copies it in one move,
    much faster than a (count, nbytes) byte slice)."""
    return np.dtype({"names": ["f"], "formats": [f"V{nbytes}"], "offsets": [8 - nbytes], "itemsize": 8})


def _unpack_fields(packed: np.ndarray, bits: int, count: int, first_byte: int) -> np.ndarray:
    """``count`` right-aligned fields of ``bits`` bits read from byte ``first_byte`` (missing bytes read as 0)."""
    if bits % 8:
        out = np.empty(count, dtype=np.uint64)
        unpack_spread(packed, bits, count, first_byte, out)
        return out
    nbytes = bits // 8
    buffer = np.zeros((count, 8), dtype=np.uint8)
    raw = packed[first_byte:first_byte + count * nbytes]
    if raw.size < count * nbytes:
        raw = np.concatenate([raw, np.zeros(count * nbytes - raw.size, dtype=np.uint8)])
    buffer.view(_tail_bytes(nbytes)).reshape(-1)["f"] = raw.view(f"V{nbytes}")
    return buffer.view(">u8").reshape(-1).astype(np.uint64)


def pack_swar(arr: np.ndarray, width: int) -> np.ndarray:
    """Widths below 33: the values in lanes of their container size, merged in place into fields of
    ``64 // lane * width`` bits (a SWAR tree: a few whole-array shifts and masks per level), then packed."""
    lane = lane_bits(width)
    per = 64 // lane
    n = arr.size
    out = np.empty((n * width + 7) // 8, dtype=np.uint8)
    step = _CHUNK * 8  # values per chunk: a multiple of 64, so every chunk fills whole bytes
    for start in range(0, n, step):
        block = arr[start:start + step]
        m = -(-block.size // per) * per
        lanes = np.empty(m, dtype=np.dtype(f"u{lane // 8}"))
        lanes[:block.size] = block                              # the low ``lane`` bits of each value
        lanes[block.size:] = 0
        words = lanes.view(np.uint64) if LITTLE else lanes.astype(np.uint64)
        packed = _pack_fields(words, _merge_lanes(words, width, lane))
        first = start * width // 8
        out[first:first + (block.size * width + 7) // 8] = packed[:(block.size * width + 7) // 8]
    return out


def unpack_swar(packed: np.ndarray, width: int, count: int, first_byte: int, out: np.ndarray) -> None:
    """Inverse of :func:`pack_swar` for ``count`` values from byte ``first_byte``."""
    lane = lane_bits(width)
    per = 64 // lane
    bits = per * width
    step = _CHUNK * 8
    for start in range(0, count, step):
        m = min(step, count - start)
        words = _unpack_fields(packed, bits, -(-m // per), first_byte + start * width // 8)
        _split_lanes(words, width, lane)
        out[start:start + m] = words.view(out.dtype)[:m]

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
