"""The runner: schedules two party programs over a counted channel.

In-process, each program is built from a deep copy of its own share and is
handed private copies of the bits it receives.  In audit mode
(:class:`AuditSession`) each party runs in its own process (multiprocessing,
spawn start method) and only bytes cross between processes: the parent is the
channel.  Both modes use the same scheduler, so results and transcripts agree.

A randomized program's coins (:class:`~commsim.core.party.Flip`) come from the run's
:class:`~commsim.core.coins.CoinSource`, which only the scheduler holds (in audit mode: the parent), and
are recorded in the transcript; a seed therefore reproduces a randomized run exactly.
"""
from __future__ import annotations

import contextlib
import copy
import multiprocessing as mp
import pickle
import traceback
from dataclasses import dataclass
from typing import Any

from commsim.core.bits import Bits
from commsim.core.channel import CoinDraw, Transcript, other_party
from commsim.core.coins import CoinSource
from commsim.core.interrupts import interrupts_held, worker_ignores_interrupts
from commsim.core.party import Flip, Protocol, ProtocolError, Receive, Send

DEFAULT_MAX_ROUNDS = 100_000


class DeadlockError(ProtocolError):
    """Both parties wait for a message that will never come."""


@dataclass(frozen=True)
class RunResult:
    outputs: dict[str, Any]
    transcript: Transcript
    output_party: str = "bob"

    @property
    def output(self) -> Any:
        return self.outputs[self.output_party]


_DONE = object()


class _LocalParty:
    """A party program driven in this process."""

    def __init__(self, protocol: Protocol, party: str, share):
        self.gen = protocol.program(party, copy.deepcopy(share))
        self.output = None

    def step(self, value: Bits | None):
        try:
            return self.gen.send(value) if value is not None else next(self.gen)
        except StopIteration as stop:
            self.output = stop.value
            return _DONE


def _copy_bits(bits: Bits) -> Bits:
    return Bits(bits.to_bytes(), len(bits))


class _Coins:
    """The scheduler's coin desk: hands out coins from the source and records each new one once."""

    def __init__(self, source: CoinSource | None):
        self.source, self.draws = source, []
        self.cursor = {(p, s): 0 for p in ("alice", "bob") for s in ("public", p)}
        self.public_recorded = 0

    def flip(self, party: str, act: Flip) -> Bits:
        count = act.count
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ProtocolError(f"{party} asked for {count!r} coins under {act.label!r}; a count is an int >= 0")
        if self.source is None:
            raise ProtocolError(f"{party} flips coins ({act.label!r}) but the run has no coin source; "
                                "pass coins=CoinSource(seed, instance) to run a randomized protocol")
        stream = "public" if act.public else party
        start = self.cursor[(party, stream)]
        self.cursor[(party, stream)] = start + count
        bits = self.source.bits(stream, start, count)
        if stream != "public":
            self.draws.append(CoinDraw(stream, party, act.label, start, bits))
        elif start + count > self.public_recorded:   # the part of the public string nobody has read yet
            new = max(start, self.public_recorded)
            self.draws.append(CoinDraw(stream, party, act.label, new, bits[new - start:]))
            self.public_recorded = start + count
        return bits


def _schedule(parties: dict, output_party: str, max_rounds: int, coins: CoinSource | None = None) -> RunResult:
    """Drive both parties until both finish; raise on deadlock, bad messages or too many rounds."""
    desk = _Coins(coins)
    items: list[tuple[str, str, Bits]] = []
    queues: dict[str, list[tuple[str, Bits]]] = {"alice": [], "bob": []}
    action = {p: parties[p].step(None) for p in ("alice", "bob")}
    rounds, last_sender = 0, None
    while True:
        progressed = False
        for p in ("alice", "bob"):
            while True:
                act = action[p]
                if isinstance(act, Send):
                    if not isinstance(act.bits, Bits):
                        raise ProtocolError(f"{p} sent {type(act.bits).__name__} under {act.label!r}; "
                                            "messages must be Bits")
                    if p != last_sender:
                        rounds, last_sender = rounds + 1, p
                        if rounds > max_rounds:
                            raise ProtocolError(f"more than {max_rounds} rounds; stopped")
                    sent = _copy_bits(act.bits)  # a snapshot: later changes to the sender's object count for nothing
                    items.append((p, act.label, sent))
                    queues[other_party(p)].append((act.label, sent))
                    action[p] = parties[p].step(None)
                elif isinstance(act, Receive) and queues[p]:
                    label, bits = queues[p].pop(0)
                    if act.label is not None and act.label != label:
                        raise ProtocolError(f"{p} expected message {act.label!r} but got {label!r}")
                    action[p] = parties[p].step(_copy_bits(bits))
                elif isinstance(act, Flip):
                    action[p] = parties[p].step(desk.flip(p, act))
                elif act is _DONE or isinstance(act, Receive):
                    break
                else:
                    raise ProtocolError(f"{p} yielded {act!r}; party programs yield Send or Receive")
                progressed = True
        if action["alice"] is _DONE and action["bob"] is _DONE:
            break
        if not progressed:
            waiting = [p for p in ("alice", "bob") if isinstance(action[p], Receive)]
            raise DeadlockError(f"deadlock in round {rounds}: {' and '.join(waiting)} "
                                f"wait{'s' if len(waiting) == 1 else ''} for a message that never comes")
    for p in ("alice", "bob"):
        if queues[p]:
            raise ProtocolError(f"{p} finished with {len(queues[p])} unread message(s)")
    return RunResult({p: parties[p].output for p in ("alice", "bob")},
                     Transcript.build(items, desk.draws), output_party)


