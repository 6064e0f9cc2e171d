"""The recurrent architectures ``commsim budget --arch`` takes by name, and the numbers their handed-off state holds.

The hidden-state handoff (Theorem 2 of [BHBK24]) sends the whole state, ``state_units`` numbers of p bits.  What
``--width`` counts differs per architecture (the model kinds' own ``width=``/``dim=``): an LSTM of hidden size m
hands off (h, c), 2m numbers; a complex diagonal SSM of d units 2d (real and imaginary parts); linear attention
with key/value width d its d×d matrix S (+ the normaliser z, d more, with ``normalize=true``).  So the planner is
given the model's own width and counts the state as the model classes do (:class:`~protocols.models.recurrent.
RecurrentModel.state_units`), and nobody passes 2·hidden by hand.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["RecurrentArch", "RECURRENT_ARCHES"]


@dataclass(frozen=True)
class RecurrentArch:
    """One ``--arch`` name of a recurrent model: what ``--width`` means, the state's numbers for a width, and the
    options it takes (``ssm:complex=false``, ``linear-attention:normalize=true``) with their defaults."""

    name: str
    width_meaning: str
    units: Callable[[int, dict], int]
    state_text: Callable[[int, dict], str]
    options: tuple[tuple[str, bool], ...] = ()
    #: the state's numbers in the width's own letter ("2m" for an LSTM), for the handoff's m·p: Theorem 2's m
    symbol: Callable[[dict], str] = lambda o: "m"

    def state_units(self, width: int, options: dict) -> int:
        """The numbers in the state of a model of this width (``RecurrentModel.state_units``)."""
        return int(self.units(int(width), options))


RECURRENT_ARCHES = {arch.name: arch for arch in (
    RecurrentArch("rnn", "m, the numbers in the handed-off state (state units)",
                  lambda w, o: w, lambda w, o: f"state: {w} numbers"),
    RecurrentArch("elman", "m, the hidden units (state h: m numbers)",
                  lambda w, o: w, lambda w, o: f"state h: m = {w} numbers"),
    RecurrentArch("gru", "m, the hidden units (state h: m numbers)",
                  lambda w, o: w, lambda w, o: f"state h: m = {w} numbers"),
    RecurrentArch("lstm", "m, the hidden units (state (h, c): 2m numbers)",
                  lambda w, o: 2 * w, lambda w, o: f"state (h, c): 2m = 2·{w} = {2 * w} numbers",
                  symbol=lambda o: "2m"),
    RecurrentArch("ssm", "d, the diagonal units (complex, the default: 2d numbers; ssm:complex=false: d)",
                  lambda w, o: 2 * w if o["complex"] else w,
                  lambda w, o: (f"complex state h: 2d = 2·{w} = {2 * w} numbers (real and imaginary parts)"
                                if o["complex"] else f"real state h: d = {w} numbers"),
                  (("complex", True),), lambda o: "2d" if o["complex"] else "d"),
    RecurrentArch("linear-attention", "d, the key/value width (state S: d·d numbers; "
                  "linear-attention:normalize=true adds z, d more)",
                  lambda w, o: w * w + (w if o["normalize"] else 0),
                  lambda w, o: (f"state S: d·d = {w}·{w}" + (f" + z: d = {w}" if o["normalize"] else "")
                                + f" = {w * w + (w if o['normalize'] else 0)} numbers"),
                  (("normalize", False),), lambda o: "(d·d + d)" if o["normalize"] else "d·d"),
)}
