"""A one-layer attention that reads the whole string at the query position, then decides a language.

The upper-bound side of Theorem 5 of [BHBK24]: one attention layer *can* decide Dyck-(2,2) (or any
language) if it is wide enough, and the lower bound says how wide: mH >= (N - 1)/(3(p + log N)).
This layer has width m = N + |Sigma|, so its attention exchange carries far more than N - 1 bits.

The model's embeddings are additive (token + position), so a value vector cannot be a one-hot of
the pair (s_i, i); the softmax weights couple the two instead.  With the alphabet's letters
numbered 0..|Sigma| - 1:

* token s embeds as ``[onehot(s), s, 0_N, 0]``, position i as ``[0, 0, onehot(i), 1]``;
* the query is ``[1, 0, ...]`` (from the constant), the key ``[s, 0, ...]``: the logit at position i
  is ``s_i`` (lambda = 1), so the weight of position i is ``exp(s_i - s_max) / Z`` — a function of
  the letter alone;
* the value is ``[onehot(i), onehot(s_i)]`` (width N + |Sigma|), so the head output holds, per
  position, a number that identifies its letter (letters present in the string are told apart by
  the last |Sigma| coordinates, which are > 0 exactly for the letters present), and psi reads the
  string back: the distinct values, sorted, are the letters present, sorted.  Then psi decides
  membership.

The default format keeps the |Sigma| letter values apart after rounding: fraction bits about
log2 N + |Sigma| + 1 (so p = O(log N)).  The reduced variants must fail:

* ``precision=P`` too small: values merge or round to 0; psi then rejects (a certificate is a member);
* ``width=W < N + |Sigma|``: the layer cannot hold the positions; it keeps min(W, |Sigma|) letter
  counts under uniform attention and accepts iff every bracket type it can see is balanced — a bag
  of letters, wrong on ``)(``.  Below the lower bound, the attention exchange's rectangle search
  finds the fooling-set crossing on which it fails.
"""
from __future__ import annotations

import math
import re
from typing import Callable

import numpy as np

from commsim.core.precision import FixedPoint, NumberFormat
from commsim.theory.dyck import DyckLanguage
from protocols.constructions.common import (
    ConstructionError,
    fixed_format,
    require_fixed,
    sizes,
)
from protocols.models.attention import AttentionLayer

__all__ = ["LookupConstruction", "build_lookup", "lookup_format", "parse_language", "Language"]


class Language:
    """A language over letters 0..size-1: ``member(strings (B, N)) -> 0/1 (B,)``; ``balanced_pairs``
    lists letter pairs whose counts agree in every member (what a bag of letters can check)."""

    def __init__(self, name: str, size: int, member: Callable[[np.ndarray], np.ndarray],
                 balanced_pairs: tuple[tuple[int, int], ...] = (), alphabet: str | None = None):
        self.name, self.size, self.member = name, int(size), member
        self.balanced_pairs = tuple(balanced_pairs)
        self.alphabet = alphabet or "".join(chr(ord("a") + i) for i in range(size))


_DYCK_RE = re.compile(r"^dyck(\d)(\d)$")


def parse_language(text: str) -> Language:
    """``dyckKD``: Dyck-(K, D), K bracket types, depth at most D (``dyck22`` is Dyck-(2,2))."""
    m = _DYCK_RE.match(str(text).strip().lower())
    if not m:
        raise ConstructionError(f"unknown language {text!r}; expected dyckKD, e.g. dyck22 (Dyck-(2,2))", "model")
    lang = DyckLanguage(int(m.group(1)), int(m.group(2)))
    return Language(f"Dyck-({lang.types},{lang.depth})", 2 * lang.types, lang.is_member,
                    tuple((2 * t, 2 * t + 1) for t in range(lang.types)), lang.alphabet)


class LookupConstruction(AttentionLayer):
    """Reads the string at the query and decides ``language`` (an :class:`AttentionLayer`)."""

    construction = "lookup"


def lookup_format(length: int, letters: int) -> FixedPoint:
    """Step Delta < e^-(S-1) (e - 1) / (2 (N + 1)): consecutive letter values stay apart and the
    smallest stays > 0 after rounding; the range holds the logits (< S) and psi's output."""
    gap = math.exp(-(letters - 1)) * (math.e - 1) if letters > 1 else 1.0
    frac = max(1, math.ceil(math.log2(2 * (length + 1) / gap)))
    return fixed_format(frac, float(max(letters, 2)))


