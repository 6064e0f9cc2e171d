"""One-layer attention as a two-party protocol: the simulators and what lessons, separations, benchmarks
and tests may use of them (this module's ``__all__``; the submodules are internal).

* :data:`ATTENTION_EXCHANGE` -- the max-logit / partial-softmax exchange, Theorem 4 of [BHBK24] (any
  partition; one-way [SHT23] when Alice holds only the query): :mod:`.exchange`;
* :data:`PUBLIC_QUERY` -- the query known to both, Alice's one-way partial softmax ([PNP24]):
  :mod:`.public_query`;
* the exchange's message plan (:func:`make_plan`, :class:`ExchangePlan`, :func:`theorem_count`, from a layer
  or its :class:`~protocols.models.attention.AttentionConfig`): :mod:`.plan`;
* its party programs (:class:`AttentionExchangeProtocol`, :func:`run_exchange`: one sequence through the
  runner): :mod:`.parties`; the same computation vectorized over a batch (:func:`simulate`): :mod:`.batch`.
"""
from __future__ import annotations

from protocols.simulators.attention.batch import simulate
from protocols.simulators.attention.exchange import (
    ATTENTION_EXCHANGE,
    AttentionExchange,
)
from protocols.simulators.attention.parties import (
    AttentionExchangeProtocol,
    run_exchange,
)
from protocols.simulators.attention.plan import (
    ExchangePlan,
    MessageSpec,
    PartitionError,
    make_plan,
    one_way_choice,
    theorem_count,
)
from protocols.simulators.attention.public_query import (
    PUBLIC_QUERY,
    PublicQueryExchange,
    PublicQueryPlan,
    candidate_count,
)

__all__ = ["ATTENTION_EXCHANGE", "AttentionExchange", "PUBLIC_QUERY", "PublicQueryExchange", "PublicQueryPlan",
           "candidate_count", "ExchangePlan", "MessageSpec", "PartitionError", "make_plan", "one_way_choice",
           "theorem_count", "AttentionExchangeProtocol", "run_exchange", "simulate"]
