"""Function composition ([PNP24]: Peng, Narayanan, Papadimitriou, "On limitations of the transformer
architecture", COLM 2024): g(f(x)) from a prompt that describes f and g.

**The problem** ``compose`` at size n: functions f: A -> B and g: B -> C with |A| = |B| = |C| = n, a query
x in A; the answer is g(f(x)) in C.  Alice holds g = (g(b_0), ..., g(b_{n-1})), Bob holds
(f(a_0), ..., f(a_{n-1}), x), and the query is known to both: its token is a public position of the
encoding (:attr:`~commsim.contract.Encoded.public_positions`), which Alice's share lists too.
For each query x the one-way problem is INDEX over an alphabet of size n (Bob's index is f(x)).

**The prompt** (N = 2n + 1 tokens, one function pair per token):

    position i         (i < n)   "g(b_i)=c_j"   j = g(b_i)     token i·n + j            Alice
    position n + i     (i < n)   "f(a_i)=b_j"   j = f(a_i)     token n² + i·n + j       Bob
    position 2n                  "a_x?"         the query      token 2n² + x            Bob, public

g's description comes first so that Alice holds a prefix (a recurrent model's hidden-state handoff applies
as well); the answer is read at the query position, label j meaning c_j (a model needs ``classes=n`` to
name every answer; with fewer it can only answer the first ones).

**The bounds.**  Bob knows y = f(x) and needs g(y); Alice does not know f, so a one-way message must let
Bob read any of g's n values: INDEX over an alphabet of size n, ceil(log2 n^n) = ceil(n log2 n) bits
deterministically (a shorter message: two g's collide and some y separates them -- the certificate), and
[PNP24]'s distributional bound (Theorem 1): with R = n log2 n - C > 0 for a C-bit message, over uniformly
random f, g and x the answer is wrong with probability at least R / (3 n log2 n).  [PNP24] state it with
C = H(d + 1)p; commsim evaluates it with the bits the protocol really sends and shows their count beside.
Theorem 2 of [PNP24] (iterated composition needs Omega(sqrt(n / (Hdp))) chain-of-thought steps) is stated
in the ``compose`` lesson and docs/RESULTS.md, not implemented (an Omega without constants bounds no run).

A one-layer attention runs through the one-way public-query message
(:mod:`protocols.simulators.attention.public_query`, named here in :attr:`CompositionReduction.simulator_variants`);
a recurrent model through the hidden-state handoff (one-way on this contiguous split).  A two-way protocol
is not bound: Bob sends y in ceil(log2 n) bits and Alice answers.
"""
from __future__ import annotations

import numpy as np

from commsim.contract import (
    CONTIGUOUS_PREFIX,
    Encoded,
    InputError,
    MAX_EXHAUSTIVE_BITS,
    NotApplicable,
    ProblemInputError,
    Reduction,
    Split,
)
from commsim.theory.bounds import Conditions, ErrorBound, LowerBound, ceil_log2
from commsim.theory.problems import Problem
from protocols.theorems import composition_error_bound, composition_message_bits, composition_one_way_bits

__all__ = ["Composition", "CompositionReduction", "REDUCTIONS", "MAX_N"]

#: the largest n (the vocabulary has 2n² + n tokens)
MAX_N = 256
#: why the one-way bound survives coins
RANDOMIZED_REASON = ("INDEX over an alphabet of size n stays hard one-way with randomness, but the randomized bound is "
                     "smaller than the ceil(log2 n^n) bits shown: Theorem 1 of [PNP24] makes a one-way message of C "
                     "bits err with probability >= (n log2 n - C)/(3 n log2 n) on random inputs (measured_error), so "
                     "error eps requires C >= (1 - 3 eps)·n log2 n bits (a necessary condition; Theorem 1 gives "
                     "no protocol that attains it)")
#: Alice inputs the collision search hashes (one-value neighbourhoods of a few random g, and uniform ones)
CANDIDATES = 1 << 14


