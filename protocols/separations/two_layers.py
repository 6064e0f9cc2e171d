"""``commsim separate two-layers``: why the one-layer protocol stops at one layer (Lemma 5, Corollary 13.1).

For every N, Lemma 5's two-layer model (``construct:eq2`` renumbered for a balanced partition) is built;
at small N its communication matrix on the partition is computed from the model's own outputs on every
input, with its rank (real and mod p) and a verified fooling set: rank 2^(N/2), a fooling set of 2^(N/2)
cells, so N/2 bits -- while the model's m, p grow like log N.  A protocol simulating every two-layer model
with m p H g(N) bits therefore has g(N) >= (N/2)/(m p H) (Corollary 13.1).
"""
from __future__ import annotations

import numpy as np

from commsim.contract import InputError
from commsim.contract.options import Option
from commsim.theory.bounds import ceil_log2
from commsim.theory.comm_matrix import rank_mod_p, rank_real, search_fooling_set
from protocols.constructions.orthogonal import DEFAULT_GAMMA
from protocols.separations.base import GAMMA, WIDTH_NOTE, Separation, SeparationResult, crossing, model_width
from protocols.theorems import exchange_bits, two_layer_protocol_factor

#: the communication matrix (2^(N/2) square, from 2^N forwards) is computed up to this N
MATRIX_N = 12
RANDOM_PARTITIONS = 3

#: Alice's positions of a user's balanced partition (parsed by :func:`parse_partition` when a run starts)
PARTITION = Option("partition", str, "Alice's positions of a balanced partition, e.g. 1,4,5,8 (two-layers; N = twice "
                   "their number).", metavar="POSITIONS")


def parse_partition(text: str) -> list[int]:
    """``1,4,5,8`` (1-based positions Alice holds) -> 0-based list."""
    try:
        alice = [int(t) - 1 for t in str(text).replace(" ", "").split(",") if t]
    except ValueError:
        raise InputError(f"partition must list Alice's positions, e.g. 1,4,5,8; got {text!r}", "partition") from None
    N = 2 * len(alice)
    if not alice or len(set(alice)) != len(alice) or min(alice) < 0 or max(alice) >= N:
        raise InputError(f"partition must list N/2 distinct positions in 1..N (N = twice their number); got {text!r}",
                         "partition")
    if N > MATRIX_N or N < 2:
        raise InputError(f"partition: the matrix is computed for N <= {MATRIX_N}; got N = {N}", "partition")
    return alice


