"""The children's kernels (protocols.models.children) against the model's own step, bit for bit: every kind, number
format and width, parents in any order, many passes with a partial last one (the pass size made small here)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from commsim.core.precision import FixedPoint, FloatFormat
from protocols.models import children
from protocols.models.trainable import random_model

VOCAB = 5

formats = st.one_of(
    st.integers(2, 24).flatmap(lambda p: st.integers(0, p - 1).map(lambda f: FixedPoint(p, f))),
    st.sampled_from(["float16", "bfloat16", "float32", "float64"]).map(FloatFormat),
)


@given(kind=st.sampled_from(["elman", "elman-relu", "lstm", "gru"]), fmt=formats, width=st.integers(1, 5),
       seed=st.integers(0, 10 ** 6), parents=st.integers(1, 6), count=st.integers(1, 60),
       order=st.sampled_from(["sorted", "random"]))
def test_the_kernels_step_every_child_as_the_model_does(kind, fmt, width, seed, parents, count, order):
    base, _, activation = kind.partition("-")
    model = random_model(base, width, fmt, vocab=VOCAB, classes=2, seed=seed, activation=activation or "tanh")
    rng = np.random.default_rng(seed)
    # parent states reached by the model itself (numbers of the format, saturated ones included)
    states = model.final_states(rng.integers(0, VOCAB, size=(parents, 1 + seed % 4)))
    states[0] = model.quantize(rng.uniform(-300, 300, size=model.state_units))
    which = rng.integers(0, parents, size=count)
    if order == "sorted":
        which.sort()
    x = rng.integers(0, VOCAB, size=count)
    terms = model._parent_terms(states)
    with pytest.MonkeyPatch.context() as patch:     # passes of 7 rows: many of them, the last one partial
        patch.setattr(children, "ROWS", 7)
        got = model._child_steps(states, terms, which, x, 3)
    expected = model.step(states[which], x, 3)
    assert got.shape == expected.shape
    assert np.array_equal(got.view(np.uint64), expected.view(np.uint64))
