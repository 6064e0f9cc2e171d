"""Directed 3-Cycle in one higher-order graph unit of width 1 (commsim's own construction).

The slides of [SHT23] say a higher-order graph unit solves Directed 3-Cycle efficiently without defining it;
commsim defines the unit (:class:`~protocols.models.pair_attention.PairGraphAttention`: node i attends over the
pairs (j, k), the logit reads the triangle's edges X_ij, X_jk, X_ki, a sink joins the softmax) and builds it
with explicit weights, the same at every N:

* every map W = 0, the value biases b_V1 = b_V2 = 1 (so v_jk = 1 for every pair), the query and key biases 0
  (so the trilinear part of every logit is 0);
* beta = 4: a pair's logit is 4·(X_ij + X_jk + X_ki), 12 exactly on a directed triangle through i, at most 8
  otherwise; the sink's logit sigma = 10 and value 0;
* fixed point with F = 2 fraction bits: e = [exp(-2)] = floor(0.135·4) = 0, so every logit 2 or more below
  the maximum gets weight exactly 0.  With a triangle through i the maximum is 12 and only the triangle pairs
  count: o_i = U/Z = 1 exactly; without one the sink (10) is the maximum alone: o_i = 0;
* node i answers [o_i - 1/2] > 0.

So the unit is exact on every loopless digraph, at every N, with m = 1 and p = 8 (the range must hold 12:
FixedPoint(8, 2) reaches 31.75).  Self-loops are outside the task (a loop at i would score the pair (i, i) 3).
"""
from __future__ import annotations

import numpy as np

from commsim.core.precision import FixedPoint, NumberFormat
from protocols.constructions.common import ConstructionError, require_fixed
from protocols.models.pair_attention import PairGraphAttention

__all__ = ["CYCLE3_FORMAT", "BETA", "SIGMA", "build_cycle3_pair"]

#: the narrowest format the construction is exact in: F = 2 (exp(-2) rounds to 0), range above 12
CYCLE3_FORMAT = FixedPoint(8, 2)
BETA, SIGMA = 4.0, 10.0


def build_cycle3_pair(nodes: int, *, fmt: NumberFormat | None = None,
                      spec: str = "construct:3cycle-pair") -> PairGraphAttention:
    """The unit for digraphs on ``nodes`` nodes (module docstring); ``fmt`` must keep F = 2 and hold 12."""
    if nodes < 1:
        raise ConstructionError(f"construct:3cycle-pair needs N >= 1 nodes, got {nodes}", "model")
    fmt = require_fixed(fmt or CYCLE3_FORMAT, "construct:3cycle-pair")
    if fmt.frac != 2 or fmt.max_value < 3 * BETA:
        raise ConstructionError(f"construct:3cycle-pair is exact with frac=2 and a range holding 12 (precision >= 7); "
                                f"got {fmt.name}", "model")
    zero, m = np.zeros((nodes, 1)), 1
    maps = {"Q": (zero, np.zeros(m)), "K1": (zero, np.zeros(m)), "K2": (zero, np.zeros(m)),
            "V1": (zero, np.ones(m)), "V2": (zero, np.ones(m))}
    info = {"construction": "commsim's higher-order graph unit (pairs (j, k), logit reading X_ij, X_jk, X_ki, a sink)",
            "task": "Directed 3-Cycle at every node", "nodes": nodes, "width": m, "precision": fmt.bits,
            "format": fmt.name, "beta": BETA, "sigma": SIGMA}
    return PairGraphAttention(fmt, maps, BETA, SIGMA, np.ones(m), -0.5, spec=spec, info=info)
