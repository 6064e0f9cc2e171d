"""Children of equal states stepped once in the prefix trie (protocols.models.state_merge): the same readouts
and states as the row-by-row run, fewer steps, and a hash collision merges nothing."""
from __future__ import annotations

import numpy as np

from protocols.models import state_merge
from protocols.models.trainable import random_model


def _all_strings(n: int, tail: int) -> np.ndarray:
    """Every bit string of length n, each followed by every token 2..tail+1 (rank order, as index-idxl)."""
    bits = (np.arange(1 << n)[:, None] >> np.arange(n - 1, -1, -1)) & 1
    return np.concatenate([np.repeat(bits, tail, axis=0), np.tile(np.arange(2, 2 + tail), 1 << n)[:, None]], axis=1)


class CountingSteps:
    """Wraps a model's children's steps and counts the children stepped."""

    def __init__(self, model):
        self.model, self.count = model, 0
        self.inner_child, self.inner_step = model._child_steps, model.step
        model._child_steps = self.child
        model.step = self.step

    def child(self, h, terms, parents, x, t):
        self.count += len(parents)
        return self.inner_child(h, terms, parents, x, t)

    def step(self, h, x, t):
        self.count += len(h)
        return self.inner_step(h, x, t)


def test_a_contracting_elman_merges_states_and_keeps_every_bit():
    model = random_model("elman", 4, "8", vocab=8, seed=3)      # 8-bit states: many prefixes reach one state
    tokens = _all_strings(9, 6)
    direct = model.forward_batch(tokens, (9,))
    counter = CountingSteps(model)
    raw, (node, states) = model.forward_shared(tokens, (9,), keep=9)
    stepped = counter.count
    trie_nodes = sum(len(np.unique(tokens[:, :k + 1], axis=0)) for k in range(10))
    assert stepped < trie_nodes / 2        # merged: far fewer steps than the trie's distinct prefixes
    assert np.array_equal(raw.view(np.uint64), direct.view(np.uint64))
    assert np.array_equal(states[node].view(np.uint64), model.final_states(tokens[:, :9]).view(np.uint64))


def test_distinct_rows_finds_equal_states_bitwise():
    states = np.array([[0.5, 1.0], [0.0, 1.0], [0.5, 1.0], [-0.0, 1.0], [0.0, 1.0]])
    representatives, inverse = state_merge.distinct_rows(states)
    assert np.array_equal(states[representatives[inverse]].view(np.uint64), states.view(np.uint64))
    assert len(representatives) == 3                    # -0.0 is another state than +0.0
    assert state_merge.distinct_rows(states[:2]) is None


def test_a_hash_collision_merges_nothing(monkeypatch):
    states = np.array([[0.5, 1.0], [0.25, 1.0], [0.5, 1.0]])
    monkeypatch.setitem(state_merge._MULTIPLIERS, 2, np.zeros(2, dtype=np.uint64))   # every state hashes to 0
    assert state_merge.distinct_rows(states) is None
    model = random_model("elman", 2, "8", vocab=8, seed=3)
    monkeypatch.setitem(state_merge._MULTIPLIERS, 2, np.zeros(2, dtype=np.uint64))
    tokens = _all_strings(6, 6)
    raw = model.forward_shared(tokens, (6,))
    assert np.array_equal(raw.view(np.uint64), model.forward_batch(tokens, (6,)).view(np.uint64))


def test_the_readout_memo_carries_states_across_blocks_and_keeps_every_bit(monkeypatch):
    from commsim.contract import Encoded
    from protocols.models import prefix_trie
    from protocols.simulators import rnn_handoff
    memos = []

    class Recorded(state_merge.ReadoutMemo):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            memos.append(self)

    monkeypatch.setattr(rnn_handoff, "ReadoutMemo", Recorded)
    monkeypatch.setattr(prefix_trie, "SHARED_BLOCK_CHUNKS", 1)     # blocks of 256 rows: 24 of them
    monkeypatch.setattr(prefix_trie, "MERGING_BLOCK_CHUNKS", 1)
    model = random_model("elman", 4, "8", vocab=8, seed=3)
    monkeypatch.setattr(model, "chunk_rows", lambda: 256)
    tokens = _all_strings(10, 6)
    sweep = rnn_handoff.RNN_HANDOFF.run_batch(model, Encoded(tokens, np.arange(10), (10,)))
    direct = model.forward_batch(tokens, (10,))
    assert np.array_equal(sweep.direct_labels, model.labels(direct))
    assert np.array_equal(sweep.protocol_labels, model.labels(direct)) and sweep.exact_match.all()
    (memo,) = memos
    assert memo.blocks == 24 and memo.hits > memo.lookups / 2 and memo.enabled


