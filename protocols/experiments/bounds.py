"""The bound on a trained recurrent model: its effective precision, its state bits, the Fano ceiling and the
one-way line beside them, and a ``commsim.run`` of the quantised model.

* p_eff: the smallest fixed-point width p (of :data:`PRECISIONS`; half of it fraction bits, commsim's
  ``FixedPoint.with_bits(p)``) at which the model run through commsim -- ``commsim.make_model(net,
  vocab_size=..., precision=p)``, every step's state and every parameter rounded -- keeps its accuracy: at most
  :data:`KEEP` below the model's accuracy at its own dtype (float32) on the same fresh strings.  Found by
  bisection over the grid, which takes the accuracy to be monotone in p (it need not be exactly: the row lists
  every width tried and its accuracy, ``precisions_tried``); None when even 32 bits do not keep it.
* S = (state numbers) · p_eff: the bits of the hidden-state handoff (Theorem 2 of [BHBK24]); on index lookup the
  quantised model *is* a one-way protocol with an S-bit message, so its accuracy on uniform strings is at most
  the Fano ceiling (:func:`protocols.theorems.fano_accuracy_ceiling`), up to the sampling error of a finite
  evaluation (:func:`sampling_margin`).
* the run: ``commsim.run("index-idxl", ...)`` of the model restricted to the binary strings of INDEX_N (its
  embedding rows for symbols 0, 1 and the index tokens #1..#N: a k-ary index lookup model answers INDEX_N on
  them), in the same format -- bits used, the bound, the verdict, the certificate when one exists.

String equality (Eq-random, :func:`equality_bound`): the same p_eff and S; the one-way line S >= n = N/2 (EQ_n)
and the exact accuracy ceiling of an S-bit one-way protocol on Eq-random (:func:`eq_random_ceiling`); the run is
on ``eq-sep`` (:class:`SeparatedEquality`: the experiment's own layout x [sep] y).  A one-layer transformer
(:func:`attention_bound`) is run, at its p_eff, through commsim's attention exchange (Theorem 4 of [BHBK24]): the
bits it really sends on the reduction's split beside the bits the task needs (Theorem 5's line on Dyck-(2,2)).
"""
from __future__ import annotations

import copy
import math
from typing import Callable

import numpy as np

import commsim
from commsim.contract.effective import PRECISIONS as EFFECTIVE_PRECISIONS
from commsim.contract.effective import TOLERANCE, search_width
from commsim.contract import Encoded, Reduction
from protocols.reductions.eq import Inequality
from protocols.theorems import fano_accuracy_ceiling, index_lookup_one_way_bits

#: the fixed-point widths tried for p_eff, smallest first (commsim's own search's)
PRECISIONS = EFFECTIVE_PRECISIONS

#: "keeps its accuracy": the quantised accuracy is at most this far below the float32 one (commsim's tolerance)
KEEP = TOLERANCE

#: a step-contract model (run one sequence at a time) gets the sampled collision search only up to this N·(k + N)
STEP_SEARCH_LIMIT = 1000

#: the separator token of the equality experiments (after the bits 0 and 1)
SEPARATOR = 2

#: the probability with which the sampling margin may be exceeded by chance (Hoeffding)
DELTA = 1e-6

#: the ceiling check catches a quantised model this far above its ceiling ...
CEILING_RESOLUTION = 0.05
#: ... except with at most this probability
MISS = 0.01


def ceiling_check_count(resolution: float = CEILING_RESOLUTION) -> int:
    """The fresh strings on which a quantised model's accuracy is checked against its ceiling so that a model
    ``resolution`` above it is caught: if its true accuracy is ceiling + resolution, the measured one falls below
    ceiling + margin(DELTA) only when it falls more than resolution - margin(DELTA) below its expectation, which
    Hoeffding bounds by MISS once margin(DELTA) + margin(MISS) <= resolution (6875 strings for 0.05)."""
    return math.ceil((math.sqrt(math.log(1 / DELTA) / 2) + math.sqrt(math.log(1 / MISS) / 2)) ** 2
                     / resolution ** 2)


