"""The direct forward of a recurrent model over a prefix trie: every distinct prefix's state computed once.

:func:`forward_shared` (the body of :meth:`RecurrentModel.forward_shared
<protocols.models.recurrent.RecurrentModel.forward_shared>`) is what the hidden-state handoff's batch uses as
its direct forward, and for Alice's states (:mod:`protocols.simulators.rnn_handoff`).  It runs the model's
own :meth:`step` and :meth:`readout_at` on the same inputs as a row-by-row run, so its readouts are the same
bits; a model's ``_parent_terms``/``_child_steps`` may compute what every step from one state shares once
(Elman, LSTM, GRU: the recurrent product).
"""
from __future__ import annotations

import numpy as np

from commsim.contract import InternalError, ModelError

#: row chunks (:meth:`RecurrentModel.chunk_rows`) per block of :meth:`RecurrentModel.forward_shared`: each block
#: is one prefix trie.  Enough rows for long runs of equal prefixes, few enough that a block's arrays stay small
#: (arrays past glibc's 32 MB threshold are fresh memory maps, page-faulted in again every block: at n = 20,
#: 16 chunks took 0.4 s more system time than 4)
SHARED_BLOCK_CHUNKS = 4

#: children per parent state from which :meth:`RecurrentModel.forward_shared` computes what a parent's steps
#: share once (:meth:`RecurrentModel._parent_terms`) rather than in every child's step
SHARED_TERMS_CHILDREN = 4


def forward_shared(model, tokens, output_positions, keep: int | None = None, trie: bool = True):
    """The direct forward of ``model.forward_batch`` with every shared prefix computed once.

    Level by level over the rows: the distinct prefixes of length k are the runs of consecutive rows whose
    first k tokens are equal (a row starts a new one where it started one at level k-1 or its token k-1
    differs from the row above's), and each new prefix's state is ``model.step`` of its parent's state and
    its last token, from h_0 -- the model's own step code on the same inputs as ``model.run``, so the same
    bits; the readouts at the output positions are ``model.readout_at`` of the level's states.  The result
    does not depend on the order of the rows (only the work does: rows sorted by their tokens share most).

    Returns the readouts (batch, outputs, classes) and, with ``keep = k``, ``(node, states)``: per row the
    index of its length-k prefix and those prefixes' states h_k (``states[node[i]]`` is row i's h_k).
    Rows go in blocks of :data:`SHARED_BLOCK_CHUNKS` row chunks, one trie each (bounded temporaries; a
    prefix shared across blocks is computed once per block).  With ``trie`` False (a model whose own ``run``
    computes its outputs otherwise than ``readout_at`` of its states) the rows are run one by one: the same
    values and shapes."""
    toks = model.check_tokens(tokens)
    batch, length = toks.shape
    outs = tuple(int(p) for p in output_positions)
    if length == 0:
        raise ModelError("cannot run a model on empty sequences", "tokens")
    bad = [p for p in outs if not 0 <= p < length]
    if bad:
        raise ModelError(f"output position {bad[0]} is outside a sequence of length {length}", "output_positions")
    if keep is not None and not 0 <= keep <= length:
        raise InternalError(f"forward_shared keeps level {keep} of sequences of length {length}")
    if not trie:
        raw = model.forward_batch(toks, outs)
        if keep is None:
            return raw
        return raw, (np.arange(batch), model.final_states(toks[:, :keep]) if keep else model.initial_state(batch))
    block = model.chunk_rows() * SHARED_BLOCK_CHUNKS
    if batch <= block:
        return _forward_trie(model, toks, outs, keep)
    parts = [_forward_trie(model, toks[lo:lo + block], outs, keep) for lo in range(0, batch, block)]
    if keep is None:
        return np.concatenate(parts)
    offsets = np.cumsum([0] + [len(states) for _, (_, states) in parts[:-1]])
    return (np.concatenate([raw for raw, _ in parts]),
            (np.concatenate([node + offset for (_, (node, _)), offset in zip(parts, offsets)]),
             np.concatenate([states for _, (_, states) in parts])))


def _forward_trie(model, toks: np.ndarray, outs: tuple[int, ...], keep: int | None):
    """:func:`forward_shared` of one block of checked tokens, over one prefix trie."""
    batch, length = toks.shape
    raw = np.empty((batch, len(outs), model.num_classes))
    rows = model.chunk_rows()
    columns = np.ascontiguousarray(toks.T)            # position-major: each level compares one column
    new = np.zeros(batch, dtype=bool)                 # rows that start a distinct prefix of the level
    new[:1] = True
    starts = np.zeros(min(batch, 1), dtype=np.int64)  # the first row of each distinct prefix
    states = model.initial_state(len(starts))         # their states
    kept = (np.zeros(batch, dtype=np.int64), states) if keep == 0 else None
    for k in range(length):
        new[1:] |= columns[k, 1:] != columns[k, :-1]
        parents_starts, starts = starts, np.flatnonzero(new)
        # a prefix's parent is the level-(k-1) prefix whose run holds its first row
        parents = np.searchsorted(parents_starts, starts, side="right") - 1
        x = columns[k, starts]
        # the parents' shared terms pay when they have many children (Bob's tokens after Alice's prefix)
        terms = model._parent_terms(states) if len(starts) >= SHARED_TERMS_CHILDREN * len(states) else None
        level = np.empty((len(starts), model.state_units))
        for s in range(0, len(starts), rows):
            level[s:s + rows] = model.step(states[parents[s:s + rows]], x[s:s + rows], k) if terms is None else \
                model._child_steps(states, terms, parents[s:s + rows], x[s:s + rows], k)
        states = level
        # per row its prefix at this level, where needed (every row its own prefix: the rows' order)
        node = np.cumsum(new) - 1 if (k in outs or keep == k + 1) and len(starts) < batch else None
        if k in outs:
            read = np.empty((len(starts), model.num_classes))
            for s in range(0, len(starts), rows):
                read[s:s + rows] = model.readout_at(level[s:s + rows], x[s:s + rows], k)
            for slot in (j for j, p in enumerate(outs) if p == k):
                raw[:, slot] = read if node is None else read[node]
        if keep == k + 1:
            kept = (np.arange(batch) if node is None else node, states)
    model._run_end(states, length - 1)
    return raw if keep is None else (raw, kept)
