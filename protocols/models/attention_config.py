"""The shape and semantics of a one-layer attention, without weights (:class:`AttentionConfig`).

:class:`~protocols.models.attention.AttentionLayer` holds one and reads its shape through it; the attention
exchange's message plan (:mod:`protocols.simulators.attention`) reads only this object, so ``commsim budget``
plans from a config built from sizes exactly what ``commsim run`` executes on a layer.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from commsim.contract import InputError, arithmetic_for
from commsim.core.precision import FixedPoint, FormatError, NumberFormat

__all__ = ["DIVISIONS", "AttentionConfig"]

#: the division semantics (:mod:`protocols.models.attention`): one rounding of U / Z, or each weight [e_i / Z] first
DIVISIONS = ("once", "per-weight")


@dataclass(frozen=True)
class AttentionConfig:
    """A one-layer attention's shape and semantics, without weights: H heads of width m, the embedding width
    d, the number format (p = :attr:`precision`), whether the query attends to itself, the coordinates of
    x_N psi reads (``residual``; None: no residual path), the query position (None: the last), the
    division semantics and the position scheme inside the attention (``rope``: rotary q/k with base
    ``rope_base``, of the first ``rope_dims`` coordinates of each head (None: all); ``alibi``: one slope per head; :mod:`protocols.models.attention_positions`).  :class:`AttentionLayer` holds one (its shape attributes read through it); the
    attention exchange's message plan reads only this object, so ``commsim budget`` plans from a config
    built from sizes (:meth:`fixed`) exactly what ``commsim run`` executes.  ``dim`` may be None for a
    shape that does not know d (then x_N is not a one-way option).  ``message``: the coordinates of x_N that
    determine it at its position (None: all d of them) -- a coordinate both parties know (a folded model's
    constant 1) or one the receiver computes exactly from the others (a stored residual stream's norm) is not
    sent; :attr:`message_dim` is the width of x_N as a message, the d of the one-way count."""

    heads: int
    width: int
    format: NumberFormat
    dim: int | None = None
    attend_self: bool = True
    residual: tuple[int, ...] | None = None
    query: int | None = None
    division: str = "once"
    rope: bool = False
    rope_base: float = 10000.0
    rope_dims: int | None = None
    alibi: tuple[float, ...] | None = None
    message: tuple[int, ...] | None = None
    arithmetic: object = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.division not in DIVISIONS:
            raise InputError(f"division must be one of {', '.join(DIVISIONS)}; got {self.division!r}", "model")
        if min(self.heads, self.width, 1 if self.dim is None else self.dim) < 1:
            raise InputError("heads, width and dim must be at least 1")
        if self.rope and (self.width % 2 or not self.rope_base > 1):
            raise InputError(f"rope rotates the two halves of each head: it needs an even head width (got "
                             f"{self.width}) and a base above 1 (got {self.rope_base})", "model")
        if self.rope_dims is not None and (isinstance(self.rope_dims, bool) or not isinstance(self.rope_dims, int)
                                           or self.rope_dims % 2 or not 2 <= self.rope_dims <= self.width):
            raise InputError(f"rope_dims (the rotated coordinates of each head) must be even, in [2, {self.width}]; "
                             f"got {self.rope_dims!r}", "model")
        if self.alibi is not None:
            object.__setattr__(self, "alibi", tuple(float(a) for a in self.alibi))
            if len(self.alibi) != self.heads:
                raise InputError(f"alibi has {len(self.alibi)} slopes for {self.heads} heads", "model")
        if self.message is not None:
            object.__setattr__(self, "message", tuple(int(i) for i in self.message))
            if self.dim is None or not self.message or not all(0 <= i < self.dim for i in self.message):
                raise InputError(f"message must be coordinates in 0..d - 1 of x_N; got {self.message}", "model")
        object.__setattr__(self, "arithmetic", arithmetic_for(self.format))

    @classmethod
    def fixed(cls, heads: int, width: int, precision: int, frac: int | None = None, **kw) -> "AttentionConfig":
        """The papers' layer at p-bit fixed point (``frac`` fraction bits, default p // 2, as
        ``attention:precision=p`` builds it); a bad precision is an InputError naming ``precision``."""
        try:
            fmt = FixedPoint.with_bits(int(precision), frac)
        except FormatError as exc:
            raise InputError(f"the attention layer's numbers: {exc}", "precision") from None
        return cls(int(heads), int(width), fmt, **kw)

    def replace(self, **changes) -> "AttentionConfig":
        """The same shape with ``changes`` (validated again)."""
        return replace(self, **changes)

    @property
    def precision(self) -> int:
        """p: bits per number."""
        return self.format.bits

    @property
    def residual_width(self) -> int:
        """How many coordinates of x_N psi reads (0: no residual path)."""
        return 0 if self.residual is None else len(self.residual)

    @property
    def message_dim(self) -> int | None:
        """The width of x_N as a message: the coordinates that determine it (``message``), else d."""
        return self.dim if self.message is None else len(self.message)

    def query_position(self, seq_len: int) -> int:
        """The position the decision is read at (``query``, default the last)."""
        if self.query is None:
            return seq_len - 1
        pos = self.query if self.query >= 0 else seq_len + self.query
        if not 0 <= pos < seq_len:
            raise InputError(f"query position {self.query} is outside a sequence of length {seq_len}", "model")
        return pos

    def check_input(self, seq_len: int, tokens=None) -> None:
        """Refuse a length the shape cannot attend over (a layer adds its tables' checks)."""
        if seq_len < 1:
            raise InputError("the sequence is empty")
        if not self.attend_self and seq_len == 1:
            raise InputError("with self=0 a sequence of length 1 leaves nothing to attend to", "model")


class FromConfig:
    """A layer attribute read through its :class:`AttentionConfig` (``layer.config``); a ``settable`` one may be set
    after construction (the spec keys do), which replaces the config with one that has the new value."""

    def __init__(self, doc: str, *, settable: bool = False):
        self.__doc__, self.settable, self.name = doc, settable, ""

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, layer, owner=None):
        return self if layer is None else getattr(layer.config, self.name)

    def __set__(self, layer, value) -> None:
        if not self.settable:
            raise AttributeError(f"{self.name} is read from the layer's config")
        layer.config = layer.config.replace(**{self.name: value})
