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
"""
from __future__ import annotations

import copy
import math

import numpy as np

import commsim
from protocols.theorems import fano_accuracy_ceiling, index_lookup_one_way_bits

#: the fixed-point widths tried for p_eff, smallest first
PRECISIONS = (2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 32)

#: "keeps its accuracy": the quantised accuracy is at most this far below the float32 one
KEEP = 0.01

#: a step-contract model (run one sequence at a time) gets the sampled collision search only up to this N·(k + N)
STEP_SEARCH_LIMIT = 1000

#: the probability with which the sampling margin may be exceeded by chance (Hoeffding)
DELTA = 1e-6


def sampling_margin(count: int, delta: float = DELTA) -> float:
    """Hoeffding: an accuracy measured on ``count`` independent uniform strings exceeds its expectation by more
    than this with probability at most ``delta``."""
    return math.sqrt(math.log(1 / delta) / (2 * max(int(count), 1)))


def commsim_model(net, vocab_size: int, precision=None):
    """The trained module as commsim runs it, at ``precision`` bits (None: its own dtype): through its
    ``commsim_parts`` (a core commsim's torch adapter wraps, batched) when it has them, else its step contract."""
    parts = net.commsim_parts() if hasattr(net, "commsim_parts") else net
    return commsim.make_model(parts, vocab_size=vocab_size, precision=precision)


def commsim_accuracy(model, tokens: np.ndarray, labels: np.ndarray) -> float:
    """The commsim model's accuracy at the last position (its own forward: the recurrence in its format)."""
    raw = model.forward_batch(np.asarray(tokens), (tokens.shape[1] - 1,))
    return float(np.mean(raw[:, 0].argmax(axis=1) == np.asarray(labels)))


def effective_precision(net, vocab_size: int, tokens: np.ndarray, labels: np.ndarray) -> dict:
    """p_eff and what it rests on: the float32 accuracy through commsim, the quantised one at p_eff, the state
    numbers, and every width tried (p -> accuracy)."""
    native = commsim_model(net, vocab_size)
    reference = commsim_accuracy(native, tokens, labels)
    tried: dict[int, float] = {}

    def keeps(index: int) -> bool:
        p = PRECISIONS[index]
        if p not in tried:
            tried[p] = commsim_accuracy(commsim_model(net, vocab_size, p), tokens, labels)
        return tried[p] >= reference - KEEP

    lo, hi = 0, len(PRECISIONS) - 1          # bisection: the first width that keeps it, if the widest does
    p_eff = None
    if keeps(hi):
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if keeps(mid) else (mid + 1, hi)
        p_eff = PRECISIONS[lo]
    return {"float_commsim_accuracy": reference, "p_eff": p_eff, "state_numbers": int(native.state_units),
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


def index_bound(net, *, k: int, N: int, tokens: np.ndarray, labels: np.ndarray, run_instances: int,
                seed: int) -> dict:
    """Every bound figure of one trained recurrent index-lookup model (module docstring)."""
    vocab = k + N
    found = effective_precision(net, vocab, tokens, labels)
    p_eff = found["p_eff"]
    row = dict(found)
    row["one_way_bits"] = round(index_lookup_one_way_bits(k, N), 3)
    row["sampling_margin"] = round(sampling_margin(len(labels)), 4)
    if p_eff is None:
        row.update(state_bits=None, fano_ceiling=None, run_verdict=None,
                   run_note=f"no width up to {PRECISIONS[-1]} bits keeps the accuracy")
        return row
    S = found["state_numbers"] * p_eff
    row["state_bits"] = S
    row["fano_ceiling"] = fano_accuracy_ceiling(k, N, S)
    # the pigeonhole search runs sampled Alice inputs (tens of thousands) through the model; a model commsim runs
    # through the step contract does so one sequence at a time, so it is searched only when it is small
    search = S < N and (hasattr(net, "commsim_parts") or N * (k + N) <= STEP_SEARCH_LIMIT)
    report = commsim.run("index-idxl", restricted_to_index(net, k, N), n=N, precision=p_eff,
                         instances=run_instances, seed=seed, certify=search or S >= N)
    figures = report.to_row()
    cert = report.certificate
    row.update({"run_bits_used": figures["bits_used"], "run_lower_bound_bits": figures["lower_bound_bits"],
                "run_bound_applies": figures["bound_applies"], "run_verdict": figures["verdict"],
                "run_binary_accuracy": figures["model_accuracy"],
                "run_protocol_matches_model": figures["protocol_matches_model"],
                "run_certificate": None if cert is None else cert.kind,
                "run_certificate_verified": None if cert is None else bool(cert.verified),
                "run_torch_agreement": figures["torch_agreement"],
                "run_certificate_searched": bool(search),
                "run_note": (" ".join(cert.explanation.split())[:300] if cert is not None else
                             None if search or S >= N else
                             f"S = {S} < N = {N}: a collision certificate exists (pigeonhole) but was not searched "
                             f"(a step-contract model at N = {N})")})
    return row
