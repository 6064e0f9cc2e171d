"""Protocol R, the hidden-state handoff (Theorem 2 of [BHBK24]).

For a contiguous split -- Alice holds x_1..x_t, Bob holds x_{t+1}..x_N -- Alice runs the recurrent
model on her prefix and sends the state h_t encoded in the model's number format: exactly m*p bits
(2m*p for an LSTM), one message, one way.  Bob decodes it, resumes the model and computes every
later output.  So a model that computes f gives a one-way protocol for f of m*p bits on that split,
and m*p is at least the one-way communication complexity of f there.

Every run checks exactness: the protocol's readouts must equal the direct forward's bit for bit.

What the batch check (:meth:`RnnHandoff.run_batch`) compares, per instance:

* the direct forward -- the model's own steps from h_0 over the whole sequence and its readouts at the output
  positions, computed over a prefix trie of the block's sequences (:meth:`RecurrentModel.forward_shared`:
  each distinct prefix's state once, children of bitwise-equal states and equal tokens stepped once
  (:mod:`protocols.models.state_merge`), the last position's readouts remembered by state and token across the
  blocks of the batch, and for Elman, LSTM and GRU the steps' shared product once per parent
  (:mod:`protocols.models.children`): the same operations on the same inputs as a row-by-row run, so the same
  bits).  It never reads the protocol's message or decoded state;
* the protocol's readouts -- Alice's h_t (the trie's state of her prefix: her program ``model.run(prefix)``
  is the same function of the same tokens) encoded with the format's encoder into one bit string per block
  (the bits counted are that string's, per message), decoded, and Bob's resume from the decoded state of the
  instance's run of equal prefixes.  Where that decoded state is bitwise equal to the direct forward's own
  h_t of the same instance (each instance compared through its run index and its trie node) and the model
  reads no position, Bob's resume ``model.run(suffix, state, start=t)`` is the direct forward's continuation
  -- the same pure function of identical inputs -- and is not computed twice.  Everywhere else (a message
  that did not survive encoding, a wrong run, a model whose step or readout reads the position) Bob resumes
  with ``model.run`` and the readouts are compared.

So an encode/decode fault or a resume from another run's state is caught by the batch; a resume at a wrong
position can only matter for a model that reads positions, which is always resumed.  Independently, the
engine re-runs a seeded subset through the real party programs (:class:`HandoffProtocol`), one instance at
a time, and holds the batch to it (``--audit`` runs each party in its own process): that is a second code path
for the model's steps (``model.run`` row by row: no trie, no merging, no children's kernels).  The batch's
details say this under ``checked`` (:data:`CHECKED`).
"""
from __future__ import annotations

import numpy as np

from commsim.contract import (
    BatchResult,
    CONTIGUOUS_PREFIX,
    Encoded,
    MessagePlan,
    NotApplicable,
    Protocol,
    ProtocolError,
    Receive,
    Send,
    Shape,
    Share,
    Simulator,
    Split,
    Vectorized,
    label_dtype,
    message_rows,
)

from protocols.models.prefix_trie import block_rows
from protocols.models.recurrent import RecurrentModel
from protocols.models.state_merge import ReadoutMemo
from protocols.simulators.arches import RECURRENT_ARCHES
from protocols.theorems import handoff_bits

MESSAGE_LABEL = "hidden state"

#: what the batch check compares on every instance, and what the runner re-runs on a sample (the report's
#: ``details.checked``)
CHECKED = {
    "every_instance": "the direct forward (the model's steps from h_0 over the whole sequence, over a prefix trie: "
                      "each distinct prefix once, children of equal states stepped once); Alice's h_t per run of "
                      "equal prefixes, encoded into the counted bits and decoded; the decoded state compared bit for "
                      "bit with the direct forward's h_t of the same instance; where equal (and the model reads no "
                      "position) Bob's readouts are the direct forward's continuation -- the same step on identical "
                      "inputs -- otherwise Bob resumes with model.run and his readouts are compared bit for bit "
                      "(bob_resumed_instances)",
    "sample": "the runner re-runs runner_checked instances (seeded) through the party programs -- Alice's model.run "
              "from h_0, the encoder, the decoder, Bob's model.run: row by row, without the prefix trie, the "
              "children's kernels or state merging -- and their labels and message bits must equal the batch's",
}


