"""Exact linear algebra for the kernel certificate: a rational nullspace, and a kernel vector scaled into the unit ball.

Everything is exact (integers and :class:`fractions.Fraction`), never floating point: a kernel vector v of an
integer matrix A satisfies A @ v == 0 as integers, so two inputs that differ by v have bit-identical images
under A, whatever rounding follows.
"""
from __future__ import annotations

from fractions import Fraction
from math import gcd, isqrt

__all__ = ["nullspace", "integer_kernel_vector", "scale_into_ball", "is_kernel_vector", "squared_norm"]


def nullspace(matrix: list[list[int]], columns: int) -> list[list[Fraction]]:
    """A basis of {v : matrix @ v = 0} over the rationals (reduced row echelon form, exact), one vector per free
    column; ``columns`` is the number of columns (the matrix may have no rows)."""
    rows = [[Fraction(x) for x in row] for row in matrix]
    pivots: list[int] = []
    r = 0
    for c in range(columns):
        pivot = next((i for i in range(r, len(rows)) if rows[i][c] != 0), None)
        if pivot is None:
            continue
        rows[r], rows[pivot] = rows[pivot], rows[r]
        lead = rows[r][c]
        rows[r] = [x / lead for x in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][c] != 0:
                factor = rows[i][c]
                rows[i] = [a - factor * b for a, b in zip(rows[i], rows[r])]
        pivots.append(c)
        r += 1
        if r == len(rows):
            break
    free = [c for c in range(columns) if c not in set(pivots)]
    basis = []
    for f in free:
        v = [Fraction(0)] * columns
        v[f] = Fraction(1)
        for i, p in enumerate(pivots):
            v[p] = -rows[i][f]
        basis.append(v)
    return basis


def integer_kernel_vector(vector: list[Fraction]) -> list[int]:
    """The rational vector times the least common multiple of its denominators, divided by the gcd of the result:
    the primitive integer vector on the same line (a nonzero vector stays nonzero)."""
    lcm = 1
    for x in vector:
        lcm = lcm * x.denominator // gcd(lcm, x.denominator)
    ints = [int(x * lcm) for x in vector]
    g = 0
    for x in ints:
        g = gcd(g, x)
    return [x // g for x in ints] if g else ints


def is_kernel_vector(matrix: list[list[int]], vector) -> bool:
    """matrix @ vector == 0 exactly (integers or fractions)."""
    return all(sum(Fraction(a) * Fraction(b) for a, b in zip(row, vector)) == 0 for row in matrix)


def squared_norm(block) -> Fraction:
    """||x||^2 of a block of exact numbers."""
    return sum((Fraction(x) ** 2 for x in block), Fraction(0))


def scale_into_ball(vector: list[int], block: int) -> tuple[list[Fraction], int]:
    """The integer vector divided by 2^E, E the least exponent with every block of ``block`` coordinates of norm
    <= 1: then the largest block's norm M / 2^E lies in (1/2, 1] (M^2 <= 4^E < 4 M^2), exactly.  Returns the
    scaled vector and E."""
    largest = max(sum(x * x for x in vector[s:s + block]) for s in range(0, len(vector), block))
    if largest == 0:
        raise ValueError("the zero vector cannot be scaled into the ball's shell")
    exponent = max((isqrt(largest - 1)).bit_length(), 0) if largest > 1 else 0
    while 4 ** exponent < largest:          # the least E with M^2 <= 4^E
        exponent += 1
    while exponent > 0 and 4 ** (exponent - 1) >= largest:
        exponent -= 1
    return [Fraction(x, 1 << exponent) for x in vector], exponent
