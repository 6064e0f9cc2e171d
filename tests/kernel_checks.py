"""Checks of a qsa-approx ``kernel`` certificate, recomputed independently of the code that found it (shared by the
fnn and torch MLP tests)."""
from __future__ import annotations

from fractions import Fraction

from commsim.plugins import make_model
from protocols.reductions.qsa_kernel import max_row_error, qsa_target, query_sets


def _exact(text: str) -> Fraction:
    return Fraction(text)


def _model(spec: str, rows: int, q: int, value_dim: int):
    shape = {"rows": rows, "in": value_dim + q + 1, "out": value_dim}
    return make_model(spec, n=rows, seq_len=rows, reduction="qsa-approx", shape=shape)


def check_certificate(model, cert: dict, rows: int, q: int, value_dim: int) -> None:
    """Everything the certificate claims, recomputed here: A @ k == 0 in integers on the value columns of the read
    positions, valid inputs differing by 2v, identical first layers and outputs by a direct forward, targets more
    than 2ε apart at the stated row, and the model more than ε off on the stated input."""
    d = cert["details"]
    weights, _, _ = model.first_layer()
    read = d["read_positions"]
    dim = value_dim + q + 1
    columns = [(i - 1) * dim + c for i in read for c in range(value_dim)]
    A = [[row[col] for col in columns] for row in weights]
    k = d["kernel_vector"]
    assert any(k) and all(isinstance(x, int) for x in k)
    assert all(sum(a * x for a, x in zip(row, k)) == 0 for row in A)          # integers, no rounding anywhere
    X1, X2 = ([[_exact(x) for x in row] for row in X] for X in d["inputs"])
    z1, z2 = [row[:value_dim] for row in X1], [row[:value_dim] for row in X2]
    assert all(sum(x * x for x in z) <= 1 for z in z1 + z2)                  # every ||z_i|| <= 1
    assert [row[value_dim:] for row in X1] == [row[value_dim:] for row in X2]  # same sets, same positions
    flat_diff = [b - a for r1, r2 in zip(z2, z1) for a, b in zip(r2, r1)]
    scale = Fraction(2, 1 << d["scale_exponent"])
    assert flat_diff[:len(k)] == [scale * x for x in k] and not any(flat_diff[len(k):])
    assert model.hidden(X1) == model.hidden(X2)
    assert model.forward(X1) == model.forward(X2)
    sets = [tuple(j - 1 for j in s) for s in d["sets"]]
    assert sets == query_sets(rows, q)
    t1, t2 = qsa_target(z1, sets), qsa_target(z2, sets)
    eps = Fraction(1, 2 * q)
    row = d["row"] - 1
    assert sum((a - b) ** 2 for a, b in zip(t1[row], t2[row])) > (2 * eps) ** 2
    errors = [max_row_error(model.forward(X), t)[0] for X, t in ((X1, t1), (X2, t2))]
    assert errors[d["wrong_on_input"] - 1] > eps * eps
