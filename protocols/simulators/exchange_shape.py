"""A one-layer attention known only by its sizes: what :func:`~protocols.simulators.exchange_plan.make_plan`
reads from a model, so ``commsim budget`` lays out the very message plan ``commsim run`` executes
without building weights or running anything.

The default shape is the papers' layer (Appendix D of [BHBK24], [SHT23]): the query attends to every
position, itself included; the output map reads only the attention output (no residual path from x_N);
numbers are fixed point of p bits with ``frac`` fraction bits (default p // 2, as ``attention:precision=p``
builds them); the decision is read at the task's output position.  ``make_plan`` reads: ``check_input``,
``query_position``, ``heads``, ``width``, ``precision``, ``arithmetic`` (``one_units``, ``sum_range``),
``attend_self``, ``format.name``, ``residual_width``, ``dim`` (d, default 8 as ``attention:`` builds it)
and ``division``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from commsim.core.arithmetic import FixedArithmetic
from commsim.core.errors import InputError
from commsim.core.precision import FixedPoint, FormatError

__all__ = ["LayerShape"]


@dataclass(frozen=True)
class LayerShape:
    """H heads of width m at p-bit fixed point (``frac`` fraction bits), as the exchange plan sees a layer."""

    heads: int
    width: int
    precision: int
    frac: int | None = None
    attend_self: bool = True
    residual_width: int = 0
    query: int | None = None
    dim: int | None = 8                 # d, the embedding width (the one-way plan may send x_N: d·p bits)
    division: str = "once"              # o = [U / Z], one rounding (the exchange's default semantics)
    format: FixedPoint = field(init=False)
    arithmetic: FixedArithmetic = field(init=False, repr=False)

    def __post_init__(self):
        try:
            fmt = FixedPoint.with_bits(int(self.precision), self.frac)
        except FormatError as exc:
            raise InputError(f"the attention layer's numbers: {exc}", "precision") from None
        object.__setattr__(self, "format", fmt)
        object.__setattr__(self, "arithmetic", FixedArithmetic(fmt))

    def check_input(self, seq_len: int, tokens=None) -> None:
        """Any length the layer can attend over (the shape has no position table)."""
        if seq_len < 1:
            raise InputError("the sequence is empty")
        if not self.attend_self and seq_len == 1:
            raise InputError("with self=0 a sequence of length 1 leaves nothing to attend to", "model")

    def query_position(self, seq_len: int) -> int:
        """The last position (or ``query`` when given)."""
        if self.query is None:
            return seq_len - 1
        return self.query if self.query >= 0 else seq_len + self.query

    def assumptions(self) -> dict:
        """The shape's assumptions, for ``budget --json``."""
        return {"number_format": self.format.name, "frac": self.format.frac, "attend_self": self.attend_self,
                "dim": self.dim, "division": self.division,
                "residual_width": self.residual_width,
                "query": "the task's output position",
                "text": (f"the papers' layer: the query attends to itself ({'yes' if self.attend_self else 'no'}), "
                         f"no residual path from x_N, fixed point {self.format.name} "
                         f"(p = {self.precision}, frac = {self.format.frac})")}
