"""The position schemes inside the attention (issue 25, item 3): RoPE's rounded rotation and ALiBi's rounded bias,
checked by hand; the spec keys ``rope=true,rope_base=B``, ``alibi=true``, ``positions=0`` (NoPE); their errors;
save and load."""
from __future__ import annotations

import math

import numpy as np
import pytest

from commsim.contract.arithmetic import arithmetic_for
from commsim.core.errors import InputError
from commsim.core.precision import FixedPoint, FloatFormat
from commsim.plugins import load_plugins, make_model
from protocols.models.attention import AttentionLayer, random_layer
from protocols.models.attention_positions import alibi_bias, alibi_slopes, rotate


def test_rope_rotation_by_hand_in_fixed_point():
    ar = arithmetic_for(FixedPoint(8, 4))        # steps of 1/16
    u = ar.from_values(np.array([1.0, 0.5]))[None, None, None, :]   # one head of width 2: (u', u'') = (1, 1/2)
    out = ar.to_values(rotate(ar, u, [1], base=10000.0))[0, 0, 0]
    c, s = math.floor(math.cos(1) * 16) / 16, math.floor(math.sin(1) * 16) / 16     # [cos 1], [sin 1] (down)
    want = [math.floor((1.0 * c - 0.5 * s) * 16) / 16, math.floor((0.5 * c + 1.0 * s) * 16) / 16]
    assert out.tolist() == want
    assert ar.to_values(rotate(ar, u, [0], base=10000.0)).reshape(-1).tolist() == [1.0, 0.5]   # position 0: identity


def test_alibi_bias_by_hand():
    ar = arithmetic_for(FixedPoint(8, 2))
    bias = ar.to_values(alibi_bias(ar, (0.5, 0.3), [0, 2, 3], query=3))
    assert bias.tolist() == [[-1.5, -0.5, 0.0], [math.floor(-0.9 * 4) / 4, math.floor(-0.3 * 4) / 4, 0.0]]
    assert alibi_slopes(4) == (0.25, 0.0625, 0.015625, 0.00390625)


def test_spec_keys_build_the_schemes():
    load_plugins()
    model = make_model("attention:rope=true,rope_base=100,heads=2,width=4", vocab_size=3, seq_len=6)
    assert model.config.rope and model.config.rope_base == 100.0 and model.config.alibi is None
    model = make_model("attention:alibi=true,heads=4,positions=0", vocab_size=3, seq_len=6)
    assert model.config.alibi == alibi_slopes(4) and not model.config.rope and model.position_table is None
    for spec, message in (("attention:rope=true,width=3", "even head width"),
                          ("attention:rope_base=100", "rope_base= needs rope=true"),
                          ("attention:rope=maybe", "rope")):
        with pytest.raises(InputError, match=message):
            make_model(spec, vocab_size=3, seq_len=6)


def test_alibi_needs_one_slope_per_head():
    model = random_layer(FloatFormat("float32"), vocab=3, positions=4, heads=2, width=2)
    with pytest.raises(InputError, match="3 slopes for 2 heads"):
        model.alibi = (1.0, 2.0, 3.0)


def test_rope_and_alibi_need_the_query_position():
    model = random_layer(FixedPoint.with_bits(8), vocab=3, positions=None, heads=1, width=2)
    model.config = model.config.replace(rope=True, alibi=(0.5,))
    x = model.query_embedding(np.array([1]), 2)
    with pytest.raises(ValueError, match="query position"):
        model.queries_of(x)
    with pytest.raises(ValueError, match="query position"):
        model.scan(np.array([[0, 1]]), np.array([0, 1]), model.queries_of(x, 2))


def test_save_and_load_keep_the_scheme(tmp_path):
    model = random_layer(FixedPoint.with_bits(10), vocab=3, positions=None, heads=2, width=4, seed=1)
    model.config = model.config.replace(rope=True, rope_base=500.0, alibi=(0.25, 0.125))
    model.save(tmp_path / "layer.npz")
    loaded = AttentionLayer.load(tmp_path / "layer.npz")
    assert (loaded.rope, loaded.rope_base, loaded.alibi) == (True, 500.0, (0.25, 0.125))
    tokens = np.random.default_rng(0).integers(0, 3, size=(8, 6))
    assert np.array_equal(loaded.forward_rep(tokens), model.forward_rep(tokens))