class TwoLayerSeparation(Separation):
    """Lemma 5: full-rank communication matrices of a width-O(log N) two-layer model on balanced partitions."""

    name = "two-layers"
    description = ("Lemma 5 / Corollary 13.1: a two-layer model of width O(log N) whose communication matrix has "
                   "rank 2^(N/2) on every balanced partition (no one-layer-style protocol for two layers)")
    options = (GAMMA, PARTITION)
    samples = False             # every row computes the whole communication matrix (or only builds the model)
    smallest = 2
    largest = 1 << 12
    even = True

    def lengths(self, n: int) -> list[int]:
        """Every even N up to MATRIX_N (where the matrix is computed), then powers of two, and n."""
        small = list(range(2, min(n, MATRIX_N) + 1, 2))
        return sorted(set(small + [N for N in super().lengths(n) if N > MATRIX_N]))

    def run(self, n, *, seed=0, instances=1000, progress=None, **options):
        """As the base, with the user's partition (if any) parsed first."""
        if options.get("partition") is not None:
            options["partition"] = parse_partition(options["partition"])
            if 2 * len(options["partition"]) > n:
                raise InputError(f"partition has N = {2 * len(options['partition'])} positions, above n = {n}",
                                 "partition")
        return super().run(n, seed=seed, instances=instances, progress=progress, **options)

    def row(self, N, run, *, gamma=DEFAULT_GAMMA, partition=None):
        """Lemma 5 at N: the model, and (N <= MATRIX_N) its communication matrix on balanced partitions."""
        from protocols.constructions.lemma5 import (
            balanced_partition,
            communication_matrix,
            lemma5_function,
            lemma5_model,
        )
        seed = run.seed
        rng = np.random.default_rng(seed + N)
        half = N // 2
        parts = [balanced_partition(N, rng=rng) for _ in range(RANDOM_PARTITIONS)]
        user = partition is not None and 2 * len(partition) == N
        if user:
            parts.insert(0, balanced_partition(N, alice=partition))
        model = lemma5_model(N, *parts[0], gamma=gamma, seed=seed)
        m, p, H = model.width, model.precision, 1
        width = model_width(m, model.embedding_dim)
        # verified: None until the matrix, its rank and a fooling set are computed (N <= MATRIX_N)
        row = {"N": N, "qk_width": m, "embedding_dim": model.embedding_dim, "width": width, "precision": p,
               "width_bits": width * p, "needed_bits": half, "one_layer_style_bits": exchange_bits(m, p, H, N),
               "factor_lower": float(two_layer_protocol_factor(N, m, p, H)), "partitions": None, "min_rank": None,
               "full_rank": 1 << half, "min_fooling": None, "fooling_bits": None, "accuracy": None,
               "user_partition": [int(i) + 1 for i in parts[0][0]] if user else None, "verified": None}
        if N > MATRIX_N:
            return row
        ranks, foolings, correct, total = [], [], 0, 0
        for i, (S_A, S_B) in enumerate(parts):
            built = model if i == 0 else lemma5_model(N, S_A, S_B, gamma=gamma, seed=seed)
            M, X = communication_matrix(built, S_A, S_B)
            truth = lemma5_function(X, S_A, S_B).reshape(M.shape)
            correct += int((M == truth).sum())
            total += M.size
            ranks.append(min(rank_real(M), rank_mod_p(M)))
            fs = search_fooling_set(M, restarts=2, seed=seed)
            foolings.append(fs.size if fs.verified else 0)
        row.update({"partitions": len(parts), "min_rank": min(ranks), "min_fooling": min(foolings),
                    "fooling_bits": ceil_log2(max(min(foolings), 1)), "accuracy": correct / total,
                    "verified": correct == total and min(ranks) == 1 << half and min(foolings) == 1 << half})
        return row

    def result(self, n, rows, run):
        """The two-layer impossibility."""
        cross = crossing(rows, "one_layer_style_bits", "needed_bits")
        return SeparationResult(
            "two-layers", "two layers have no one-layer-style protocol (Lemma 5, Corollary 13.1)",
            "for every balanced partition a two-layer transformer of width and precision O(log N) computes a "
            "function whose communication matrix on that partition has full rank 2^(N/2) (and a fooling set of "
            "that size): every protocol needs N/2 bits, so no protocol with O(m p H polylog N) bits simulates "
            "every two-layer model",
            n,
            {"arch": "two-layer attention", "model": "Lemma 5: construct:eq2 with renumbered position codes",
             "source": "Lemma 5 and Corollary 13.1 (Appendix F.4) of [BHBK24]",
             "formula": "width max(m, d), p = O(log N); communication matrix 2^(N/2) x 2^(N/2) of full rank on the "
                        "partition",
             "verdict": "at N = {N}: the model has width max(m, d) = {width} at {precision} bits (width*p = "
                        "{width_bits}); every "
                        "protocol on a balanced partition needs N/2 = {needed_bits} bits, so a protocol of m*p*H*g(N) "
                        "bits needs g(N) >= {factor_lower:.3g}"},
            {"arch": "any protocol on the partition", "model": "",
             "source": "the fooling-set bound (Fact 4 of [BHBK24]) and the log-rank bound (standard, not in "
                       "[BHBK24]: Kushilevitz and Nisan, ch. 1)",
             "formula": "bits >= log2 rank = log2 |fooling set| = N/2"},
            [{"key": "N", "label": "N"}, {"key": "qk_width", "label": "m"}, {"key": "embedding_dim", "label": "d"},
             {"key": "width", "label": "width max(m,d)"}, {"key": "precision", "label": "p"},
             {"key": "width_bits", "label": "width·p"}, {"key": "one_layer_style_bits", "label": "3m(p+logN)H"},
             {"key": "partitions", "label": "partitions"}, {"key": "accuracy", "label": "acc."},
             {"key": "min_rank", "label": "min rank"}, {"key": "full_rank", "label": "2^(N/2)"},
             {"key": "min_fooling", "label": "fooling set"}, {"key": "needed_bits", "label": "bits ≥ N/2"},
             {"key": "factor_lower", "label": "g(N) ≥"}, {"key": "verified", "label": "verified"}],
            rows,
            {"x": "N", "crossing": {"ours": "one_layer_style_bits", "theirs": "needed_bits", "text": "the separation is asymptotic"}, "ylabel": "bits", "series": [
                {"key": "width_bits", "label": "Lemma 5 model: width·p, width = max(m, d)"},
                {"key": "one_layer_style_bits", "label": "a one-layer protocol's 3m(p + log N)H", "style": ":"},
                {"key": "needed_bits", "label": "bits every protocol needs: N/2", "style": "--"}]},
            notes=[(f"N/2 exceeds a one-layer protocol's 3m(p + log N)H from N = {cross} on (in this range)." if cross
                    else f"N/2 is still below 3m(p + log N)H at N = {rows[-1]['N']}: m, p grow like log N, N/2 "
                         f"linearly, so the crossing comes at larger N (Corollary 13.1: g(N) = Omega(N / log^2 N))."),
                   f"Rank and fooling set: computed from the model's outputs on all 2^N inputs for N <= {MATRIX_N}, "
                   f"on {RANDOM_PARTITIONS} seeded random balanced partitions (plus --partition when it has that N); "
                   "min rank is the smaller of the real rank and the rank mod p over the partitions; the fooling set "
                   f"is found by search and verified pairwise. Beyond N = {MATRIX_N} the model is built and measured "
                   "only: those rows have verified = — (null in JSON), nothing was computed to check them.",
                   WIDTH_NOTE,
                   "commsim run refuses two-layer models (construct:eq2, construct:thres, construct:nstnb) with this "
                   "lemma as the reason."])
