"""The runner and the channel: counting, rounds, transcripts, failures, and isolation (in-process and audit).

Protocol classes live at module level so that audit mode can pickle them into its worker processes.
"""
from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.core.bits import Bits
from commsim.core.channel import Message, Transcript
from commsim.core.party import Protocol, ProtocolError, Receive, Send
from commsim.core.runner import AuditSession, DeadlockError, RunResult, run_protocol
from commsim.theory.problems import make_problem
from protocols.baseline import BobSendsIndex, SendEverything

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- protocols used by the tests -------------------------------------------------
def digest_bits(data: bytes, length: int) -> Bits:
    """``length`` pseudo-random bits determined by ``data`` (the same in every process)."""
    stream, counter = b"", 0
    while 8 * len(stream) < length:
        stream += hashlib.blake2b(data + counter.to_bytes(4, "big")).digest()
        counter += 1
    return Bits(stream[:(length + 7) // 8], length)


class Scripted(Protocol):
    """Plays a fixed script of (sender, label, length) messages.

    Each message's content depends on the sender's share and on everything it has received so far,
    so the transcript really is a function of both inputs.  Each party returns what it received
    and a digest of its final state.
    """

    name = "scripted"

    def __init__(self, script, output_party: str = "bob"):
        self.script = tuple(tuple(step) for step in script)
        self.output_party = output_party

    def _play(self, me: str, share):
        state = hashlib.blake2b(repr((me, share)).encode())
        received = []
        for i, (sender, label, length) in enumerate(self.script):
            if sender == me:
                yield Send(label, digest_bits(state.digest() + bytes([i % 256]), length))
            else:
                bits = yield Receive(label)
                received.append(str(bits))
                state.update(f"{i}:{bits}".encode())
        return received, state.hexdigest()

    def alice(self, share):
        return self._play("alice", share)

    def bob(self, share):
        return self._play("bob", share)


class DeadlockAfter(Protocol):
    """Alternates ``k`` one-bit messages (Alice first), then both parties wait forever."""

    def __init__(self, k: int):
        self.k = k

    def _play(self, me: int):
        for i in range(self.k):
            if i % 2 == me:
                yield Send("m", Bits.from_str("1"))
            else:
                yield Receive("m")
        yield Receive()

    def alice(self, share):
        return self._play(0)

    def bob(self, share):
        return self._play(1)


class BobWaitsInVain(Protocol):
    def alice(self, share):
        return 0
        yield  # a generator that finishes at once

    def bob(self, share):
        yield Receive("never")


class SendsBytes(Protocol):
    def alice(self, share):
        yield Send("raw", b"\x01")

    def bob(self, share):
        yield Receive()


class SendsText(Protocol):
    def alice(self, share):
        yield Send("text", "0101")

    def bob(self, share):
        yield Receive()


class YieldsNonsense(Protocol):
    def alice(self, share):
        yield 42

    def bob(self, share):
        return None
        yield


class WrongLabel(Protocol):
    def alice(self, share):
        yield Send("apples", Bits.from_str("1"))

    def bob(self, share):
        return (yield Receive("oranges"))


class LeavesMessageUnread(Protocol):
    def alice(self, share):
        yield Send("ignored", Bits.from_str("11"))

    def bob(self, share):
        return "done"
        yield


class MutatesShare(Protocol):
    """Scribbles over its own share; the caller's objects must not change."""

    def alice(self, share):
        share["bits"][0] ^= 1
        share["list"].append("mine")
        yield Send("a", Bits.from_array(share["bits"]))
        return share

    def bob(self, share):
        share[:] = 0
        yield Receive("a")
        return share


class TamperingSender(Protocol):
    """Alice changes her bit string *after* sending it; Bob scribbles over what he received."""

    def alice(self, share):
        sent = Bits.from_str("10101010" * 2)
        yield Send("x", sent)
        sent.packed.flags.writeable = True  # defeat the read-only flag on purpose
        sent.packed[:] = 0
        yield Send("y", Bits.from_str("1"))
        return sent

    def bob(self, share):
        got = yield Receive("x")
        snapshot = str(got)
        got.packed.flags.writeable = True
        got.packed[:] = 0xFF
        yield Receive("y")
        return snapshot, got


class Echo(Protocol):
    def alice(self, share):
        yield Send("hello", Bits.from_str("110"))

    def bob(self, share):
        return (yield Receive("hello"))


_LEAK: dict = {}


class CheatsThroughAGlobal(Protocol):
    """Alice hides her share in a module-level global and sends nothing; Bob reads the global.

    In one process this 'works' (zero bits, Bob knows Alice's input); in audit mode each party has
    its own process, so Bob sees nothing.
    """

    output_party = "bob"

    def alice(self, share):
        _LEAK["alice"] = list(share)
        return None
        yield

    def bob(self, share):
        return _LEAK.get("alice")
        yield


# ---- helpers -----------------------------------------------------------------------
def runs_of(senders: list[str]) -> list[int]:
    """Round number of each message: maximal runs of one sender, counted from 1."""
    out, rnd = [], 0
    for i, s in enumerate(senders):
        rnd += i == 0 or senders[i - 1] != s
        out.append(rnd)
    return out


scripts = st.lists(st.tuples(st.sampled_from(["alice", "bob"]), st.sampled_from(["a", "b", "state", ""]),
                             st.integers(0, 70)), max_size=12)
shares = st.integers(0, 2 ** 32) | st.text(max_size=5)


# ---- counting, rounds, transcripts -------------------------------------------------------
@FAST
@given(scripts, shares, shares)
def test_counts_rounds_and_direction_totals(script, a, b):
    result = run_protocol(Scripted(script), a, b)
    t = result.transcript
    assert isinstance(result, RunResult)
    assert len(t) == len(script)
    assert [(m.sender, m.label, len(m.bits)) for m in t] == list(script)
    assert all(m.receiver == ("bob" if m.sender == "alice" else "alice") for m in t)
    assert t.total_bits == sum(length for _, _, length in script)
    assert t.bits_by_direction == {
        "alice_to_bob": sum(n for s, _, n in script if s == "alice"),
        "bob_to_alice": sum(n for s, _, n in script if s == "bob")}
    senders = [s for s, _, _ in script]
    assert [m.round for m in t] == runs_of(senders)
    assert t.rounds == (runs_of(senders)[-1] if senders else 0)
    assert t.is_one_way == (len(set(senders)) <= 1)
    labels: dict[str, int] = {}
    for _, label, n in script:
        labels[label] = labels.get(label, 0) + n
    assert t.bits_by_label() == labels
    # each party received exactly the bits the other sent, in order
    for party in ("alice", "bob"):
        received, _ = result.outputs[party]
        assert received == [str(m.bits) for m in t if m.receiver == party]
    assert result.output == result.outputs["bob"]


@FAST
@given(scripts, shares, shares)
def test_transcript_json_round_trip(script, a, b):
    t = run_protocol(Scripted(script), a, b).transcript
    again = Transcript.from_json(t.to_json())
    assert again == t
    assert again.digest() == t.digest()
    assert [str(m.bits) for m in again] == [str(m.bits) for m in t]
    d = t.to_dict()
    assert d["total_bits"] == t.total_bits and d["rounds"] == t.rounds and d["one_way"] == t.is_one_way
    assert d["bits_by_direction"] == t.bits_by_direction
    assert [m["length"] for m in d["messages"]] == [len(m.bits) for m in t]
    assert Transcript.build((m.sender, m.label, m.bits) for m in t) == t


def test_transcripts_depend_on_inputs_and_digest_tells_them_apart():
    script = [("alice", "a", 40), ("bob", "b", 40), ("alice", "a", 8)]
    t1 = run_protocol(Scripted(script), 1, 2).transcript
    t2 = run_protocol(Scripted(script), 1, 3).transcript
    assert t1 == run_protocol(Scripted(script), 1, 2).transcript  # deterministic
    assert t1.messages[0] == t2.messages[0]  # Alice's first message depends on her input alone
    assert t1 != t2 and t1.digest() != t2.digest()


def test_one_way_and_output_party():
    alice_only = Scripted([("alice", "x", 5), ("alice", "y", 3)], output_party="alice")
    result = run_protocol(alice_only, "a", "b")
    assert result.transcript.is_one_way and result.transcript.rounds == 1
    assert result.output == result.outputs["alice"] and result.output[0] == []
    both = run_protocol(Scripted([("alice", "x", 1), ("bob", "y", 1)]), "a", "b").transcript
    assert not both.is_one_way and both.rounds == 2
    empty = run_protocol(Scripted([]), "a", "b").transcript
    assert (len(empty), empty.total_bits, empty.rounds, empty.is_one_way) == (0, 0, 0, True)


def test_message_from_dict_checks_length():
    m = Message("alice", "bob", "x", Bits.from_str("101"), 1)
    assert Message.from_dict(m.to_dict()) == m
    bad = dict(m.to_dict(), length=4)
    with pytest.raises(ValueError, match="length"):
        Message.from_dict(bad)


# ---- misbehaving protocols ------------------------------------------------------------
@pytest.mark.parametrize("k", [0, 1, 2, 5])
def test_deadlock_names_the_round(k):
    with pytest.raises(DeadlockError, match=rf"deadlock in round {k}\b.*alice and bob"):
        run_protocol(DeadlockAfter(k), None, None)
    assert issubclass(DeadlockError, ProtocolError)


def test_deadlock_when_the_other_party_has_finished():
    with pytest.raises(DeadlockError, match=r"round 0: bob waits"):
        run_protocol(BobWaitsInVain(), None, None)


def test_round_cap():
    script = [("alice" if i % 2 == 0 else "bob", "m", 1) for i in range(10)]
    assert run_protocol(Scripted(script), 0, 0, max_rounds=10).transcript.rounds == 10
    with pytest.raises(ProtocolError, match="more than 9 rounds"):
        run_protocol(Scripted(script), 0, 0, max_rounds=9)
    # consecutive messages of one sender are one round
    same = [("alice", "m", 1)] * 30
    assert run_protocol(Scripted(same), 0, 0, max_rounds=1).transcript.rounds == 1


@pytest.mark.parametrize("protocol,kind", [(SendsBytes(), "bytes"), (SendsText(), "str")])
def test_non_bits_message_refused(protocol, kind):
    with pytest.raises(ProtocolError, match=rf"alice sent {kind} under .*must be Bits"):
        run_protocol(protocol, None, None)


def test_yielding_something_else_refused():
    with pytest.raises(ProtocolError, match="yield Send or Receive"):
        run_protocol(YieldsNonsense(), None, None)


def test_label_mismatch_refused():
    with pytest.raises(ProtocolError, match="bob expected message 'oranges' but got 'apples'"):
        run_protocol(WrongLabel(), None, None)


def test_unread_messages_refused():
    with pytest.raises(ProtocolError, match="bob finished with 1 unread message"):
        run_protocol(LeavesMessageUnread(), None, None)


# ---- isolation, in process ---------------------------------------------------------------
def test_party_gets_a_deep_copy_of_its_share():
    alice_share = {"bits": np.array([0, 1, 1], dtype=np.uint8), "list": ["x"]}
    bob_share = np.array([5, 6, 7])
    result = run_protocol(MutatesShare(), alice_share, bob_share)
    assert alice_share["bits"].tolist() == [0, 1, 1] and alice_share["list"] == ["x"]
    assert bob_share.tolist() == [5, 6, 7]
    assert result.outputs["alice"]["bits"].tolist() == [1, 1, 1]  # the program did change its own copy
    assert result.outputs["bob"].tolist() == [0, 0, 0]
    assert str(result.transcript.messages[0].bits) == "111"


def test_received_bits_are_private_copies():
    result = run_protocol(Echo(), None, None)
    got, sent = result.output, result.transcript.messages[0].bits
    assert got == sent and got is not sent
    assert not np.shares_memory(got.packed, sent.packed)
    with pytest.raises(ValueError):
        got.packed[0] = 0  # read-only as delivered


def test_changes_after_sending_do_not_reach_the_channel():
    result = run_protocol(TamperingSender(), None, None)
    t = result.transcript
    assert str(t.messages[0].bits) == "1010101010101010"  # what was sent, not what Alice did later
    snapshot, bobs_copy = result.outputs["bob"]
    assert snapshot == "1010101010101010"
    assert str(bobs_copy) == "1" * 16 and str(result.outputs["alice"]) == "0" * 16
    assert t.total_bits == 17


def test_cheating_through_a_global_works_in_process():
    _LEAK.clear()
    result = run_protocol(CheatsThroughAGlobal(), [1, 0, 1, 1], None)
    assert result.output == [1, 0, 1, 1]  # Bob "knows" Alice's input ...
    assert result.transcript.total_bits == 0  # ... with zero bits: in-process isolation is by convention
    _LEAK.clear()


# ---- audit mode: separate processes ---------------------------------------------------------
@pytest.fixture(scope="module")
def audit():
    with AuditSession() as session:
        yield session


def test_audit_mode_stops_the_cheat(audit):
    _LEAK.clear()
    result = run_protocol(CheatsThroughAGlobal(), [1, 0, 1, 1], None, audit=audit)
    assert result.output is None  # Bob's process never saw Alice's global
    assert result.transcript.total_bits == 0
    _LEAK.clear()


def test_audit_matches_in_process_for_baseline_protocols(audit):
    rng = np.random.default_rng(7)
    cases = []
    for name in ("index", "eq", "disj"):
        problem = make_problem(name, 8)
        A, B = problem.sample(rng, 3)
        cases += [(SendEverything(problem), a, b) for a, b in zip(A, B)]
    index = make_problem("index", 13)
    A, B = index.sample(rng, 3)
    cases += [(BobSendsIndex(index), a, b) for a, b in zip(A, B)]
    for protocol, a, b in cases:
        local = run_protocol(protocol, a, b)
        remote = run_protocol(protocol, a, b, audit=audit)
        assert int(remote.output) == int(local.output) == protocol.problem.evaluate(a, b)
        assert remote.transcript == local.transcript
        assert remote.transcript.digest() == local.transcript.digest()
    assert run_protocol(cases[-1][0], cases[-1][1], cases[-1][2], audit=audit).transcript.total_bits == 5


def test_audit_matches_in_process_for_random_multi_round_protocols(audit):
    rng = np.random.default_rng(11)
    for trial in range(4):
        n = int(rng.integers(3, 15))
        script = [(("alice", "bob")[int(rng.integers(2))], f"m{i}", int(rng.integers(0, 90))) for i in range(n)]
        a, b = int(rng.integers(1 << 30)), f"bob-{trial}"
        local = run_protocol(Scripted(script), a, b)
        remote = run_protocol(Scripted(script), a, b, audit=audit)
        assert remote.outputs == local.outputs
        assert remote.transcript == local.transcript
        assert remote.transcript.rounds == local.transcript.rounds >= 1


def test_audit_refuses_misbehaviour_and_recovers(audit):
    with pytest.raises(DeadlockError, match="deadlock in round 2"):
        run_protocol(DeadlockAfter(2), None, None, audit=audit)
    with pytest.raises(ProtocolError, match="non-message"):
        run_protocol(SendsBytes(), None, None, audit=audit)
    # the session starts afresh after a failure and still agrees with the in-process run
    script = [("bob", "x", 9), ("alice", "y", 3)]
    assert run_protocol(Scripted(script), 1, 2, audit=audit).transcript == \
        run_protocol(Scripted(script), 1, 2).transcript


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, "not json", "{}", '{"messages": [{"sender": 1}]}',
                                  "[1, 2]"])
def test_text_that_is_no_transcript_is_an_input_error_naming_text(text):
    """Nested past the parser's stack, not JSON, or JSON of another shape: one InputError naming ``text``, never a
    RecursionError or a KeyError from inside."""
    from commsim import InputError
    with pytest.raises(InputError) as caught:
        Transcript.from_json(text)
    assert caught.value.param == "text" and "not a transcript's JSON" in str(caught.value)
