"""``qsa-approx``: q-sparse averaging on every row, judged as [SHT23] defines ε-approximation, against the width of a
fully-connected network.

The task ([SHT23], q-sparse averaging): the input is N rows x_i = (z_i, y_i, i), d = d' + q + 1 numbers each,
with z_i in the unit ball of R^(d') and y_i a q-subset of [N]; qSA(X)_i is the mean of z_j over j in y_i.  A
function f ε-approximates qSA when max_i ||f(X)_i - qSA(X)_i||_2 <= ε for every X; here ε = 1/(2q).

The bound ([SHT23], q-sparse averaging, main results: every FNN
needs width Omega(N)): a fully-connected network of depth >= 2 that 1/(2q)-approximates qSA (q < N/2) has width
>= N·d'/2 (:func:`protocols.theorems.fnn_qsa_width`).  It bounds the model's own width, not a protocol's bits, so
this reduction runs no protocol: it is judged directly (:meth:`Reduction.direct_report`) -- the model on sampled
inputs, the bound beside its width, and the ``kernel`` certificate (:mod:`protocols.reductions.qsa_kernel`).

Where the width meets N·d'/2 the paper's bound does not apply.  The kernel argument with N - q + 1 read positions
(commsim's own, :func:`protocols.theorems.fnn_qsa_kernel_width`, proof in its docstring) still finds a certificate
up to width (N - q + 1)·d' - 1 (and beyond, when the first layer happens to be rank-deficient); such a certificate
is reported as a wrong answer shown, not as the paper's bound forcing it.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from commsim.contract import InputError, NotApplicable, Reduction
from commsim import Report
from commsim import make_model
from commsim.theory.bounds import Conditions, LowerBound
from protocols.reductions.qsa_kernel import kernel_certificate, max_row_error, qsa_input, qsa_target
from protocols.theorems import fnn_qsa_kernel_width, fnn_qsa_width

__all__ = ["QSAApprox", "REDUCTIONS", "MAX_ROWS", "MAX_VALUE_DIM"]

#: the largest N and d' a run takes (exact rational arithmetic on N·d inputs)
MAX_ROWS = 64
MAX_VALUE_DIM = 8
#: the sampled inputs' values lie on this grid (units of 2^-8)
VALUE_GRID = 8
SOURCE = "[SHT23] (the q-sparse averaging results: fully-connected networks need width N·d'/2)"


class QSAApprox(Reduction):
    """q-sparse averaging to max-row error 1/(2q) against the width of a fully-connected network (module
    docstring): the bound width >= N·d'/2 of [SHT23], and the kernel certificate."""

    id = "qsa-approx"
    problem_name = "qsa"
    task = "qSA on every row, to max-row error 1/(2q)"
    source = SOURCE
    description = ("q-sparse averaging on all N rows, eps = 1/(2q), against a fully-connected network: width >= "
                   "N·d'/2 ([SHT23]); the kernel certificate (two inputs, one first layer)")
    default_model = "fnn:width=3,depth=2,precision=16,seed=0"
    default_n = 8
    default_instances = 32
    options = ("q", "value_dim")
    n_meaning = "N rows x_i = (z_i, y_i, i) of d = d' + q + 1 numbers each"

    judged_directly = True

    def _refuse(self, what: str, param: str = "reduction"):
        raise InputError(f"{param}: {self.id} has no {what}: its inputs are real vectors and its bound is on the "
                         f"network's width, not on a protocol's bits; it is judged directly by `commsim run {self.id}`",
                         param)

    def length_for_size(self, n: int) -> int:
        """None: no protocol's bits to plan (``commsim budget`` says so)."""
        self._refuse("protocol to plan by length", "task")

    def is_valid_length(self, seq_len: int) -> bool:
        """None: no protocol's bits to plan."""
        self._refuse("protocol to plan by length", "task")

    def seq_len(self, n: int) -> int:
        """N rows: the model reads N rows of d numbers."""
        return int(n)

    def model_context(self, n: int) -> dict:
        """N, and no vocabulary (the inputs are real vectors); the fnn's shape comes with q and d' in
        :meth:`direct_report`."""
        return {"seq_len": int(n), "n": int(n), "task": self.task, "reduction": self.id}

    def problem(self, n: int):
        """None: qSA here is no two-party problem (the bound is on the model's width)."""
        self._refuse("communication problem")

    def vocabulary(self, n: int) -> list[str]:
        """None: the inputs are real vectors, not tokens."""
        self._refuse("token vocabulary")

    def check_sizes(self, n, q, value_dim) -> tuple[int, int, int]:
        """(N, q, d') checked: 1 <= q < N/2 (the bound's condition), N <= MAX_ROWS, 1 <= d' <= MAX_VALUE_DIM."""
        for name, value in (("n", n), ("q", q), ("value_dim", value_dim)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise InputError(f"{name} must be an integer, got {value!r}", name)
        if not 3 <= n <= MAX_ROWS:
            raise InputError(f"n is N, the rows of qSA: 3..{MAX_ROWS} (q < N/2 needs N >= 3; exact arithmetic on "
                             f"N·d numbers keeps N small), got {n}", "n")
        if not 1 <= q or not 2 * q < n:
            raise InputError(f"q must satisfy 1 <= q < N/2 = {n / 2:g} ([SHT23]'s condition), got {q}", "q")
        if not 1 <= value_dim <= MAX_VALUE_DIM:
            raise InputError(f"value_dim is d', the values' dimension: 1..{MAX_VALUE_DIM}, got {value_dim}",
                             "value_dim")
        return int(n), int(q), int(value_dim)

    def model_for(self, model, rows: int, q: int, value_dim: int):
        """The model read as N rows of d = d' + q + 1 in and d' out: an ``fnn`` spec sized to the task, a
        FullyConnected, or a torch MLP (through ``from_torch``)."""
        shape = {"rows": rows, "in": value_dim + q + 1, "out": value_dim}
        context = {"n": rows, "seq_len": rows, "reduction": self.id, "task": self.task, "shape": shape}
        built = make_model(model if model is not None else self.default_model,
                           **(context if isinstance(model, str) or model is None else {}))
        if not callable(getattr(built, "first_layer", None)) or not callable(getattr(built, "for_task", None)):
            raise NotApplicable(f"{self.id} needs a fully-connected network over the whole input (an fnn spec, or a "
                                f"torch nn.Sequential of Linear layers); got {type(built).__name__}", "model")
        return built.for_task(rows, shape["in"], shape["out"])

    def bound(self, width: int, rows: int, q: int, value_dim: int) -> LowerBound:
        """[SHT23]'s width bound beside the model's width; not applicable (with the reason, and commsim's own
        stronger kernel bound) when the width meets it."""
        needed, own = fnn_qsa_width(rows, value_dim), fnn_qsa_kernel_width(rows, q, value_dim)
        bound = LowerBound(
            needed, SOURCE, Conditions("two-way", "none: a bound on the first layer's width"),
            f"a fully-connected network of depth >= 2 that 1/(2q)-approximates qSA (q = {q} < N/2) has width >= "
            f"N·d'/2 = {rows}·{value_dim}/2, i.e. >= {needed}; this one has width {width}",
            unit="width", measured=width, randomized=False,
            randomized_reason="stated for one network with fixed weights: the two inputs of the kernel argument "
                              "depend on the weights, so a network with random weights may err on each input only "
                              "with small probability (deterministic only)")
        if width >= needed:
            tail = (f"; commsim's own kernel argument (width >= (N - q + 1)·d' = {own}, proof in "
                    f"protocols.theorems.fnn_qsa_kernel_width) still shows a wrong answer below {own}"
                    if width < own else "")
            return bound.not_applicable(f"width {width} >= N·d'/2 = {needed}: [SHT23]'s bound does not apply to "
                                        f"this network{tail}")
        return bound

    def sample(self, rows: int, q: int, value_dim: int, count: int, seed: int):
        """``count`` random inputs: q-sets uniform, values uniform on the 2^-8 grid inside the unit ball."""
        rng = np.random.default_rng(seed)
        top = int((1 << VALUE_GRID) / np.sqrt(value_dim))
        for _ in range(count):
            sets = [tuple(sorted(rng.choice(rows, size=q, replace=False).tolist())) for _ in range(rows)]
            values = [[Fraction(int(c), 1 << VALUE_GRID) for c in rng.integers(-top, top + 1, size=value_dim)]
                      for _ in range(rows)]
            yield values, sets

    def direct_report(self, model, n, *, instances, seed, certify, q=None, value_dim=None):
        """The run (module docstring): the model on ``instances`` sampled inputs, the bound, the certificate."""
        rows, q, value_dim = self.check_sizes(self.default_n if n is None else n, 1 if q is None else q,
                                              1 if value_dim is None else value_dim)
        count = self.default_instances if instances is None else int(instances)
        built = self.model_for(model, rows, q, value_dim)
        eps = Fraction(1, 2 * q)
        wrong = 0
        for values, sets in self.sample(rows, q, value_dim, count, seed):
            error, _ = max_row_error(built.forward(qsa_input(values, sets)), qsa_target(values, sets))
            wrong += error > eps * eps
        bound = self.bound(built.width, rows, q, value_dim)
        certificate, searched = kernel_certificate(built, rows, q, value_dim) if certify else (None, "")
        if certificate is not None and not bound.applies and certificate.verified:
            searched += ("; the paper's bound does not apply at this width, so this is a wrong answer shown, "
                         "not a failure the bound forces")
        described = f"sampled inputs (seed {seed}): q-sets uniform, values on the 2^-{VALUE_GRID} grid in the ball"
        sets_row = {"name": "sampled", "description": described, "instances": count, "wrong": int(wrong),
                    "accuracy": (count - wrong) / count if count else 1.0, "protocol_matches_model": True}
        refuted = certificate is not None and certificate.verified
        details = {"width": built.width, "depth": built.depth, "precision": built.format.name, "q": q,
                   "value_dim": value_dim, "input_dim": value_dim + q + 1, "epsilon": f"1/{2 * q}",
                   "paper_width_bound": fnn_qsa_width(rows, value_dim),
                   "commsim_kernel_width_bound": fnn_qsa_kernel_width(rows, q, value_dim),
                   "protocol": "none: the bound is on the network's width; the model is run directly"}
        return Report(
            reduction=self.id, problem="qsa", task=self.task,
            protocol="none (judged directly: a width bound)", model=getattr(built, "spec", type(built).__name__),
            n=rows, seq_len=rows, instances=described, instances_run=count, bits_used=0,
            bits_by_direction={"alice_to_bob": 0, "bob_to_alice": 0}, rounds=0, bits_formula=0,
            bits_formula_text=f"no protocol: width {built.width} against N·d'/2 = {fnn_qsa_width(rows, value_dim)}",
            lower_bound=bound, model_accuracy=sets_row["accuracy"], model_correct=wrong == 0 and not refuted,
            protocol_matches_model=True, runner_checked=0, audited=False, certificate=certificate,
            certificate_search=searched, details=details, accuracy_by_set={"sampled": sets_row["accuracy"]},
            evaluation_sets=[sets_row], simulator_choice="")


REDUCTIONS = [QSAApprox]
