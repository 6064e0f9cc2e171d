"""Digests of messages and transcripts, and the one collision search every certificate uses.

:func:`row_digests` is the one digest: a 128-bit value per row of integers (a message as packed bytes,
or a transcript as integer keys), exact when the row fits in 128 bits.  :func:`collision_groups` is the
one collision finder: it groups members with equal rows (one sort over the digests, then an exact
check), and every certificate reads its collisions off the groups -- pigeonhole (two Alice inputs, one
message), rectangle (two fooling-set members, one transcript), the fooling-set verification (two rows of
a truth table) and the protocol tree (two members in one leaf).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from commsim.core.bits import Bits

#: colliding groups tried (in order of their first member) before giving up on verification
GROUPS_TRIED = 16

#: members of one group examined for a pair of different inputs
GROUP_MEMBERS_TRIED = 256

#: SplitMix64 finalizer constants (digest mixing)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


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


def _words(rows: np.ndarray) -> np.ndarray:
    """Rows as 64-bit words: bytes (uint8) eight to a word, big-endian; booleans packed eight bits to a
    byte first; any other integer one word per value.  Equal rows of one array give equal words."""
    if rows.dtype == bool:
        rows = np.packbits(rows, axis=1)
    if rows.dtype == np.uint8:
        count, width = rows.shape
        padded = np.zeros((count, 8 * max(1, -(-width // 8))), dtype=np.uint8)
        padded[:, :width] = rows
        return padded.view(">u8").astype(np.uint64)
    if rows.dtype.kind not in "iu":
        raise TypeError(f"row digests take integer rows, got {rows.dtype}")
    return rows.astype(np.int64).view(np.uint64)


def _mix(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finalizer, elementwise on uint64 (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def row_digests(rows) -> np.ndarray:
    """The one digest: two uint64 columns (128 bits) per row of integers, vectorized over rows.

    ``rows`` is (count, ...) -- packed message bytes (uint8), booleans, or integer keys (every message
    value of a transcript, in order).  A row of at most two 64-bit words is its own digest (exact);
    a longer row is hashed, so different rows collide with probability about 2^-128 per pair (and every
    collision a certificate uses is re-checked, on the rows and on the runner's transcripts).
    """
    rows = np.asarray(rows)
    count = rows.shape[0] if rows.ndim else 0
    return _digest_words(_words(rows.reshape(count, -1)))


def _digest_words(words: np.ndarray) -> np.ndarray:
    """:func:`row_digests` of rows already turned into 64-bit words."""
    count = words.shape[0]
    if words.shape[1] <= 2:
        out = np.zeros((count, 2), dtype=np.uint64)
        out[:, 2 - words.shape[1]:] = words
        return out
    h1 = np.full(count, np.uint64(0x243F6A8885A308D3) ^ np.uint64(words.shape[1]), dtype=np.uint64)
    h2 = np.full(count, np.uint64(0x13198A2E03707344), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for c in range(words.shape[1]):
            col = words[:, c]
            h1 = _mix(h1 ^ col)
            h2 = _mix(h2 + col * _GOLDEN + np.uint64(c + 1))
    return np.stack([h1, h2], axis=1)


def _as_rows(keys) -> np.ndarray:
    """Per-member keys as a 2-D integer array: rows stay rows, numbers become one column, and strings,
    bytes or other hashable values become exact codes (their rank among the distinct values)."""
    arr = np.asarray(keys)
    if arr.ndim == 0:
        raise TypeError("collision_groups takes one key per member, got a scalar")
    if arr.dtype.kind == "V":
        return arr.view(np.uint8).reshape(len(arr), -1)
    if arr.dtype.kind in "iub":
        return arr.reshape(len(arr), -1)
    if arr.dtype == object:
        arr = np.array([repr(k) if not isinstance(k, (str, bytes)) else k for k in arr.tolist()])
    _, codes = np.unique(arr, return_inverse=True)
    return codes.reshape(len(arr), 1).astype(np.int64)


@dataclass(frozen=True)
class CollisionGroups:
    """Members grouped by equal keys: every group of two or more, ordered by its first member.

    ``order`` lists member indices sorted by key (ascending inside a group); group ``g`` is
    ``order[starts[g]:starts[g] + sizes[g]]``; ``members`` is how many members were grouped.
    """

    order: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray
    members: int

    def __len__(self) -> int:
        return int(len(self.starts))

    @property
    def distinct(self) -> int:
        """How many different keys the members have."""
        return int(self.members - self.sizes.sum() + len(self.sizes))

    def group(self, g: int) -> np.ndarray:
        """The members of group ``g``, ascending."""
        return self.order[self.starts[g]:self.starts[g] + self.sizes[g]]

    def groups(self) -> Iterator[np.ndarray]:
        """Every colliding group, in order of its first member."""
        return (self.group(g) for g in range(len(self)))

    def first(self) -> tuple[int, int] | None:
        """The earliest repeat in member order: ``(i, j)``, i < j, with j the first member whose key occurred
        before and i the first member with that key; None when all keys are distinct."""
        if not len(self):
            return None
        second = self.order[self.starts + 1]
        g = int(np.argmin(second))
        return int(self.order[self.starts[g]]), int(second[g])

    def pairs(self, inputs=None, limit: int = GROUPS_TRIED) -> list[tuple[int, int]]:
        """One pair (i, j), i < j, per group, groups in order of their first member, at most ``limit``.
        With ``inputs`` (one row per member) the pair's inputs must differ: a group whose members all hold
        the same input (a repeated sample) gives no pair."""
        flat = None if inputs is None else np.asarray(inputs).reshape(self.members, -1)
        out = []
        for members in self.groups():
            members = members[:GROUP_MEMBERS_TRIED]
            found = None
            for a, i in enumerate(members):
                for j in members[a + 1:]:
                    if flat is None or not np.array_equal(flat[i], flat[j]):
                        found = (int(i), int(j))
                        break
                if found:
                    break
            if found:
                out.append(found)
                if len(out) >= limit:
                    break
        return out


def collision_groups(keys) -> CollisionGroups:
    """The one collision finder: group the members whose keys are equal.

    ``keys`` holds one key per member: a row of integers (packed message bytes, transcript keys or their
    :func:`row_digests`), a number, a string or bytes.  Rows are sorted by their 128-bit digests (one
    stable sort); every group is then checked row for row, so a group is never a hash accident.
    """
    rows = _as_rows(keys)
    count = len(rows)
    if count < 2:
        empty = np.zeros(0, dtype=np.int64)
        return CollisionGroups(np.arange(count), empty, empty, count)
    words = _words(rows)
    digests = _digest_words(words)
    order = np.lexsort((digests[:, 1], digests[:, 0]))      # stable: ascending members inside a group
    d = digests[order]
    new = np.r_[True, (d[1:] != d[:-1]).any(axis=1)]
    if words.shape[1] > 2 and not _rows_match_groups(rows, order, new):
        # a 128-bit hash collision between different rows: group by the rows themselves instead
        _, codes = np.unique(rows, axis=0, return_inverse=True)
        order = np.argsort(codes.reshape(-1), kind="stable")
        sorted_codes = codes.reshape(-1)[order]
        new = np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]
    starts = np.flatnonzero(new)
    sizes = np.diff(np.r_[starts, count])
    multi = sizes >= 2
    starts, sizes = starts[multi], sizes[multi]
    by_first = np.argsort(order[starts], kind="stable")
    return CollisionGroups(order, starts[by_first], sizes[by_first], count)


def _rows_match_groups(rows: np.ndarray, order: np.ndarray, new: np.ndarray) -> bool:
    """Does every member of each digest group hold exactly its group's first row?"""
    if new.all():
        return True
    head = order[np.maximum.accumulate(np.where(new, np.arange(len(new)), 0))]
    inside = ~new
    return bool(np.array_equal(rows[order[inside]], rows[head[inside]]))


# ---- sharded collision search: digests per shard, then a two-phase merge ---------------------------------
@dataclass(frozen=True)
class DigestShard:
    """Members ``start..stop-1`` (by rank) reduced to digests: every distinct digest once, sorted, with the
    first rank that has it (``firsts``), and up to ``limit`` repeats found inside the shard as (first rank,
    later rank) pairs.  Its size is the number of distinct digests, not of members."""

    start: int
    stop: int
    digests: np.ndarray
    firsts: np.ndarray
    pairs: tuple


def _first_of_runs(digests: np.ndarray, ranks: np.ndarray):
    """Sort (digest, rank) entries; return the sorted digests, ranks, and where each run of one digest starts."""
    order = np.lexsort((ranks, digests[:, 1], digests[:, 0]))
    d, r = digests[order], ranks[order]
    new = np.r_[True, (d[1:] != d[:-1]).any(axis=1)] if len(d) else np.zeros(0, dtype=bool)
    return d, r, new


def _repeats(ranks: np.ndarray, new: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """One (first rank, next rank) pair per digest run of two or more, earliest second rank first."""
    if not len(new):
        return []
    heads = np.flatnonzero(new)
    sizes = np.diff(np.r_[heads, len(new)])
    multi = heads[sizes >= 2]
    pairs = sorted(zip(ranks[multi + 1].tolist(), ranks[multi].tolist()))[:limit]
    return [(int(i), int(j)) for j, i in pairs]


def digest_shard(rows_of, start: int, stop: int, chunk: int, limit: int = GROUPS_TRIED) -> DigestShard:
    """Digest members ``start..stop-1`` chunk by chunk: ``rows_of(lo, hi)`` gives the rows (packed messages,
    transcript keys) of members lo..hi-1; memory is one chunk plus the distinct digests seen."""
    digests = np.zeros((0, 2), dtype=np.uint64)
    firsts = np.zeros(0, dtype=np.int64)
    pairs: list[tuple[int, int]] = []
    for lo in range(start, stop, chunk):
        hi = min(lo + chunk, stop)
        d, r, new = _first_of_runs(np.concatenate([digests, row_digests(rows_of(lo, hi))]),
                                   np.concatenate([firsts, np.arange(lo, hi, dtype=np.int64)]))
        if len(pairs) < limit:
            seen = {i for i, _ in pairs}
            pairs += [p for p in _repeats(r, new, limit) if p[0] not in seen][:limit - len(pairs)]
        digests, firsts = d[new], r[new]
    return DigestShard(start, stop, digests, firsts, tuple(pairs))


def merge_digest_shards(shards, limit: int = GROUPS_TRIED) -> list[tuple[int, int]]:
    """Phase one of the merge: the colliding pairs of ranks, inside shards and across them (digests shared by
    two shards), at most ``limit``, earliest second member first.  Phase two is the caller's: every pair is a
    candidate until its members' rows are compared bit for bit (a longer row's digest is a hash)."""
    shards = list(shards)
    inside = [p for s in shards for p in s.pairs]
    if len(shards) > 1:
        _, r, new = _first_of_runs(np.concatenate([s.digests for s in shards]),
                                   np.concatenate([s.firsts for s in shards]))
        inside += _repeats(r, new, limit)
    best: dict[int, tuple[int, int]] = {}
    for i, j in inside:  # one pair per first member: the earliest repeat of it
        if i not in best or j < best[i][1]:
            best[i] = (i, j)
    return sorted(best.values(), key=lambda p: (p[1], p[0]))[:limit]
