"""What a plugin's party programs are made of: the :class:`Protocol` (Alice's and Bob's generator programs), its
steps (:class:`Send`, :class:`Receive`, :class:`Flip`), the runner that runs them (:func:`run_protocol`), the
coins (:class:`CoinSource`, :func:`coin_array`) and the decision rule a model's outputs are read with."""
from commsim.core.coins import CoinSource, coin_array
from commsim.core.decision import Decision
from commsim.core.party import Flip, Protocol, ProtocolError, Receive, Send
from commsim.core.runner import run_protocol

__all__ = ["CoinSource", "Decision", "Flip", "Protocol", "ProtocolError", "Receive", "Send", "coin_array",
           "run_protocol"]
