"""Every formula of the papers, written once: the protocols' bit counts and the lower bounds.

[BHBK24] is Bhattamishra, Hahn, Blunsom, Kanade (2024), "Separations in the Representational
Capabilities of Transformers and Recurrent Architectures"; [SHT23] is Sanford, Hsu, Telgarsky (2023),
"Representational Strengths and Limitations of Transformers".  N is the model's sequence length, m the
width (state units of a recurrence; per-head width of an attention layer), p the bits per number, H the
number of heads, n the size of a source communication problem.  In the counts below log N is ceil(log2 N),
as in the simulators' exact message widths: commsim's whole-bit form.  The papers write log N unrounded;
:func:`exchange_bits_paper_log` and :func:`theorem5_paper_lengths` give Theorems 4 and 5 in that, their own form.

Every function takes and returns plain integers (or an exact :class:`~fractions.Fraction`), so the same
formula serves ``commsim run`` (a built model), ``commsim budget`` (an architecture's parameters),
``commsim separate`` and the lessons.  :func:`exchange_text` renders Theorem 4's count with its values
put in, the one text both ``commsim run`` and ``commsim budget`` show for it.
"""
from __future__ import annotations

from fractions import Fraction

from commsim.theory.bounds import ceil_log2

__all__ = [
    "handoff_bits",
    "exchange_bits", "exchange_text", "query_bits", "one_way_attention_bits",
    "index_one_way_bits", "index_bob_one_way_bits", "index_two_way_protocol_bits", "equality_bits", "disjointness_bits",
    "dyck_fooling_bits", "attention_min_width", "dyck_min_width",
    "composition_one_way_bits", "composition_message_bits", "composition_error_bound", "composition_cot_scale",
    "fano_phi", "fano_accuracy_ceiling", "index_lookup_one_way_bits", "fnn_qsa_width", "fnn_qsa_kernel_width",
    "PAPER_RESULTS", "exchange_bits_paper_log", "theorem5_paper_lengths",
]

#: The papers' own results, as the seed texts number or name them: paper -> kind -> the results of that kind.
#: docs/RESULTS.md may credit a paper only with what is listed here (tests/test_results_doc.py checks it).
#: [BHBK24] numbers its results with one counter (Proposition 9 sits between Theorems 8 and 10; there is no
#: Theorem 9); [PNP24] is known from the STAT 9910 slides, which state its Theorems 1 and 2; [SHT23] is known
#: from slides and a summary that give no numbers, so its results are named by content.
PAPER_RESULTS = {
    "BHBK24": {
        "Theorem": {"1", "2", "3", "4", "5", "6", "7", "8", "10", "11", "12", "13"},
        "Lemma": {"1", "2", "3", "4", "5"},
        "Fact": {"1", "2", "3", "4"},
        "Proposition": {"9"},
        "Corollary": {"8.1", "13.1"},
        "Definition": {"1"},
        "Sec.": {"1", "1.1", "2", "3", "4", "4.1", "4.2", "5", "5.1", "5.2", "6", "7"},
        "App.": {"A", "B", "B.1", "B.2", "B.3", "C", "C.1", "D", "E", "F", "F.1", "F.2", "F.3", "F.4", "G", "G.1",
                 "G.2", "H", "H.1", "H.2"},
        "Fig.": {"1", "2", "2a", "2b", "2c", "3", "4"},
    },
    "PNP24": {"Theorem": {"1", "2"}},
    "SHT23": {"named": {
        "qSA upper bound", "qSA lower bound (attention)", "qSA lower bound (RNN)", "qSA lower bound (FNN)",
        "one-way attention protocol", "Match2 upper bound", "third-order self-attention",
        "Match3 upper bound (third-order unit)", "Match3 lower bound", "Match3 conjecture for deeper transformers",
        "Match3 Variant 1 in two layers", "Match3Bigram in depth 2", "Match3Local reduced to qSA",
        "graph transformer", "Directed 3-Cycle (task)",
        "graph transformer lower bound (Directed 3-Cycle)", "higher-order graph unit (Directed 3-Cycle)",
        "Undirected 5-Cycle (task)",
    }},
}


def _log_n(seq_len: int) -> int:
    """ceil(log2 N), with N = 0 read as 1 (a length-0 question costs the log term nothing)."""
    return ceil_log2(max(int(seq_len), 1))


