"""Checks the recurrent-model tests share: the hidden-state handoff against the model's own forward."""
from __future__ import annotations

import numpy as np

from commsim.core.runner import run_protocol
from commsim.contract import Encoded
from protocols.simulators.rnn_handoff import RNN_HANDOFF


def handoff_matches_direct(model, encoded: Encoded) -> None:
    """Every instance through the party programs equals the direct forward bit for bit (outputs and labels)
    and sends exactly the encoded state, ``model.state_bits`` bits; the batch run agrees."""
    protocol = RNN_HANDOFF.protocol(model, encoded)
    direct = model.forward_batch(encoded.tokens, encoded.output_positions)
    for i in range(encoded.batch):
        alice, bob = encoded.shares(i)
        result = run_protocol(protocol, alice, bob)
        labels, raw = result.output
        assert np.array_equal(np.asarray(raw).view(np.uint64), direct[i].view(np.uint64))
        assert np.array_equal(labels, model.labels(direct[i]))
        state, _ = model.run(encoded.tokens[i:i + 1, :len(encoded.alice_positions)])
        assert result.transcript.total_bits == len(model.format.encode(state)) == model.state_bits
    sweep = RNN_HANDOFF.run_batch(model, encoded)
    assert sweep.exact_match.all() and np.array_equal(sweep.protocol_labels, model.labels(direct))


def random_split(draw, st, vocab: int, max_length: int, batch: int, max_outputs: int = 3) -> Encoded:
    """A hypothesis-drawn batch of token rows, Alice's prefix and Bob's output positions (all in his part)."""
    length = draw(st.integers(1, max_length))
    split = draw(st.integers(0, length - 1))
    outs = draw(st.lists(st.integers(split, length - 1), min_size=1, max_size=max_outputs))
    tokens = np.random.default_rng(draw(st.integers(0, 10 ** 6))).integers(0, vocab, size=(batch, length))
    return Encoded(tokens, np.arange(split), tuple(outs))
