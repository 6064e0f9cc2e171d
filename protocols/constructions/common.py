"""What the constructions share: grid arithmetic, sizing a fixed-point format, reporting sizes."""
from __future__ import annotations

import math

import numpy as np

from commsim.contract import InputError
from commsim.core.precision import FixedPoint, NumberFormat

__all__ = ["grid_ceil", "fixed_format", "sizes", "require_fixed", "ConstructionError", "step_psi",
           "no_protocol_reason"]


class BlankAppended:
    """A Match construction whose input is the residues with the blank token (= M, ``info["modulus"]``) appended
    as the last position: the softmax's floor ([SHT23]'s Match2 trick; commsim's Match3 unit reuses it)."""

    @property
    def blank(self) -> int:
        """The blank token (= M) appended as the last position."""
        return self.info["modulus"]

    def with_blank(self, z: np.ndarray) -> np.ndarray:
        """Residues (B, N) -> model input (B, N + 1): the blank appended."""
        z = np.atleast_2d(np.asarray(z, dtype=np.int64))
        return np.concatenate([z, np.full((z.shape[0], 1), self.blank, dtype=np.int64)], axis=1)


class ConstructionError(InputError):
    """A construction cannot be built with the parameters given (the message says which)."""


def grid_ceil(x: float, frac: int) -> float:
    """The smallest multiple of 2^-frac that is >= x."""
    return math.ceil(x * 2 ** frac - 1e-9) / 2 ** frac


def fixed_format(frac: int, max_abs: float) -> FixedPoint:
    """The narrowest fixed-point format with ``frac`` fraction bits whose range holds +-max_abs."""
    int_bits = max(1, math.ceil(math.log2(max_abs + 2 ** -frac + 1e-12)) + 1) if max_abs > 0 else 1
    return FixedPoint(frac + int_bits + 1, frac)


def require_fixed(fmt: NumberFormat, kind: str) -> FixedPoint:
    """The format, if it is binary fixed point (the constructions are built and verified in it)."""
    if not isinstance(fmt, FixedPoint):
        raise ConstructionError(f"{kind} is built and verified in binary fixed point (precision=P[,frac=F]); "
                                f"{fmt.name} is not supported", "model")
    return fmt


def sizes(model, parameter_count: int) -> dict:
    """Width, precision and total sizes in bits of a construction."""
    p = int(model.precision)
    m = int(model.width)
    H = int(getattr(model, "heads", 1))
    return {"width": m, "heads": H, "embedding_dim": int(getattr(model, "dim", getattr(model, "embedding_dim", 0))),
            "precision": p, "width_bits": m * p * H, "parameter_count": int(parameter_count),
            "parameter_bits": int(parameter_count) * p}


def step_psi(codes: int, classes: list[list[int]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """A two-layer ReLU MLP reading ``codes`` coordinates that are each <= 1/4 (a 0 bit) or
    >= 1/2 (a 1 bit) and scoring every class by how many bits agree with its code.

    Layer 1: ``relu(4 o - 1) - relu(4 o - 2)`` is exactly 0 or 1 per bit (two units per bit);
    layer 2: class c scores ``#zeros(c) + sum_j (2 c_j - 1) step_j``: ``codes`` for the class whose
    code matches, at most ``codes - 1`` for every other, so the argmax is the decoded class."""
    W1 = np.zeros((2 * codes, codes))
    b1 = np.zeros(2 * codes)
    for j in range(codes):
        W1[2 * j, j], b1[2 * j] = 4.0, -1.0
        W1[2 * j + 1, j], b1[2 * j + 1] = 4.0, -2.0
    W2 = np.zeros((len(classes), 2 * codes))
    b2 = np.zeros(len(classes))
    for c, bits in enumerate(classes):
        b2[c] = sum(1 for bit in bits if bit == 0)
        for j, bit in enumerate(bits):
            sign = 1.0 if bit else -1.0
            W2[c, 2 * j], W2[c, 2 * j + 1] = sign, -sign
    return [(W1, b1), (W2, b2)]


def no_protocol_reason(kind: str, task: str) -> str:
    """Why no one-layer protocol wraps a two-layer construction (Lemma 5 of [BHBK24]), and where the numbers are."""
    return (f"{kind} is a two-layer transformer ({task}); the attention protocol (Theorem 4 of [BHBK24]) simulates "
            f"one layer only, and no protocol of that kind exists for two layers: for every balanced partition "
            f"some two-layer width-O(log N) transformer needs >= N/2 bits of communication (Lemma 5 and Corollary "
            f"13.1, Appendix F.4 of [BHBK24]); `commsim separate two-layers` computes that communication matrix's "
            f"rank and fooling set on random balanced partitions")
