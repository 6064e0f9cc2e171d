"""The Dyck language Dyck-(k,D): membership, stacks, and exact counting by dynamic programming."""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from commsim.core.errors import InputError
from commsim.core.errors import ProblemInputError
from commsim.core.limits import MAX_EXHAUSTIVE_BITS

# ---- bounded Dyck languages ------------------------------------------------
_BRACKETS = "()[]{}<>"


@dataclass(frozen=True)
class DyckLanguage:
    """Dyck-(k, D): balanced strings over k bracket types with depth at most D.

    Token ``2t`` opens type ``t`` and ``2t + 1`` closes it; with k = 2 the symbols
    are ``( ) [ ]``.  Membership runs the stack automaton (stacks of depth <= D,
    plus a reject sink) over a whole batch at once.
    """

    types: int = 2
    depth: int = 2

    def __post_init__(self):
        if not 1 <= self.types <= len(_BRACKETS) // 2:
            raise ProblemInputError(f"bracket types must be 1..{len(_BRACKETS) // 2}, got {self.types}")
        if self.depth < 1:
            raise ProblemInputError(f"depth bound must be at least 1, got {self.depth}")

    @property
    def alphabet(self) -> str:
        return _BRACKETS[:2 * self.types]

    @cached_property
    def stacks(self) -> list[tuple[int, ...]]:
        """Every stack of depth <= D, the empty stack first."""
        out, frontier = [()], [()]
        for _ in range(self.depth):
            frontier = [s + (t,) for s in frontier for t in range(self.types)]
            out.extend(frontier)
        return out

    @cached_property
    def transitions(self) -> np.ndarray:
        """DFA table (states x tokens): states index :attr:`stacks`; the last state is the reject sink."""
        index = {s: i for i, s in enumerate(self.stacks)}
        reject = len(self.stacks)
        table = np.full((reject + 1, 2 * self.types), reject, dtype=np.int32)
        for s, i in index.items():
            for t in range(self.types):
                if len(s) < self.depth:
                    table[i, 2 * t] = index[s + (t,)]
                if s and s[-1] == t:
                    table[i, 2 * t + 1] = index[s[:-1]]
        return table

    @property
    def reject_state(self) -> int:
        return len(self.stacks)

    def encode(self, text: str) -> np.ndarray:
        bad = sorted(set(text) - set(self.alphabet))
        if bad:
            raise ProblemInputError(f"symbols {''.join(bad)!r} are not in the alphabet {self.alphabet!r}")
        return np.array([self.alphabet.index(c) for c in text], dtype=np.uint8)

    def decode(self, tokens) -> str:
        return "".join(self.alphabet[int(t)] for t in np.asarray(tokens).reshape(-1))

    def run(self, strings: np.ndarray) -> np.ndarray:
        """Final automaton state of each row of a (batch, length) token array."""
        S = np.atleast_2d(np.asarray(strings))
        if S.size and (S.min() < 0 or S.max() >= 2 * self.types):
            raise ProblemInputError(f"tokens must be in 0..{2 * self.types - 1}")
        state = np.zeros(S.shape[0], dtype=np.int32)
        table = self.transitions
        for t in range(S.shape[1]):
            state = table[state, S[:, t]]
        return state

    def is_member(self, strings: np.ndarray) -> np.ndarray:
        return (self.run(strings) == 0).astype(np.uint8)

    def _completions(self, length: int) -> list[np.ndarray]:
        """completions[r][s]: number of ways to finish from state s with r tokens left (exact ints)."""
        table = self.transitions
        nstates = table.shape[0]
        comp = [np.zeros(nstates, dtype=object)]
        comp[0][0] = 1
        for _ in range(length):
            prev = comp[-1]
            comp.append(np.array([sum(prev[j] for j in table[s]) if s != self.reject_state else 0
                                  for s in range(nstates)], dtype=object))
        return comp

    def count(self, length: int) -> int:
        """Exact number of members of the given length."""
        return int(self._completions(length)[length][0])

    def members(self, length: int) -> np.ndarray:
        """All members of a length, as rows of tokens (lexicographic order), vectorized by prefix."""
        if self.count(length) > (1 << MAX_EXHAUSTIVE_BITS):
            raise ProblemInputError(f"too many members of length {length} to enumerate")
        table = self.transitions
        depth_of = np.array([len(s) for s in self.stacks] + [10 ** 6])
        prefixes = np.zeros((1, 0), dtype=np.uint8)
        states = np.zeros(1, dtype=np.int32)
        ntok = 2 * self.types
        for t in range(length):
            remaining = length - t - 1
            nxt = table[np.repeat(states, ntok), np.tile(np.arange(ntok), len(states))]
            keep = depth_of[nxt] <= remaining
            pre = np.repeat(prefixes, ntok, axis=0)
            tok = np.tile(np.arange(ntok, dtype=np.uint8), len(states))
            prefixes = np.concatenate([pre, tok[:, None]], axis=1)[keep]
            states = nxt[keep]
        return prefixes[states == 0]

    def sample_members(self, rng: np.random.Generator, length: int, count: int) -> np.ndarray:
        """Uniformly random members of a length (counting-guided random walk)."""
        comp = self._completions(length)
        if comp[length][0] == 0:
            raise ProblemInputError(f"Dyck-({self.types},{self.depth}) has no member of length {length}")
        table = self.transitions
        out = np.zeros((count, length), dtype=np.uint8)
        for row in range(count):
            s = 0
            for t in range(length):
                weights = [comp[length - t - 1][table[s, tok]] for tok in range(2 * self.types)]
                total = sum(weights)
                pick = int(rng.integers(0, 1 << 62)) * total >> 62  # exact for big totals
                for tok, w in enumerate(weights):
                    if pick < w:
                        break
                    pick -= w
                out[row, t] = tok
                s = table[s, tok]
        return out


