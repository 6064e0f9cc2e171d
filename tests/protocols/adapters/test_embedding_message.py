"""The one-way ``embedding`` message of an attention model folded from torch is x_N at the model's own d:
no coordinate both parties know (the constant that carries the q/k/v biases; none at all without biases),
and with a stored residual stream only the stream, from which the receiver computes the attention's input
exactly (:func:`protocols.adapters.torch.fold.embedding_message_coords`).  A bias carrier the number format
cannot hold exactly is refused, naming ``precision`` (:func:`protocols.adapters.torch.fold.bias_carrier`)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
nn = torch.nn
torch.set_num_threads(1)

import commsim  # noqa: E402
from commsim.core.errors import InputError  # noqa: E402
from commsim.core.precision import FixedPoint  # noqa: E402
from protocols.adapters.torch import from_torch  # noqa: E402
from protocols.adapters.torch.mha import wrap_mha  # noqa: E402


class A(nn.Module):
    """Token + position embeddings, one nn.MultiheadAttention and a linear head (the tester's model)."""

    def __init__(self, d=1, heads=1, bias=False, vocab=64, positions=64):
        super().__init__()
        self.t, self.p = nn.Embedding(vocab, d), nn.Embedding(positions, d)
        self.a = nn.MultiheadAttention(d, heads, bias=bias, batch_first=True)
        self.h = nn.Linear(d, 2)

    def forward(self, x):
        e = self.t(x) + self.p(torch.arange(x.shape[1]))
        return self.h(self.a(e, e, e, need_weights=False)[0][:, -1])


@pytest.mark.parametrize("n, d", [(3, 1), (4, 1), (5, 2)])
def test_bias_free_one_way_message_is_d_p_so_the_failure_is_forced(n, d):
    """d·p < q: the one-way exchange sends x_N at the model's d (no constant coordinate), so the [SHT23] bound
    forces a failure and a verified collision shows it (before: d + 1 numbers, 'wrong, not forced')."""
    torch.manual_seed(0)
    r = commsim.run("disj-qsa", A(d), n=n, instances=16, precision=2)
    assert r.details["one_way_message"] == "embedding"
    assert r.bits_used == d * 2 < r.lower_bound.bits == n
    assert f"d·p = {d}·2 = {d * 2}" in r.bits_formula_text
    assert "must fail" in r.verdict()
    assert r.certificate.verified and r.certificate.kind == "collision"


def test_no_biases_no_constant_coordinate():
    torch.manual_seed(1)
    model = from_torch(A(3, bias=False), precision=8)
    assert model.dim == 3 and model.config.message is None and model.config.message_dim == 3


def _mha(d, heads, seed, scale=1.0):
    torch.manual_seed(seed)
    net = A(d, heads, bias=True, vocab=8, positions=8)
    with torch.no_grad():
        for prm in net.parameters():
            prm.mul_(scale)
    return net


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=st.integers(1, 4), heads=st.sampled_from([1, 2]), seed=st.integers(0, 10 ** 6),
       precision=st.integers(2, 10))
