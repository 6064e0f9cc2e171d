"""The bit codec's reference encoding and a pass through the grouping tree in small chunks, for the codec's tests
(tests/commsim/core/test_bits.py, test_bitpack_kernels.py)."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

from commsim.core.bits import pack_uints, unpack_uints


def bit_matrix(values: np.ndarray, width: int) -> np.ndarray:
    """The reference encoding, vectorized: each value's ``width`` bits, most significant first, one uint8 per bit."""
    shifts = np.arange(width - 1, -1, -1, dtype=np.uint64)
    return ((values.astype(np.uint64)[:, None] >> shifts) & np.uint64(1)).astype(np.uint8).reshape(-1)


@contextlib.contextmanager
def through_the_tree(values, width, chunk_bytes):
    """``values`` packed through the grouping tree with chunks of ``chunk_bytes`` (short messages too: not the bit
    matrix that normally takes them), checked against the bit-by-bit reference and unpacked whole; yields the
    packed bits with the small chunks still in force."""
    from commsim.core import bits as bits_module
    from commsim.core.bitpack import tree
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tree, "_CHUNK_BYTES", chunk_bytes)
        mp.setattr(bits_module, "SMALL_BITS", 0)
        packed = pack_uints(values, width)
        assert np.array_equal(np.unpackbits(packed.packed, count=len(packed)), bit_matrix(values, width))
        assert np.array_equal(unpack_uints(packed, width).astype(np.uint64), values)
        yield packed