def _positions_text(positions: np.ndarray, limit: int = 8) -> str:
    """1-based positions, the first ``limit`` of them."""
    shown = ", ".join(str(int(p) + 1) for p in positions[:limit])
    return shown + (", ..." if len(positions) > limit else "")


def split_point(encoded: Encoded) -> int:
    """t, when Alice holds exactly the first t positions; NotApplicable with the reason otherwise."""
    alice = np.sort(np.asarray(encoded.alice_positions, dtype=np.int64).reshape(-1))
    t = len(alice)
    if not np.array_equal(alice, np.arange(t)):
        raise NotApplicable(
            "the hidden-state handoff (Theorem 2 of [BHBK24]) needs a contiguous split in which Alice holds a "
            f"prefix x_1..x_t; here Alice holds positions {_positions_text(alice)} (1-based) of "
            f"{encoded.seq_len}, which is not a prefix, so the theorem and its one-way bound do not apply",
            "reduction")
    if t >= encoded.seq_len:
        raise NotApplicable("the hidden-state handoff needs Bob to hold a suffix with the output position; "
                            "here Alice holds every position", "reduction")
    early = [p for p in encoded.output_positions if p < t]
    if early:
        raise NotApplicable(f"output position {early[0] + 1} lies in Alice's prefix (1..{t}); in the handoff "
                            f"protocol Bob computes the outputs, so they must lie in his suffix", "reduction")
    return t


class HandoffProtocol(Protocol):
    """The party programs: Alice sends h_t (format-encoded), Bob resumes and returns (labels, readouts)."""

    name = "rnn-handoff"
    output_party = "bob"

    def __init__(self, model: RecurrentModel, split: int, output_positions: tuple[int, ...]):
        """The programs for a split after ``split`` positions."""
        self.model = model
        self.split = int(split)
        self.output_positions = tuple(int(p) for p in output_positions)

    def _check_share(self, share: Share, party: str, expected: np.ndarray) -> np.ndarray:
        """The share's tokens (1, k); ProtocolError when it does not hold the expected positions."""
        if not np.array_equal(np.asarray(share.positions), expected):
            raise ProtocolError(f"{party}'s share does not hold positions {_positions_text(expected)}")
        return np.asarray(share.tokens)[None, :]

    def alice(self, share: Share):
        """Alice: run the model on her prefix and send h_t."""
        tokens = self._check_share(share, "alice", np.arange(self.split))
        state, _ = self.model.run(tokens)  # h_t (h_0 when Alice holds nothing)
        yield Send(MESSAGE_LABEL, self.model.format.encode(state))

    def bob(self, share: Share):
        """Bob: decode h_t, resume the model on his suffix, return the outputs."""
        tokens = self._check_share(share, "bob", np.arange(self.split, share.seq_len))
        bits = yield Receive(MESSAGE_LABEL)
        units = self.model.state_units
        if len(bits) != units * self.model.precision:
            raise ProtocolError(f"the hidden state should be {units * self.model.precision} bits, got {len(bits)}")
        state = self.model.format.decode(bits, count=units).reshape(1, units)
        _, raw = self.model.run(tokens, state=state, start=self.split, outputs=self.output_positions)
        return self.model.labels(raw[0]), raw[0]