def run_protocol(protocol: Protocol, alice_share, bob_share, *, max_rounds: int = DEFAULT_MAX_ROUNDS,
                 audit: "AuditSession | bool" = False, coins: CoinSource | None = None) -> RunResult:
    """Run ``protocol`` on the two shares; ``audit=True`` runs each party in its own process; ``coins``
    answers a randomized program's coin flips (and they are recorded in the transcript)."""
    if audit:
        if isinstance(audit, AuditSession):
            return audit.run(protocol, alice_share, bob_share, max_rounds=max_rounds, coins=coins)
        with AuditSession() as session:
            return session.run(protocol, alice_share, bob_share, max_rounds=max_rounds, coins=coins)
    parties = {"alice": _LocalParty(protocol, "alice", alice_share),
               "bob": _LocalParty(protocol, "bob", bob_share)}
    return _schedule(parties, protocol.output_party, max_rounds, coins)


# ---- audit mode: one process per party, only bytes cross -----------------
def _worker(conn) -> None:
    """Child process: run party programs on request; report each action as bytes.

    Ctrl-C reaches the whole process group: the worker (started with SIGINT held, see
    :mod:`commsim.core.interrupts`) ignores it and lets the parent decide (the parent exits 130 and stops
    its workers).  A parent that went away -- or closed the pipe halfway through a message -- ends the worker
    quietly: it has nobody left to report to."""
    worker_ignores_interrupts()
    with contextlib.suppress(EOFError, OSError):
        _serve(conn)


def _serve(conn) -> None:
    """The worker's loop: one job (a pickled protocol and share, and the party) at a time; None ends it."""
    while True:
        job = conn.recv()
        if job is None:
            return
        payload, party = job
        try:
            protocol, share = pickle.loads(payload)
            gen = protocol.program(party, share)
            value = None
            while True:
                try:
                    act = gen.send(value) if value is not None else next(gen)
                except StopIteration as stop:
                    conn.send(("done", pickle.dumps(stop.value)))
                    break
                value = None
                if isinstance(act, Send):
                    if not isinstance(act.bits, Bits):
                        conn.send(("bad", f"{type(act.bits).__name__} under {act.label!r}"))
                        break
                    conn.send(("send", act.label, act.bits.to_bytes(), len(act.bits)))
                elif isinstance(act, (Receive, Flip)):   # a message or coins: both come from the parent
                    conn.send(("recv", act.label) if isinstance(act, Receive) else
                              ("flip", act.label, act.count, act.public))
                    kind, data, length = conn.recv()
                    if kind == "abort":
                        break
                    value = Bits(data, length)
                else:
                    conn.send(("bad", repr(act)))
                    break
        except (EOFError, BrokenPipeError, ConnectionResetError):  # the parent closed the pipe: nothing to report to
            raise
        except Exception:  # report, never hang the parent
            conn.send(("error", traceback.format_exc()))


class _RemoteParty:
    def __init__(self, conn, party: str):
        self.conn, self.party, self.output = conn, party, None

    def step(self, value: Bits | None):
        if value is not None:
            self.conn.send(("msg", value.to_bytes(), len(value)))
        msg = self.conn.recv()
        kind = msg[0]
        if kind == "send":
            return Send(msg[1], Bits(msg[2], msg[3]))
        if kind == "recv":
            return Receive(msg[1])
        if kind == "flip":
            return Flip(msg[1], msg[2], msg[3])
        if kind == "done":
            self.output = pickle.loads(msg[1])
            return _DONE
        if kind == "bad":
            raise ProtocolError(f"{self.party} yielded a non-message: {msg[1]}")
        raise ProtocolError(f"{self.party} failed in its own process:\n{msg[1]}")


class AuditSession:
    """Two worker processes (spawn), reused across runs; use as a context manager."""

    def __init__(self):
        ctx = mp.get_context("spawn")
        self._conns, self._procs, self._mid_run = {}, {}, False
        try:
            with interrupts_held():   # the workers start with Ctrl-C held; one that comes meanwhile is raised after
                for party in ("alice", "bob"):
                    parent, child = ctx.Pipe()
                    proc = ctx.Process(target=_worker, args=(child,), daemon=True, name=f"commsim-{party}")
                    proc.start()
                    child.close()
                    self._conns[party], self._procs[party] = parent, proc
        except BaseException:
            self.close(force=True)
            raise

    def run(self, protocol: Protocol, alice_share, bob_share, *,
            max_rounds: int = DEFAULT_MAX_ROUNDS, coins: CoinSource | None = None) -> RunResult:
        shares = {"alice": alice_share, "bob": bob_share}
        self._mid_run = True   # until the run ends: a run left by an exception (Ctrl-C) leaves workers mid-program
        for party in ("alice", "bob"):
            self._conns[party].send((pickle.dumps((protocol, shares[party])), party))
        parties = {p: _RemoteParty(self._conns[p], p) for p in ("alice", "bob")}
        try:
            result = _schedule(parties, protocol.output_party, max_rounds, coins)
        except ProtocolError:
            self.close(force=True)  # a worker may be mid-program; start afresh next time
            self.__init__()
            raise
        self._mid_run = False
        return result

    def close(self, force: bool = False) -> None:
        """Stop the workers: ask them to end -- or, with ``force`` or after a run that did not end (a worker
        may be in the middle of a program, waiting for a message that will never come), terminate them."""
        force = force or self._mid_run
        for party, conn in self._conns.items():
            if force:
                self._procs[party].terminate()
            else:
                try:
                    conn.send(None)
                except (OSError, BrokenPipeError):
                    pass
            self._procs[party].join(timeout=2)
            if self._procs[party].is_alive():
                self._procs[party].terminate()
            conn.close()

    def __enter__(self) -> "AuditSession":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(force=exc_type is not None)  # after an error or Ctrl-C a worker may be mid-program
