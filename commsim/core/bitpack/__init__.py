"""The vectorized kernels behind :func:`commsim.core.bits.pack_uints` and :func:`~commsim.core.bits.unpack_uints`
for widths that are not a whole number of bytes, one concept per module:

- :mod:`~commsim.core.bitpack.tree`: values merged in their container lanes, level by level, into fields of
  whole bytes or 64-bit lanes (a multiply per level where the merged field still fits the lane);
- :mod:`~commsim.core.bitpack.windows`: any field written as overlapping lane-sized byte windows, each
  holding exactly the stream's bits;
- :mod:`~commsim.core.bitpack.bytegroups`: widths 5 and 7, eight values (whole bytes) merged in one 64-bit lane
  read big-endian;
- :mod:`~commsim.core.bitpack.spread`: fields too wide for a window, spread over whole 64-bit words;
- :mod:`~commsim.core.bitpack.small`: short messages as a bit matrix (fewer numpy calls);
- :mod:`~commsim.core.bitpack.lanes`: lane types and the scratch arrays the kernels reuse.
"""
from commsim.core.bitpack.lanes import LITTLE, lane_bits
from commsim.core.bitpack.spread import pack_spread, unpack_spread
from commsim.core.bitpack.tree import pack_tree, tree_plan, unpack_tree

__all__ = ["LITTLE", "lane_bits", "pack_spread", "pack_tree", "tree_plan", "unpack_spread", "unpack_tree"]
