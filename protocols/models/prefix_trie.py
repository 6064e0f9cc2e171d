"""The direct forward of a recurrent model over a prefix trie: every distinct prefix's state computed once.

:func:`forward_shared` (the body of :meth:`RecurrentModel.forward_shared
<protocols.models.recurrent.RecurrentModel.forward_shared>`) is what the hidden-state handoff's batch uses as
its direct forward, and for Alice's states (:mod:`protocols.simulators.rnn_handoff`).  It runs the model's
own :meth:`step` and :meth:`readout_at` on the same inputs as a row-by-row run, so its readouts are the same
bits; a model's ``_parent_terms``/``_child_steps`` may compute what every step from one state shares once
(Elman, LSTM, GRU: the recurrent product, :mod:`protocols.models.children`).  Children of bitwise-equal parent
states and equal tokens are stepped once, and the last level's readouts can be remembered across blocks by
state and token (:mod:`protocols.models.state_merge`).  A level's prefixes come from each row's first difference
from the row above, so the bookkeeping costs the number of prefixes, not rows x positions; the last level's
states are never held whole (only its readouts are needed).
"""
from __future__ import annotations

import numpy as np

from commsim.contract import InternalError, ModelError
from protocols.models.state_merge import ReadoutMemo, merge_children

#: row chunks (:meth:`RecurrentModel.chunk_rows`) per block of :meth:`RecurrentModel.forward_shared`: each block
#: is one prefix trie.  Enough rows for long runs of equal prefixes, few enough that a block's arrays stay small
#: (arrays past glibc's 32 MB threshold are fresh memory maps, page-faulted in again every block: at n = 20,
#: 16 chunks took 0.4 s more system time than 4)
SHARED_BLOCK_CHUNKS = 4

#: row chunks per block while children of equal states merge (:func:`block_rows`): a larger trie finds more equal
#: states.  At n = 20 (``index-idxl``, width 16, 16-bit) 16 chunks took 10-15% less CPU time than 4 for Elman and
#: GRU, whose states recur, and 5% more for an LSTM, whose (h, c) do not
MERGING_BLOCK_CHUNKS = 16

#: children per parent state from which :meth:`RecurrentModel.forward_shared` computes what a parent's steps
#: share once (:meth:`RecurrentModel._parent_terms`) rather than in every child's step
SHARED_TERMS_CHILDREN = 4


def forward_shared(model, tokens, output_positions, keep: int | None = None, trie: bool = True,
                   memo: ReadoutMemo | None = None):
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
    values and shapes.  ``memo`` (a :class:`~protocols.models.state_merge.ReadoutMemo` kept over the calls of one
    batch run) remembers the last level's readouts by parent state and token across blocks and calls."""
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
        return _forward_trie(model, toks, outs, keep, memo)
    parts = [_forward_trie(model, toks[lo:lo + block], outs, keep, memo) for lo in range(0, batch, block)]
    if keep is None:
        return np.concatenate(parts)
    offsets = np.cumsum([0] + [len(states) for _, (_, states) in parts[:-1]])
    return (np.concatenate([raw for raw, _ in parts]),
            (np.concatenate([node + offset for (_, (node, _)), offset in zip(parts, offsets)]),
             np.concatenate([states for _, (_, states) in parts])))


def block_rows(model, memo: ReadoutMemo | None = None) -> int:
    """Rows per block of a batch run (one prefix trie each): :data:`MERGING_BLOCK_CHUNKS` row chunks while the
    run's readout memo finds its states again (or has not looked yet), else :data:`SHARED_BLOCK_CHUNKS`."""
    merging = memo is not None and memo.recurring
    return model.chunk_rows() * (MERGING_BLOCK_CHUNKS if merging else SHARED_BLOCK_CHUNKS)


def first_differences(toks: np.ndarray) -> np.ndarray:
    """Per row, the first position at which its tokens differ from the row above's (row 0: 0; a row equal to the
    one above: the length).  Row i starts a distinct prefix of length k + 1 exactly when this is at most k."""
    batch, length = toks.shape
    first = np.full(batch, length, dtype=np.int16 if length < 1 << 15 else np.int64)
    first[:1] = 0
    columns = np.ascontiguousarray(toks.T)            # position-major: one column compared at a time
    for k in range(length - 1, -1, -1):               # the last assignment is the smallest position
        first[1:][columns[k, 1:] != columns[k, :-1]] = k
    return first


