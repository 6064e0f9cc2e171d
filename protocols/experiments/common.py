"""What [BHBK24]'s experiments share: the legend, the seeds, the claim rows, the bound invariants and the
experiment base class (:mod:`protocols.experiments.bhbk24` holds the experiments themselves)."""
from __future__ import annotations

import numpy as np

from commsim.contract.experiment import Experiment
from protocols.experiments.bounds import sampling_margin
from protocols.experiments.verdicts import judged_at_scale


#: learning rates (Adam; the paper tunes them per model, we fix one per family)
LR = {"tf": 1e-3, "lstm": 3e-3, "dss": 3e-3, "linattn": 3e-3}
#: what a paper figure's legend calls each model
LABELS = {"tf": "TF", "lstm": "LSTM", "dss": "DSS (real diag.)", "linattn": "LinAttn"}


#: how the figures and the page draw each model family: (its name there, its colour; Okabe-Ito)
FIGURE_LEGEND = {"tf": ("TF", "#0072B2"), "lstm": ("LSTM", "#D55E00"), "dss": ("DSS", "#009E73"),
                 "linattn": ("LinAttn", "#CC79A7")}
#: the page's results table: these columns, those some row has
RESULT_COLUMNS = ("model", "layers", "width", "N", "seed", "steps_run", "accuracy", "p_eff", "state_bits",
                  "one_way_bits", "fano_ceiling", "eq_random_ceiling", "quantised_accuracy", "run_bits_used",
                  "run_bits_formula", "run_lower_bound_bits", "mH", "theorem5_min_mH", "run_verdict", "run_certificate")


def label(row: dict) -> str:
    """``TF-(1, 64)``, ``LSTM-(1, 16)``: the paper's legend (layers, width)."""
    return f"{LABELS.get(row['model'], row['model'])}-({row['layers']}, {row['width']})"


def _seed(*parts) -> list[int]:
    return [int(p) if isinstance(p, (int, np.integer)) else sum(map(ord, str(p))) for p in parts]


def _at(rows, **where) -> list[dict]:
    return [r for r in rows if not r.get("error") and all(r.get(k) == v for k, v in where.items())]


def _bound_problems(rows: list[dict], ceiling: str, what: str) -> list[str]:
    """The invariants of the rows with a quantised model run through commsim: the quantised accuracy, measured on
    the row's ceiling-check strings (``ceiling_check_accuracy`` on ``ceiling_check_strings``; a row written before
    they existed: ``quantised_accuracy`` on ``bound_eval``), at most the ``ceiling`` column plus the sampling margin
    (recurrent models), every certificate verified, the protocol equal to the quantised model."""
    problems = []
    for r in rows:
        if r.get("error") or r.get("p_eff") is None or r.get("run_verdict") is None:
            continue
        where = f"{label(r)} at N = {r['N']} (seed {r['seed']})"
        accuracy, strings = _checked(r)
        margin = sampling_margin(strings)
        if r.get(ceiling) is not None and accuracy > r[ceiling] + margin:
            problems.append(f"{where}: quantised accuracy {accuracy:.3f} on {strings} strings is above the {what} "
                            f"{r[ceiling]:.3f} + sampling margin {margin:.3f}")
        if r.get("run_certificate") is not None and r.get("run_certificate_verified") is not True:
            problems.append(f"{where}: the run's {r['run_certificate']} certificate is not verified")
        if r.get("run_protocol_matches_model") is not True:
            problems.append(f"{where}: the protocol does not equal the quantised model")
    return problems


def _checked(row: dict) -> tuple[float, int]:
    """(the quantised accuracy the ceiling is checked with, the strings it was measured on)."""
    if row.get("ceiling_check_accuracy") is not None and row.get("ceiling_check_strings"):
        return float(row["ceiling_check_accuracy"]), int(row["ceiling_check_strings"])
    return float(row["quantised_accuracy"]), int(row["bound_eval"])


class _Experiment(Experiment):
    name = title = source = figure = ""
    legend = FIGURE_LEGEND
    columns = RESULT_COLUMNS
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

    def claims(self, rows: list[dict]) -> list[dict]:
        """The paper's claims checked on the rows (:mod:`protocols.experiments.verdicts`): each with its verdict,
        the test it came from and the interval that test reads; none is judged at the quick scale."""
        return judged_at_scale(self._claims(rows), rows)

    def _claims(self, rows: list[dict]) -> list[dict]:
        return []

    def check(self, rows: list[dict]) -> list[str]:
        """No quantised recurrent model above the accuracy ceiling (beyond the sampling margin); every certificate
        verified; the protocol equals the quantised model bit for bit (:func:`_bound_problems`)."""
        return _bound_problems(rows, self.ceiling_column, self.ceiling_name)

    def bound_curve(self, rows: list[dict], N: int) -> dict | None:
        """The accuracy ceiling over state bits at length N, drawn on the figure (None: no such ceiling)."""
        return None

    def provenance(self) -> dict:
        """The torch version the cell trained with (None without torch)."""
        try:
            import torch
        except ImportError:  # pragma: no cover - an installation without torch
            return {"torch_version": None}
        return {"torch_version": torch.__version__}
