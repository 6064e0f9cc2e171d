"""Source communication problems: INDEX, EQ, DISJ and bounded Dyck languages.

Conventions (Facts 1-3 in Appendix B.1 and Lemma 1 of [BHBK24]):

* INDEX_n: Alice holds ``a`` in {0,1}^n, Bob an index ``b`` in ``range(n)`` (0-based here;
  the papers count from 1); the answer is ``a[b]``.
* EQ_n: ``1`` iff ``a == b``.
* DISJ_n: the papers' convention, **1 when the sets intersect** (``max_i a_i b_i``).
* Dyck-(k, D): strings over k bracket types with nesting depth at most D.  As a two-party
  problem of length N, Alice holds the symbols at the odd positions (1st, 3rd, ...) and Bob
  those at the even positions.

Every problem validates its inputs (wrong length, alphabet or index is a
:class:`ProblemInputError` naming what is wrong), evaluates single instances and
batches, samples with a seed, and enumerates its inputs exhaustively.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commsim.core.errors import ProblemInputError
from commsim.core.limits import MAX_EXHAUSTIVE_BITS
from commsim.theory.dyck import DyckLanguage



def all_bit_strings(n: int) -> np.ndarray:
    """All 2^n strings in {0,1}^n as rows of a (2^n, n) uint8 array, in binary counting order."""
    if n > MAX_EXHAUSTIVE_BITS:
        raise ProblemInputError(f"2^{n} inputs are too many to enumerate (at most 2^{MAX_EXHAUSTIVE_BITS})")
    codes = np.arange(1 << n, dtype=np.uint32)
    shifts = np.arange(n - 1, -1, -1, dtype=np.uint32)
    return ((codes[:, None] >> shifts) & 1).astype(np.uint8)


def _bit_vector(x, n: int, who: str) -> np.ndarray:
    """An input as a uint8 bit vector of length n (else ProblemInputError naming ``who``)."""
    arr = np.asarray(x)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ProblemInputError(f"{who} must be a bit string of length {n}, got shape {arr.shape}")
    if arr.size and not np.isin(arr, (0, 1)).all():
        raise ProblemInputError(f"{who} must contain only 0 and 1")
    return arr.astype(np.uint8)


@dataclass(frozen=True)
class Problem:
    """A two-party Boolean function f(alice, bob) of size n."""

    n: int
    name = "problem"
    description = ""
    #: how a run over every instance is described, and its (key, plural noun) among the evaluation sets
    all_description = "all"
    all_set = ("instances", "instances")

    def __post_init__(self):
        if int(self.n) < 1:
            raise ProblemInputError(f"n must be at least 1, got {self.n}")

    # subclasses: validate_alice, validate_bob, evaluate_batch, alice_inputs, bob_inputs, sample
    def validate(self, alice, bob):
        """Both inputs validated."""
        return self.validate_alice(alice), self.validate_bob(bob)

    def evaluate(self, alice, bob) -> int:
        """f(alice, bob) of one validated instance."""
        a, b = self.validate(alice, bob)
        return int(self.evaluate_batch(np.asarray(a)[None], np.asarray(b)[None])[0])

    def validate_bob(self, bob):
        """Bob's input, validated (a bit string of length n)."""
        return _bit_vector(bob, self.n, "Bob's input")

    def validate_alice(self, alice):
        """Alice's input, validated (a bit string of length n)."""
        return _bit_vector(alice, self.n, "Alice's input")

    def alice_inputs(self) -> np.ndarray:
        """Every Alice input, one per row."""
        return all_bit_strings(self.n)

    def bob_inputs(self) -> np.ndarray:
        """Every Bob input, one per row."""
        return all_bit_strings(self.n)

    @property
    def alice_input_count(self) -> int:
        """How many Alice inputs there are (counted, not enumerated)."""
        return 1 << self.n

    @property
    def bob_input_count(self) -> int:
        """How many Bob inputs there are (counted, not enumerated)."""
        return 1 << self.n

    @property
    def input_pairs(self) -> int:
        """How many (Alice, Bob) instances there are."""
        return self.alice_input_count * self.bob_input_count

    def all_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Every (alice, bob) pair, as two aligned arrays."""
        A, B = self.alice_inputs(), self.bob_inputs()
        ia, ib = np.meshgrid(np.arange(len(A)), np.arange(len(B)), indexing="ij")
        return A[ia.reshape(-1)], B[ib.reshape(-1)]

    def sample(self, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
        """``count`` seeded instances (uniform unless a problem samples more usefully)."""
        A = rng.integers(0, 2, size=(count, self.n), dtype=np.uint8)
        B = rng.integers(0, 2, size=(count, self.n), dtype=np.uint8)
        return A, B

    def evaluate_batch(self, A, B) -> np.ndarray:  # pragma: no cover - abstract
        """f on aligned rows of Alice and Bob inputs (subclasses)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Index(Problem):
    """INDEX_n: Alice a in {0,1}^n, Bob an index b; the answer is a_b."""
    name = "index"
    description = "INDEX_n: Alice a in {0,1}^n, Bob b in [n]; output a_b"

    def validate_bob(self, bob) -> int:
        """An index in 0..n-1."""
        if isinstance(bob, (bool, np.bool_)) or not isinstance(bob, (int, np.integer)):
            raise ProblemInputError(f"Bob's input must be an index in 0..{self.n - 1}, got {bob!r}")
        if not 0 <= int(bob) < self.n:
            raise ProblemInputError(f"Bob's index {bob} is out of range 0..{self.n - 1}")
        return int(bob)

    def bob_inputs(self) -> np.ndarray:
        """The indices 0..n-1."""
        return np.arange(self.n, dtype=np.int64)

    @property
    def bob_input_count(self) -> int:
        """n."""
        return self.n

    def evaluate_batch(self, A, B) -> np.ndarray:
        """a_b for each row."""
        A, B = np.asarray(A), np.asarray(B, dtype=np.int64)
        return A[np.arange(len(A)), B].astype(np.uint8)

    def sample(self, rng, count):
        """Uniform strings and uniform indices."""
        return rng.integers(0, 2, size=(count, self.n), dtype=np.uint8), rng.integers(0, self.n, size=count)