# ---- the upper bounds: what a model's protocol sends ----------------------------------------------
def handoff_bits(state_units: int, precision: int) -> int:
    """Theorem 2 of [BHBK24]: a recurrent model whose state is m numbers of p bits gives a one-way
    protocol of m·p bits on every contiguous split (an LSTM's state (h, c) has 2m units: 2m·p)."""
    return int(state_units) * int(precision)


def exchange_bits(width: int, precision: int, heads: int, seq_len: int) -> int:
    """Theorem 4 of [BHBK24]: a one-layer attention of H heads of width m at p bits is computed, for any
    partition of its N positions, by a protocol of 3m(p + log N)H bits."""
    return 3 * int(width) * (int(precision) + _log_n(seq_len)) * int(heads)


def exchange_bits_paper_log(width: int, precision: int, heads: int, seq_len: int) -> float:
    """Theorem 4 of [BHBK24] in the paper's own form, 3m(p + log N)H with log N = log2 N a real number (the paper
    does not round it).  commsim's :func:`exchange_bits` rounds log N up to whole bits, as the exact messages do."""
    import math
    return 3 * int(width) * (int(precision) + math.log2(max(int(seq_len), 1))) * int(heads)


def theorem5_paper_lengths(width: int, precision: int, heads: int, *, even: bool = True,
                           search_up_to: int = 1 << 40) -> tuple[int | None, int | None]:
    """Theorem 5 of [BHBK24] in the paper's own form: (the largest valid N with 3m(p + log2 N)H >= N - 1, the
    smallest valid N above it that the inequality rules out), N even when ``even`` (Dyck-(2,2) strings); log2 N is
    real, so the answer can differ from the whole-bit form commsim's budget searches with.  The left side grows
    like log N, the right like N: past the first N ruled out every larger N is ruled out, so a bisection over the
    valid lengths finds it (None, None when nothing up to ``search_up_to`` is ruled out)."""
    step = 2 if even else 1

    def fits(N: int) -> bool:
        return exchange_bits_paper_log(width, precision, heads, N) >= N - 1

    lo, hi = step, step                       # lo fits; double hi until it does not
    while fits(hi):
        lo, hi = hi, hi * 2
        if hi > search_up_to:
            return None, None
    while hi - lo > step:
        mid = (lo + hi) // 2 // step * step
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo, hi


def exchange_text(width: int, precision: int, heads: int, seq_len: int) -> str:
    """Theorem 4's count with its values: ``3m(p + ceil(log2 N))H = 3·4·(8 + 4)·1 = 144``."""
    return (f"3m(p + ceil(log2 N))H = 3·{width}·({precision} + {_log_n(seq_len)})·{heads} = "
            f"{exchange_bits(width, precision, heads, seq_len)}")


def query_bits(width: int, precision: int, heads: int) -> int:
    """Each head's query vector q_N, m numbers of p bits: m·p·H.  The whole message of the one-way
    protocol of [SHT23] (Alice owns only the query), and the first step of the exchange as the
    simulator runs it (Theorem 4's count of [BHBK24] leaves it out)."""
    return int(width) * int(precision) * int(heads)


def one_way_attention_bits(width: int, precision: int, heads: int, *, residual: int = 0,
                           attend_self: bool = False) -> int:
    """The one-way protocol of [SHT23] when Alice owns only the query: each head's q_N (m·p·H), plus the
    r coordinates of x_N that the output map reads (r·p; step 1 of the protocol in Appendix D of [BHBK24]), plus, when the
    query attends to itself, its own logit and value per head ((m + 1)·p·H; the qSA reduction of [SHT23])."""
    m, p, H = int(width), int(precision), int(heads)
    return query_bits(m, p, H) + int(residual) * p + ((m + 1) * p * H if attend_self else 0)


# ---- the lower bounds of the source problems (bits every protocol must send) ------------------------
def index_one_way_bits(n: int) -> int:
    """Fact 3 of [BHBK24]: INDEX_n needs n bits one-way (Alice to Bob)."""
    return int(n)


def index_bob_one_way_bits(n: int) -> int:
    """INDEX_n one-way the other way round, from the index holder (Bob) to Alice, who answers: exactly
    ceil(log2 n) bits.  Bob sends b (ceil(log2 n) bits suffice); and fewer cannot do: two indices b != b'
    with the same message give Alice the same view, but some a has a_b != a_b' (Fact 3 of [BHBK24]:
    ceil(log2 n) is the two-way cost less Alice's answer bit)."""
    return ceil_log2(max(int(n), 1))


