"""The multi-head, prefix-running transformer computes what the one-head class computes."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.constructions.eq2 import build_eq2
from protocols.models.transformer import MultiHeadAttention


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 4), st.integers(0, 3), st.integers(0, 2 ** 16))
def test_one_head_layers_are_the_same_model(n, seed, draw):
    base = build_eq2(n, seed=seed)
    twin = MultiHeadAttention(base.token_embedding, base.position_embedding, base.layers, base.format, base.readout)
    X = np.random.default_rng(draw).integers(0, 2, (32, 2 * n))
    assert np.array_equal(base.hidden(X), twin.hidden(X))
    assert twin.parameter_count == base.parameter_count and twin.width == base.width and twin.heads == 1
