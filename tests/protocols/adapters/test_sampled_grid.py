"""An attention layer folded from torch whose (position, token) table is too large to write out computes the rows of
the pairs a run's instances hold (:mod:`protocols.adapters.torch.grid`): the same model, bit for bit, as the one
with the whole table -- its direct forward, its exchange, its one-way message -- and a GPT-2 whose table could
not be built at all (positions x tokens x dim far past the old limit) runs sampled, exactly."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
torch.set_num_threads(1)

import commsim  # noqa: E402
from commsim.core.errors import InputError  # noqa: E402
from commsim.core.precision import parse_format  # noqa: E402
from commsim.core.runner import run_protocol  # noqa: E402
from commsim.contract import Share  # noqa: E402
from protocols.adapters.torch import fold  # noqa: E402
from protocols.adapters.torch.fold import check_table_size  # noqa: E402
from protocols.adapters.torch.gpt2 import wrap_gpt2  # noqa: E402
from protocols.models.attention_pairs import distinct_pairs  # noqa: E402
from protocols.simulators.attention import AttentionExchangeProtocol, make_plan  # noqa: E402


def gpt2(dim: int, heads: int, vocab: int, positions: int, seed: int):
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(seed)
    config = GPT2Config(n_layer=1, n_embd=dim, n_head=heads, vocab_size=vocab, n_positions=positions,
                        bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config).eval()


def both(net, fmt, vocab, positions, monkeypatch):
    """The same module folded with the whole table and with rows computed on demand."""
    whole = wrap_gpt2(net, fmt, vocab_size=vocab, seq_len=positions)
    with monkeypatch.context() as m:
        m.setattr(fold, "MAX_TABLE", 0)
        grid = wrap_gpt2(net, fmt, vocab_size=vocab, seq_len=positions)
    assert whole.grid is None and grid.grid is not None and grid.table is None
    return whole, grid


FORMATS = [parse_format("float32"), parse_format("fixed16")]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10 ** 6), fmt=st.sampled_from(FORMATS), rows=st.integers(1, 9),
       n=st.integers(2, 7), data=st.data())
def test_rows_on_demand_are_the_whole_table_bit_for_bit(seed, fmt, rows, n, data, monkeypatch):
    vocab = 6
    whole, grid = both(gpt2(8, 2, vocab, 8, seed % 97), fmt, vocab, n, monkeypatch)
    assert np.array_equal(grid.grid.dense(), whole.arithmetic.to_values(whole.table))
    assert grid.config.message == whole.config.message is not None     # the residual stream, both ways
    tokens = np.array(data.draw(st.lists(st.lists(st.integers(0, vocab - 1), min_size=n, max_size=n),
                                         min_size=rows, max_size=rows)))
    assert np.array_equal(grid.forward_rep(tokens), whole.forward_rep(tokens))
    # the one-way message: the receiver's x_N from the sent coordinates, at the query position
    x = whole.query_embedding(tokens[:, -1], n - 1)
    assert np.array_equal(grid.embedding_from_message(grid.embedding_message(x), n - 1), x)
    assert np.array_equal(whole.embedding_from_message(whole.embedding_message(x), n - 1), x)
    # the exchange on a random split: the same output as the direct forward of the table model
    alice = np.flatnonzero(np.random.default_rng(seed).permutation(n) < n // 2)
    plan = make_plan(grid, n, alice)
    a, b = plan.positions("alice"), plan.positions("bob")
    out = run_protocol(AttentionExchangeProtocol(grid, plan), Share(a, tokens[0][a], n), Share(b, tokens[0][b], n))
    want = whole.arithmetic.to_values(whole.forward_rep(tokens[:1]))[0]
    assert np.array_equal(np.asarray(out.output[1], dtype=np.float64).view(np.uint64), want.view(np.uint64))


@given(tokens=st.lists(st.lists(st.integers(0, 40), min_size=3, max_size=3), min_size=1, max_size=12))
def test_distinct_pairs_rebuild_every_entry(tokens):
    tokens = np.array(tokens)
    column, token, inverse = distinct_pairs(tokens)
    assert np.array_equal(token[inverse].reshape(tokens.shape), tokens)
    assert np.array_equal(column[inverse].reshape(tokens.shape), np.broadcast_to(np.arange(3), tokens.shape))
    assert len(set(zip(column.tolist(), token.tolist()))) == len(column)


def test_a_gpt2_past_the_old_table_limit_runs_sampled_and_exact():
    """513 positions x 514 tokens x 129 coordinates: 34M values, past the largest table written out whole
    (20M), with a 1000-token vocabulary: the rows of the pairs the 4 instances hold are computed."""
    r = commsim.run("index-idxl", "hf-gpt2:dim=64,heads=2,vocab=1000", n=512, instances=4)
    assert r.instances_run == 4 and r.protocol_matches_model


def test_embeddings_past_the_memory_budget_are_refused_before_anything_is_built():
    with pytest.raises(InputError, match="would need about"):
        check_table_size(10 ** 9, 1024, 768, "GPT-2")


def test_psi_answers_rows_asked_again_with_the_same_outputs(monkeypatch):
    """psi keeps its outputs per input row: asked again (alone, in another batch, after its store was emptied
    by the byte limit) a row gets the outputs computed afresh."""
    net = gpt2(8, 2, 6, 8, 5)
    model = wrap_gpt2(net, parse_format("float32"), vocab_size=6, seq_len=5)
    psi = model.psi_fn
    y = np.random.default_rng(0).normal(size=(7, psi.d_out + psi.d_res))
    fresh = psi._map(y)
    assert np.array_equal(psi(y), fresh)
    assert np.array_equal(psi(y[[3, 1]]), fresh[[3, 1]]) and np.array_equal(psi(y[5:6]), fresh[5:6])
    mixed = np.concatenate([y[:2], y[:2] + 1.0])
    assert np.array_equal(psi(mixed), psi._map(mixed))
    monkeypatch.setattr(fold, "PSI_KEPT_BYTES", 1)
    assert np.array_equal(psi(y), fresh) and np.array_equal(psi(y), fresh)
