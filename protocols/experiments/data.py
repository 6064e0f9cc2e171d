"""The data of [BHBK24]'s experiments (their Appendix H.1), as seeded numpy generators.

Index Lookup: symbols Σ = {0..k-1} (the paper: k = |Σ| = 64) and index tokens #1..#N (ids k..k+N-1); an example
is k' symbols drawn uniformly, then an index token #p with p uniform in 1..k'; the label is the symbol at p.  For
training k' is drawn uniformly from [min(10, N), N] -- one k' per batch here (the paper draws it per example; a
batch of one length needs no padding); for evaluation k' = N exactly.

Dyck-(2,2): tokens ( ) [ ] (ids 0..3, the order of ``dyck22-fooling``); half the strings are members of length
exactly N, generated as the paper says (N - 2 steps of a depth-<=2 stack walk, then closing what is open or
appending a depth-1 pair); the other half corrupt a member at c positions (c uniform in 1..max(1, N/10)), each
swapping the bracket type or flipping open/close with probability 1/2, resampled while still a member.

Equality, Eq-random (Appendix H.2, the binary variant of Fig. 4): tokens 0, 1 and the separator [sep] (id 2); an
example is x [sep] y with |x| = |y| = L/2: x uniform, and with probability 1/2 y = x, else y uniform (labelled by
whether it equals x, so almost always 0).  For training L is drawn uniformly from the even lengths in [N/10, N]
(the paper's N/10, N/10 + 2, ..., N; an odd N/10 is rounded up to the next even length), one L per batch; for
evaluation L = N exactly (N even).
"""
from __future__ import annotations

import numpy as np

#: Dyck-(2,2) token ids: ( ) [ ]
OPEN = (0, 2)
CLOSE_OF = {0: 1, 2: 3}


def index_vocab_size(k: int, seq_len: int) -> int:
    """k symbols and N index tokens."""
    return int(k) + int(seq_len)


def index_batch(rng: np.random.Generator, k: int, seq_len: int, batch: int, *, length: int | None = None):
    """``(tokens (batch, L + 1), labels (batch,))``: L symbols then the index token; L = ``length`` or drawn
    uniformly from [min(10, N), N] (one L for the batch)."""
    N = int(seq_len)
    L = int(length) if length is not None else int(rng.integers(min(10, N), N + 1))
    symbols = rng.integers(0, k, size=(batch, L))
    where = rng.integers(0, L, size=batch)
    tokens = np.concatenate([symbols, (k + where)[:, None]], axis=1)
    return tokens.astype(np.int64), symbols[np.arange(batch), where].astype(np.int64)


def dyck_member(rng: np.random.Generator, N: int) -> list[int]:
    """One Dyck-(2,2) member of length exactly N (even), by the paper's walk."""
    if N < 2 or N % 2:
        raise ValueError(f"Dyck strings have even length >= 2, got N = {N}")
    stack: list[int] = []
    out: list[int] = []
    for _ in range(N - 2):
        if len(stack) == 2:                                   # depth 2: close
            out.append(CLOSE_OF[stack.pop()])
            continue
        choices = list(OPEN) + ([CLOSE_OF[stack[-1]]] if stack else [])   # uniform over the opens (and the close)
        token = choices[int(rng.integers(0, len(choices)))]
        if token in OPEN:
            stack.append(token)
        else:
            stack.pop()
        out.append(token)
    # N - 2 is even, so 0 or 2 brackets are open: close them, or append a depth-1 pair
    while stack:
        out.append(CLOSE_OF[stack.pop()])
    if len(out) < N:
        bracket = OPEN[int(rng.integers(0, 2))]
        out.extend([bracket, CLOSE_OF[bracket]])
    return out


def is_member(string) -> bool:
    """Dyck-(2,2) membership: well matched, depth never above 2."""
    stack: list[int] = []
    for token in string:
        token = int(token)
        if token in OPEN:
            stack.append(token)
            if len(stack) > 2:
                return False
        elif not stack or CLOSE_OF[stack.pop()] != token:
            return False
    return not stack


def _corrupt(rng: np.random.Generator, member: list[int]) -> list[int]:
    """The paper's negative: c positions, each with prob. 1/2 type-swapped, else open <-> close flipped;
    redone while the result is still a member."""
    N = len(member)
    while True:
        out = list(member)
        count = int(rng.integers(1, max(1, N // 10) + 1))
        for pos in rng.choice(N, size=count, replace=False):
            token = out[pos]
            out[pos] = token ^ 2 if rng.random() < 0.5 else token ^ 1   # ( <-> [ , ) <-> ]  /  ( <-> ) , [ <-> ]
        if not is_member(out):
            return out


def dyck_batch(rng: np.random.Generator, N: int, batch: int):
    """``(tokens (batch, N), labels (batch,))``: members (label 1) and corrupted members (label 0), 1/2 each."""
    rows, labels = [], []
    for _ in range(batch):
        member = dyck_member(rng, N)
        positive = rng.random() < 0.5
        rows.append(member if positive else _corrupt(rng, member))
        labels.append(int(positive))
    return np.asarray(rows, dtype=np.int64), np.asarray(labels, dtype=np.int64)


#: the separator of the equality examples (after the bits 0 and 1)
SEPARATOR = 2


def equality_lengths(N: int) -> list[int]:
    """The even training lengths of Eq-random at N: N/10 (rounded up to even), N/10 + 2, ..., N."""
    if N < 2 or N % 2:
        raise ValueError(f"equality strings have even length >= 2 (two halves), got N = {N}")
    low = max(2, -(-N // 10))
    return list(range(low + low % 2, N + 1, 2))


def equality_batch(rng: np.random.Generator, N: int, batch: int, *, length: int | None = None):
    """``(tokens (batch, L + 1), labels (batch,))``: x [sep] y, |x| = |y| = L/2; y = x with probability 1/2,
    else uniform; label 1 iff y = x.  L = ``length`` or drawn from :func:`equality_lengths` (one L per batch)."""
    lengths = equality_lengths(int(N))
    L = int(length) if length is not None else lengths[int(rng.integers(0, len(lengths)))]
    half = L // 2
    x = rng.integers(0, 2, size=(batch, half))
    fresh = rng.integers(0, 2, size=(batch, half))
    copy = rng.random(batch) < 0.5
    y = np.where(copy[:, None], x, fresh)
    tokens = np.concatenate([x, np.full((batch, 1), SEPARATOR), y], axis=1)
    return tokens.astype(np.int64), (x == y).all(axis=1).astype(np.int64)
