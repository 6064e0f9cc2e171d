"""The ``third-order-attention`` model kind: a random third-order attention unit
(:class:`protocols.models.pair_attention.ThirdOrderAttention`).

Spec: ``third-order-attention:width=m,dim=d,precision=P[,frac=F],seed=S`` with optional ``vocab=V`` and
``positions=N`` (default: the task's).  No simulator wraps it: its softmax runs over pairs of positions, whose
logits mix Alice's and Bob's tokens (``no_protocol_reason``); ``construct:match3-third-order`` is the explicit
unit deciding Match3.
"""
from __future__ import annotations

import numpy as np

from commsim.contract import InputError, check_memory
from commsim.core.precision import FixedPoint
from protocols.models.pair_attention import ThirdOrderAttention

#: the longest sequence a random unit is built for (its forward is N^3 logits per input)
MAX_POSITIONS = 512


def random_third_order(fmt: FixedPoint, vocab: int, positions: int, *, width: int = 2, dim: int = 4, seed: int = 0,
                       spec: str = "third-order-attention") -> ThirdOrderAttention:
    """A unit with random weights on the format's grid (normal, scaled by 1/sqrt(fan-in), rounded down)."""
    rng = np.random.default_rng(seed)
    w = lambda *shape: fmt.quantize(rng.normal(0.0, 1.0 / np.sqrt(shape[0]), size=shape))  # noqa: E731
    return ThirdOrderAttention(fmt, w(vocab, dim), w(positions, dim), w(dim, width), w(dim, width), w(dim, width),
                               w(dim, width), w(dim, width), w(width), float(fmt.quantize(np.array([0.0]))[0]),
                               spec=spec)


def make_third_order(spec, vocab_size=None, seq_len=None, **context) -> ThirdOrderAttention:
    """Model factory for ``third-order-attention:...`` (module docstring)."""
    if spec.target:
        raise InputError(f"model spec {spec.text!r}: third-order-attention takes key=value pairs only", "model")
    vocab = spec.int("vocab", vocab_size, minimum=1, maximum=1 << 16)
    positions = spec.int("positions", seq_len, minimum=1, maximum=MAX_POSITIONS)
    if vocab is None or positions is None:
        raise InputError(f"model spec {spec.text!r}: give vocab=V and positions=N (or use it with a task)", "model")
    width = spec.int("width", 2, minimum=1, maximum=1024)
    dim = spec.int("dim", 4, minimum=1, maximum=1024)
    seed = spec.int("seed", 0, minimum=0)
    fmt = spec.format(default=FixedPoint.with_bits(8))
    if not isinstance(fmt, FixedPoint):
        raise InputError(f"model spec {spec.text!r}: third-order attention computes in binary fixed point "
                         f"(precision=P[,frac=F]); {fmt.name} is not supported", "model")
    check_memory(8 * ((vocab + positions) * dim + 5 * dim * width), "model", f"the unit {spec.text!r}")
    return random_third_order(fmt, vocab, positions, width=width, dim=dim, seed=seed, spec=spec.text)


def register(registry) -> None:
    """The ``third-order-attention`` model kind."""
    registry.register("model", "third-order-attention", make_third_order,
                      "[SHT23] third-order self-attention: softmax over all pairs (j, k), Khatri-Rao keys and values "
                      "(width=m,dim=d,precision=P[,frac=F],seed=S,vocab=V,positions=N); no protocol applies")
