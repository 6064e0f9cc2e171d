"""The children's steps of the prefix trie for Elman, LSTM and GRU: many steps from few parent states.

The direct forward over a prefix trie (:mod:`protocols.models.prefix_trie`) steps every child prefix from its
parent's state.  What a parent's steps share -- the recurrent product ``W_h h`` (plus the GRU's recurrent bias)
-- is computed once per parent (:meth:`_Trainable._parent_terms`), and the token's input term ``W_x[x] + b`` is
a row of a table computed once; a child's step is then the sum of the two, the gates' activations, the cell's
update and the rounding.  These functions compute exactly that, gate by gate on contiguous arrays of a few
thousand rows (so every pass stays in the CPU's cache), with the same floating-point operations in the same
order as the model's own step (:meth:`Elman._after_product`, :meth:`LSTM._after_product`,
:func:`protocols.models.cells.gru_cell`), hence the same bits.  Two rewrites are exact by IEEE arithmetic:
a sigmoid gate ``1 / (1 + exp(-(u + e)))`` is computed as ``1 / (1 + exp((-u) + (-e)))`` (negation is exact and
round-to-nearest is symmetric: ``(-u) + (-e) == -(u + e)``, and ``exp(+0) == exp(-0)``), and sums and products
are taken with their operands swapped where convenient (IEEE addition and multiplication are commutative).
The transcendental functions (``exp``, ``tanh``) always run on contiguous arrays, as in the model's own step.

The model's own step (:meth:`RecurrentModel.run`, what the protocol's parties run) does not use this module, so
the runner's re-run of a sample of instances through the parties checks it against an independent code path.
"""
from __future__ import annotations

import numpy as np

#: rows per pass: a pass's arrays (an LSTM's: about 1.5 MB at width 16, its scratch shared) stay near the CPU's
#: second-level cache; per row, 2048 rows took 5-8% less time than 1024 and about the same as 4096 (gate-major
#: arrays, a 1 MB L2)
ROWS = 2048


class GateTerms:
    """The parents' shared terms, one contiguous (gates, parents, m) array per group of gates (the sigmoid groups'
    negated), and the parents' states (or their cell part) where the update reads them."""

    __slots__ = ("gates", "state")

    def __init__(self, gates: tuple, state: np.ndarray | None):
        self.gates = gates
        self.state = state


def split_gates(values: np.ndarray, m: int, groups: tuple[tuple[int, ...], ...], negated: tuple[bool, ...]) -> tuple:
    """The (rows, g*m) array ``values`` as one contiguous (len(group), rows, m) array per group of gates, gate-major
    (so each gate of a child is a contiguous (rows, m) array: at these widths numpy's loops over strided rows cost
    several times its contiguous ones), the flagged groups negated."""
    out = []
    for group, neg in zip(groups, negated):
        part = np.stack([values[:, k * m:(k + 1) * m] for k in group])
        out.append(np.negative(part, out=part) if neg else part)
    return tuple(out)


def _gate_sum(out: np.ndarray, parent: np.ndarray, token: np.ndarray, parents: np.ndarray, x: np.ndarray,
              tmp: np.ndarray) -> np.ndarray:
    """out = parent[:, parents] + token[:, x] (gate-major rows gathered into preallocated arrays)."""
    np.take(parent, parents, axis=1, out=out, mode="clip")
    np.take(token, x, axis=1, out=tmp, mode="clip")
    out += tmp
    return out