# ---- counting Dyck strings -----------------------------------------------------
def _dyck_step_stacks(language: DyckLanguage):
    """Predecessor lists of the live states of the stack automaton (the reject sink dropped)."""
    table = language.transitions
    live = language.reject_state
    preds: list[list[int]] = [[] for _ in range(live)]
    for s in range(live):
        for tok in range(table.shape[1]):
            t = int(table[s, tok])
            if t != live:
                preds[t].append(s)
    return preds


def dyck_counts(max_length: int, types: int = 2, depth: int = 2, *, method: str = "auto") -> list[int]:
    """Exact numbers of Dyck-(types, depth) strings of every length 0..max_length.

    ``method="stacks"`` runs the DP over the automaton's stack states (for Dyck-(2,2): the
    empty stack, 2 stacks of depth 1 and 4 of depth 2 — 7 live states; the reject sink is
    dropped).  ``method="depth"`` lumps stacks of equal depth: all stacks of depth d have the
    same futures (k ways to push when d < D, exactly one way to pop when d > 0), so the count is
    the number of walks 0 -> 0 on the path 0..D with up-steps of weight k.  ``"auto"`` uses the
    stack DP while there are at most 1024 stacks.  Python integers throughout: exact for any
    length (Dyck-(2,2) of length 10^4 takes a few milliseconds).
    """
    if max_length < 0:
        raise InputError(f"length must be non-negative, got {max_length}", "n")
    language = DyckLanguage(types, depth)
    if method == "auto":
        method = "stacks" if len(language.stacks) <= 1024 else "depth"
    out = [1]
    if method == "stacks":
        preds = _dyck_step_stacks(language)
        counts = [0] * len(preds)
        counts[0] = 1
        for _ in range(max_length):
            counts = [sum(counts[s] for s in p) for p in preds]
            out.append(counts[0])
    elif method == "depth":
        k, D = types, depth
        c = [1] + [0] * D
        for _ in range(max_length):
            c = [(k * c[d - 1] if d else 0) + (c[d + 1] if d < D else 0) for d in range(D + 1)]
            out.append(c[0])
    else:
        raise InputError(f"method must be 'auto', 'stacks' or 'depth', got {method!r}")
    return out


def count_dyck(length: int, types: int = 2, depth: int = 2, *, method: str = "auto") -> int:
    """Exact number of Dyck-(types, depth) strings of the given length (0 for odd lengths).

    For Dyck-(2,2) and even N >= 2 this equals 2^(N-1) (Lemma 1 / Appendix E of [BHBK24]).
    """
    if length < 0:
        raise InputError(f"length must be non-negative, got {length}", "n")
    if length % 2:
        return 0
    return dyck_counts(length, types, depth, method=method)[length]


def _dyck_completions_by_depth(length: int, types: int, depth: int) -> list[list[int]]:
    """comp[r][d]: ways to finish with r tokens from a stack of depth d (exact ints)."""
    comp = [[1] + [0] * depth]
    for _ in range(length):
        g = comp[-1]
        comp.append([(types * g[d + 1] if d < depth else 0) + (g[d - 1] if d else 0) for d in range(depth + 1)])
    return comp


def _padded_predecessors(table: np.ndarray, live: int, tokens) -> np.ndarray:
    """PRED[t, p]: the p-th (state, token) predecessor among live states of live state t; ``live`` pads."""
    lists = [[s for s in range(live) for tok in tokens if table[s, tok] == t] for t in range(live)]
    width = max(1, max(len(x) for x in lists))
    return np.array([x + [live] * (width - len(x)) for x in lists], dtype=np.int64)


def _completion_counts(fixed: np.ndarray, fixed_first: bool, N: int, language: DyckLanguage) -> np.ndarray:
    """For each row of ``fixed`` (one party's half), the number of other halves completing it to a member.

    Runs the stack automaton on the interleaved string with the fixed party's tokens at its
    positions and a sum over every token at the other party's positions: exact path counts per
    live state (int64; at most (2k)^(N/2) paths), vectorized over the rows.  The reject sink is
    dropped (it never returns to an accepting state); a padding column of zeros stands for it.
    """
    table, live = language.transitions, language.reject_state
    ntok = table.shape[1]
    if (N + 1) // 2 * math.log2(ntok) >= 62:
        raise InputError(f"completion counts at N = {N} would overflow int64", "n")
    by_token = np.stack([_padded_predecessors(table, live, (tok,)) for tok in range(ntok)])  # (tok, live, P)
    free = _padded_predecessors(table, live, range(ntok))                                  # (live, P')
    m = len(fixed)
    dtype = np.int32 if (N + 1) // 2 * math.log2(ntok) < 31 else np.int64
    counts = np.zeros((live + 1, m), dtype=dtype)         # one row per live state; last row: the sink, 0
    counts[0] = 1
    cols = np.arange(m)
    for pos in range(N):
        new = np.zeros_like(counts)
        if (pos % 2 == 0) == fixed_first:
            source = by_token[fixed[:, pos // 2]]                # (m, live, P): where each state's count comes from
            for p in range(source.shape[2]):
                new[:live] += counts[source[:, :, p].T, cols]
        else:
            for t in range(live):
                new[t] = counts[free[t]].sum(axis=0)
        counts = new
    return counts[0]