def test_biases_ride_on_a_constant_that_is_never_sent_and_is_exact(d, heads, seed, precision):
    """With biases: the constant coordinate is not part of the message (message_dim == d); every table row
    comes back from its message at its position; q/k/v are [W x + b] exactly (the bias not halved by a
    saturated 1) -- or, where no constant carries the biases exactly in the format, a refusal naming precision."""
    if d % heads:
        heads = 1
    net = _mha(d, heads, seed, scale=2.0)
    try:
        model = from_torch(net, vocab_size=8, seq_len=8, precision=precision)
    except InputError as exc:
        assert exc.param == "precision" and "exactly" in str(exc)
        fmt = FixedPoint.with_bits(precision)
        assert float(fmt.quantize(np.float64(1.0))) != 1.0   # only a format without 1 can refuse
        return
    assert model.config.message_dim == d and model.dim == d + 1
    codes = model.table
    for i in range(codes.shape[0]):
        rebuilt = model.embedding_from_message(model.embedding_message(codes[i]), i)
        assert np.array_equal(rebuilt, codes[i])
    # k_i and v_i against an independent computation: [W x + b] with the rounded weights and biases
    fmt, ar = model.format, model.arithmetic
    tok, pos = (fmt.quantize(e.weight.detach().double().numpy()[:8]) for e in (net.t, net.p))
    x = fmt.quantize(tok[None] + pos[:, None])                              # [[E_tok(s)] + [E_pos(i)]]
    W = fmt.quantize(net.a.in_proj_weight.detach().double().numpy())
    b = fmt.quantize(net.a.in_proj_bias.detach().double().numpy())
    k, v = model.keys_values(np.arange(8)[None].repeat(8, 0).T.copy(), np.arange(8))   # tokens (B=8, n=8)
    for which, got in ((1, k), (2, v)):
        Wx, bx = W[which * d:(which + 1) * d], b[which * d:(which + 1) * d]
        exact = np.einsum("pvd,md->vpm", x, Wx) + bx                      # (token, position, H m)
        want = fmt.quantize(exact).reshape(8, 8, heads, d // heads)
        assert np.array_equal(ar.to_values(got), want)
    # q_N: the score scale folded into W_Q and b_Q, each rounded once, then [W x + b] (a carrier c != 1 must carry
    # the rounded b_Q, not round b_Q / c on its own)
    s = 1.0 / np.sqrt(d // heads)
    Wq, bq = fmt.quantize(W[:d] * s), fmt.quantize(b[:d] * s)
    got = model.queries_of(model.table[3], 3)                                # every token at position 3
    want = fmt.quantize(x[3] @ Wq.T + bq).reshape(8, heads, d // heads)
    assert np.array_equal(ar.to_values(got), want)


def test_one_not_representable_and_no_exact_carrier_is_refused():
    """fixed2.1 holds -1, -0.5, 0, 0.5: 1 is not there; -1 carries biases b exactly unless some b is -1
    (then -b = 1 is not representable either): refused, exit 2 naming precision."""
    net = _mha(1, 1, 0)
    with torch.no_grad():
        net.a.in_proj_bias.copy_(torch.tensor([-1.0, 0.5, 0.0]))
    with pytest.raises(InputError) as exc:
        from_torch(net, vocab_size=8, seq_len=8, precision=2)
    assert exc.value.param == "precision" and "cannot hold 1" in str(exc.value)
    with torch.no_grad():
        net.a.in_proj_bias.copy_(torch.tensor([-0.5, 0.5, 0.0]))
    model = from_torch(net, vocab_size=8, seq_len=8, precision=2)
    const = model.dim - 1
    assert np.all(model.arithmetic.to_values(model.table[..., const]) == -1.0)   # the carrier, exact


def test_a_carrier_other_than_1_carries_the_rounded_scaled_query_bias():
    """fixed2.1, carrier -1: b_Q = 0.5 times the scale 1/sqrt(2) rounds (down) to 0, so q = [0 x + 0] = 0 --
    not [-[0.354]] * -1 = 0.5 (rounding b_Q / c on its own)."""
    net = _mha(2, 1, 0)
    with torch.no_grad():
        net.a.in_proj_bias.copy_(torch.tensor([0.5, 0.5, 0.0, -0.5, 0.5, 0.0]))
        net.a.in_proj_weight.zero_()
    model = from_torch(net, vocab_size=8, seq_len=8, precision=2)
    assert model.arithmetic.to_values(model.table[..., -1]).tolist() == [[-1.0] * 8] * 8
    assert np.all(model.arithmetic.to_values(model.queries_of(model.table[3], 3)) == 0.0)


def _stream_model(d=4, heads=2, seed=3):
    torch.manual_seed(seed)
    emb, pos = nn.Embedding(8, d), nn.Embedding(8, d)
    mha = nn.MultiheadAttention(d, heads, batch_first=True)
    norm, head = nn.LayerNorm(d), nn.Linear(d, 2)
    return wrap_mha(mha, emb, pos, head, FixedPoint.with_bits(16), norm=norm, residual="stream", vocab_size=8,
                    seq_len=8)


def test_stored_residual_stream_sends_the_stream_only():
    """A pre-LN block s + MHA(ln_1(s)): the table stores ln_1(s) (read by W_Q, W_K, W_V), the constant, and s
    (read by psi); x_N as a message is s alone (d numbers, not 2d + 1) and the receiver rebuilds ln_1(s)
    exactly from it at the public position; the one-way exchange still reproduces the model bit for bit."""
    model = _stream_model()
    assert model.dim == 2 * 4 + 1 and model.config.message_dim == 4
    assert model.config.message == tuple(int(i) for i in model.residual_coords)
    for i in range(model.table.shape[0]):
        rebuilt = model.embedding_from_message(model.embedding_message(model.table[i]), i)
        assert np.array_equal(rebuilt, model.table[i])
    r = commsim.run("index-idxl", model, n=4, certify=False)
    assert r.protocol_matches_model and r.details["mode"] == "one-way"
    assert r.details["one_way_message"] == "embedding" and r.details["bits_by_step"] == {"embedding": 4 * 16}


def test_the_bound_note_counts_x_n_at_the_model_s_d_with_biases_too():
    """With q/k/v biases the folded model carries a public constant coordinate (dim d + 1); the qSA bound's note
    states x_N's message at the model's own d, and says the inequality deciding DISJ_q needs, not that it holds."""
    torch.manual_seed(0)
    r = commsim.run("disj-qsa", A(2, bias=True), n=5, instances=16, precision=4)
    model = from_torch(A(2, bias=True), precision=4)
    assert model.dim == 3 and model.config.message_dim == 2
    note = r.to_dict()["bound_note"]
    assert "d·p = 8" in note and "= 8 bits, which deciding DISJ_q needs to be >= q = 5" in note
    assert r.bits_used == 8
