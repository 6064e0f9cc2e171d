"""Communication matrices M[x, y] = f(x, y) for small n, and the lower bounds read off them.

Rows are Alice's inputs, columns Bob's, both in the problem's enumeration order
(:meth:`~commsim.theory.problems.Problem.alice_inputs`); Dyck-(2,2) uses the odd/even split.

Bounds (standard facts, e.g. Kushilevitz & Nisan, ch. 1-2; Fact 4 of [BHBK24]):

* **log-rank**: a deterministic protocol of cost c partitions M into at most 2^c monochromatic
  rectangles, and M is the sum of its 1-rectangles, each of rank 1 over *any* field; so
  c >= log2 rank_F(M) for F = the reals and F = GF(2) alike.
* **one-way**: a one-way protocol (Alice speaks once) must send different messages for different
  rows, so c >= ceil(log2 #distinct rows).
* **fooling set**: c >= log2 |S| (Fact 4 of [BHBK24]); :func:`search_fooling_set` looks for a large
  one (greedy over the cells of value b, seeded random restarts) and verifies what it returns.

Exact ranks: :func:`rank_gf2` (Gaussian elimination on bit-packed rows) and :func:`rank_mod_p`
(elimination modulo the prime 2^31 - 1; rank mod p <= rank over the rationals, so it is a certified
lower bound on the real rank); :func:`rank_real` is numpy's SVD rank.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from commsim.core.errors import InputError
from commsim.theory.bounds import ceil_log2
from commsim.core.limits import check_size, show_size
from commsim.theory.dyck import DyckLanguage
from commsim.theory.problems import Problem, make_problem

#: largest matrix (rows x columns) built; 2^20 cells keeps every rank below a second or so
MAX_MATRIX_CELLS = 1 << 20


#: the prime of :func:`rank_mod_p`
PRIME = (1 << 31) - 1


def _matrix_shape(problem_name: str, n: int) -> tuple[int, int]:
    if problem_name == "index":
        return 1 << n, n
    if problem_name in ("eq", "disj"):
        return 1 << n, 1 << n
    if problem_name == "dyck22":
        side = 4 ** (n // 2)
        return side, side
    raise InputError(f"unknown problem {problem_name!r}; expected one of index, eq, disj, dyck22", "problem")


#: the matrix's shape as text, for the error naming the limit
_SHAPE_TEXT = {"index": "2^n x n", "eq": "2^n x 2^n", "disj": "2^n x 2^n", "dyck22": "4^(N/2) x 4^(N/2)"}


def largest_matrix_n(problem_name: str, max_cells: int = MAX_MATRIX_CELLS) -> int:
    """The largest n whose communication matrix has at most ``max_cells`` cells."""
    step = 2 if problem_name == "dyck22" else 1
    n = step
    while True:
        rows, cols = _matrix_shape(problem_name, n + step)
        if rows * cols > max_cells:
            return n
        n += step


@dataclass(frozen=True)
class CommMatrix:
    """The communication matrix of ``problem``: ``matrix[i, j] = f(alice_inputs[i], bob_inputs[j])``."""

    problem: Problem
    matrix: np.ndarray
    alice_inputs: np.ndarray
    bob_inputs: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return self.matrix.shape

    def input_text(self, party: str, index: int) -> str:
        """A readable form of one party's input (bit string, index, or brackets for Dyck halves)."""
        value = (self.alice_inputs if party == "alice" else self.bob_inputs)[index]
        return input_text(self.problem, value)

    def render(self, on: str = "█", off: str = "·") -> list[str]:
        """One text line per row: the figure of the matrix."""
        return ["".join(on if v else off for v in row) for row in self.matrix]


def input_text(problem: Problem, value) -> str:
    """A party's input as text: bits as 0/1, an index as a number, a Dyck half as brackets."""
    arr = np.asarray(value)
    if arr.ndim == 0:
        return str(int(arr))
    if problem.name == "dyck22":
        return DyckLanguage(problem.types, problem.depth).decode(arr)
    return "".join(str(int(v)) for v in arr)


