"""What [BHBK24]'s experiments share: the legend, the seeds, the claim rows, the bound invariants and the
experiment base class (:mod:`protocols.experiments.bhbk24` holds the experiments themselves)."""
from __future__ import annotations

import numpy as np

from protocols.experiments.bounds import sampling_margin


#: learning rates (Adam; the paper tunes them per model, we fix one per family)
LR = {"tf": 1e-3, "lstm": 3e-3, "dss": 3e-3, "linattn": 3e-3}
#: what a paper figure's legend calls each model
LABELS = {"tf": "TF", "lstm": "LSTM", "dss": "DSS (real diag.)", "linattn": "LinAttn"}
#: "near-perfect", as the claims use it
NEAR_PERFECT = 0.95


def label(row: dict) -> str:
    """``TF-(1, 64)``, ``LSTM-(1, 16)``: the paper's legend (layers, width)."""
    return f"{LABELS.get(row['model'], row['model'])}-({row['layers']}, {row['width']})"


def _seed(*parts) -> list[int]:
    return [int(p) if isinstance(p, (int, np.integer)) else sum(map(ord, str(p))) for p in parts]


def _claim(claim: str, paper: str, ours: str, status: str) -> dict:
    return {"claim": claim, "paper": paper, "ours": ours, "status": status}


def _at(rows, **where) -> list[dict]:
    return [r for r in rows if not r.get("error") and all(r.get(k) == v for k, v in where.items())]


def _bound_problems(rows: list[dict], ceiling: str, what: str) -> list[str]:
    """The invariants of the rows with a quantised model run through commsim: the quantised accuracy at most the
    ``ceiling`` column plus the sampling margin (recurrent models), every certificate verified, the protocol
    equal to the quantised model."""
    problems = []
    for r in rows:
        if r.get("error") or r.get("p_eff") is None or r.get("run_verdict") is None:
            continue
        where = f"{label(r)} at N = {r['N']} (seed {r['seed']})"
        margin = sampling_margin(r["bound_eval"])
        if r.get(ceiling) is not None and r["quantised_accuracy"] > r[ceiling] + margin:
            problems.append(f"{where}: quantised accuracy {r['quantised_accuracy']:.3f} is above the {what} "
                            f"{r[ceiling]:.3f} + sampling margin {margin:.3f}")
        if r.get("run_certificate") is not None and r.get("run_certificate_verified") is not True:
            problems.append(f"{where}: the run's {r['run_certificate']} certificate is not verified")
        if r.get("run_protocol_matches_model") is not True:
            problems.append(f"{where}: the protocol does not equal the quantised model")
    return problems


class _Experiment:
    name = title = source = figure = ""
    #: the row's accuracy ceiling at the quantised model's state bits (None: the task has none), and its name
    ceiling_column: str | None = None
    ceiling_name = ""
    scales: dict[str, dict] = {}
    grid: dict[str, list[tuple]] = {}

    def cells(self, scale: str) -> list[dict]:
        """model x layers x width x N x seed, with the scale's sizes in every cell (its provenance)."""
        sizes = self.scales[scale]
        return [{"model": arch, "layers": layers, "width": width, "N": N, "seed": seed, "scale": scale, **sizes["fixed"]}
                for N in sizes["N"] for arch, layers, width in self.grid[scale] for seed in sizes["seeds"]]

    def check(self, rows: list[dict]) -> list[str]:
        """No quantised recurrent model above the accuracy ceiling (beyond the sampling margin); every certificate
        verified; the protocol equals the quantised model bit for bit (:func:`_bound_problems`)."""
        return _bound_problems(rows, self.ceiling_column, self.ceiling_name)

    def bound_curve(self, rows: list[dict], N: int) -> dict | None:
        """The accuracy ceiling over state bits at length N, drawn on the figure (None: no such ceiling)."""
        return None
