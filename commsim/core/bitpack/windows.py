"""Byte windows: right-aligned fields of any bit width written to (and read from) a packed MSB-first stream
with one strided store (load) per bit phase.

Field k starts at bit k * bits, inside byte q = k * bits // 8; the lane-sized window of the stream that
starts at byte q holds the last bits of field k - 1, field k and the first bits of field k + 1, so it is
computed from the three fields (four when a narrow field's window reaches past the next one) with shifts and
stored as one big-endian integer at byte q.  Neighbouring
windows overlap, but each holds exactly the stream's bits, so the order in which they are stored does not
matter.  Fields k, k + p, k + 2p, ... with p = 8 / gcd(bits, 8) share one bit phase: their windows are one
strided view.  Fields of 33..63 bits with two phases are written a pair at a time (:func:`write_pairs`).
Reading is the inverse: a shift per window, then a mask.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from commsim.core.bitpack.lanes import Scratch, uint_type


def fits_windows(bits: int, lane: int) -> bool:
    """Every field of ``bits`` bits, at each of its bit phases, fits in a ``lane``-bit window that reaches at
    most into the next field -- or, for fields that are not a whole number of bytes, into the one after it (a
    31-bit field in a 64-bit window starting on its byte holds 33 bits after it: all of the next field and 2
    bits of the one after)."""
    reach = bits if bits % 8 == 0 else 2 * bits
    return all(0 <= lane - r - bits <= reach for r in {(k * bits) % 8 for k in range(8)})


@functools.lru_cache(maxsize=None)
def window_plan(bits: int, lane: int) -> tuple[int, int, tuple]:
    """(period, stride, phases): fields k, k + period, ... share one bit phase; their windows are ``stride``
    bytes apart.  For each phase j: (j, q, r, t): field j starts ``r`` bits into byte ``q`` and its window
    ends ``t`` bits into field j + 1."""
    period = 8 // math.gcd(bits, 8)
    phases = []
    for j in range(period):
        q, r = divmod(j * bits, 8)
        phases.append((j, q, r, lane - r - bits))
    return period, period * bits // 8, tuple(phases)


def phase_rows(fields: np.ndarray, period: int, scratch: Scratch) -> np.ndarray:
    """The fields one bit phase per row (row j: fields j, j + period, ...), contiguous, with a zero column
    after the last (the missing fields of a partial last group read as 0): the phases' shifts then run on
    contiguous rows instead of strided views."""
    n = fields.size
    m = -(-n // period)
    rows = scratch("phase_rows", period * (m + 1), fields.dtype).reshape(period, m + 1)
    full = n // period
    np.copyto(rows[:, :full], fields[:full * period].reshape(full, period).T)
    rows[:, full:] = 0
    rows[:n - full * period, full] = fields[full * period:]
    return rows


def write_windows(fields: np.ndarray, bits: int, lane: int, out: np.ndarray, first_byte: int,
                  scratch: Scratch) -> None:
    """Store clean ``bits``-bit ``fields`` (``lane``-bit lanes) as a bit stream from byte ``first_byte`` of
    ``out`` (which has a window of slack past the stream's end)."""
    period, stride, phases = window_plan(bits, lane)
    if period == 2 and lane == 64:
        write_pairs(fields, bits, out, first_byte, scratch)
        return
    lane_type, big = uint_type(lane), uint_type(lane, ">")
    n = fields.size
    if period == 1:  # whole-byte fields: the successor of field k is field k + 1 (the last one has none)
        rows = None
        cur, nxts = fields, fields[1:]
    else:
        rows = phase_rows(fields, period, scratch)
    w = scratch("window", -(-n // period), lane_type)
    tmp = scratch("window_tmp", -(-n // period), lane_type)
    for j, q, r, t in phases:
        k = len(range(j, n, period))
        if not k:
            continue
        if rows is not None:
            cur = rows[j, :k]
            nxts = rows[j + 1, :k] if j + 1 < period else rows[0, 1:k + 1]
        wk, tk = w[:k], tmp[:nxts.size]
        np.left_shift(cur, lane_type.type(t), out=wk)
        if t > bits:   # all of the next field, then the head of the one after it (phases on rows only)
            after = rows[j + 2, :k] if j + 2 < period else rows[j + 2 - period, 1:k + 1]
            np.bitwise_or(wk, np.left_shift(nxts, lane_type.type(t - bits), out=tk), out=wk)
            np.bitwise_or(wk, np.right_shift(after, lane_type.type(2 * bits - t), out=tk), out=wk)
        else:
            np.bitwise_or(wk[:tk.size], np.right_shift(nxts, lane_type.type(bits - t), out=tk), out=wk[:tk.size])
        if r:  # the tail of the predecessor (phase 0 starts on a byte, so rows is set)
            np.bitwise_or(wk, np.left_shift(rows[j - 1, :k], lane_type.type(lane - r), out=tmp[:k]), out=wk)
        dst = np.ndarray((k,), dtype=big, buffer=out, offset=first_byte + q, strides=(stride,))
        np.copyto(dst, wk)


def write_pairs(fields: np.ndarray, bits: int, out: np.ndarray, first_byte: int, scratch: Scratch) -> None:
    """:func:`write_windows` for fields of 33..63 bits with two bit phases (``bits`` = 4 mod 8): two fields are
    ``bits / 4`` whole bytes, stored as the 64-bit window of their first 8 bytes and, before it, the rest of the
    pair (the second field's last ``2 * bits - 64`` bits) at the top of a 64-bit window (one byte when that is
    8 bits).  A pair's rest window reaches (with zeros) into the next pair's first window, which is stored after
    it; nothing else overlaps.  No phase rows: a third less time for 36-bit fields, a sixth for the others
    (measured)."""
    n = fields.size
    m = -(-n // 2)
    nbytes, rest = bits // 4, 2 * bits - 64
    even, odd = fields[0::2], fields[1::2]
    k = odd.size
    window = scratch("window", m, np.dtype(np.uint64))
    tmp = scratch("window_tmp", m, np.dtype(np.uint64))
    if rest == 8:
        np.copyto(np.ndarray((k,), dtype=np.uint8, buffer=out, offset=first_byte + 8, strides=(nbytes,)), odd,
                  casting="unsafe")
    else:
        np.left_shift(odd, np.uint64(64 - rest), out=tmp[:k])
        np.copyto(np.ndarray((k,), dtype=">u8", buffer=out, offset=first_byte + 8, strides=(nbytes,)), tmp[:k])
    np.left_shift(even, np.uint64(64 - bits), out=window)
    np.bitwise_or(window[:k], np.right_shift(odd, np.uint64(rest), out=tmp[:k]), out=window[:k])
    np.copyto(np.ndarray((m,), dtype=">u8", buffer=out, offset=first_byte, strides=(nbytes,)), window)


def read_windows(packed: np.ndarray, bits: int, lane: int, count: int, first_byte: int, out: np.ndarray) -> None:
    """Inverse of :func:`write_windows`: ``count`` fields into ``out`` (``count`` ``lane``-bit lanes).  Each
    phase's shifted windows go straight into every ``period``-th lane of ``out``, then one mask clears them
    all (whole-byte fields need none): half the time of shifting and masking contiguous phase rows and
    interleaving them (measured)."""
    period, stride, phases = window_plan(bits, lane)
    big = uint_type(lane, ">")
    lane_type = out.dtype
    m = -(-count // period)
    need = m * stride + lane // 8
    raw = packed[first_byte:first_byte + need]
    if raw.size < need:  # the last windows reach past the stream: read them from a padded copy
        raw = np.concatenate([raw, np.zeros(need - raw.size, dtype=np.uint8)])
    for j, q, r, t in phases:   # each phase straight into its fields' places (strided for period > 1)
        row = out[j::period] if period > 1 else out
        src = np.ndarray((row.size,), dtype=big, buffer=raw, offset=q, strides=(stride,))
        np.right_shift(src, lane_type.type(t), out=row)
    if any(r for _, _, r, _ in phases):   # the predecessors' tails (a window starting on its field is clean)
        np.bitwise_and(out, lane_type.type((1 << bits) - 1), out=out)
