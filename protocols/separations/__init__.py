"""Both halves of a separation, over a range of sequence lengths (``commsim separate TASK``).

One file per separation; each builds the construction for every N in the range, verifies it
(exhaustively when the inputs are few, else on seeded samples), measures its size, and sets it
against the lower bound the *other* architecture must meet (:mod:`protocols.separations.base`).

* ``idxl``   one-layer attention of width O(log N) (Theorem 1) vs recurrent m p >= N (Theorem 3).
* ``dyck22`` a recurrence of 3 state bits (the Dyck-(2,2) automaton) vs one-layer attention,
             N - 1 bits on the odd/even split (Lemma 1), mH >= (N - 1)/(3(p + log N)) (Theorem 5).
* ``eq``     two-layer attention of width O(log N) (Theorem 6) vs recurrent m p >= N/2
             (Theorem 11) and one-layer attention 3m(p + log N)H >= N/2 (Theorem 12).
* ``nstnb``  nearest neighbour in two attention layers of width O(log N) (Theorem 7) vs recurrent
             m p >= N/2 through DISJ -> MQAR (Theorem 8).
* ``disj``   disjointness as a threshold of 2-sparse features in two layers (Theorem 13) vs recurrent
             and one-layer attention >= N/2 bits (DISJ, Fact 1).
* ``qsa``    q-sparse averaging in one attention layer of width O(q log N) ([SHT23]) vs recurrent
             state bits >= N - q and the one-layer bound min(d p, (2m + 1) p H) >= q (``disj-qsa``; the
             query attends to itself).
* ``3cycle`` Directed 3-Cycle in one higher-order graph unit of width 1 (commsim's construction) vs graph
             transformers' L·H·m·p >= (n^2 - 2)/(4n) on N = 3n nodes ([SHT23], ``disj-3cycle``).
* ``match3`` Match3 in one third-order attention unit (commsim's weights for [SHT23]'s claim) vs one-layer
             attention 3m(p + log N)H >= n on N = 2n + 1 tokens (``disj-match3``).
* ``two-layers`` Lemma 5 / Corollary 13.1: the two-layer model whose communication matrix, on any
             balanced partition, has full rank 2^(N/2): no one-layer-style protocol simulates two layers.
"""
from __future__ import annotations

from protocols.separations.base import lengths
from protocols.separations.cycle3 import Cycle3Separation
from protocols.separations.disj import DisjSeparation
from protocols.separations.dyck22 import DyckSeparation
from protocols.separations.eq import EqSeparation
from protocols.separations.idxl import IdxlSeparation
from protocols.separations.match3 import Match3Separation
from protocols.separations.nstnb import NstNbSeparation
from protocols.separations.qsa import QsaSeparation
from protocols.separations.two_layers import TwoLayerSeparation

__all__ = ["SEPARATIONS", "register", "lengths"]

SEPARATIONS = [IdxlSeparation(), DyckSeparation(), EqSeparation(), NstNbSeparation(), DisjSeparation(),
               QsaSeparation(), TwoLayerSeparation(), Cycle3Separation(),
               Match3Separation()]


def register(registry) -> None:
    """Register every separation (``commsim separate``); the package's own entry point calls it."""
    for sep in SEPARATIONS:
        registry.register("separation", sep.name, sep, sep.description)