def _sigmoid_of_negated(z: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(z)) in place, ``z`` being the gate's negated pre-activation (:func:`commsim.contract.arithmetic.sigmoid`
    negates first, then the same three operations)."""
    with np.errstate(over="ignore"):
        np.exp(z, out=z)
    z += 1.0
    np.divide(1.0, z, out=z)
    return z


def passes(count: int, m: int, gates: tuple[int, ...]):
    """(lo, hi, work arrays) for each pass over ``count`` children: one (g, rows, m) array per entry of ``gates``
    (a 0 entry: a (rows, m) array), reused from pass to pass."""
    rows = min(ROWS, max(count, 1))
    arrays = [np.empty((g, rows, m)) if g else np.empty((rows, m)) for g in gates]
    for lo in range(0, count, ROWS):
        hi = min(lo + ROWS, count)
        yield lo, hi, [a[..., :hi - lo, :] for a in arrays]


#: the gate groups of each kind's terms (:func:`split_gates`), and which groups are sigmoids (taken negated)
ELMAN_GROUPS, ELMAN_NEGATED = ((0,),), (False,)
LSTM_GROUPS, LSTM_NEGATED = ((0, 1, 3), (2,)), (True, False)         # i, f, o (sigmoids); g (tanh)
GRU_GROUPS, GRU_NEGATED = ((0, 1), (2,)), (True, False)               # r, z (sigmoids); n


def elman_children(terms: GateTerms, embed: tuple, parents, x, out: np.ndarray, q, relu: bool) -> None:
    """act(W_h h + (W_x[x] + b)), rounded: :meth:`Elman._after_product` then the step's rounding."""
    (product,), (token,) = terms.gates, embed
    for lo, hi, (pre, tmp) in passes(len(parents), product.shape[2], (1, 1)):
        _gate_sum(pre, product, token, parents[lo:hi], x[lo:hi], tmp)
        if relu:
            np.maximum(pre, 0.0, out=pre)
        else:
            np.tanh(pre, out=pre)
        out[lo:hi] = q(pre[0])


def lstm_children(terms: GateTerms, embed: tuple, parents, x, out: np.ndarray, q, idempotent: bool) -> None:
    """The LSTM step (:meth:`LSTM._after_product`, then the step's rounding of (h, c)): gates i, f, o (one array)
    and g from the parents' products and the tokens' input terms; c = q(f * c_parent + i * g); h = q(o * tanh(c)).
    The step rounds c once more with the whole state; ``idempotent`` (rounding a rounded value changes nothing:
    fixed point, one bit) skips that second rounding."""
    (n_ifo, u_g), (e_ifo, e_g) = terms.gates, embed
    m = u_g.shape[2]
    for lo, hi, (ifo, tmp3, g1, c) in passes(len(parents), m, (3, 3, 1, 0)):
        p, tok = parents[lo:hi], x[lo:hi]
        i, f, o = _sigmoid_of_negated(_gate_sum(ifo, n_ifo, e_ifo, p, tok, tmp3))
        g, tmp = g1[0], tmp3[1]      # (the token terms' scratch is free again: the pass's arrays fit in L2)
        np.tanh(_gate_sum(g1, u_g, e_g, p, tok, tmp3[:1]), out=g1)
        np.take(terms.state, p, axis=0, out=tmp, mode="clip")     # the parents' cells
        np.multiply(f, tmp, out=c)                                 # f * c
        np.multiply(i, g, out=tmp)
        c += tmp                                                   # c = f * c + i * g
        q(c)
        np.tanh(c, out=g)
        g *= o                                                     # h = o * tanh(c)
        out[lo:hi, :m] = q(g)
        out[lo:hi, m:] = c if idempotent else q(c)


def gru_children(terms: GateTerms, embed: tuple, parents, x, out: np.ndarray, q) -> None:
    """PyTorch's GRU update (:func:`protocols.models.cells.gru_cell`), rounded: r, z (one array) from the negated
    sums, n = tanh((u_n * r) + a_n), h' = (1 - z) * n + z * h."""
    (n_rz, (u_n,)), (e_rz, (a_n,)) = terms.gates, embed
    m = u_n.shape[1]
    for lo, hi, (rz, tmp2, n, tmp) in passes(len(parents), m, (2, 2, 0, 0)):
        p, tok = parents[lo:hi], x[lo:hi]
        r, z = _sigmoid_of_negated(_gate_sum(rz, n_rz, e_rz, p, tok, tmp2))
        np.take(u_n, p, axis=0, out=n, mode="clip")
        n *= r
        np.take(a_n, tok, axis=0, out=tmp, mode="clip")
        n += tmp
        np.tanh(n, out=n)
        np.take(terms.state, p, axis=0, out=tmp, mode="clip")     # the parents' states h
        tmp *= z                                                   # z * h
        np.subtract(1.0, z, out=z)
        z *= n                                                     # (1 - z) * n
        z += tmp
        out[lo:hi] = q(z)