def index_two_way_protocol_bits(n: int) -> int:
    """INDEX_n two-way takes only ceil(log2 n) + 1 bits (Bob sends b, Alice answers a_b), which is why
    the one-way bound does not bind a two-way protocol (Theorem 1 of [BHBK24] solves index lookup with
    one attention layer)."""
    return ceil_log2(max(int(n), 1)) + 1


def equality_bits(n: int) -> int:
    """Fact 2 of [BHBK24]: EQ_n needs n bits, one-way and two-way (fooling set {(x, x)}); with Theorem 2
    it gives Theorem 11 (a recurrent model deciding INEQ on 2n bits has m·p >= n = N/2), with Theorem 4
    Theorem 12 (a one-layer attention has 3m(p + log N)H >= n)."""
    return int(n)


def disjointness_bits(n: int) -> int:
    """Fact 1 of [BHBK24]: DISJ_n needs n bits, one-way and two-way (fooling set {(x, complement of x)});
    the source of Theorem 8 (MQAR: m·p >= N/2) and of the [SHT23] bounds for Match3 and qSA."""
    return int(n)


def dyck_fooling_bits(seq_len: int) -> int:
    """Lemma 1 of [BHBK24]: deciding Dyck-(2,2) membership of a length-N string, Alice holding the odd
    positions and Bob the even ones, takes N - 1 bits (fooling set: all 2^(N-1) members)."""
    return max(int(seq_len) - 1, 0)


def attention_min_width(bound_bits: int, precision: int, seq_len: int) -> Fraction:
    """The width a one-layer attention needs against a two-way bound of b bits: Theorem 4's protocol
    carries 3m(p + log N)H bits, so mH >= b / (3(p + log N)) (exact)."""
    return Fraction(int(bound_bits), 3 * (int(precision) + _log_n(seq_len)))


def dyck_min_width(seq_len: int, precision: int) -> Fraction:
    """Theorem 5 of [BHBK24]: a one-layer attention deciding Dyck-(2,2) has mH >= (N - 1)/(3(p + log N))."""
    return attention_min_width(dyck_fooling_bits(seq_len), precision, seq_len)


def one_way_message_bits(width: int, precision: int, heads: int, dim: int | None = None, *, residual: int = 0,
                         attend_self: bool = True) -> int:
    """[SHT23] one-way, the sender holding only the query: the cheaper valid message, x_N (d·p bits, from
    which the receiver computes everything about the query position) or :func:`one_way_attention_bits`;
    min(d·p, (2m + 1)·p·H) for a self-attending layer without a residual path (d unknown: the latter)."""
    query = one_way_attention_bits(width, precision, heads, residual=residual, attend_self=attend_self)
    return query if dim is None else min(int(dim) * int(precision), query)


# ---- function composition ([PNP24]: Peng, Narayanan, Papadimitriou, COLM 2024) -----------------------------
def composition_one_way_bits(n: int) -> int:
    """One-way from the holder of g (Alice) to the holder of f and the query (Bob), who must answer g(f(x)):
    INDEX over an alphabet of size n, so ceil(log2 n^n) = ceil(n log2 n) bits (Bob may need any of g's n values;
    n^n functions g need distinct messages).  Equal to n·ceil(log2 n), the plain encoding's length, when n is a
    power of two; smaller otherwise (e.g. n = 3: 5 bits, not 6)."""
    n = int(n)
    if n < 2:
        return 0
    if n <= 4096 or n & (n - 1) == 0:          # exactly from n^n, or n·k for n = 2^k
        return (n ** n - 1).bit_length() if n <= 4096 else n * (n.bit_length() - 1)
    from decimal import Decimal, getcontext   # n log2 n is irrational here: 60 digits place its ceiling
    getcontext().prec = 60
    return int((Decimal(n) * Decimal(n).ln() / Decimal(2).ln()).to_integral_value(rounding="ROUND_CEILING"))


def composition_message_bits(heads: int, dim: int, precision: int) -> int:
    """[PNP24]'s count of Alice's one-way message for an H-head layer of embedding dimension d at p bits: per
    head her normaliser (1 number) and her weighted value sum (d numbers), H(d + 1)p bits."""
    return int(heads) * (int(dim) + 1) * int(precision)


def composition_error_bound(n: int, message_bits: int) -> tuple[float, float]:
    """Theorem 1 of [PNP24] for a one-way message of C bits: with R = n log2 n - C > 0, the probability over
    uniformly random f, g (domains of size n) and queries that the answer is wrong is at least R / (3 n log2 n).
    Returns (R, the bound); the bound is 0 when R <= 0 (nothing is ruled out).  The theorem states it with
    C = H(d + 1)p (:func:`composition_message_bits`); its proof bounds any one-way message of C bits."""
    import math
    n = int(n)
    if n < 2:
        return 0.0, 0.0
    total = n * math.log2(n)
    R = total - int(message_bits)
    return R, (R / (3 * total) if R > 0 else 0.0)


