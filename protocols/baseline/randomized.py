"""Randomized protocols for EQ and INDEX: coins beat the deterministic bound for EQ, not for INDEX.

* ``inner-product`` (EQ, public coins): the shared random string gives k vectors r_1..r_k in {0,1}^n;
  Alice sends the k bits <r_j, a> mod 2, Bob says "equal" iff they match his <r_j, b>.  When a != b each
  parity differs with probability exactly 1/2, so the error is exactly 2^-k on every unequal pair and 0 on
  equal pairs: k = ceil(log2(1/eps)) bits, whatever n.
* ``fingerprint`` (EQ, private coins): p is the least prime >= max((n - 1)/eps, n, 2); Alice draws x
  uniform in F_p (rejection sampling on her own coins) and sends x and A(x) = sum_i a_i x^i mod p;
  Bob says "equal" iff B(x) = A(x).  When a != b, A - B is a non-zero polynomial of degree <= n - 1, with at
  most n - 1 roots: error <= (n - 1)/p <= eps, with 2 ceil(log2 p) = O(log n + log(1/eps)) bits.
* ``sample`` (INDEX one-way, public coins): the shared string picks a window start r uniform in
  0..n-1; Alice sends her s = ceil(n(1 - 2 eps)) bits a_r, a_(r+1), ..., a_(r+s-1) (indices mod n).  Bob
  answers a_b when b is in the window, else guesses with one private coin: error exactly (1 - s/n)/2 on
  every input, and s >= (1 - H2(eps))·n, as the randomized INDEX bound demands.

Every coin comes from the runner (``yield Flip(...)``) and is recorded in the transcript; each
``run_batch_coins`` reads the same coins from :func:`commsim.core.coins.coin_array`.
"""
from __future__ import annotations

import math

import numpy as np

from commsim.contract import (
    BatchRun,
    Bits,
    Flip,
    InputError,
    RandomizedProtocol,
    Receive,
    Send,
    coin_array,
    pack_uints,
    unpack_uints,
)
from commsim.theory.bounds import ceil_log2, index_one_way_randomized_bound

__all__ = ["InnerProductEquality", "FingerprintEquality", "SampledIndex", "is_prime", "next_prime"]

#: the fingerprint prime stays below 2^31, so products of two residues fit in int64 on the vectorized path
MAX_PRIME_BITS = 31


def is_prime(m: int) -> bool:
    """Deterministic Miller-Rabin (exact for every m < 3.3 * 10^24, far beyond the primes used here)."""
    if m < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    if m in small:
        return True
    if any(m % q == 0 for q in small):
        return False
    d, r = m - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in small:
        x = pow(a, d, m)
        if x in (1, m - 1):
            continue
        for _ in range(r - 1):
            x = x * x % m
            if x == m - 1:
                break
        else:
            return False
    return True


def next_prime(m: int) -> int:
    """The least prime >= m."""
    m = max(int(m), 2)
    while not is_prime(m):
        m += 1
    return m


def _uint(bits) -> int:
    """Coin bits (most significant first) as an unsigned integer."""
    value = 0
    for bit in np.asarray(bits).reshape(-1):
        value = (value << 1) | int(bit)
    return value


def _uniform_below_batch(seed: int, count: int, stream: str, bound: int, width: int, tries: int = 8) -> np.ndarray:
    """What :func:`_uniform_below` returns for instances 0..count-1 reading ``stream`` of ``CoinSource(seed, i)``."""
    out = np.empty(count, dtype=np.int64)
    weights = np.left_shift(1, np.arange(width - 1, -1, -1, dtype=np.int64)) if width else np.zeros(0, np.int64)
    for i in range(count):
        offset = 0
        while True:
            block = coin_array(seed, i, stream, offset, tries * width).reshape(tries, width).astype(np.int64)
            values = block @ weights
            ok = np.flatnonzero(values < bound)
            if ok.size:
                out[i] = values[ok[0]]
                break
            offset += tries * width
    return out


class _Equality(RandomizedProtocol):
    """What the randomized EQ protocols share: one-sided error, and inputs that are often equal."""

    problems = ("eq",)
    may_err_on = (0,)
    error_range = (1e-9, 1.0)   # one-sided: any error below 1 is a guarantee
    input_distribution = ("half equal pairs (a = b), half near misses (b is a with 1 to 3 distinct random "
                          "positions flipped): a protocol can only err on unequal pairs, so they must be close")

    def sample(self, rng, count):
        """Half equal pairs, half pairs differing in 1..min(3, n) random positions."""
        n = self.problem.n
        A = rng.integers(0, 2, size=(count, n), dtype=np.uint8)
        B = A.copy()
        differ = np.flatnonzero(rng.random(count) >= 0.5)
        flips = rng.integers(1, min(3, n) + 1, size=differ.size)
        for row, k in zip(differ, flips):
            B[row, rng.choice(n, size=int(k), replace=False)] ^= 1
        return A, B