class Composition(Problem):
    """compose_n: Alice g, Bob (f, x); the query x is public (Alice knows it too); the answer g(f(x))."""

    name = "compose"
    description = "function composition: Alice g: B -> C, Bob f: A -> B and the query x (known to both); g(f(x))"
    all_description = "all (every g, f and x)"
    candidates_described = "one-value neighbourhoods of random g and uniform g, one query x"

    def __post_init__(self):
        super().__post_init__()
        if self.n > MAX_N:
            raise ProblemInputError(f"n must be at most {MAX_N} for function composition (the prompt's vocabulary "
                                    f"has 2n² + n tokens), got {self.n}")

    def _values(self, x, length: int, who: str, what: str) -> np.ndarray:
        arr = np.asarray(x)
        if arr.ndim != 1 or arr.shape[0] != length or (arr.size and arr.dtype.kind not in "iu"):
            raise ProblemInputError(f"{who} must be {what} ({length} integers), got shape {arr.shape}")
        if arr.size and (arr.min() < 0 or arr.max() >= self.n):
            raise ProblemInputError(f"{who}'s values must lie in 0..{self.n - 1}")
        return arr.astype(np.int64)

    def validate_alice(self, alice):
        """g(b_0), ..., g(b_{n-1})."""
        return self._values(alice, self.n, "Alice's input", "g's n values")

    def validate_bob(self, bob):
        """f(a_0), ..., f(a_{n-1}), then the query x."""
        return self._values(bob, self.n + 1, "Bob's input", "f's n values, then the query x")

    def evaluate_batch(self, A, B) -> np.ndarray:
        """g(f(x)) per row."""
        A, B = np.atleast_2d(np.asarray(A, dtype=np.int64)), np.atleast_2d(np.asarray(B, dtype=np.int64))
        rows = np.arange(len(A))
        return A[rows, B[rows, B[:, self.n]]]

    def _all(self, length: int) -> np.ndarray:
        if self.n ** length > 1 << MAX_EXHAUSTIVE_BITS:
            raise ProblemInputError(f"{self.n}^{length} inputs are too many to enumerate (at most "
                                    f"2^{MAX_EXHAUSTIVE_BITS})")
        codes = np.arange(self.n ** length, dtype=np.int64)
        out = np.empty((len(codes), length), dtype=np.uint8 if self.n <= 256 else np.int64)
        for i in range(length - 1, -1, -1):
            codes, out[:, i] = np.divmod(codes, self.n)
        return out

    def alice_inputs(self) -> np.ndarray:
        """Every g, in counting order."""
        return self._all(self.n)

    def bob_inputs(self) -> np.ndarray:
        """Every (f, x), in counting order."""
        return self._all(self.n + 1)

    @property
    def alice_input_count(self) -> int:
        return self.n ** self.n

    @property
    def bob_input_count(self) -> int:
        return self.n ** (self.n + 1)

    def sample(self, rng, count):
        """Uniformly random g, f and x (the distribution of Theorem 1 of [PNP24])."""
        n = self.n
        return rng.integers(0, n, size=(count, n)), rng.integers(0, n, size=(count, n + 1))

    # ---- the pigeonhole certificate search (the engine's, over the public-query message's transcript keys)
    @property
    def one_way_bits(self) -> int:
        return composition_one_way_bits(self.n)

    def collision_candidates(self, rng) -> tuple[np.ndarray, np.ndarray]:
        """Alice inputs -- every one-value change of a few random g, then uniform g -- with Bob inputs that all
        hold one query x (Alice's message depends on Bob's input only through the public x)."""
        n = self.n
        bases = max(1, (CANDIDATES // 2) // (n * n))
        g = rng.integers(0, n, size=(bases, n))
        variants = np.repeat(g, n * n, axis=0)
        rows = np.arange(len(variants))
        variants[rows, (rows // n) % n] = rows % n
        A = np.concatenate([variants, rng.integers(0, n, size=(CANDIDATES // 2, n))])
        B = rng.integers(0, n, size=(len(A), n + 1))
        B[:, n] = int(rng.integers(0, n))
        return A, B

    def separating_bob(self, a1, a2, like):
        """A Bob input (f, x) with g1(f(x)) != g2(f(x)), keeping the query x of the Bob input ``like`` (the
        public position Alice's message depends on): f constantly a value where g1 and g2 differ."""
        differ = np.flatnonzero(np.asarray(a1) != np.asarray(a2))
        if not differ.size:
            return None
        x = int(np.asarray(like)[self.n]) if like is not None else 0
        return np.concatenate([np.full(self.n, differ[0]), [x]]).astype(np.int64)

    def show_alice(self, a) -> str:
        return f"g = {np.asarray(a).tolist()}"

    def show_bob(self, b) -> str:
        b = np.asarray(b)
        return f"(f = {b[:self.n].tolist()}, x = {int(b[self.n])})"


class CompositionReduction(Reduction):
    """Function composition ([PNP24]): Alice g, Bob f and the query (known to both); answer g(f(x))."""

    id = "compose-index"
    problem_name = "compose"
    task = "function composition g(f(x)), read at the query position"
    source = "Theorem 1 of [PNP24] (function composition), via INDEX over an alphabet of size n"
    description = ("function composition g(f(x)) ([PNP24]): Alice holds g, Bob f and the query; one-way needs "
                   "ceil(n log2 n) bits, and a C-bit message errs with probability >= (n log2 n - C)/(3 n log2 n)")
    default_model = "attention:heads=1,width=2,dim=4,precision=6,frac=1,classes=32,seed=0"
    default_n = 32
    default_instances = 2000   # every (f, g, x) is 32^65 instances: `commsim run compose-index` samples
    split_kind = CONTIGUOUS_PREFIX
    length_scale, length_offset = 2, 1
    min_size = 2
    n_meaning = "N = 2n + 1 tokens: g's n pairs (Alice), f's n pairs (Bob), then the query x (known to both)"
    simulator_variants = {"attention-exchange": "attention-public-query"}

    def problem(self, n: int) -> Composition:
        if int(n) < 2:
            raise InputError(f"n must be at least 2 for function composition, got {n}", "n")
        return Composition(int(n))

    def vocabulary(self, n: int) -> list[str]:
        """g's pair tokens, f's pair tokens, the query tokens."""
        return ([f"g(b{i})=c{j}" for i in range(n) for j in range(n)] +
                [f"f(a{i})=b{j}" for i in range(n) for j in range(n)] + [f"a{k}?" for k in range(n)])

    def encode(self, problem, A, B) -> Encoded:
        """g's pairs (Alice's prefix), f's pairs, the query (Bob's, public); the answer at the query."""
        A, B = np.atleast_2d(np.asarray(A, dtype=np.int64)), np.atleast_2d(np.asarray(B, dtype=np.int64))
        n = problem.n
        idx = np.arange(n) * n
        tokens = np.empty((len(A), 2 * n + 1), dtype=np.int64)
        tokens[:, :n] = idx + A
        tokens[:, n:2 * n] = n * n + idx + B[:, :n]
        tokens[:, 2 * n] = 2 * n * n + B[:, n]
        return Encoded(tokens, np.arange(n), (2 * n,), public_positions=(2 * n,))

    def decode(self, labels, B) -> np.ndarray:
        """Label j is the answer c_j."""
        return np.asarray(labels)[:, 0].astype(np.int64)

    def labels(self, problem, alice, bob) -> np.ndarray:
        """The answer's index is the label."""
        return problem.evaluate_batch(alice, bob)[:, None]

    def split(self, seq_len: int) -> Split:
        """Alice: x_1..x_n; the decision at the query x, which both know (as :meth:`encode` has it)."""
        n = (int(seq_len) - 1) // 2
        return Split(seq_len, range(n), (2 * n,), (2 * n,))

    def check(self, model, simulator, problem) -> None:
        vocab = getattr(model, "vocab_size", None)
        need = len(self.vocabulary(problem.n))
        if vocab is not None and vocab < need:
            raise NotApplicable(f"{self.id} with n = {problem.n} uses {need} input tokens but the model reads only "
                                f"{vocab}", "model")

    def lower_bound(self, model, plan, problem, encoded) -> LowerBound:
        """ceil(n log2 n) bits one-way (INDEX over an alphabet of size n); not applicable to two-way protocols."""
        n = problem.n
        bits = composition_one_way_bits(n)
        bound = LowerBound(
            bits, "commsim's corollary of Theorem 1 of [PNP24] (function composition): one-way INDEX over an "
                  "alphabet of size n",
            Conditions("one-way", "prefix (g's pairs to Alice; f's pairs and the public query to Bob)"),
            f"Bob knows y = f(x) and may need any of g's n = {n} values, so the n^n functions g need distinct "
            f"messages: ceil(log2 {n}^{n}) = {bits} bits", randomized=True, randomized_reason=RANDOMIZED_REASON)
        if plan.senders <= {"alice"}:
            return bound
        return bound.not_applicable(
            f"the protocol is two-way, and composition is easy two-way: Bob sends y = f(x) in ceil(log2 n) = "
            f"{ceil_log2(n)} bits and Alice answers g(y)", bits=2 * ceil_log2(n), source="composition two-way protocol")

    def length_bound(self, simulator, seq_len: int, senders: frozenset | None = None) -> LowerBound:
        """ceil(log2 n^n) at N = 2n + 1 for a one-way protocol (a recurrent model's handoff on this prefix split,
        the attention's public-query message); not applicable to a two-way protocol."""
        n = max((int(seq_len) - 1) // 2, 1)
        bound = LowerBound(composition_one_way_bits(n), "commsim's corollary of Theorem 1 of [PNP24] (one-way INDEX "
                           "over an alphabet of size n)", Conditions("one-way", "Alice g's pairs (a prefix), Bob the rest"),
                           f"N = 2n + 1 = {2 * n + 1}: ceil(log2 n^n) = {composition_one_way_bits(n)} bits",
                           randomized=True, randomized_reason=RANDOMIZED_REASON)
        direction = simulator.split_direction(self.split_kind)
        if senders is not None:
            direction = "one-way" if frozenset(senders) <= {"alice"} else "two-way"
        if direction == "one-way":
            return bound
        return bound.not_applicable(
            f"{simulator.name} plans a two-way exchange here (the query's owner sends q_N), which composition does not "
            f"bound (Bob sends f(x) in ceil(log2 n) bits); the bound binds the one-way message that uses the public "
            f"query: `commsim run {self.id} --model attention:...` runs it")

    def error_bound(self, model, plan, problem, encoded, bits_used: int) -> ErrorBound | None:
        """Theorem 1 of [PNP24] with the message's real bits: Pr[wrong] >= R / (3 n log2 n), R = n log2 n - C."""
        n = problem.n
        R, rate = composition_error_bound(n, bits_used)
        values = {"message_bits": int(bits_used), "n_log2_n": n * float(np.log2(n)), "R": R}
        if all(hasattr(model, k) for k in ("heads", "dim", "precision")):
            theorem = composition_message_bits(model.heads, model.dim, model.precision)
            values.update(theorem_bits=theorem, theorem_bound=composition_error_bound(n, theorem)[1])
        source = "Theorem 1 of [PNP24]"
        distribution = "uniformly random f, g and query x"
        if not plan.senders <= {"alice"}:
            return ErrorBound(0.0, source, "", distribution, False,
                              "the protocol is two-way; Theorem 1 bounds one-way messages from g's holder", values)
        statement = (f"R = n log2 n - C = {n * np.log2(n):.4g} - {bits_used} = {R:.4g}; Pr[wrong] >= R / (3 n log2 n)"
                     f" = {rate:.4g}")
        if R <= 0:
            return ErrorBound(0.0, source, statement, distribution, False,
                              f"Alice's message has C = {bits_used} bits >= n log2 n = {n * np.log2(n):.4g}: R <= 0, "
                              f"the bound rules nothing out", values)
        return ErrorBound(rate, source, statement, distribution, True, "", values)


REDUCTIONS = [CompositionReduction]