def composition_cot_scale(n: int, heads: int, dim: int, precision: int) -> float:
    """Theorem 2 of [PNP24]: iterated function composition needs Omega(sqrt(n / (H d p))) chain-of-thought steps
    of an H-head layer of dimension d at p bits; this is sqrt(n / (H d p)), the scale (the theorem gives no
    constant, so it is no step count)."""
    import math
    return math.sqrt(int(n) / (int(heads) * int(dim) * int(precision)))


# ---- nearest neighbour, sparse averaging, two layers -------------------------------------------------------
def nearest_neighbour_bits(n_vectors: int) -> int:
    """Theorem 8 of [BHBK24]: a recurrent model doing nearest neighbour (or MQAR) over N vectors has
    m·p >= N/2 (DISJ_(N/2) through ``disj-mqar``, Fact 1)."""
    return disjointness_bits(int(n_vectors) // 2)


def qsa_recurrent_bits(seq_len: int, q: int) -> int:
    """[SHT23]: a recurrent model computing qSA exactly on N positions has state bits >= N - q: Alice's
    N - q values a_i, Bob's q - 1 public zero values and the query {b, those q - 1}; the output a_b/q is
    INDEX_(N-q) one-way (q = 1: ``index-qsa``, N - 1 bits)."""
    return index_one_way_bits(max(int(seq_len) - int(q), 0))


def qsa_one_layer_bits(q: int) -> int:
    """[SHT23] via ``disj-qsa``: a one-layer attention approximating qSA to 1/(2q) sends >= q bits one-way: its
    message (:func:`one_way_message_bits`) has min(d·p, (2m + 1)·p·H) >= q bits when the query attends to its own
    position, min(d·p, m·p·H) >= q when it does not."""
    return disjointness_bits(int(q))


def two_layer_protocol_factor(seq_len: int, width: int, precision: int, heads: int = 1) -> Fraction:
    """Corollary 13.1 of [BHBK24]: a protocol simulating every two-layer transformer with m·p·H·g(N) bits on
    every balanced partition must carry the N/2 bits of Lemma 5's model, so g(N) >= (N/2)/(m·p·H) --
    Omega(N / log^2 N) since that model has m, p = O(log N)."""
    return Fraction(int(seq_len) // 2, int(width) * int(precision) * int(heads))


# ---- [SHT23] graph transformers and Directed 3-Cycle (commsim's exact node-partition protocol) --------------
def graph_nodes(seq_len: int) -> int | None:
    """N for an input of N^2 adjacency bits (a graph task's tokens, row by row), None when no square."""
    from math import isqrt
    nodes = isqrt(max(int(seq_len), 0))
    return nodes if nodes * nodes == int(seq_len) and nodes > 0 else None


def graph_exchange_bits(layers: int, heads: int, width: int, precision: int, owned_nodes: int) -> int:
    """The node-partition protocol of a graph transformer (:mod:`protocols.simulators.graph`): per layer and
    head the key and value (2m numbers of p bits) of every node a party owns, then one bit each for the OR of
    the nodes' decisions: L·H·(owned nodes)·2m·p + 2 (public nodes are computed by both, never sent)."""
    return int(layers) * int(heads) * int(owned_nodes) * 2 * int(width) * int(precision) + 2


def graph_exchange_text(layers: int, heads: int, width: int, precision: int, owned_nodes: int) -> str:
    """The count with its values: ``L·H·(owned nodes)·2m·p + 2 = 1·1·16·2·1·2 + 2 = 66``."""
    return (f"L·H·(owned nodes)·2m·p + 2 = {layers}·{heads}·{owned_nodes}·2·{width}·{precision} + 2 = "
            f"{graph_exchange_bits(layers, heads, width, precision, owned_nodes)}")


def cycle3_disj_bits(n: int) -> int:
    """``disj-3cycle``: DISJ on the n^2 bits of Alice's edges U -> V and Bob's edges V -> W needs n^2 bits
    (Fact 1 of [BHBK24]; the fooling set {(x, complement of x)})."""
    return disjointness_bits(int(n) * int(n))


def cycle3_min_lhmp(n: int) -> Fraction:
    """[SHT23]'s graph-transformer bound through ``disj-3cycle`` (N = 3n nodes, 2n of them owned):
    L·H·2n·2m·p + 2 >= n^2, i.e. L·H·m·p >= (n^2 - 2)/(4n) ~ N/12 -- the slides' "LHm = Omega~(N)"."""
    return Fraction(int(n) * int(n) - 2, 4 * int(n))


# ---- an accuracy ceiling for one-way protocols on uniform index lookup (commsim's corollary, not the papers') ----
def fano_phi(eps: float, k: int) -> float:
    """Fano's function phi(eps) = H2(eps) + eps·log2(k - 1) (bits), increasing on [0, 1 - 1/k] from 0 to log2 k."""
    import math
    eps, k = float(eps), int(k)
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"eps must be in [0, 1], got {eps}")
    h2 = 0.0 if eps in (0.0, 1.0) else -eps * math.log2(eps) - (1 - eps) * math.log2(1 - eps)
    return h2 + (eps * math.log2(k - 1) if k > 2 else 0.0)


def fano_accuracy_ceiling(k: int, seq_len: int, message_bits: float) -> float:
    """The most any one-way protocol whose message has ``message_bits`` = S bits can get right on index lookup
    with Alice's x uniform in [k]^N and Bob's index uniform in [N] (N = ``seq_len``):
    1 - phi^{-1}(log2 k - S/N), and 1 when S >= N·log2 k (docs/EXPERIMENTS.md, "The Fano ceiling").

    Proof sketch: H(X | M) >= N·log2 k - S; Bob's guess at x_i is a function of (M, i), so Fano gives
    H(X_i | M) <= phi(e_i); summing over i (subadditivity) and by concavity of phi, phi(mean e_i) >= log2 k - S/N,
    and phi is increasing on [0, 1 - 1/k].  The inverse is found by bisection and rounded so that the ceiling
    returned is never below the exact one (a safe upper bound on the accuracy)."""
    import math
    k, n, s = int(k), int(seq_len), float(message_bits)
    if k < 2 or n < 1 or s < 0:
        raise ValueError(f"need k >= 2, N >= 1, S >= 0; got k={k}, N={n}, S={s}")
    target = math.log2(k) - s / n
    if target <= 0:
        return 1.0
    lo, hi = 0.0, 1.0 - 1.0 / k            # phi(lo) <= target <= phi(hi) = log2 k
    for _ in range(200):
        mid = (lo + hi) / 2
        if fano_phi(mid, k) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-15:
            break
    return min(1.0, 1.0 - lo)               # lo <= phi^{-1}(target): 1 - lo is at or above the exact ceiling


def index_lookup_one_way_bits(k: int, seq_len: int) -> float:
    """The one-way line for k-ary index lookup of length N: a protocol right on every input sends >= N·log2 k bits."""
    import math
    return int(seq_len) * math.log2(int(k))


# ---- [SHT23] fully-connected networks on q-sparse averaging ------------------------------------------------
def fnn_qsa_width(seq_len: int, value_dim: int) -> int:
    """[SHT23] (q-sparse averaging, main results): a fully-connected network of depth >= 2 that
    1/(2q)-approximates qSA on N rows with values in the unit ball of R^(d') (q < N/2) has width >= N·d'/2; the
    least integer width it allows is ceil(N·d'/2)."""
    return -(-int(seq_len) * int(value_dim) // 2)


def fnn_qsa_kernel_width(seq_len: int, q: int, value_dim: int) -> int:
    """commsim's own, stronger for q < N/2 + 1: width >= (N - q + 1)·d' for a network whose first layer is an exact
    linear map of the input (``fnn`` reads its input exactly), at any depth >= 1.

    Proof.  Let Q be q - 1 positions and P the other N - q + 1; give position i in P the set S_i = {i} ∪ Q and the
    positions of Q any q-sets; put z_j = 0 on Q.  The first layer restricted to the value coordinates of P is a
    linear map from R^((N-q+1)d') to R^width; if width < (N - q + 1)·d' it has a nonzero kernel vector v, scaled so
    that max_j ||v_j|| lies in (1/2, 1].  The inputs with z_P = -v and z_P = +v (all else equal) are valid, have the
    same first-layer output, hence the same network output, while qSA's row j* (the block of largest norm) is
    -v_j*/q and +v_j*/q: 2||v_j*||/q > 1/q = 2ε apart.  The network errs by more than ε on one of them."""
    return max(int(seq_len) - int(q) + 1, 0) * int(value_dim)