def communication_matrix(problem_name: str, n: int, *, max_cells: int = MAX_MATRIX_CELLS) -> CommMatrix:
    """M[x, y] = f(x, y) for every Alice input x and Bob input y (uint8), for small n.

    Raises :class:`InputError` naming the largest n that fits in ``max_cells`` cells.
    """
    from commsim.theory.fooling import check_problem_args
    n = check_problem_args(problem_name, n)
    # compare n with the largest n that fits (found from small n up), never 2^n itself: n = 10^9 is
    # refused at once instead of building a 10^9-bit integer
    check_size(n, "n", 1, largest_matrix_n(problem_name, max_cells),
               f"the {problem_name} matrix has {_SHAPE_TEXT.get(problem_name, '?')} cells, at most {show_size(max_cells)}")
    problem = make_problem(problem_name, n)
    A, B = problem.alice_inputs(), problem.bob_inputs()
    Ar = np.repeat(A, len(B), axis=0)
    Bt = np.tile(B, (len(A),) + (1,) * (B.ndim - 1))
    M = problem.evaluate_batch(Ar, Bt).astype(np.uint8).reshape(len(A), len(B))
    return CommMatrix(problem, M, A, B)


# ---- ranks -----------------------------------------------------------------------
class _OneBlasThread:
    """Run OpenBLAS on one thread inside the block (restored after), when numpy's OpenBLAS is found.

    On a busy two-core machine a multi-threaded SVD of a few hundred rows can be 50x slower than a
    single-threaded one (busy-waiting threads); these matrices are small, so one thread is best.
    Linux only (the library is found in /proc/self/maps); elsewhere this does nothing.
    """

    _functions: tuple | None = None

    @classmethod
    def _find(cls) -> tuple:
        if cls._functions is None:
            cls._functions = ()
            try:
                import ctypes
                with open("/proc/self/maps") as fh:
                    paths = {line.split()[-1] for line in fh if "openblas" in line.lower() and "/" in line}
                for path in sorted(paths):
                    lib = ctypes.CDLL(path)
                    for prefix in ("scipy_openblas", "openblas"):
                        for suffix in ("64_", ""):
                            get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                            put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                            if get is not None and put is not None:
                                cls._functions = (get, put)
                                return cls._functions
            except (OSError, AttributeError, IndexError):
                cls._functions = ()
        return cls._functions

    def __enter__(self):
        self._saved = None
        functions = self._find()
        if functions:
            get, put = functions
            self._saved = int(get())
            put(1)
        return self

    def __exit__(self, *exc):
        if self._saved is not None:
            self._find()[1](self._saved)


def rank_real(M: np.ndarray) -> int:
    """Rank over the reals (numpy's SVD with its default tolerance)."""
    M = np.asarray(M, dtype=np.float64)
    if M.size == 0:
        return 0
    with _OneBlasThread():
        return int(np.linalg.matrix_rank(M))


