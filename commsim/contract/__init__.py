"""The contract between the engine and its plugins -- the one door through which a plugin (``protocols`` or a third
party's) reaches the engine, besides the top-level API (:mod:`commsim`), the theory (:mod:`commsim.theory`) and the
number formats (:mod:`commsim.core.precision`).

By concept: the values that pass between them (:mod:`~commsim.contract.values`), what a simulator
(:mod:`~commsim.contract.simulator`) and a reduction (:mod:`~commsim.contract.reduction`) implement, a
``cc-protocol``'s base types (:mod:`~commsim.contract.cc`), and what their code is made of: party programs
(:mod:`~commsim.contract.parties`), messages as bits (:mod:`~commsim.contract.bits`), exact arithmetic
(:mod:`~commsim.contract.arithmetic`), errors (:mod:`~commsim.contract.errors`), size limits
(:mod:`~commsim.contract.limits`), loading a user's file (:mod:`~commsim.contract.loading`), the effective-precision
search (:mod:`~commsim.contract.effective`).  Every public name is importable from here."""
from commsim.contract.arithmetic import Dense, FixedArithmetic, Quantizer, arithmetic_for, label_dtype, sigmoid
from commsim.contract.bits import (Bits, message_rows, pack_count, pack_signed, pack_uints, row_digests, unpack_count,
                                   unpack_signed, unpack_uints)
from commsim.contract.cc import CommunicationProtocol, RandomizedProtocol
from commsim.contract.effective import search_width
from commsim.contract.errors import InputError, InternalError, ModelError, NotApplicable, ProblemInputError
from commsim.contract.limits import (MAX_EXHAUSTIVE_BITS, MAX_SEQUENCE_LENGTH, check_memory, check_size,
                                     rate_interval, show_bytes, show_size)
from commsim.contract.loading import (FORMAT_KEYS, MAX_SPEC_INT, current_directory_on_path, regular_file,
                                      user_code_failure)
from commsim.contract.parties import (CoinSource, Decision, Flip, Protocol, ProtocolError, Receive, Send, coin_array,
                                      run_protocol)
from commsim.contract.reduction import Reduction
from commsim.contract.simulator import Simulator, Vectorized
from commsim.contract.values import (ANY_PARTITION, CONTIGUOUS_PREFIX, ODD_EVEN, QUERY_ONLY, BatchResult, BatchRun,
                                     Encoded, EvaluationSet, MessagePlan, Shape, Share, Split)
from commsim.certify.types import Certificate

__all__ = [
    "ANY_PARTITION", "CONTIGUOUS_PREFIX", "ODD_EVEN", "QUERY_ONLY", "BatchResult", "BatchRun", "Encoded",
    "EvaluationSet", "MessagePlan", "Shape", "Share", "Split",
    "Simulator", "Vectorized", "Reduction", "CommunicationProtocol", "RandomizedProtocol", "Certificate",
    "CoinSource", "Decision", "Flip", "Protocol", "ProtocolError", "Receive", "Send", "coin_array", "run_protocol",
    "Bits", "message_rows", "pack_count", "pack_signed", "pack_uints", "row_digests", "unpack_count", "unpack_signed",
    "unpack_uints",
    "Dense", "FixedArithmetic", "Quantizer", "arithmetic_for", "label_dtype", "sigmoid",
    "InputError", "InternalError", "ModelError", "NotApplicable", "ProblemInputError",
    "MAX_EXHAUSTIVE_BITS", "MAX_SEQUENCE_LENGTH", "check_memory", "check_size", "rate_interval", "show_bytes",
    "show_size",
    "FORMAT_KEYS", "MAX_SPEC_INT", "current_directory_on_path", "regular_file", "user_code_failure",
    "search_width",
]
