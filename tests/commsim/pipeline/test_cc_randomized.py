"""Randomized cc protocols: coins are seeded and recorded, the measured error keeps the promise, the
vectorized path draws the runner's coins, and audit mode reproduces a run exactly from the seed."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.core.coins import CoinSource, coin_array
from commsim.core.errors import InputError
from commsim.core.party import Flip, Protocol, ProtocolError, Receive, Send
from commsim.core.runner import AuditSession, run_protocol
from commsim.core.stats import rate_interval
from commsim.runs.cc import run_cc
from commsim.theory.bounds import index_one_way_randomized_bits
from commsim.theory.problems import make_problem
from protocols.baseline import SendEverything
from protocols.baseline.randomized import (
    FingerprintEquality,
    InnerProductEquality,
    SampledIndex,
    is_prime,
    next_prime,
)

RUNS = 10_000


# ---- the measured error against the promise (10^4 runs, vectorized) ---------------------------------
@pytest.mark.parametrize("seed", [0, 1])
def test_inner_product_error_is_exactly_two_to_the_minus_k_on_unequal_pairs(seed):
    report = run_cc("eq", 64, InnerProductEquality, instances=RUNS, seed=seed, error=0.01, confidence=0.99)
    r = report.randomized
    k = math.ceil(math.log2(100))
    assert report.bits_used == k and r["error_promised"] == 2.0 ** -k
    unequal = r["measured_error_by_answer"]["0"]
    assert unequal["trials"] > RUNS // 3 and unequal["low"] <= 2.0 ** -k <= unequal["high"]
    assert r["measured_error_by_answer"]["1"]["events"] == 0          # one-sided: equal pairs never fail
    assert r["consistent_with_promise"] is True and r["coins"] == "public"
    assert report.errors == unequal["events"] > 0                     # errors do happen: the measurement is real


def test_fingerprint_at_n_1024_keeps_its_promise_with_o_log_n_bits():
    report = run_cc("eq", 1024, FingerprintEquality, instances=RUNS, seed=0, error=0.01)
    r = report.randomized
    p = next_prime(math.ceil(1023 / 0.01))
    assert is_prime(p) and r["error_promised"] == pytest.approx(1023 / p) and r["error_promised"] <= 0.01
    assert report.bits_used == 2 * (p - 1).bit_length() < 1024 // 20
    assert r["error_interval"][0] <= r["error_promised"] and r["consistent_with_promise"] is True
    assert r["measured_error"] == r["measured_error_detail"]["rate"]           # DESIGN section 4's flat keys
    assert r["measured_error_by_answer"]["1"]["events"] == 0
    assert "half equal pairs" in report.instances


def test_fingerprint_error_on_one_input_matches_the_root_count():
    """On one fixed unequal pair the error over the coins is exactly (#roots of A - B in F_p) / p: count the
    roots by brute force and measure the protocol on 10^4 coin draws of that pair."""
    n = 12
    proto = FingerprintEquality(make_problem("eq", n), 0.5)          # p = 23: errors are frequent
    a = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0], dtype=np.uint8)
    b = a.copy()
    b[[0, 5]] ^= 1
    roots = sum(proto._fingerprint(x, a) == proto._fingerprint(x, b) for x in range(proto.prime))
    assert 0 < roots <= n - 1
    A, B = np.repeat(a[None], RUNS, axis=0), np.repeat(b[None], RUNS, axis=0)
    wrong = int(proto.run_batch_coins(A, B, seed=3).outputs.sum())   # every instance: a != b, output 1 is wrong
    iv = rate_interval(wrong, RUNS, confidence=0.99)
    assert iv.low <= roots / proto.prime <= iv.high <= proto.promised_error + 0.05


def test_index_sample_error_is_exactly_promised_and_meets_the_randomized_bound():
    report = run_cc("index", 200, SampledIndex, instances=RUNS, seed=1, error=0.1)
    r = report.randomized
    s = math.ceil(200 * 0.8)
    assert report.bits_used == s and r["error_promised"] == pytest.approx((200 - s) / 400)
    low, high = r["error_interval"]
    assert low <= r["error_promised"] <= high
    bound = r["randomized_bound"]
    assert bound["bits"] == index_one_way_randomized_bits(200, r["error_promised"]) <= s
    assert bound["satisfied"] is True and bound["kind"] == "randomized"


def test_a_protocol_that_breaks_its_promise_is_reported_inconsistent():
    """The check can fail: a protocol promising half its true error is caught."""
    class Overpromising(SampledIndex):
        name = "overpromising"

        @property
        def promised_error(self):
            return super().promised_error / 2

    r = run_cc("index", 64, Overpromising, instances=4000, seed=0, error=0.2).randomized
    assert r["consistent_with_promise"] is False


# ---- coins are part of the transcript ----------------------------------------------------------------
def test_transcript_records_the_coins_that_explain_the_message():
    n = 16
    proto = InnerProductEquality(make_problem("eq", n), 0.1)
    a = np.arange(n) % 2
    run = run_protocol(proto, a, a, coins=CoinSource(5, 2))
    t = run.transcript
    assert len(t.coins) == 1                                          # public coins: recorded once, read by both
    draw = t.coins[0]
    assert (draw.stream, draw.offset, len(draw.bits)) == ("public", 0, proto.k * n)
    assert np.array_equal(draw.bits.to_array(), coin_array(5, 2, "public", 0, proto.k * n))
    R = draw.bits.to_array().reshape(proto.k, n).astype(int)
    assert t.messages[0].bits.to_array().tolist() == ((R @ a) % 2).tolist()
    assert t.coin_bits == {"public": proto.k * n, "alice": 0, "bob": 0}
    assert t.total_bits == proto.k                                    # coins are not communication
    again = type(t).from_dict(t.to_dict())
    assert again.coins == t.coins and again.messages == t.messages


def test_private_coins_are_each_partys_own_and_public_coins_are_shared():
    class Coins(Protocol):
        name = "coins"

        def alice(self, _):
            mine = yield Flip("mine", 8)
            shared = yield Flip("shared", 8, public=True)
            yield Send("both", mine + shared)

        def bob(self, _):
            mine = yield Flip("mine", 8)
            shared = yield Flip("shared", 8, public=True)
            got = yield Receive("both")
            return str(got), str(mine), str(shared)

    run = run_protocol(Coins(), None, None, coins=CoinSource(1, 0))
    alices, bobs = run.output[0][:8], run.output[1]
    assert run.output[0][8:] == run.output[2] == str(CoinSource(1, 0).bits("public", 0, 8))
    assert alices == str(CoinSource(1, 0).bits("alice", 0, 8)) and bobs == str(CoinSource(1, 0).bits("bob", 0, 8))
    assert [(c.stream, c.party) for c in run.transcript.coins] == [("alice", "alice"), ("public", "alice"),
                                                                    ("bob", "bob")]
    with pytest.raises(ProtocolError, match="no coin source"):
        run_protocol(Coins(), None, None)


# ---- the seed reproduces a run; audit mode (separate processes) reproduces it exactly ----------------
def test_audit_reproduces_the_run_exactly_from_the_seed():
    local = run_cc("index", 30, SampledIndex, instances=16, seed=11, error=0.3)
    audited = run_cc("index", 30, SampledIndex, instances=16, seed=11, error=0.3, audit=True)
    assert audited.audited and audited.runner_checked == 16 and local.errors > 0
    for key in ("measured_error", "error_interval", "measured_error_by_answer", "error_promised",
                "consistent_with_promise"):
        assert audited.randomized[key] == local.randomized[key]
    assert audited.errors == local.errors
    assert {k: np.asarray(v).tolist() for k, v in audited.first_error.items()} == \
           {k: np.asarray(v).tolist() for k, v in local.first_error.items()}
    with AuditSession() as session:                                   # each party in its own process
        for cls, problem, n in ((FingerprintEquality, "eq", 40), (InnerProductEquality, "eq", 20),
                                (SampledIndex, "index", 30)):
            proto = cls(make_problem(problem, n), 0.3)
            A, B = proto.sample(np.random.default_rng(11), 2)
            for i in range(2):
                one = run_protocol(proto, A[i], B[i], coins=CoinSource(11, i))
                other = run_protocol(proto, A[i], B[i], coins=CoinSource(11, i), audit=session)
                assert other.transcript.to_dict() == one.transcript.to_dict() and other.output == one.output
                assert one.transcript.coins                           # the coins are in what is compared


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 40), error=st.floats(0.02, 0.45), seed=st.integers(0, 2 ** 32),
       which=st.sampled_from([FingerprintEquality, InnerProductEquality, SampledIndex]))
def test_vectorized_path_draws_the_runners_coins(n, error, seed, which):
    """Every instance is re-run by the runner (<= 64 instances): a disagreement in output or bits raises."""
    problem = "index" if which is SampledIndex else "eq"
    report = run_cc(problem, n, which, instances=40, seed=seed, error=error)
    assert report.runner_checked == 40
    expected = make_problem(problem, n)
    if problem == "eq":                                               # one-sided: equal pairs never fail
        assert report.randomized["measured_error_by_answer"].get("1", {"events": 0})["events"] == 0
    assert report.randomized["error_promised"] <= error + 1e-12 and expected.n == n


# ---- bad input ------------------------------------------------------------------------------------
def test_error_targets_are_checked():
    with pytest.raises(InputError, match="error"):
        run_cc("eq", 8, SendEverything, instances=10, error=0.1)      # deterministic: no error target
    with pytest.raises(InputError, match="error"):
        run_cc("eq", 8, FingerprintEquality, instances=10, error=1.0)
    with pytest.raises(InputError, match="error"):
        run_cc("index", 8, SampledIndex, instances=10, error=0.5)
    with pytest.raises(InputError, match="error"):
        run_cc("eq", 8, InnerProductEquality, instances=10, error=0.0)
    with pytest.raises(InputError, match="error"):
        run_cc("eq", 4096, FingerprintEquality, instances=10, error=1e-9)   # the prime would pass 2^31
    with pytest.raises(InputError, match="protocol"):
        run_cc("disj", 8, FingerprintEquality, instances=10)


def test_primes():
    assert [m for m in range(40) if is_prime(m)] == [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37]
    assert next_prime(102300) == 102301 and not is_prime(561) and is_prime(2 ** 31 - 1)
