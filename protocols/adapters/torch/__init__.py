"""Real models as commsim models: PyTorch recurrent cores and attention, one-layer Hugging Face GPT-2,
TransformerLens, and a user's own factory -- wrapped for the hidden-state handoff (Theorem 2 of
[BHBK24]) or the attention exchange (Theorem 4).

One concept per module:

* :mod:`.specs` -- the model kinds ``python:``, ``torch:``, ``hf-gpt2`` and ``tl`` (and registration);
* :mod:`.adapt` -- :func:`from_torch` (any supported torch object -> a commsim model) and
  :func:`agreement` (how closely it follows the torch module's own forward);
* :mod:`.discover` -- a user's wrapping module: the roles read from its forward (:mod:`.trace`), then verified;
* :mod:`.rnn` -- ``nn.RNN``/``nn.LSTM``/``nn.GRU`` as recurrent models;
* :mod:`.fold` -- one attention layer in folded form, the shared target of :mod:`.mha` (``nn.MultiheadAttention``,
  pre-LN blocks), :mod:`.encoder` (``nn.TransformerEncoderLayer``), :mod:`.gpt2` (Hugging Face GPT-2) and
  :mod:`.tlens` (TransformerLens);
* :mod:`.trust` -- the one agreement rule (:func:`~.trust.judge`: ``ok``, ``atol``, ``rtol``, ``max_abs_diff``,
  ``reference``, ``note``) against the user's module's own forward (the report's ``torch_agreement``), and its
  decisions (a certificate's re-check);
* :mod:`.layers` -- numpy forms of heads and pointwise layers, number formats of torch dtypes;
* :mod:`.files` -- saved torch files (:func:`load_torch_file`, :func:`save_parts`).

Precision: the module's dtype (float32 -> p = 32, bfloat16 -> 16, float64 -> 64), or ``precision=P``
(P-bit fixed point) / ``dtype=NAME`` to override.  torch is imported only when a torch object is handled.
"""
from __future__ import annotations

from protocols.adapters.torch.adapt import agreement, from_torch
from protocols.adapters.torch.files import load_torch_file, save_parts
from protocols.adapters.torch.specs import register

__all__ = ["from_torch", "agreement", "load_torch_file", "save_parts", "register"]
