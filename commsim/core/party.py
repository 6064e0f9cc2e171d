"""Party programs and protocols.

A party program is a generator.  It yields :class:`Send` to put a bit string on
the channel and :class:`Receive` to wait for the next message addressed to it
(the ``yield`` then evaluates to a private copy of that message's bits); a randomized
program yields :class:`Flip` for coins, which the runner hands out and records.  Its
return value is the party's output.

A :class:`Protocol` builds each party's program from that party's share
alone: ``protocol.program("alice", alice_share)``.  The runner never hands a
program anything but its own share and the bits it receives.

Example::

    class SendAll(Protocol):
        name = "one-way"
        def alice(self, a):
            yield Send("input", Bits.from_array(a))
        def bob(self, b):
            a = (yield Receive("input")).to_array()
            return int(a[b])
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generator

from commsim.core.bits import Bits
from commsim.core.errors import InternalError


class ProtocolError(InternalError):
    """A protocol misbehaved: deadlock, a non-bit message, too many rounds, unread messages, or a
    batch run that disagrees with the runner (an internal fault: exit status 1)."""


@dataclass(frozen=True)
class Send:
    label: str
    bits: Bits


@dataclass(frozen=True)
class Receive:
    label: str | None = None  # what the receiver expects (checked against the message's label when given)


@dataclass(frozen=True)
class Flip:
    """Ask the runner for ``count`` fair coins (the ``yield`` evaluates to them as :class:`Bits`).

    ``public`` coins come from the shared random string both parties read (each from its start); private
    coins from the asking party's own stream.  The runner draws them from the run's seeded
    :class:`~commsim.core.coins.CoinSource` and records them in the transcript: coins are never hidden state.
    """

    label: str
    count: int
    public: bool = False


PartyProgram = Generator["Send | Receive | Flip", "Bits | None", Any]


class Protocol:
    """Base class: subclasses define ``alice(share)`` and ``bob(share)`` generators.

    ``output_party`` names the party whose return value is the protocol's output.
    Protocols must be picklable (module-level classes holding plain data) so that
    the audit mode can run each party in its own process.
    """

    name: str = "protocol"
    output_party: str = "bob"

    def alice(self, share) -> PartyProgram:  # pragma: no cover - abstract
        raise NotImplementedError

    def bob(self, share) -> PartyProgram:  # pragma: no cover - abstract
        raise NotImplementedError

    def program(self, party: str, share) -> PartyProgram:
        if party not in ("alice", "bob"):
            raise ValueError(f"unknown party {party!r}")
        return getattr(self, party)(share)