def build_lookup(length: int, language: Language | str = "dyck22", *, width: int | None = None,
                 fmt: NumberFormat | None = None, spec: str = "construct:lookup") -> LookupConstruction:
    """The layer for strings of length N = ``length``; ``width`` below N + |Sigma| gives the
    bag-of-letters variant (module docstring)."""
    if isinstance(language, str):
        language = parse_language(language)
    N, S = int(length), language.size
    if N < 1:
        raise ConstructionError(f"construct:lookup needs a length N >= 1, got {N}", "model")
    full = N + S
    reduced = width is not None and width < full
    fmt = require_fixed(fmt or lookup_format(N, S), "construct:lookup")
    d = S + 1 + N + 1
    LET, NUM, POS, ONE = slice(0, S), S, slice(S + 1, S + 1 + N), S + 1 + N
    tok = np.zeros((S, d))
    tok[:, LET] = np.eye(S)
    tok[:, NUM] = np.arange(S)
    pos = np.zeros((N, d))
    pos[:, POS] = np.eye(N)
    pos[:, ONE] = 1.0
    if not reduced:
        m = full
        W_Q = np.zeros((1, m, d))
        W_Q[0, 0, ONE] = 1.0                   # q = (1, 0, ...)
        W_K = np.zeros((1, m, d))
        W_K[0, 0, NUM] = 1.0                   # k = (s, 0, ...): logit s_i
        W_V = np.zeros((1, m, d))
        W_V[0][:N, POS] = np.eye(N)            # value: onehot(i), then onehot(s_i)
        W_V[0][N:, LET] = np.eye(S)
        psi = _reader(N, S, language)
    else:
        m = max(1, min(int(width), S))         # the letters it can count
        W_Q = np.zeros((1, m, d))              # zero query: uniform attention
        W_K = np.zeros((1, m, d))
        W_V = np.zeros((1, m, d))
        W_V[0][:, LET] = np.eye(S)[:m]         # value: onehot(s_i) restricted to the first m letters
        psi = _bag(m, language)
    W_O = np.eye(m)
    layer = LookupConstruction(fmt, tok, pos, W_Q, W_K, W_V, W_O, psi, spec=spec)
    params = tok.size + pos.size + W_Q.size + W_K.size + W_V.size + W_O.size
    layer.info = {"construction": "whole-string lookup (upper bound for Theorem 5 of [BHBK24])",
                  "task": f"{language.name} membership", "language": language.name, "length": N,
                  "seq_len": N, "letters": S, "reduced": reduced, "requested_width": width,
                  "format": fmt.name, "default_format": lookup_format(N, S).name}
    layer.info.update(sizes(layer, params))
    return layer


def _reader(N: int, S: int, language: Language) -> Callable[[np.ndarray], np.ndarray]:
    """psi of the full layer: read every letter back, then test membership (reject if unreadable)."""

    def psi(y: np.ndarray) -> np.ndarray:
        """Decode every position's letter from y, then decide membership (a row that does not decode: reject)."""
        y = np.asarray(y, dtype=np.float64)
        B = y.shape[0]
        vals, present = y[:, :N], y[:, N:N + S] > 0
        srt = np.sort(vals, axis=1)
        change = np.ones((B, N), dtype=bool)
        change[:, 1:] = srt[:, 1:] != srt[:, :-1]
        distinct = change.sum(axis=1)
        slot = np.minimum(np.cumsum(change, axis=1) - 1, S)
        table = np.full((B, S + 1), np.inf)
        table[np.arange(B)[:, None], slot] = srt
        rank = (table[:, None, :S] < vals[:, :, None]).sum(axis=2)           # (B, N) in 0..S
        order = np.argsort(~present, axis=1, kind="stable")                  # present letters first, ascending
        letters = order[np.arange(B)[:, None], np.minimum(rank, S - 1)]
        readable = (distinct == present.sum(axis=1)) & (vals > 0).all(axis=1)
        member = np.asarray(language.member(letters.astype(np.uint8)), dtype=bool)
        return (member & readable).astype(np.float64)[:, None]

    return psi


def _bag(m: int, language: Language) -> Callable[[np.ndarray], np.ndarray]:
    """psi of the reduced layer: accept iff every letter pair it can see is balanced."""
    pairs = [(a, b) for a, b in language.balanced_pairs if a < m and b < m]

    def psi(y: np.ndarray) -> np.ndarray:
        """Accept iff every visible letter pair is balanced."""
        y = np.asarray(y, dtype=np.float64)
        ok = np.ones(y.shape[0], dtype=bool)
        for a, b in pairs:
            ok &= y[:, a] == y[:, b]
        return ok.astype(np.float64)[:, None]

    return psi