class InnerProductEquality(_Equality):
    """EQ, public coins: k random parities of a, k = ceil(log2(1/eps)) bits, error exactly 2^-k."""

    name = "inner-product"
    coins = "public"
    description = "EQ with public coins: Alice sends k random parities <r_j, a> mod 2 (k bits, error 2^-k)"

    @property
    def k(self) -> int:
        """ceil(log2(1/eps)) parities (at least 1)."""
        return max(math.ceil(-math.log2(self.error) - 1e-12), 1)

    @property
    def promised_error(self) -> float:
        return 2.0 ** -self.k

    @property
    def promise(self) -> str:
        return (f"a != b: each parity <r_j, a - b> is 1 with probability exactly 1/2, so all {self.k} agree with "
                f"probability 2^-{self.k} = {self.promised_error:g}; a = b: never wrong")

    def _parities(self, r: Bits, x) -> np.ndarray:
        R = r.to_array().reshape(self.k, self.problem.n).astype(np.int64)
        return (R @ np.asarray(x, dtype=np.int64)) % 2

    def alice(self, a):
        """Read the k·n public coins, send <r_j, a> mod 2 for j = 1..k."""
        r = yield Flip("r_1..r_k", self.k * self.problem.n, public=True)
        yield Send("parities", Bits.from_array(self._parities(r, a)))

    def bob(self, b):
        """Read the same public coins; "equal" iff every parity matches."""
        r = yield Flip("r_1..r_k", self.k * self.problem.n, public=True)
        theirs = (yield Receive("parities")).to_array()
        return int(np.array_equal(theirs, self._parities(r, b)))

    def run_batch_coins(self, A, B, seed):
        """Instance by instance: the public coins, both sides' parities; k bits, one round."""
        count, n, k = len(A), self.problem.n, self.k
        out = np.empty(count, dtype=np.uint8)
        D = (np.asarray(A, dtype=np.int64) - np.asarray(B, dtype=np.int64)) % 2
        for i in range(count):
            R = coin_array(seed, i, "public", 0, k * n).reshape(k, n).astype(np.int64)
            out[i] = not ((R @ D[i]) % 2).any()
        return BatchRun(out, np.full(count, k), np.zeros(count, dtype=np.int64), np.ones(count, dtype=np.int64))


class FingerprintEquality(_Equality):
    """EQ, private coins: x uniform in F_p, Alice sends x and A(x) mod p; error <= (n - 1)/p <= eps."""

    name = "fingerprint"
    coins = "private"
    description = ("EQ with private coins: Alice sends a random x in F_p and A(x) mod p, p >= (n - 1)/eps prime "
                   "(2 ceil(log2 p) bits, error <= (n - 1)/p)")

    def __init__(self, problem, error=None):
        super().__init__(problem, error)
        n = self.problem.n
        self.prime = next_prime(max(math.ceil((n - 1) / self.error), n, 2))
        if self.prime >= 1 << MAX_PRIME_BITS:
            raise InputError(f"error: the fingerprint prime p >= (n - 1)/error = {self.prime} would pass 2^"
                             f"{MAX_PRIME_BITS}; at n = {n} ask for an error of at least "
                             f"{(n - 1) / (1 << MAX_PRIME_BITS):.3g}", "error")
        self.width = ceil_log2(self.prime)

    @property
    def promised_error(self) -> float:
        return (self.problem.n - 1) / self.prime

    @property
    def promise(self) -> str:
        return (f"a != b: A(x) - B(x) is a non-zero polynomial of degree <= n - 1 = {self.problem.n - 1} over F_p "
                f"(p = {self.prime}), with at most n - 1 roots, so x hits one with probability <= "
                f"{self.problem.n - 1}/{self.prime} = {self.promised_error:.3g}; a = b: never wrong")

    def _fingerprint(self, x: int, bits) -> int:
        value = 0
        for bit in reversed(np.asarray(bits).reshape(-1).tolist()):   # Horner: sum_i bits_i x^i mod p
            value = (value * x + int(bit)) % self.prime
        return value

    def alice(self, a):
        """Draw x uniform in F_p from private coins (rejection), send x and A(x) mod p."""
        tries = 0
        while True:
            tries += 1
            x = _uint((yield Flip(f"x, try {tries}", self.width)).to_array())
            if x < self.prime:
                break
        yield Send("x", pack_uints([x], self.width))
        yield Send("A(x) mod p", pack_uints([self._fingerprint(x, a)], self.width))

    def bob(self, b):
        """"Equal" iff B(x) = A(x) mod p."""
        x = int(unpack_uints((yield Receive("x")), self.width)[0])
        theirs = int(unpack_uints((yield Receive("A(x) mod p")), self.width)[0])
        return int(theirs == self._fingerprint(x, b))

    def run_batch_coins(self, A, B, seed):
        """Alice's x per instance from her coins, then both fingerprints by a vectorized Horner scheme."""
        count, p = len(A), self.prime
        x = _uniform_below_batch(seed, count, "alice", p, self.width)
        fa, fb = np.zeros(count, dtype=np.int64), np.zeros(count, dtype=np.int64)
        A, B = np.asarray(A, dtype=np.int64), np.asarray(B, dtype=np.int64)
        for i in range(self.problem.n - 1, -1, -1):
            fa = (fa * x + A[:, i]) % p
            fb = (fb * x + B[:, i]) % p
        return BatchRun((fa == fb).astype(np.uint8), np.full(count, 2 * self.width),
                        np.zeros(count, dtype=np.int64), np.ones(count, dtype=np.int64))