def rank_gf2(M: np.ndarray) -> int:
    """Rank over GF(2): Gaussian elimination on rows packed 64 bits to a word (vectorized XOR)."""
    M = np.asarray(M)
    if M.size == 0:
        return 0
    bits = (M.astype(np.uint8) & 1)
    if bits.shape[1] > bits.shape[0]:
        bits = bits.T                                    # eliminate over the shorter side
    nrows, ncols = bits.shape
    packed = np.packbits(bits, axis=1)                   # column c: byte c // 8, bit 7 - c % 8
    width = -(-packed.shape[1] // 8) * 8
    buf = np.zeros((nrows, width), dtype=np.uint8)
    buf[:, :packed.shape[1]] = packed
    words = buf.view(np.uint64)                          # the same memory, 64 columns per word
    rank = 0
    for c in range(ncols):
        byte, shift = c // 8, 7 - c % 8
        candidates = np.flatnonzero((buf[rank:, byte] >> shift) & 1)
        if not candidates.size:
            continue
        pivot = rank + int(candidates[0])
        if pivot != rank:
            words[[rank, pivot]] = words[[pivot, rank]]
        below = rank + 1 + np.flatnonzero((buf[rank + 1:, byte] >> shift) & 1)
        if below.size:
            words[below] ^= words[rank]
        rank += 1
        if rank == nrows:
            break
    return rank


def rank_mod_p(M: np.ndarray, p: int = PRIME) -> int:
    """Rank over GF(p) (exact modular elimination, int64; p < 2^31).

    Since rank_GF(p) <= rank over the rationals for an integer matrix, this certifies a lower bound
    on the real rank (equality except when p divides every maximal nonzero minor).
    """
    if not 2 <= p < (1 << 31):
        raise ValueError("p must be a prime below 2^31")
    A = np.asarray(M, dtype=np.int64) % p
    if A.size == 0:
        return 0
    if A.shape[1] > A.shape[0]:
        A = A.T.copy()
    nrows, ncols = A.shape
    rank = 0
    for c in range(ncols):
        candidates = np.flatnonzero(A[rank:, c])
        if not candidates.size:
            continue
        pivot = rank + int(candidates[0])
        if pivot != rank:
            A[[rank, pivot]] = A[[pivot, rank]]
        A[rank, c:] = A[rank, c:] * pow(int(A[rank, c]), p - 2, p) % p
        below = rank + 1 + np.flatnonzero(A[rank + 1:, c])
        if below.size:
            A[below, c:] = (A[below, c:] - A[below, c:c + 1] * A[rank, c:] % p) % p
        rank += 1
        if rank == nrows:
            break
    return rank


def distinct_rows(M: np.ndarray) -> int:
    """Number of distinct rows."""
    M = np.ascontiguousarray(np.asarray(M, dtype=np.uint8))
    if M.shape[0] == 0:
        return 0
    packed = np.ascontiguousarray(np.packbits(M, axis=1))
    return int(len(np.unique(packed.view(np.dtype((np.void, packed.shape[1]))).reshape(-1))))


def one_way_bits(M: np.ndarray) -> int:
    """The one-way (Alice -> Bob) bound ceil(log2 #distinct rows)."""
    return ceil_log2(max(distinct_rows(M), 1))


def log_rank_bits(rank: int) -> int:
    """ceil(log2 rank): the log-rank lower bound on deterministic communication (0 for rank <= 1)."""
    return ceil_log2(max(int(rank), 1))


# ---- fooling sets in a matrix -----------------------------------------------------
def is_fooling_set(M: np.ndarray, rows, cols, value: int) -> bool:
    """Exhaustive pairwise check: M = value on every (rows[i], cols[i]) and, for i != j,
    M[rows[i], cols[j]] != value or M[rows[j], cols[i]] != value (Definition 1 of [BHBK24])."""
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    if len(rows) != len(cols):
        raise ValueError("rows and cols must have the same length")
    sub = np.asarray(M)[np.ix_(rows, cols)] == value
    if not sub.diagonal().all():
        return False
    clash = sub & sub.T
    np.fill_diagonal(clash, False)
    return not clash.any()


@dataclass(frozen=True)
class FoolingSearch:
    """The largest fooling set a bounded search found: cells (rows[i], cols[i]) of value ``value``."""

    value: int
    rows: np.ndarray
    cols: np.ndarray
    verified: bool
    restarts: int
    seed: int
    sizes_tried: dict = field(default_factory=dict)     # value -> best size per value

    @property
    def size(self) -> int:
        return int(len(self.rows))

    @property
    def bits(self) -> int:
        return ceil_log2(max(self.size, 1))

    def to_dict(self) -> dict:
        return {"value": self.value, "size": self.size, "bits": self.bits, "verified": self.verified,
                "restarts": self.restarts, "seed": self.seed, "best_size_by_value": self.sizes_tried}


def _greedy_fooling(M: np.ndarray, X: np.ndarray, Y: np.ndarray, value: int) -> np.ndarray:
    """Scan the candidate cells in the given order; keep each that is compatible with all kept so far.

    The candidates still compatible with every kept cell shrink at each step, so each step costs
    only the survivors.  Returns the positions (in the given order) of the kept cells.
    """
    idx = np.arange(len(X))
    chosen = []
    while len(idx):
        chosen.append(int(idx[0]))
        x, y = X[0], Y[0]
        X, Y, idx = X[1:], Y[1:], idx[1:]
        keep = (M[x, Y] != value) | (M[X, y] != value)
        X, Y, idx = X[keep], Y[keep], idx[keep]
    return np.asarray(chosen, dtype=np.int64)


def search_fooling_set(M: np.ndarray, *, restarts: int = 4, seed: int = 0, values=(0, 1),
                       max_candidates: int = 1 << 20) -> FoolingSearch:
    """A large fooling set of M by a bounded search, verified pairwise before it is returned.

    For each value b: the cells of value b (at most ``max_candidates``, sampled with the seed
    beyond that) are scanned greedily, first scarcest-first (cells whose row and column hold the
    fewest b's; ties in seeded random order), then in ``restarts - 1`` seeded random orders; a cell
    is kept when it is compatible with every kept cell.  The best set over all values and orders
    is returned.
    """
    M = np.asarray(M)
    rng = np.random.default_rng(seed)
    best: tuple[int, np.ndarray, np.ndarray] | None = None
    sizes: dict[int, int] = {}
    for value in values:
        cells = np.argwhere(M == value)
        if len(cells) > max_candidates:
            cells = cells[np.sort(rng.choice(len(cells), size=max_candidates, replace=False))]
        sizes[int(value)] = 0
        is_value = M == value
        scarcity = is_value.sum(axis=1)[cells[:, 0]] + is_value.sum(axis=0)[cells[:, 1]]
        for attempt in range(max(1, restarts)):
            order = rng.permutation(len(cells))
            if attempt == 0:   # first pass: cells in the scarcest rows and columns first (ties at random)
                order = order[np.argsort(scarcity[order], kind="stable")]
            X, Y = cells[order, 0], cells[order, 1]
            chosen = _greedy_fooling(M, X, Y, value)
            if len(chosen) > sizes[int(value)]:
                sizes[int(value)] = int(len(chosen))
            if best is None or len(chosen) > len(best[1]):
                best = (int(value), X[chosen], Y[chosen])
    if best is None:
        return FoolingSearch(int(values[0]) if len(values) else 0, np.zeros(0, np.int64), np.zeros(0, np.int64),
                             True, restarts, seed, sizes)
    value, rows, cols = best
    return FoolingSearch(value, rows, cols, is_fooling_set(M, rows, cols, value), restarts, seed, sizes)


# ---- the whole report --------------------------------------------------------------
@dataclass(frozen=True)
class MatrixReport:
    """Everything ``commsim matrix`` shows for one problem and size."""

    matrix: CommMatrix
    rank_real: int
    rank_gf2: int
    rank_mod_p: int | None
    distinct_rows: int
    fooling: FoolingSearch
    known_fooling_size: int | None

    @property
    def log_rank_bits(self) -> int:
        return log_rank_bits(self.rank_real)

    @property
    def gf2_rank_bits(self) -> int:
        return log_rank_bits(self.rank_gf2)

    @property
    def one_way_bits(self) -> int:
        return ceil_log2(max(self.distinct_rows, 1))

    @property
    def two_way_bits(self) -> int:
        """The best deterministic two-way bound here: log-rank (reals, GF(2)) or the fooling set found."""
        ranks = [self.rank_gf2] + ([self.rank_mod_p] if self.rank_mod_p is not None else [self.rank_real])
        return max([log_rank_bits(r) for r in ranks] + [self.fooling.bits])

    def to_dict(self) -> dict:
        M = self.matrix.matrix
        return {"problem": self.matrix.problem.name, "n": self.matrix.problem.n, "rows": int(M.shape[0]),
                "cols": int(M.shape[1]), "ones": int(M.sum()), "rank_real": self.rank_real,
                "rank_gf2": self.rank_gf2, "rank_mod_p": self.rank_mod_p, "log_rank_bits": self.log_rank_bits,
                "gf2_rank_bits": self.gf2_rank_bits, "distinct_rows": self.distinct_rows,
                "one_way_bits": self.one_way_bits, "fooling_search": self.fooling.to_dict(),
                "known_fooling_size": self.known_fooling_size, "two_way_lower_bound_bits": self.two_way_bits,
                "lower_bound_bits": self.two_way_bits}


#: rank mod p is computed when the shorter side has at most this many entries (it is O(side^3))
MOD_P_MAX_SIDE = 512


def analyze_matrix(problem_name: str, n: int, *, restarts: int = 4, seed: int = 0) -> MatrixReport:
    """Matrix, ranks (reals, GF(2), GF(2^31 - 1) when small), distinct rows, a searched fooling set."""
    from commsim.theory.fooling import fooling_set

    cm = communication_matrix(problem_name, n)
    M = cm.matrix
    mod_p = rank_mod_p(M) if min(M.shape) <= MOD_P_MAX_SIDE else None
    known = fooling_set(problem_name, n)
    return MatrixReport(cm, rank_real(M), rank_gf2(M), mod_p, distinct_rows(M),
                        search_fooling_set(M, restarts=restarts, seed=seed), known.size)