@dataclass(frozen=True)
class Equality(Problem):
    """EQ_n: 1 iff a = b."""
    name = "eq"
    description = "EQ_n: 1 iff a = b"

    def evaluate_batch(self, A, B) -> np.ndarray:
        """1 where the rows are equal."""
        return np.all(np.asarray(A) == np.asarray(B), axis=1).astype(np.uint8)

    def sample(self, rng, count):
        """Half equal pairs, half uniform pairs (uniform pairs are almost never equal)."""
        A, B = super().sample(rng, count)
        same = rng.random(count) < 0.5
        B[same] = A[same]
        return A, B


@dataclass(frozen=True)
class Disjointness(Problem):
    """DISJ_n: 1 iff the sets a and b intersect (the papers' convention)."""
    name = "disj"
    description = "DISJ_n: 1 iff the sets intersect (max_i a_i b_i), the papers' convention"

    def evaluate_batch(self, A, B) -> np.ndarray:
        """1 where the rows share a 1 (the sets intersect)."""
        return np.any((np.asarray(A) & np.asarray(B)) == 1, axis=1).astype(np.uint8)

    def sample(self, rng, count):
        """Half disjoint pairs (b inside the complement of a), half uniform pairs."""
        A, B = super().sample(rng, count)
        disjoint = rng.random(count) < 0.5
        B[disjoint] &= (1 - A[disjoint])
        return A, B