def test_the_readout_memo_stops_when_states_do_not_recur():
    memo = state_merge.ReadoutMemo(trial=2)
    for block in range(3):
        base = np.arange(4.0)[:, None] + 10 * block           # new states every block
        parents, x = np.repeat(np.arange(4), 2), np.tile([0, 1], 4)
        out = memo.readouts(base, parents, x, 0, 2, 1, lambda idx: (base[parents[idx]] + x[idx, None]))
        assert np.array_equal(out, base[parents] + x[:, None])
    assert not memo.enabled and memo.hits == 0


def test_a_models_states_found_not_to_recur_start_its_next_memo_off():
    """The verdict is the model object's for the rest of the process (the next shard of a run starts with its
    memo off); another model, even an equal one, and a model that cannot be weakly referenced are judged afresh."""
    model, other = random_model("lstm", 2, "8", seed=1), random_model("lstm", 2, "8", seed=1)
    memo = state_merge.ReadoutMemo.for_model(model)
    assert memo.enabled and memo.trial == 2
    for block in range(2):
        base = np.arange(4.0)[:, None] + 10 * block           # new states every block
        parents, x = np.repeat(np.arange(4), 2), np.tile([0, 1], 4)
        memo.readouts(base, parents, x, 0, 2, 1, lambda idx: base[parents[idx]] + x[idx, None])
    assert not memo.enabled
    assert not state_merge.ReadoutMemo.for_model(model).enabled
    assert state_merge.ReadoutMemo.for_model(other).enabled
    assert state_merge.ReadoutMemo.for_model([]).enabled                 # a list: no weak reference


def test_the_readout_memo_never_takes_a_colliding_state_for_another(monkeypatch):
    monkeypatch.setitem(state_merge._MULTIPLIERS, 1, np.zeros(1, dtype=np.uint64))   # every state hashes alike
    memo = state_merge.ReadoutMemo(trial=100)
    for block in range(3):
        base = np.array([[0.5], [0.25], [float(block)]])
        parents, x = np.repeat(np.arange(3), 2), np.tile([0, 1], 3)
        out = memo.readouts(base, parents, x, 0, 2, 1, lambda idx: base[parents[idx]] * 2 + x[idx, None])
        assert np.array_equal(out, base[parents] * 2 + x[:, None])


def test_the_childrens_kernels_in_many_passes_give_the_steps_bits(monkeypatch):
    from protocols.models import children
    monkeypatch.setattr(children, "ROWS", 7)             # many passes, a short last one
    rng = np.random.default_rng(5)
    tokens = rng.integers(0, 4, size=(300, 6))
    for kind in ("elman", "lstm", "gru"):
        for fmt in ("12", "float16", "float32"):
            model = random_model(kind, 3, fmt, vocab=4, seed=11)
            raw = model.forward_shared(tokens, (3, 5))
            assert np.array_equal(raw.view(np.uint64), model.forward_batch(tokens, (3, 5)).view(np.uint64)), (kind, fmt)


def test_the_readout_memo_stays_small_for_a_large_vocabulary():
    memo = state_merge.ReadoutMemo()
    base, parents, x = np.array([[0.5]]), np.zeros(2, dtype=np.intp), np.array([0, 70_000])
    out = memo.readouts(base, parents, x, 0, 100_000, 2, lambda idx: np.ones((len(idx), 2)))
    assert out.shape == (2, 2) and memo.table.size <= state_merge.MEMO_VALUES
