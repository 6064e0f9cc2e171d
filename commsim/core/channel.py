"""Messages and transcripts: what crossed the channel, bit for bit."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Iterable

from commsim.core.bits import Bits
from commsim.core.errors import InputError

PARTIES = ("alice", "bob")


def other_party(name: str) -> str:
    if name not in PARTIES:
        raise ValueError(f"unknown party {name!r}; parties are 'alice' and 'bob'")
    return "bob" if name == "alice" else "alice"


@dataclass(frozen=True)
class Message:
    """One message: its exact bits, who sent it to whom, a label, and its round (1-based).

    A round is a maximal run of consecutive messages from the same sender.
    """

    sender: str
    receiver: str
    label: str
    bits: Bits
    round: int

    @property
    def length(self) -> int:
        return len(self.bits)

    def to_dict(self) -> dict:
        return {"sender": self.sender, "receiver": self.receiver, "label": self.label,
                "round": self.round, "length": len(self.bits), "bits": str(self.bits)}

    @classmethod
    def from_dict(cls, d: dict) -> "Message":
        bits = Bits.from_str(d["bits"])
        if len(bits) != d["length"]:
            raise ValueError(f"message {d['label']!r}: length {d['length']} but {len(bits)} bits")
        return cls(d["sender"], d["receiver"], d["label"], bits, int(d["round"]))


@dataclass(frozen=True)
class CoinDraw:
    """Coins the runner handed out: ``bits`` at positions ``offset ..`` of ``stream`` ("public", or the
    drawing party's private stream "alice"/"bob"), first asked for by ``party`` under ``label``.

    Coins are part of the record, not of the communication: they count for no message bits."""

    stream: str
    party: str
    label: str
    offset: int
    bits: Bits

    def to_dict(self) -> dict:
        return {"stream": self.stream, "party": self.party, "label": self.label, "offset": self.offset,
                "length": len(self.bits), "bits": str(self.bits)}

    @classmethod
    def from_dict(cls, d: dict) -> "CoinDraw":
        bits = Bits.from_str(d["bits"])
        if len(bits) != d["length"]:
            raise ValueError(f"coins {d['label']!r}: length {d['length']} but {len(bits)} bits")
        return cls(d["stream"], d["party"], d["label"], int(d["offset"]), bits)


@dataclass(frozen=True)
class Transcript:
    """The ordered messages of one protocol run, and the coins it drew (empty for a deterministic run)."""

    messages: tuple[Message, ...] = field(default_factory=tuple)
    coins: tuple[CoinDraw, ...] = field(default_factory=tuple)

    @classmethod
    def build(cls, items: Iterable[tuple[str, str, Bits]], coins: Iterable[CoinDraw] = ()) -> "Transcript":
        """From (sender, label, bits) triples in order; receivers and rounds are derived."""
        msgs: list[Message] = []
        for sender, label, bits in items:
            rnd = 1 if not msgs else msgs[-1].round + (msgs[-1].sender != sender)
            msgs.append(Message(sender, other_party(sender), label, bits, rnd))
        return cls(tuple(msgs), tuple(coins))

    @property
    def coin_bits(self) -> dict[str, int]:
        """How many coins each stream gave (public, alice, bob): the randomness, not the communication."""
        out = {"public": 0, "alice": 0, "bob": 0}
        for c in self.coins:
            out[c.stream] += len(c.bits)
        return out

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self):
        return iter(self.messages)

    @property
    def total_bits(self) -> int:
        return sum(len(m.bits) for m in self.messages)

    @property
    def bits_by_direction(self) -> dict[str, int]:
        out = {"alice_to_bob": 0, "bob_to_alice": 0}
        for m in self.messages:
            out[f"{m.sender}_to_{m.receiver}"] += len(m.bits)
        return out

    @property
    def rounds(self) -> int:
        return self.messages[-1].round if self.messages else 0

    @property
    def is_one_way(self) -> bool:
        """At most one sender spoke (the papers' one-way protocols: Alice speaks, once)."""
        return len({m.sender for m in self.messages}) <= 1

    def bits_by_label(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for m in self.messages:
            out[m.label] = out.get(m.label, 0) + len(m.bits)
        return out

    def digest(self) -> str:
        """A hash of the exact messages (senders, labels and bits): equal messages, equal digests (the
        coins are not hashed: a digest compares what crossed the channel)."""
        h = hashlib.blake2b(digest_size=16)
        for m in self.messages:
            h.update(f"{m.sender}|{m.label}|{len(m.bits)}|".encode())
            h.update(m.bits.to_bytes())
        return h.hexdigest()

    def to_dict(self) -> dict:
        return {"messages": [m.to_dict() for m in self.messages], "total_bits": self.total_bits,
                "bits_by_direction": self.bits_by_direction, "rounds": self.rounds,
                "one_way": self.is_one_way, "coins": [c.to_dict() for c in self.coins],
                "coin_bits": self.coin_bits}

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: dict) -> "Transcript":
        return cls(tuple(Message.from_dict(m) for m in d["messages"]),
                   tuple(CoinDraw.from_dict(c) for c in d.get("coins", ())))

    @classmethod
    def from_json(cls, text: str) -> "Transcript":
        """The transcript a :meth:`to_json` text holds; text that is not one (not JSON, nested past the parser's
        stack, or missing a message's fields) is an :class:`InputError` naming ``text``."""
        try:
            return cls.from_dict(json.loads(text))
        except (ValueError, RecursionError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"text is not a transcript's JSON ({type(exc).__name__}: {str(exc)[:200]})",
                             "text") from None