def sampling_margin(count: int, delta: float = DELTA) -> float:
    """Hoeffding: an accuracy measured on ``count`` independent uniform strings exceeds its expectation by more
    than this with probability at most ``delta``."""
    return math.sqrt(math.log(1 / delta) / (2 * max(int(count), 1)))


def runnable(net):
    """What commsim is given for a trained module: its ``commsim_parts`` (a core commsim's torch adapter wraps,
    batched) when it has them, else the module itself (its step contract, run one sequence at a time)."""
    return net.commsim_parts() if hasattr(net, "commsim_parts") else net


def commsim_model(net, vocab_size: int, precision=None):
    """The trained module as commsim runs it, at ``precision`` bits (None: its own dtype): :func:`runnable`."""
    return commsim.make_model(runnable(net), vocab_size=vocab_size, precision=precision)


def commsim_accuracy(model, tokens: np.ndarray, labels: np.ndarray) -> float:
    """The commsim model's accuracy at the last position (its own forward in its format: a recurrence's
    ``forward_batch``, an attention layer's ``decide``)."""
    tokens = np.asarray(tokens)
    if hasattr(model, "forward_batch"):
        decided = model.forward_batch(tokens, (tokens.shape[1] - 1,))[:, 0].argmax(axis=1)
    else:
        decided = model.decide(tokens)
    return float(np.mean(np.asarray(decided) == np.asarray(labels)))


def effective_precision(net, vocab_size: int, tokens: np.ndarray, labels: np.ndarray) -> dict:
    """p_eff and what it rests on: the float32 accuracy through commsim, the quantised one at p_eff, the state
    numbers, and every width tried (p -> accuracy); the search is commsim's own
    (:func:`commsim.runs.effective.search_width`)."""
    native = commsim_model(net, vocab_size)
    reference = commsim_accuracy(native, tokens, labels)
    p_eff, tried = search_width(lambda p: commsim_accuracy(commsim_model(net, vocab_size, p), tokens, labels),
                                reference, precisions=PRECISIONS, tolerance=KEEP)
    units = getattr(native, "state_units", None)          # a recurrence's; an attention layer has no state
    return {"float_commsim_accuracy": reference, "p_eff": p_eff, "state_numbers": None if units is None else int(units),
            "quantised_accuracy": None if p_eff is None else tried[p_eff],
            "precisions_tried": ", ".join(f"{p}:{a:.3f}" for p, a in sorted(tried.items()))}


def restricted_to_index(net, k: int, n: int):
    """A copy of a k-ary index lookup model (symbols 0..k-1, index tokens k..k+N-1) that reads INDEX_n's tokens
    (``index-idxl``: 0, 1, #1..#n): its embedding keeps the rows of symbols 0 and 1 and of #1..#n."""
    import torch
    rows = torch.as_tensor([0, 1] + [k + i for i in range(n)])
    small = copy.deepcopy(net)
    with torch.no_grad():
        small.embed = torch.nn.Embedding.from_pretrained(net.embed.weight[rows].clone(), freeze=True)
    return small


