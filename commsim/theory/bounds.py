"""Lower bounds as values: how many bits, where it is proved, and when it applies."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace


def ceil_log2(x: int) -> int:
    """ceil(log2 x) for a positive integer, exactly (0 for x = 1)."""
    if x < 1:
        raise ValueError(f"ceil_log2 needs a positive integer, got {x}")
    return (int(x) - 1).bit_length()


@dataclass(frozen=True)
class Conditions:
    """When a bound holds.

    ``direction``: ``"one-way"`` (bounds only protocols where Alice speaks once) or ``"two-way"``.
    ``partition``: the split the bound is proved for (``"contiguous"``, ``"odd-even"``, ``"any"``, ...).
    ``deterministic``: the bound is for deterministic protocols (all of commsim's are).
    """

    direction: str = "two-way"
    partition: str = "any"
    deterministic: bool = True

    def __post_init__(self):
        if self.direction not in ("one-way", "two-way"):
            raise ValueError(f"direction must be 'one-way' or 'two-way', got {self.direction!r}")

    def describe(self) -> str:
        kind = "deterministic" if self.deterministic else "randomized"
        return f"{self.direction}, {self.partition} split, {kind}"


#: the kinds of lower bound a report states (``bound_kind``)
BOUND_KINDS = ("deterministic", "distributional", "randomized")


@dataclass(frozen=True)
class LowerBound:
    """A communication lower bound: ``bits`` with its ``source`` and ``conditions``.

    A bound that does not apply to a model or partition is represented as such
    (``applies`` False, with the ``reason``) instead of being silently used;
    ``bits`` may then hold the bound that *does* apply (e.g. the two-way bound).
    """

    bits: int | None
    source: str
    conditions: Conditions = field(default_factory=Conditions)
    statement: str = ""
    applies: bool = True
    reason: str = ""
    #: what the bound bounds: "deterministic" (bits of every exact deterministic protocol),
    #: "distributional" (a floor on the error over an input distribution), "randomized" (bits of every
    #: protocol with bounded error, coins allowed)
    kind: str = "deterministic"
    #: does the bound survive randomness (hold for randomized protocols with small error)? None: not stated
    randomized: bool | None = None
    randomized_reason: str = ""
    #: what ``bits`` counts: "bits" (a protocol's bits, the default) or a size of the model itself (e.g. "width"),
    #: then compared with ``measured`` (the model's own value of it), not with the bits a protocol sends
    unit: str = "bits"
    measured: int | None = None

    def __post_init__(self):
        if self.kind not in BOUND_KINDS:
            raise ValueError(f"kind must be one of {', '.join(BOUND_KINDS)}, got {self.kind!r}")

    def not_applicable(self, reason: str, *, bits: int | None = None, source: str | None = None) -> "LowerBound":
        """This bound marked as not applying, optionally showing another bound in its place."""
        return replace(self, applies=False, reason=reason,
                       bits=self.bits if bits is None else bits, source=source or self.source)

    def satisfied_by(self, bits_used: int) -> bool | None:
        """``bits_used >= bits`` (``measured >= bits`` for a bound on a model's size); None when the bound does not
        apply or has no value."""
        if not self.applies or self.bits is None:
            return None
        return (bits_used if self.measured is None else self.measured) >= self.bits

    @property
    def note(self) -> str:
        if not self.applies:
            return self.reason
        if self.unit != "bits":   # a bound on the model's size: no split, no protocol
            return f"{self.statement} ({self.source})".strip()
        return f"{self.statement} ({self.source}; {self.conditions.describe()})".strip()

    def to_dict(self) -> dict:
        return {"bits": self.bits, "source": self.source, "statement": self.statement,
                "direction": self.conditions.direction, "partition": self.conditions.partition,
                "deterministic": self.conditions.deterministic, "applies": self.applies,
                "reason": self.reason, "kind": self.kind, "randomized": self.randomized,
                "randomized_reason": self.randomized_reason, "unit": self.unit, "measured": self.measured}


def log2_exact(x: int) -> float:
    """log2 of a (possibly huge) positive integer."""
    if x < 1:
        raise ValueError("log2 of a non-positive number")
    shift = max(x.bit_length() - 60, 0)
    return math.log2(x >> shift) + shift


@dataclass(frozen=True)
class ErrorBound:
    """A distributional lower bound: over ``distribution``, every protocol of the stated kind (hence the
    model it simulates) is wrong with probability at least ``rate``.  ``applies`` False (with ``reason``)
    when the bound says nothing here (e.g. the message is long enough); ``values`` holds the numbers the
    formula was evaluated with (bits sent, R, ...)."""

    rate: float
    source: str
    statement: str
    distribution: str
    applies: bool = True
    reason: str = ""
    values: dict = field(default_factory=dict)
    kind: str = "distributional"

    def to_dict(self) -> dict:
        return {"bound": self.rate, "source": self.source, "statement": self.statement,
                "distribution": self.distribution, "applies": self.applies, "reason": self.reason,
                "kind": self.kind, **self.values}


# ---- randomized bounds: which bounds survive coins, and by how much ---------------------------------------
def binary_entropy(eps: float) -> float:
    """H2(eps) = -eps log2 eps - (1 - eps) log2 (1 - eps), with H2(0) = H2(1) = 0."""
    eps = float(eps)
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"H2 needs a probability in [0, 1], got {eps}")
    if eps in (0.0, 1.0):
        return 0.0
    return -eps * math.log2(eps) - (1.0 - eps) * math.log2(1.0 - eps)


INDEX_RANDOMIZED_SOURCE = ("INDEX one-way with error eps: (1 - H2(eps))·n bits (Ablayev 1996; Kremer, Nisan, Ron "
                           "1999), for uniform inputs and hence for public-coin protocols")


def index_one_way_randomized_bits(n: int, eps: float) -> int:
    """INDEX_n one-way (Alice -> Bob) with error eps < 1/2 on every input, public coins allowed:
    at least (1 - H2(eps))·n bits, rounded up to whole bits (the argument: Bob, shown Alice's message,
    recovers each a_b with error eps, so the message carries >= n - sum_b H(a_b | message) >= (1 - H2(eps))n
    bits of information about a uniform a)."""
    if not 0.0 <= eps < 0.5:
        raise ValueError(f"the INDEX bound needs an error eps in [0, 1/2), got {eps}")
    return max(math.ceil((1.0 - binary_entropy(eps)) * int(n) - 1e-9), 0)


def index_one_way_randomized_bound(n: int, eps: float) -> LowerBound:
    """The randomized one-way INDEX bound at error ``eps`` as a :class:`LowerBound` (kind ``randomized``)."""
    bits = index_one_way_randomized_bits(n, eps)
    return LowerBound(bits, INDEX_RANDOMIZED_SOURCE, Conditions("one-way", "Alice a, Bob b", deterministic=False),
                      f"INDEX_{n} one-way with error {eps:g}: (1 - H2({eps:g}))·{n} = "
                      f"{(1.0 - binary_entropy(eps)) * n:.2f} -> {bits} bits",
                      kind="randomized", randomized=True, randomized_reason=RANDOMIZED["index"][1])


#: does a problem's bound survive randomness?  case -> (randomized, reason); :func:`randomness` hands it to a bound
RANDOMIZED = {   # case -> (randomized: bool | None, reason)
    "index": (True, "INDEX_n one-way needs (1 - H2(eps))·n bits even with coins and error eps < 1/2 on every "
                    "input (Kremer-Nisan-Ron 1999), so the bound, barely weakened, also binds models that are "
                    "only right with high probability"),
    "index-bob": (True, "only Bob speaks: Alice must tell the n indices apart from his message (a -> a_b for "
                        "b != b' disagree on half of all a), so with error eps < 1/4 Fano's inequality still "
                        "gives (1 - 4 eps) log2 n - 1 bits: Omega(log n) survives (commsim's own argument)"),
    "index-two-way": (None, "no bound applies: INDEX is easy two-way (Bob sends b, Alice answers), with or "
                            "without coins; the one-way bound, which survives randomness as (1 - H2(eps))·n, "
                            "binds one-way protocols only"),
    "eq": (False, "EQ_n takes only O(log n) bits with private coins (polynomial fingerprints mod a prime) and "
                  "k bits for error 2^-k with public coins (random inner products): the n-bit bound holds for "
                  "exact deterministic computation only (`commsim cc eq --protocol fingerprint`)"),
    "disj": (True, "DISJ_n needs Omega(n) bits even for randomized protocols with error 1/3 "
                   "(Kalyanasundaram-Schnitger 1992; Razborov 1992); commsim states no constant for it, so "
                   "the randomized bound is Omega(n), not the deterministic n bits shown"),
    "dyck22": (False, "a fooling-set bound holds for deterministic protocols only, and here coins do help: "
                      "with the odd/even split, Bob's half of a member fixes Alice's half (the communication "
                      "matrix has at most one 1 per row and column), so membership is EQ between a string "
                      "each party computes alone, plus a check Bob makes alone: O(log N) bits by fingerprints"),
}


def randomness(case: str) -> dict:
    """The ``randomized`` and ``randomized_reason`` fields of a bound for ``case`` (a key of :data:`RANDOMIZED`),
    as keyword arguments: ``LowerBound(bits, source, ..., **randomness("disj"))``."""
    randomized, reason = RANDOMIZED[case]
    return {"randomized": randomized, "randomized_reason": reason}