@dataclass(frozen=True)
class DyckProblem(Problem):
    """Dyck-(k, D) membership of a string of length n, split odd/even between the parties.

    Alice holds the symbols at positions 1, 3, 5, ... (1-based), Bob those at 2, 4, 6, ...
    """

    types: int = 2
    depth: int = 2
    name = "dyck22"
    description = "Dyck-(2,2) membership, Alice odd positions, Bob even positions"

    def __post_init__(self):
        super().__post_init__()
        if self.n % 2:
            raise ProblemInputError(f"Dyck strings have even length; got N = {self.n}")

    @property
    def language(self) -> DyckLanguage:
        """The Dyck-(types, depth) language."""
        return DyckLanguage(self.types, self.depth)

    def _half(self, x, who: str) -> np.ndarray:
        """One party's half of the symbols, validated."""
        arr = np.asarray(x)
        if arr.ndim != 1 or arr.shape[0] != self.n // 2:
            raise ProblemInputError(f"{who} must hold {self.n // 2} symbols, got shape {arr.shape}")
        if arr.size and (arr.min() < 0 or arr.max() >= 2 * self.types):
            raise ProblemInputError(f"{who}'s symbols must be tokens 0..{2 * self.types - 1}")
        return arr.astype(np.uint8)

    def validate_alice(self, alice):
        """Alice's odd-position symbols, validated."""
        return self._half(alice, "Alice's input")

    def validate_bob(self, bob):
        """Bob's even-position symbols, validated."""
        return self._half(bob, "Bob's input")

    @staticmethod
    def interleave(A, B) -> np.ndarray:
        """Odd-position symbols A and even-position symbols B -> whole strings (rows)."""
        A, B = np.atleast_2d(A), np.atleast_2d(B)
        S = np.empty((A.shape[0], A.shape[1] + B.shape[1]), dtype=np.uint8)
        S[:, 0::2], S[:, 1::2] = A, B
        return S

    @staticmethod
    def split(strings) -> tuple[np.ndarray, np.ndarray]:
        """Whole strings -> (odd-position symbols, even-position symbols)."""
        S = np.atleast_2d(strings)
        return S[:, 0::2], S[:, 1::2]

    def evaluate_batch(self, A, B) -> np.ndarray:
        """1 where the interleaved string is in the language."""
        return self.language.is_member(self.interleave(A, B))

    def _all_halves(self) -> np.ndarray:
        """Every half-string of N/2 symbols, in counting order."""
        k = 2 * self.types
        half = self.n // 2
        if k ** half > (1 << MAX_EXHAUSTIVE_BITS):
            raise ProblemInputError(f"{k}^{half} half-strings are too many to enumerate")
        codes = np.arange(k ** half)
        return np.stack([(codes // k ** (half - 1 - i)) % k for i in range(half)], axis=1).astype(np.uint8)

    @property
    def alice_input_count(self) -> int:
        """(2 types)^(N/2)."""
        return (2 * self.types) ** (self.n // 2)

    @property
    def bob_input_count(self) -> int:
        """(2 types)^(N/2)."""
        return (2 * self.types) ** (self.n // 2)

    def alice_inputs(self) -> np.ndarray:
        """Every half-string."""
        return self._all_halves()

    def bob_inputs(self) -> np.ndarray:
        """Every half-string."""
        return self._all_halves()

    def sample(self, rng, count):
        """Half uniform members, half uniform strings (almost all non-members)."""
        S = rng.integers(0, 2 * self.types, size=(count, self.n)).astype(np.uint8)
        member = rng.random(count) < 0.5
        if member.any():
            S[member] = self.language.sample_members(rng, self.n, int(member.sum()))
        return self.split(S)


_PROBLEMS = {"index": Index, "eq": Equality, "disj": Disjointness, "dyck22": DyckProblem}


PROBLEM_NAMES = tuple(_PROBLEMS)


def make_problem(name: str, n: int) -> Problem:
    """The problem named ``name`` (index, eq, disj, dyck22) of size ``n``."""
    if name not in _PROBLEMS:
        raise ProblemInputError(f"unknown problem {name!r}; expected one of {', '.join(PROBLEM_NAMES)}")
    return _PROBLEMS[name](int(n))
