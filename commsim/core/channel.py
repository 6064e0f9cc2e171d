"""Messages and transcripts: what crossed the channel, bit for bit."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Iterable

from commsim.core.bits import Bits

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
class Transcript:
    """The ordered messages of one protocol run."""

    messages: tuple[Message, ...] = field(default_factory=tuple)

    @classmethod
    def build(cls, items: Iterable[tuple[str, str, Bits]]) -> "Transcript":
        """From (sender, label, bits) triples in order; receivers and rounds are derived."""
        msgs: list[Message] = []
        for sender, label, bits in items:
            rnd = 1 if not msgs else msgs[-1].round + (msgs[-1].sender != sender)
            msgs.append(Message(sender, other_party(sender), label, bits, rnd))
        return cls(tuple(msgs))

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
        """A hash of the exact transcript (senders, labels and bits): equal transcripts, equal digests."""
        h = hashlib.blake2b(digest_size=16)
        for m in self.messages:
            h.update(f"{m.sender}|{m.label}|{len(m.bits)}|".encode())
            h.update(m.bits.to_bytes())
        return h.hexdigest()

    def to_dict(self) -> dict:
        return {"messages": [m.to_dict() for m in self.messages], "total_bits": self.total_bits,
                "bits_by_direction": self.bits_by_direction, "rounds": self.rounds,
                "one_way": self.is_one_way}

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: dict) -> "Transcript":
        return cls(tuple(Message.from_dict(m) for m in d["messages"]))

    @classmethod
    def from_json(cls, text: str) -> "Transcript":
        return cls.from_dict(json.loads(text))