def one_way_bound(net, vocab_size: int, tokens: np.ndarray, labels: np.ndarray, *, ceiling_column: str,
                  ceiling: Callable[[int], float], run: Callable[[int, int], dict],
                  check: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """What every trained recurrent model's row holds (module docstring): p_eff and what it rests on, S, the
    accuracy ceiling at S (``ceiling(S)``, in ``ceiling_column``) and the ``run_*`` columns of ``run(S, p_eff)``.
    ``check``: fresh (tokens, labels) on which the quantised model's accuracy is measured against the ceiling
    (``ceiling_check_accuracy`` on ``ceiling_check_strings``, with its ``sampling_margin``; default the p_eff
    strings)."""
    found = effective_precision(net, vocab_size, tokens, labels)
    p_eff = found["p_eff"]
    check_tokens, check_labels = check if check is not None else (tokens, labels)
    strings = int(len(check_labels))
    row = {**found, "sampling_margin": round(sampling_margin(strings), 4), "ceiling_check_strings": strings,
           "ceiling_check_accuracy": None,
           # a model this far above its ceiling is caught except with probability MISS (ceiling_check_count)
           "ceiling_caught_above": round(sampling_margin(strings) + sampling_margin(strings, MISS), 4),
           "ceiling_miss": MISS}
    if p_eff is None:
        row.update({"state_bits": None, ceiling_column: None, "run_verdict": None,
                    "run_note": f"no width up to {PRECISIONS[-1]} bits keeps the accuracy"})
        return row
    S = found["state_numbers"] * p_eff
    row["ceiling_check_accuracy"] = (found["quantised_accuracy"] if check is None else
                                     commsim_accuracy(commsim_model(net, vocab_size, p_eff), check_tokens, check_labels))
    row.update({"state_bits": S, ceiling_column: ceiling(S)})
    row.update(run(S, p_eff))
    return row


def _unsearched(S: int, line: str) -> str:
    """The note of a row whose certificate exists (S below the one-way ``line``) but was not searched."""
    return f"S = {S} < {line}: a collision certificate exists (pigeonhole) but was not searched (a step-contract model)"


def index_bound(net, *, k: int, N: int, tokens: np.ndarray, labels: np.ndarray, run_instances: int,
                seed: int, check: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """Every bound figure of one trained recurrent index-lookup model (module docstring)."""
    def run(S: int, p_eff: int) -> dict:
        # the pigeonhole search runs sampled Alice inputs (tens of thousands) through the model; a model commsim
        # runs through the step contract does so one sequence at a time, so it is searched only when it is small
        search = S < N and (hasattr(net, "commsim_parts") or N * (k + N) <= STEP_SEARCH_LIMIT)
        report = commsim.run("index-idxl", runnable(restricted_to_index(net, k, N)), n=N, precision=p_eff,
                             instances=run_instances, seed=seed, certify=search or S >= N)
        return run_figures(report, searched=search,
                           unsearched=None if search or S >= N else _unsearched(S, f"N = {N}"))

    return {"one_way_bits": round(index_lookup_one_way_bits(k, N), 3),
            **one_way_bound(net, k + N, tokens, labels, ceiling_column="fano_ceiling",
                            ceiling=lambda S: fano_accuracy_ceiling(k, N, S), run=run, check=check)}


def run_figures(report, *, searched: bool, unsearched: str | None = None) -> dict:
    """The ``run_*`` columns of a row from a ``commsim.run`` report: bits used, the bound, the verdict, the
    certificate (``unsearched``: the note when a certificate exists but was not searched)."""
    figures = report.to_row()
    cert = report.certificate
    return {"run_bits_used": figures["bits_used"], "run_lower_bound_bits": figures["lower_bound_bits"],
            "run_bound_applies": figures["bound_applies"], "run_verdict": figures["verdict"],
            "run_binary_accuracy": figures["model_accuracy"],
            "run_protocol_matches_model": figures["protocol_matches_model"],
            "run_certificate": None if cert is None else cert.kind,
            "run_certificate_verified": None if cert is None else bool(cert.verified),
            "run_torch_agreement": figures["torch_agreement"],
            "run_certificate_searched": bool(searched),
            "run_note": " ".join(cert.explanation.split())[:300] if cert is not None else unsearched}


# ---- string equality (Eq-random, Appendix H.2 of [BHBK24]) -----------------------------------------------------
def eq_random_ceiling(n: int, S: int) -> float:
    """The best accuracy of any one-way protocol with an ``S``-bit message on Eq-random at half length ``n``
    (x uniform on {0,1}^n; y = x with probability 1/2, else uniform; the answer [x = y]):
    1 - (2^-S - 2^-n)/2 for S < n, and 1 from S = n on.  Exact (docs/EXPERIMENTS.md): Alice's message splits
    her 2^n strings into classes C; Bob, seeing y and the class, errs with the smaller of the masses of
    "x = y" and "x != y", which is (2^-2n/2)(|C| - 1) for y in C and 0 otherwise, so the error is
    (2^-2n/2) Σ |C|(|C| - 1), least for 2^S classes of equal size 2^(n-S) -- which the protocol "send the first S
    bits" achieves.  Public coins do not help on average."""
    n, S = int(n), int(S)
    if S >= n:
        return 1.0
    return 1.0 - (2.0 ** -S - 2.0 ** -n) / 2


class SeparatedEquality(Inequality):
    """EQ_n in [BHBK24]'s layout of Appendix H.2: a_1..a_n [sep] b_1..b_n, class 1 at the last position meaning
    "equal" -- the trained models' input, so the quantised model is run through commsim as it was trained (the
    separator is Bob's: Alice holds the prefix a).  Not registered: the experiment passes it to
    ``commsim.run``; its bounds are ``eq-ineq``'s (EQ_n needs n bits, one-way and two-way)."""

    id = "eq-sep"
    task = "eq"
    length_scale, length_offset = 2, 1
    n_meaning = "N = 2n + 1 tokens: a_1..a_n, the separator, b_1..b_n"
    source = "Appendix H.2 of [BHBK24] (Eq-random's layout); Theorems 11 and 12"
    description = "EQ_n as a [sep] b (the experiments' layout): RNN m*p >= n, attention 3m(p+log N)H >= n"

    def vocabulary(self, n: int) -> list[str]:
        """The bits and the separator."""
        return ["0", "1", "[sep]"]

    def encode(self, problem, A, B) -> Encoded:
        """a (Alice's prefix), the separator, b; the decision at the last position."""
        n = problem.n
        tokens = np.full((len(A), 2 * n + 1), SEPARATOR, dtype=np.uint8)
        tokens[:, :n] = np.asarray(A)
        tokens[:, n + 1:] = np.asarray(B)
        return Encoded(tokens, np.arange(n), (2 * n,))

    def decode(self, labels: np.ndarray, B: np.ndarray) -> np.ndarray:
        """Class 1 means equal."""
        return np.asarray(labels)[:, 0].astype(np.int16)

    def size(self, seq_len: int) -> int:
        """n = (N - 1)/2."""
        return (seq_len - 1) // 2

    def model_context(self, n: int) -> dict:
        """The context of any reduction (no memorizing layout: this reduction runs trained models only)."""
        return Reduction.model_context(self, n)


def equality_bound(net, *, N: int, tokens: np.ndarray, labels: np.ndarray, run_instances: int, seed: int,
                   check: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """Every bound figure of one trained recurrent Eq-random model at length N (n = N/2 per half): p_eff, S, the
    one-way line S >= n (EQ_n, Theorem 11), the exact ceiling (:func:`eq_random_ceiling`) and the run of the
    quantised model on ``eq-sep`` (its pigeonhole certificate searched when S < n and the model is batched)."""
    n = N // 2

    def run(S: int, p_eff: int) -> dict:
        search = S < n and hasattr(net, "commsim_parts")
        report = commsim.run(SeparatedEquality(), runnable(net), n=n, precision=p_eff, instances=run_instances,
                             seed=seed, certify=search or S >= n)
        return run_figures(report, searched=search,
                           unsearched=None if search or S >= n else _unsearched(S, f"n = {n}"))

    return {"one_way_bits": n, **one_way_bound(net, 3, tokens, labels, ceiling_column="eq_random_ceiling",
                                                ceiling=lambda S: eq_random_ceiling(n, S), run=run, check=check)}


# ---- one-layer attention: the exchange of Theorem 4 ---------------------------------------------------------------
def attention_bound(net, reduction, *, n: int, vocab_size: int, tokens: np.ndarray, labels: np.ndarray,
                    run_instances: int, seed: int) -> dict:
    """A trained one-layer transformer run through commsim's attention exchange (Theorem 4 of [BHBK24]) at its
    p_eff: the bits the exchange really sends on the reduction's split (``run_bits_used``), the paper's count
    3m(p + ceil(log2 N))H (``run_bits_formula``), the bits the task needs (``run_lower_bound_bits``), the
    verdict and the certificate."""
    found = effective_precision(net, vocab_size, tokens, labels)
    row = {key: value for key, value in found.items() if key != "state_numbers"}
    if found["p_eff"] is None:
        row.update(run_verdict=None, run_note=f"no width up to {PRECISIONS[-1]} bits keeps the accuracy")
        return row
    report = commsim.run(reduction, net, n=n, precision=found["p_eff"], instances=run_instances, seed=seed,
                         certify=True)
    figures = report.to_row()
    row.update(run_figures(report, searched=True), run_bits_formula=figures["bits_formula"],
               run_protocol=figures["protocol"])
    return row