class SampledIndex(RandomizedProtocol):
    """INDEX one-way, public coins: Alice sends a random window of s = ceil(n(1 - 2 eps)) of her bits."""

    name = "sample"
    problems = ("index",)
    coins = "public"
    input_distribution = "uniform a in {0,1}^n and uniform index b (the error is the same on every input)"
    description = ("INDEX one-way with public coins: Alice sends a random window of s = ceil(n(1 - 2 eps)) bits; "
                   "Bob guesses (a private coin) outside it: error (1 - s/n)/2")

    @property
    def s(self) -> int:
        """The window: ceil(n(1 - 2 eps)) bits (at least 1)."""
        n = self.problem.n
        return min(max(math.ceil(n * (1.0 - 2.0 * self.error) - 1e-9), 1), n)

    @property
    def width(self) -> int:
        """Coins per try of the window start: ceil(log2 n)."""
        return ceil_log2(self.problem.n)

    @property
    def promised_error(self) -> float:
        n = self.problem.n
        return (n - self.s) / (2.0 * n)

    @property
    def promise(self) -> str:
        n, s = self.problem.n, self.s
        return (f"b falls outside the window with probability (n - s)/n = {n - s}/{n} whatever the input, and "
                f"then Bob's coin is wrong half the time: error exactly {n - s}/(2·{n}) = {self.promised_error:g}")

    def _start(self):
        """The window start r, uniform in 0..n-1, from the public coins (rejection)."""
        count = 0
        while True:
            count += 1
            r = _uint((yield Flip(f"window start, try {count}", self.width, public=True)).to_array())
            if r < self.problem.n:
                return r

    def alice(self, a):
        """Send a_r, ..., a_(r+s-1) (indices mod n)."""
        r = yield from self._start()
        window = (r + np.arange(self.s)) % self.problem.n
        yield Send("window bits", Bits.from_array(np.asarray(a)[window]))

    def bob(self, b):
        """a_b when b is in the window, else a private coin."""
        r = yield from self._start()
        bits = (yield Receive("window bits")).to_array()
        offset = (int(b) - r) % self.problem.n
        if offset < self.s:
            return int(bits[offset])
        return int((yield Flip("guess", 1)).to_array()[0])

    def run_batch_coins(self, A, B, seed):
        """The window start and Bob's guess per instance from the same coins; s bits, one round."""
        count, n = len(A), self.problem.n
        r = _uniform_below_batch(seed, count, "public", n, self.width)
        B = np.asarray(B, dtype=np.int64)
        offset = (B - r) % n
        inside = offset < self.s
        guess = np.array([coin_array(seed, i, "bob", 0, 1)[0] if not inside[i] else 0 for i in range(count)],
                         dtype=np.uint8)
        answer = np.asarray(A)[np.arange(count), B].astype(np.uint8)
        return BatchRun(np.where(inside, answer, guess), np.full(count, self.s), np.zeros(count, dtype=np.int64),
                        np.ones(count, dtype=np.int64))

    def randomized_bound(self):
        """INDEX one-way at this error: (1 - H2(eps))·n bits, against the s bits sent."""
        return index_one_way_randomized_bound(self.problem.n, self.promised_error)
