"""The ``kernel`` certificate for a fully-connected network on q-sparse averaging: two valid inputs with the same
first-layer output whose qSA targets are more than 2ε apart in some row.

The construction (the argument of :func:`protocols.theorems.fnn_qsa_kernel_width`).  Positions are 0-based.
Q = the last q - 1 positions, P = the other N - q + 1.  Position i in P gets the set S_i = {i} ∪ Q, position i in Q
the first q positions other than i; the values on Q are 0.  Then row i of qSA, for i in P, is
z_i / q: the targets read the perturbed values one by one.  The first layer restricted to the d' value coordinates
of every position in P is an integer matrix A (the weight codes); an exact rational kernel vector v of A
(:func:`~protocols.reductions.kernel.nullspace`), made a primitive integer vector and divided by the least power of
two that puts every block v_j in the unit ball, has max_j ||v_j|| in (1/2, 1].  The inputs z_P = -v and z_P = +v
(all else equal) are valid, A(+v) - A(-v) = 2Av = 0 exactly, so the network's first layer -- computed exactly on
the input, then rounded -- gives bit-identical codes, hence identical outputs; the targets at the row j* of the
largest block are -v_j*/q and +v_j*/q, 2||v_j*||/q > 1/q = 2ε apart.  The model is more than ε off on one.

Everything is verified by a direct forward of both inputs, in exact arithmetic: the first-layer codes, the outputs,
the target gap against 2ε and the model's max-row error against ε on each input.
"""
from __future__ import annotations

from fractions import Fraction

from commsim.contract import Certificate
from protocols.reductions.kernel import integer_kernel_vector, is_kernel_vector, nullspace, scale_into_ball, \
    squared_norm

__all__ = ["query_sets", "qsa_input", "qsa_target", "max_row_error", "kernel_certificate"]


def query_sets(rows: int, q: int) -> list[tuple[int, ...]]:
    """The sets of the construction (module docstring), 0-based: S_i = {i} ∪ Q for i in P, and for i in Q the
    first q positions other than i."""
    tail = list(range(rows - (q - 1), rows))
    sets = []
    for i in range(rows):
        if i < rows - (q - 1):
            sets.append(tuple(sorted({i, *tail})))
        else:
            sets.append(tuple([j for j in range(rows) if j != i][:q]))
    return sets


def qsa_input(values: list[list[Fraction]], sets: list[tuple[int, ...]]) -> list[list[Fraction]]:
    """The N x d input rows x_i = (z_i, y_i, i) with d = d' + q + 1: the values, the set's members and the position,
    both counted from 1 (the seed's layout of qSA's input)."""
    return [[*map(Fraction, z), *(Fraction(j + 1) for j in s), Fraction(i + 1)]
            for i, (z, s) in enumerate(zip(values, sets))]


def qsa_target(values: list[list[Fraction]], sets: list[tuple[int, ...]]) -> list[list[Fraction]]:
    """qSA exactly: row i is the mean of z_j over j in S_i."""
    q = len(sets[0])
    dim = len(values[0])
    return [[sum((values[j][c] for j in s), Fraction(0)) / q for c in range(dim)] for s in sets]


def max_row_error(output: list[list[Fraction]], target: list[list[Fraction]]) -> tuple[Fraction, int]:
    """(max_i ||output_i - target_i||^2, the row attaining it), exactly."""
    errors = [squared_norm([a - b for a, b in zip(o, t)]) for o, t in zip(output, target)]
    worst = max(range(len(errors)), key=errors.__getitem__)
    return errors[worst], worst


