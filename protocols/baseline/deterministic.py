"""Deterministic baseline protocols for the source problems (INDEX, EQ, DISJ: Facts 1-3 of [BHBK24]).

* ``one-way``: Alice sends her whole input (n bits); Bob answers.  Matches the one-way
  bounds for INDEX and the deterministic bounds for EQ and DISJ.
* ``two-way`` (INDEX): Bob sends his index in ceil(log2 n) bits, Alice answers with a_b (1 bit):
  the ceil(log2 n) + 1 upper bound that makes INDEX easy with two-way communication.
"""
from __future__ import annotations

import numpy as np

from commsim.contract import BatchRun, Bits, CommunicationProtocol, Receive, Send, pack_uints, unpack_uints
from commsim.theory.bounds import ceil_log2


class SendEverything(CommunicationProtocol):
    """Alice sends all n input bits; Bob evaluates the function."""

    name = "one-way"
    problems = ("index", "eq", "disj")

    def alice(self, a):
        """Send all n bits."""
        yield Send("input", Bits.from_array(a))

    def bob(self, b):
        """Evaluate f(a, b) on the received input."""
        a = (yield Receive("input")).to_array()
        return self.problem.evaluate(a, b)

    def run_batch(self, A, B):
        """n bits, one round, for every instance."""
        count = len(A)
        return BatchRun(self.problem.evaluate_batch(A, B), np.full(count, self.problem.n),
                        np.zeros(count, dtype=np.int64), np.ones(count, dtype=np.int64))


class BobSendsIndex(CommunicationProtocol):
    """INDEX two-way: Bob sends b (ceil(log2 n) bits), Alice replies a_b (1 bit)."""

    name = "two-way"
    problems = ("index",)

    @property
    def index_bits(self) -> int:
        """ceil(log2 n) bits (at least 1)."""
        return max(ceil_log2(self.problem.n), 1)

    def alice(self, a):
        """Receive b, answer a_b."""
        b = int(unpack_uints((yield Receive("index")), self.index_bits)[0])
        yield Send("answer", Bits.from_array([a[b]]))

    def bob(self, b):
        """Send b, return the answer."""
        yield Send("index", pack_uints([b], self.index_bits))
        return (yield Receive("answer"))[0]

    def run_batch(self, A, B):
        """ceil(log2 n) + 1 bits in two rounds, for every instance."""
        count = len(A)
        return BatchRun(self.problem.evaluate_batch(A, B), np.ones(count, dtype=np.int64),
                        np.full(count, self.index_bits), np.full(count, 2))

