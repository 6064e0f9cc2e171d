"""Messages as exact bit strings: :class:`Bits`, unsigned and signed integers packed at a fixed width (one number
or many), and the per-instance message rows and digests a batch path keys transcripts by."""
from commsim.core.bits import Bits, pack_uints, unpack_uints
from commsim.core.digests import message_rows, row_digests
from commsim.core.sums import pack_count, pack_signed, unpack_count, unpack_signed

__all__ = ["Bits", "message_rows", "pack_count", "pack_signed", "pack_uints", "row_digests", "unpack_count",
           "unpack_signed", "unpack_uints"]