def _shown(x: Fraction) -> str:
    """An exact number as text: an integer, or numerator/denominator."""
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def kernel_certificate(model, rows: int, q: int, value_dim: int) -> tuple[Certificate | None, str]:
    """The kernel certificate for ``model`` (a FullyConnected read as ``rows`` x (d' + q + 1) in, d' out), or None
    with what was searched (module docstring)."""
    weights, _, frac = model.first_layer()
    d = value_dim + q + 1
    read = list(range(rows - (q - 1)))                           # P: the positions whose values the targets read
    columns = [i * d + c for i in read for c in range(value_dim)]
    A = [[row[col] for col in columns] for row in weights]
    basis = nullspace(A, len(columns))
    searched = (f"the first layer restricted to the value coordinates of the {len(read)} read positions is a "
                f"{len(A)} x {len(columns)} integer matrix (weight codes, 2^-{frac}); its kernel has dimension "
                f"{len(basis)}")
    if not basis:
        return None, searched + ": no kernel vector, so no two inputs of this form share the first layer"
    k = integer_kernel_vector(basis[0])
    if not is_kernel_vector(A, k):                               # exact: A @ k == 0 in integers
        return None, searched + ": the kernel vector failed its exact check (not used)"
    v, exponent = scale_into_ball(k, value_dim)
    sets = query_sets(rows, q)
    zero = [Fraction(0)] * value_dim
    minus = [[-x for x in v[i * value_dim:(i + 1) * value_dim]] if i < len(read) else zero for i in range(rows)]
    plus = [[x for x in v[i * value_dim:(i + 1) * value_dim]] if i < len(read) else zero for i in range(rows)]
    inputs = [qsa_input(minus, sets), qsa_input(plus, sets)]
    valid = all(squared_norm(z) <= 1 for z in minus + plus)
    hidden = [model.hidden(x) for x in inputs]
    outputs = [model.forward(x) for x in inputs]
    targets = [qsa_target(minus, sets), qsa_target(plus, sets)]
    eps = Fraction(1, 2 * q)
    gaps = [squared_norm([a - b for a, b in zip(r1, r2)]) for r1, r2 in zip(*targets)]
    row = max(range(rows), key=gaps.__getitem__)
    errors = [max_row_error(o, t) for o, t in zip(outputs, targets)]
    wrong = [i for i, (e, _) in enumerate(errors) if e > eps * eps]
    verified = (valid and hidden[0] == hidden[1] and outputs[0] == outputs[1] and gaps[row] > (2 * eps) ** 2
                and bool(wrong))
    first = wrong[0] if wrong else 0
    err_row = errors[first][1]
    explanation = (
        f"A kernel vector v of the first layer on the values of positions 1..{len(read)} ({len(A)} x {len(columns)} "
        f"integer weight codes; A·v = 0 exactly) scaled by 2^-{exponent} into the unit ball: the inputs with "
        f"z = -v and z = +v there (sets S_i = {{i}} ∪ the last q - 1 positions) have bit-identical first-layer "
        f"outputs, hence the same network output, while qSA's row {row + 1} is -v_{row + 1}/q vs +v_{row + 1}/q: "
        f"||gap||^2 = {_shown(gaps[row])} > (2ε)^2 = {_shown((2 * eps) ** 2)}.  On input {first + 1} the model is "
        f"off by ||f(X)_i - qSA(X)_i||^2 = {_shown(errors[first][0])} > ε^2 = {_shown(eps * eps)} at row "
        f"{err_row + 1}; a direct forward of both inputs confirms it.")
    details = {
        "kernel_vector": k, "scale_exponent": exponent, "matrix_shape": [len(A), len(columns)],
        "kernel_dimension": len(basis), "read_positions": [i + 1 for i in read],
        "sets": [[j + 1 for j in s] for s in sets],
        "inputs": [[[_shown(x) for x in r] for r in X] for X in inputs],
        "first_layer_codes": hidden[0], "first_layers_identical": hidden[0] == hidden[1],
        "outputs_identical": outputs[0] == outputs[1], "row": row + 1,
        "target_gap_squared": _shown(gaps[row]), "two_eps_squared": _shown((2 * eps) ** 2), "epsilon": _shown(eps),
        "model_error_squared": [_shown(e) for e, _ in errors], "wrong_on_input": first + 1,
        "model_output": [[_shown(x) for x in r] for r in outputs[first]],
        "expected_output": [[_shown(x) for x in r] for r in targets[first]],
    }
    cert = Certificate("kernel", [[round(float(x), 6) for x in z] for z in minus],
                       [[round(float(x), 6) for x in z] for z in plus],
                       None, None, explanation, verified, details)
    return cert, searched + (": a kernel pair, verified by a direct forward" if verified else
                             ": a kernel pair that did NOT verify (not a certificate)")
