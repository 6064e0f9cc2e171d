"""Simulators: what turns a model into party programs (registry kind ``simulator``).

``rnn_handoff`` is Theorem 2 of [BHBK24] (any recurrent model, contiguous splits, m·p bits one-way);
:mod:`protocols.simulators.attention` is one-layer attention: the exchange of Theorem 4 of [BHBK24] (any
partition) and the public-query message of [PNP24].  The package registers them itself through its own
entry point (``simulators`` in ``commsim.plugins``).
"""
from __future__ import annotations


def register(registry) -> None:
    """Register every simulator; a model's kind selects the one that ``accepts`` it (the lowest
    ``precedence`` among the selectable ones)."""
    from protocols.simulators.attention import ATTENTION_EXCHANGE, PUBLIC_QUERY
    from protocols.simulators.graph import GRAPH_EXCHANGE
    from protocols.simulators.rnn_handoff import RNN_HANDOFF
    registry.register("simulator", RNN_HANDOFF.name, RNN_HANDOFF,
                      "Hidden-state handoff (Theorem 2 of [BHBK24]): Alice sends h_t, m*p bits, one-way", arch="rnn")
    registry.register("simulator", ATTENTION_EXCHANGE.name, ATTENTION_EXCHANGE,
                      "one-layer attention: max-logit / partial-softmax exchange (Theorem 4 of [BHBK24])",
                      precedence=10, arch="attention")   # the one simulator the kind ``attention`` selects
    registry.register("simulator", PUBLIC_QUERY.name, PUBLIC_QUERY,
                      "one-layer attention, the query known to both: Alice's one-way partial softmax ([PNP24]); "
                      "chosen by the reductions that name it, never by the model's kind", precedence=20)
    registry.register("simulator", GRAPH_EXCHANGE.name, GRAPH_EXCHANGE,
                      "graph transformers over a node partition: per layer and head each party sends its nodes' "
                      "keys and values, L*H*(owned nodes)*2m*p + 2 bits ([SHT23])", arch="graph-attention")