class RnnHandoff(Vectorized, Simulator):
    """Hidden-state handoff for any recurrent model (Theorem 2 of [BHBK24])."""

    name = "rnn-handoff"
    source = "Theorem 2 of [BHBK24]"
    budget_parameters = ("width", "precision")
    #: the ``budget --arch`` names it serves, each with what --width means and its state's numbers
    budget_arches = RECURRENT_ARCHES
    partition_kind = CONTIGUOUS_PREFIX       # Theorem 2: Alice holds x_1..x_t, Bob the rest
    one_way_splits = (CONTIGUOUS_PREFIX,)    # one message, Alice to Bob

    def paper_count(self, shape: Shape, split: Split) -> tuple[int, str]:
        """Theorem 2 of [BHBK24]: m·p, whatever N (:func:`protocols.theorems.handoff_bits`)."""
        width, precision = shape.width, shape.precision
        bits = handoff_bits(width, precision)
        return bits, f"m·p = {width}·{precision} = {bits} (Theorem 2)"

    def plan(self, shape: Shape, split: Split) -> MessagePlan:
        """The handoff for m state units of p bits: one message h_t of m·p bits, Alice to Bob, on a split
        where Alice holds a prefix and Bob the outputs (NotApplicable on any other)."""
        width, precision, seq_len = shape.width, shape.precision, split.seq_len
        alice_positions, output_positions = split.alice_positions, split.output_positions
        if isinstance(alice_positions, range) and alice_positions.start == 0 and alice_positions.step == 1:
            t = alice_positions.stop     # a prefix (checked without listing it: N may be huge)
            first = output_positions[0] if isinstance(output_positions, range) else min(output_positions)
            if t >= seq_len or first < t:
                raise NotApplicable("the hidden-state handoff needs Bob to hold a suffix with the outputs",
                                    "reduction")
        else:
            t = split_point(Encoded(np.zeros((0, int(seq_len)), dtype=np.uint8),
                                    np.asarray(alice_positions, dtype=np.int64),
                                    tuple(int(p) for p in output_positions)))
        bits = handoff_bits(width, precision)
        return MessagePlan(bits, 0, 1, f"one-way handoff of h_{t}: m·p = {width}·{precision} = {bits} bits, "
                           f"Alice→Bob (any N)", {"state_units": int(width), "number_format": f"{precision}-bit numbers"},
                           formula=bits, formula_text=f"m·p = {width}·{precision} = {bits} (Theorem 2)",
                           message_name=f"hidden state h_{t}")

    def accepts(self, model) -> bool:
        """Any recurrent model (Elman, LSTM, GRU, the Dyck automaton, memorize, ...)."""
        return isinstance(model, RecurrentModel)

    def plan_model(self, model, encoded: Encoded) -> MessagePlan:
        """One message, Alice to Bob: the state h_t, m·p bits (2m·p for an LSTM's (h, c)), Theorem 2's count.
        The split must give Alice a prefix and Bob the outputs; the tokens must fit the model."""
        t = split_point(encoded)
        if encoded.tokens.size and int(encoded.tokens.max()) >= model.vocab_size:
            raise NotApplicable(f"the task uses token {int(encoded.tokens.max())} but the model reads only "
                                f"{model.vocab_size} tokens", "model")
        m, p = model.width, model.precision
        bits = handoff_bits(model.state_units, p)
        if model.state_units == 2 * m and model.kind == "lstm":
            text = f"2m*p = 2*{m}*{p} = {bits} bits: the state (h, c), {model.describe_state()}"
        else:
            text = f"m*p = {model.state_units}*{p} = {bits} bits: h_t, {model.describe_state()}"
        return MessagePlan(bits, 0, 1, f"one-way handoff of h_{t}: {text}", formula=bits, formula_text=text,
                           message_name=f"{MESSAGE_LABEL} h_{t}")

    def protocol(self, model, encoded: Encoded) -> HandoffProtocol:
        """Alice's and Bob's programs for the task's split point."""
        return HandoffProtocol(model, split_point(encoded), encoded.output_positions)

    def direct_labels(self, model, encoded: Encoded) -> np.ndarray:
        """The model's own decisions at the output positions."""
        return model.labels(model.forward_batch(encoded.tokens, encoded.output_positions))

    def run_batch(self, model, encoded: Encoded, progress=None) -> BatchResult:
        """The handoff and the direct forward on every instance, block by block (what the module's docstring
        says the exactness check compares).

        The direct forward is :meth:`RecurrentModel.forward_shared`: the model's own steps from h_0 over every
        whole sequence, each shared prefix computed once.  Alice's message depends on her prefix alone: one per
        run of consecutive instances with equal prefixes, h_t encoded into one bit string with the format's
        encoder and decoded -- the bits every instance of the run is sent.  Bob resumes every instance from
        its run's received state (:meth:`_bob_block`); ``bob_resumed_instances`` counts those resumed with
        ``model.run`` rather than shown equal to the direct forward's continuation."""
        t = split_point(encoded)
        tokens = encoded.tokens
        outs = tuple(encoded.output_positions)
        batch, length = tokens.shape
        units, p = model.state_units, model.precision
        ldt = label_dtype(model.num_classes)
        protocol_labels = np.empty((batch, len(outs)), dtype=ldt)
        direct_labels = np.empty((batch, len(outs)), dtype=ldt)
        exact = np.empty(batch, dtype=bool)
        alice_to_bob = np.empty(batch, dtype=np.int32)
        prefix_runs = resumed = 0
        memo = ReadoutMemo.for_model(model)   # the last position's readouts by state and token, across blocks
        hi = 0
        while hi < batch:          # blocks of instances whose shared prefixes are computed together
            lo, hi = hi, min(hi + block_rows(model, memo), batch)
            chunk = tokens[lo:hi]
            raw_direct, (node, states) = model.forward_shared(chunk, outs, keep=t, memo=memo)
            runs, received, bits = self._alice_block(model, chunk, t, node, states)
            raw_protocol, count = self._bob_block(model, chunk, t, outs, runs, received, node, states, raw_direct)
            prefix_runs += len(received)
            resumed += count
            if raw_protocol is raw_direct:   # every instance's Bob shown to be the direct continuation (_bob_block)
                exact[lo:hi] = True
            else:
                exact[lo:hi] = np.all(raw_protocol.view(np.uint64) == raw_direct.view(np.uint64), axis=(1, 2))
            direct_labels[lo:hi] = model.labels(raw_direct)
            protocol_labels[lo:hi] = direct_labels[lo:hi] if raw_protocol is raw_direct else model.labels(raw_protocol)
            alice_to_bob[lo:hi] = bits
            if progress:
                progress(hi, batch)
        details = {
            "split": t, "alice_positions": f"1..{t}" if t else "none", "bob_positions": f"{t + 1}..{length}",
            "message": f"{MESSAGE_LABEL} h_{t}", "state_units": units, "precision_bits": p,
            "number_format": model.format.name, "message_bits": units * p,
            "alice_prefix_runs": int(prefix_runs), "bob_resumed_instances": int(resumed),
            "exact_matches": int(exact.sum()), "checked": CHECKED,
        }
        return BatchResult(protocol_labels, direct_labels, exact, alice_to_bob, np.zeros(batch, dtype=np.int8),
                           np.ones(batch, dtype=np.int8), None, details)

    @staticmethod
    def _alice_block(model, tokens: np.ndarray, t: int, node: np.ndarray,
                     states: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """Alice's side for a block of instances: per instance the index of its run of equal prefixes (found
        from her tokens), each run's state as Bob decodes it from the encoded message, and the message's bits
        (one state's).  A run's h_t is ``model.run(prefix)`` from h_0, which the direct forward's prefix trie
        has computed with the same steps on the same tokens (``states[node[i]]``, row i's h_t): it is taken from
        there, not computed twice."""
        count, units = len(tokens), model.state_units
        if t:
            new = np.zeros(count, dtype=bool)      # a run starts where a prefix token differs from the row above's
            new[0] = True
            for column in np.ascontiguousarray(tokens[:, :t].T):
                new[1:] |= column[1:] != column[:-1]
            starts = np.flatnonzero(new)
            prefix_states = states[node[starts]]
            runs = np.cumsum(new) - 1
        else:
            prefix_states, runs = model.initial_state(1), np.zeros(count, dtype=np.int64)
        message = model.format.encode(prefix_states)      # the runs' messages, one bit string
        if len(message) != len(prefix_states) * units * model.precision:
            raise ProtocolError(f"{len(prefix_states)} hidden states encoded to {len(message)} bits, "
                                f"not {len(prefix_states)} x {units * model.precision}")
        received = model.format.decode(message, count=len(prefix_states) * units).reshape(len(prefix_states), units)
        return runs, received, len(message) // len(prefix_states)

    @staticmethod
    def _bob_block(model, tokens: np.ndarray, t: int, outs: tuple[int, ...], runs: np.ndarray, received: np.ndarray,
                   node: np.ndarray, states: np.ndarray, raw_direct: np.ndarray) -> tuple[np.ndarray, int]:
        """Bob's readouts for a block, each instance resumed from its run's received state ``received[runs[i]]``,
        and the number of instances resumed with ``model.run(suffix, state, start=t)``.

        Where that state is bitwise the direct forward's own h_t of the same instance (``states[node[i]]``,
        compared per instance through both indices, so a wrong run index shows) and the model reads no
        position (:attr:`RecurrentModel.reads_position`), Bob's resume is the direct forward's continuation:
        the same pure function (the model's steps and readouts) of identical inputs, so its readouts are the
        direct forward's, computed once.  Every other instance -- a message that did not survive encoding,
        a wrong run, any model that reads positions or computes its run another way than
        :meth:`RecurrentModel.run` (a subclass's own ``run``) -- is resumed with ``model.run`` and compared."""
        count = len(tokens)
        segment = np.empty(count, dtype=bool)      # instances that share both their run and their direct prefix
        segment[:1] = True
        segment[1:] = (runs[1:] != runs[:-1]) | (node[1:] != node[:-1])
        first = np.flatnonzero(segment)
        if model.reads_position or type(model).run is not RecurrentModel.run:   # its own run: always resume
            same = np.zeros(len(first), dtype=bool)
        else:
            same = np.all(received[runs[first]].view(np.uint64) == states[node[first]].view(np.uint64), axis=1)
        if same.all():
            return raw_direct, 0
        raw = raw_direct.copy()
        resume = np.flatnonzero(~same[np.cumsum(segment) - 1])
        rows = model.chunk_rows()
        for s in range(0, len(resume), rows):
            idx = resume[s:s + rows]
            raw[idx] = model.run(tokens[idx, t:], state=received[runs[idx]], start=t, outputs=outs)[1]
        return raw, len(resume)

    def transcript_keys(self, model, encoded: Encoded) -> tuple[np.ndarray, np.ndarray]:
        """Per instance: the handoff's labels and its one message, h_t in the model's number format, as rows of
        packed bytes (the transcript is that message)."""
        t = split_point(encoded)
        tokens, outs = encoded.tokens, tuple(encoded.output_positions)
        count = len(tokens)
        if t:   # each distinct prefix's h_t once (the prefix trie of forward_shared), then every row's
            _, (node, prefix_states) = model.forward_shared(tokens[:, :t], (), keep=t)
            states = prefix_states[node]
        else:
            states = model.initial_state(count)
        message = model.format.encode(states)
        received = model.format.decode(message, count=count * model.state_units).reshape(count, model.state_units)
        _, raw = model.run(tokens[:, t:], state=received, start=t, outputs=outs)
        return model.labels(raw), message_rows(message, count)


RNN_HANDOFF = RnnHandoff()