def _level_starts(first: np.ndarray, length: int):
    """For k = 0..length-1, the first rows of the distinct prefixes of length k + 1, ascending: the rows whose
    first difference is at most k, each level's those of the level above plus the rows whose first difference
    is k (merged in order: the work is the number of prefixes, not rows x positions)."""
    order = np.argsort(first, kind="stable")          # rows grouped by first difference, in row order
    ends = np.cumsum(np.bincount(first, minlength=length + 1))
    starts = order[:ends[0]]
    for k in range(length):
        if k:
            group = order[ends[k - 1]:ends[k]]
            if len(group):
                starts = np.concatenate([starts, group])
                starts.sort(kind="stable")            # two ascending runs: one linear merge
        yield starts


def _level(model, base, terms, parents, x, k: int, rows: int, stream: bool, reads: bool, length: int):
    """The children ``(base[parents[i]], x[i])`` of level k stepped in chunks: their states (None when ``stream``:
    only checked not to be NaN) and their readouts (when ``reads``)."""
    count = len(parents)
    level = None if stream else np.empty((count, model.state_units))
    read = np.empty((count, model.num_classes)) if reads else None
    for s in range(0, count, rows):
        chunk_x = x[s:s + rows]
        part = model.step(base[parents[s:s + rows]], chunk_x, k) if terms is None else \
            model._child_steps(base, terms, parents[s:s + rows], chunk_x, k)
        if reads:
            read[s:s + rows] = model.readout_at(part, chunk_x, k)
        if stream:
            model._run_end(part, length - 1)
        else:
            level[s:s + rows] = part
    return level, read


def _stream_readouts(model, base, terms, parents, x, k: int, rows: int, length: int) -> np.ndarray:
    """The readouts of the last level's children ``(base[parents[i]], x[i])`` (their states checked, not kept)."""
    return _level(model, base, terms, parents, x, k, rows, True, True, length)[1]


def _forward_trie(model, toks: np.ndarray, outs: tuple[int, ...], keep: int | None, memo: ReadoutMemo | None = None):
    """:func:`forward_shared` of one block of checked tokens, over one prefix trie."""
    batch, length = toks.shape
    raw = np.empty((batch, len(outs), model.num_classes))
    rows = model.chunk_rows()
    first = first_differences(toks)
    starts = np.zeros(min(batch, 1), dtype=np.int64)  # the first row of each distinct prefix
    states = model.initial_state(len(starts))         # their states
    kept = (np.zeros(batch, dtype=np.int64), states) if keep == 0 else None
    sharing = getattr(model, "shared_terms_children", None)
    sharing = SHARED_TERMS_CHILDREN if sharing is None else sharing
    for k, level_starts in enumerate(_level_starts(first, length)):
        parents_starts, starts = starts, level_starts
        # a prefix's parent is the level-(k-1) prefix whose run holds its first row
        parents = np.searchsorted(parents_starts, starts, side="right") - 1
        x = toks[starts, k]
        # children of equal parent states and tokens are stepped once (protocols.models.state_merge)
        merged = merge_children(states, parents, x, model.vocab_size) if len(states) > 1 else None
        base, step_parents, step_x, which = (states, parents, x, None) if merged is None else merged
        # the parents' shared terms pay when they have many children (Bob's tokens after Alice's prefix)
        terms = model._parent_terms(base) if len(step_parents) >= sharing * len(base) else None
        # per row its prefix at this level, where needed (every row its own prefix: the rows' order)
        node = np.cumsum(first <= k) - 1 if (k in outs or keep == k + 1) and len(starts) < batch else None
        slots = [j for j, p in enumerate(outs) if p == k]
        # the last level's states are needed only for its readouts (and the check below): chunk by chunk
        stream = k == length - 1 and keep != length
        if stream and slots and memo is not None:     # only readouts: remembered ones from earlier blocks
            read = memo.readouts(base, step_parents, step_x, k, model.vocab_size, model.num_classes,
                                 lambda idx: _stream_readouts(model, base, terms, step_parents[idx], step_x[idx], k,
                                                              rows, length))
            level = None
        else:
            level, read = _level(model, base, terms, step_parents, step_x, k, rows, stream, bool(slots), length)
        if which is not None:     # every child from its merged step
            level = None if stream else level[which]
            read = None if read is None else read[which]
        for slot in slots:
            raw[:, slot] = read if node is None else read[node]
        if keep == k + 1:
            kept = (np.arange(batch) if node is None else node, level)
        if not stream:
            states = level
    if keep == length:
        model._run_end(states, length - 1)
    return raw if keep is None else (raw, kept)
