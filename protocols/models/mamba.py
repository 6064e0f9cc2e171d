"""A selective state-space model (Mamba, [GD23]) as a finite-precision recurrence: Δ, B and C depend on the input.

Model (Mamba's LM, as ``mambapy``'s ``LM`` and Hugging Face's ``MambaForCausalLM`` compute it): the token's
embedding ``u`` goes through L residual blocks ``u <- u + mixer(RMSNorm(u))``, then ``RMSNorm`` and the head.
One mixer, for the block's input ``v`` (d_model numbers), with E = expand·d_model channels and N = d_state::

    x, z   = in_proj(v)                              (E and E numbers)
    x'     = SiLU(conv_b + Σ_k conv_w[:, k] · window_k)   a causal depthwise convolution of width K = d_conv
                                                    over the last K - 1 x's (the window) and this x
    Δ, B, C = x_proj(x')                             (dt_rank, N, N numbers: input-dependent)
    Δ      = softplus(dt_proj(Δ))                    (E numbers)
    h      = exp(Δ ⊗ A) ⊙ h + (Δ ⊗ B) ⊙ x'            (E × N: the SSM state; A = -exp(A_log), fixed)
    y      = (h C + D ⊙ x') ⊙ SiLU(z);  mixer(v) = out_proj(y)

**The state** carried from one token to the next is, per layer, the SSM state h (E·N numbers) and the
convolution window: the last K - 1 values of x (E·(K - 1) numbers) -- every number the next step reads, and
nothing else.  (Hugging Face keeps K columns of x in its cache; the oldest is never read again: the next step's
convolution reads the K - 1 newest and the new x.)  So a Mamba of L layers hands off
``L·E·(N + K - 1)`` numbers, ``L·E·(N + K - 1)·p`` bits (Theorem 2 of [BHBK24] applies: it is a recurrence).

**The output** at t is computed by the step itself from the state at t - 1 and the token x_t (the mixer's
output reads the gate z of the current token, not only the new state): :class:`StepOutputRecurrence`.  In
the handoff Bob holds x_t, so he computes it; nothing more is sent.

Finite precision: every parameter is a number of the format; after every step each layer's new state (h and
the window) is rounded to the format before anything reads it (the scan output y reads the rounded h), and
the outputs are rounded.  Everything else is float64, every dot product by the batch-independent
:class:`~commsim.contract.arithmetic.Dense` and every sum in a fixed order, so a protocol run, a batched run and
the direct forward agree bit for bit.

Built-in kind ``mamba`` (:func:`random_mamba`): seeded weights with mambapy's initialisation (Δ's bias the
inverse softplus of a step drawn log-uniformly from [0.001, 0.1]; A_log = log(1..N); D = 1).
"""
from __future__ import annotations

import math

import numpy as np

from commsim.contract import Dense, ModelError, sigmoid
from commsim.core.precision import NumberFormat, parse_format
from protocols.models.recurrent import RecurrentModel

#: torch's softplus threshold: above it softplus(x) = x
SOFTPLUS_THRESHOLD = 20.0


def softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + e^x), and x itself above :data:`SOFTPLUS_THRESHOLD` (torch's ``F.softplus``)."""
    return np.where(x > SOFTPLUS_THRESHOLD, x, np.log1p(np.exp(np.minimum(x, SOFTPLUS_THRESHOLD))))


def silu(x: np.ndarray) -> np.ndarray:
    """x · sigmoid(x)."""
    return x * sigmoid(np.array(x, dtype=np.float64))


def row_mean_square(x: np.ndarray) -> np.ndarray:
    """The mean of the squares of each row, summed term by term (batch-independent)."""
    total = np.zeros(x.shape[0])
    for j in range(x.shape[1]):
        total += x[:, j] * x[:, j]
    return total / x.shape[1]


def rms_norm(x: np.ndarray, weight: np.ndarray | None, eps: float) -> np.ndarray:
    """RMSNorm: x / sqrt(mean(x²) + eps) · weight; no weight: no norm (x itself)."""
    if weight is None:
        return x
    return x / np.sqrt(row_mean_square(x) + eps)[:, None] * weight


class StepOutputRecurrence(RecurrentModel):
    """A recurrence whose output at t is computed by its step from the state h_{t-1} and the token x_t
    (Mamba's gate, RWKV's attention read the current token), not by a readout of h_t alone.  Subclasses
    implement ``_advance(h, x, t, output)`` -> (the new state, float64, each part already rounded before
    anything read it; the outputs (batch, classes) before rounding when ``output``, else None).  The handoff
    is unchanged: Bob holds x_t and computes the output."""

    def _advance(self, h: np.ndarray, x: np.ndarray, t: int, output: bool):  # pragma: no cover - abstract
        raise NotImplementedError

    def _step(self, h, x, t):
        """The new state (no output)."""
        return self._advance(h, x, t, False)[0]

    def _readout(self, h):
        raise ModelError(f"{self.kind}'s output at t is computed by its step from h_(t-1) and x_t, not from h_t: "
                         f"use run(tokens, outputs=...)", "model")

    def readout_at(self, h, x, t):
        raise ModelError(f"{self.kind}'s output at t is computed by its step from h_(t-1) and x_t, not from h_t: "
                         f"use run(tokens, outputs=...)", "model")

    def run(self, tokens, state=None, start: int = 0, outputs=()):
        """:meth:`RecurrentModel.run` with the outputs computed by the step (same contract)."""
        toks, h, where, raw = self._run_start(tokens, state, start, outputs)
        length = toks.shape[1]
        for j in range(length):
            new, out = self._advance(h, toks[:, j], start + j, j in where)
            h = self._q(new)
            if j in where:
                out = self._q(out)
                for k in where[j]:
                    raw[:, k] = out
        return self._run_end(h, start + length - 1), raw


#: the arrays of one Mamba layer (None allowed for the optional biases); shapes for (D, E, N, K, R)
LAYER_KEYS = ("norm", "in_w", "in_b", "conv_w", "conv_b", "x_w", "dt_w", "dt_b", "A_log", "D", "out_w", "out_b")


def _layer_shapes(d: int, e: int, n: int, k: int, r: int) -> dict:
    return {"norm": (d,), "in_w": (d, 2 * e), "in_b": (2 * e,), "conv_w": (e, k), "conv_b": (e,),
            "x_w": (e, r + 2 * n), "dt_w": (r, e), "dt_b": (e,), "A_log": (e, n), "D": (e,), "out_w": (e, d),
            "out_b": (d,)}


class SelectiveSSM(StepOutputRecurrence):
    """Mamba (module docstring): ``embed`` (vocab, D); ``layers`` a list of dicts of :data:`LAYER_KEYS` (weights
    stored as (inputs, outputs); ``norm`` (the RMSNorm's weight; None: no norm), ``in_b``, ``conv_b``, ``out_b`` may be None); ``norm_f`` (D,) (the final RMSNorm's weight) or None (no final norm);
    ``head`` (D, classes) and ``head_bias``.  State layout per layer: h (E × N, row-major), then the window
    (E × (K - 1), oldest first)."""

    kind = "mamba"

    def __init__(self, embed, layers: list[dict], norm_f, head, head_bias=None, fmt: NumberFormat | str = "16", *,
                 eps: float = 1e-5, eps_f: float | None = None, spec: str = ""):
        fmt = parse_format(fmt) if isinstance(fmt, str) else fmt
        embed, head = np.asarray(embed, dtype=np.float64), np.asarray(head, dtype=np.float64)
        if embed.ndim != 2 or head.ndim != 2 or head.shape[0] != embed.shape[1] or not layers:
            raise ModelError(f"mamba: the embedding must be (vocab, d_model), the head (d_model, classes) and there "
                             f"must be a layer; got {embed.shape}, {head.shape}, {len(layers)} layers", "model")
        d = embed.shape[1]
        e, n = np.shape(layers[0]["A_log"])
        k, r = np.shape(layers[0]["conv_w"])[1], np.shape(layers[0]["dt_w"])[0]
        if k < 1:
            raise ModelError("mamba: the convolution needs a width d_conv of at least 1", "model")
        self.d_model, self.d_inner, self.d_state, self.d_conv, self.dt_rank = d, e, n, k, r
        self.num_layers = len(layers)
        self.per_layer = e * n + e * (k - 1)
        super().__init__(fmt, e, self.per_layer * self.num_layers, embed.shape[0], head.shape[1],
                         spec or f"mamba:d_model={d},d_state={n},d_conv={k},layers={len(layers)}")
        q = self.quantize
        shapes = _layer_shapes(d, e, n, k, r)
        self._layers = []
        for i, lay in enumerate(layers):
            arrays = {}
            for key in LAYER_KEYS:
                value = lay.get(key)
                if value is None:
                    if key in ("in_w", "conv_w", "x_w", "dt_w", "dt_b", "A_log", "D", "out_w"):
                        raise ModelError(f"mamba: layer {i} lacks {key}", "model")
                    arrays[key] = None
                    continue
                value = np.asarray(value, dtype=np.float64)
                if value.shape != shapes[key] or not np.isfinite(value).all():
                    raise ModelError(f"mamba: layer {i}'s {key} has shape {value.shape}, expected {shapes[key]} of "
                                     f"finite numbers", "model")
                arrays[key] = q(value)
            self._layers.append({
                "norm": arrays["norm"],
                "in": Dense.for_format(arrays["in_w"], arrays["in_b"], fmt),
                "conv_w": arrays["conv_w"], "conv_b": arrays["conv_b"],
                "x": Dense.for_format(arrays["x_w"], None, fmt),
                "dt": Dense.for_format(arrays["dt_w"], arrays["dt_b"], fmt),
                "A": -np.exp(arrays["A_log"]), "D": arrays["D"],
                "out": Dense.for_format(arrays["out_w"], arrays["out_b"], fmt),
            })
        self.eps = float(eps)
        self.eps_f = self.eps if eps_f is None else float(eps_f)
        self._embed = q(embed)
        self._norm_f = None if norm_f is None else q(np.asarray(norm_f, dtype=np.float64))
        self._head = Dense.for_format(q(head), None if head_bias is None else q(np.asarray(head_bias, float)), fmt)

    @property
    def layers(self) -> int:
        """The number of layers (every layer's state is handed off)."""
        return self.num_layers

    def describe_state(self) -> str:
        """Per layer: the SSM state E × N and the convolution window E × (K - 1)."""
        e, n, k = self.d_inner, self.d_state, self.d_conv
        layers = f"{self.num_layers} layers × " if self.num_layers > 1 else ""
        return (f"{layers}(SSM state {e}×{n} + convolution window {e}×{k - 1}) = {self.state_units} numbers of "
                f"{self.format.name}")

    def _advance(self, h, x, t, output):
        """Every layer in order (module docstring): new states rounded before they are read."""
        e, n, k = self.d_inner, self.d_state, self.d_conv
        out = np.empty_like(h)
        rows = h.shape[0]
        u = self._embed[x]
        for i, lay in enumerate(self._layers):
            off = i * self.per_layer
            ssm = h[:, off:off + e * n].reshape(rows, e, n)
            window = h[:, off + e * n:off + self.per_layer].reshape(rows, e, k - 1)
            xz = lay["in"](rms_norm(u, lay["norm"], self.eps))
            xi, z = xz[:, :e], xz[:, e:]
            conv = np.zeros_like(xi) if lay["conv_b"] is None else np.repeat(lay["conv_b"][None], len(xi), axis=0)
            for j in range(k - 1):
                conv += lay["conv_w"][:, j] * window[:, :, j]
            conv += lay["conv_w"][:, k - 1] * xi
            new_window = out[:, off + e * n:off + self.per_layer].reshape(rows, e, k - 1)
            new_window[:, :, :k - 2] = window[:, :, 1:]
            if k > 1:
                new_window[:, :, k - 2] = xi
            self._q(new_window)
            xc = silu(conv)
            dbc = lay["x"](xc)
            r = self.dt_rank
            delta = softplus(lay["dt"](np.ascontiguousarray(dbc[:, :r])))
            b, c = dbc[:, r:r + n], dbc[:, r + n:]
            new_ssm = out[:, off:off + e * n].reshape(rows, e, n)
            np.multiply(np.exp(delta[:, :, None] * lay["A"]), ssm, out=new_ssm)
            new_ssm += (delta[:, :, None] * b[:, None, :]) * xc[:, :, None]
            self._q(new_ssm)
            y = lay["D"] * xc
            for j in range(n):
                y += new_ssm[:, :, j] * c[:, None, j]
            y *= silu(z)
            u = u + lay["out"](y)
        if not output:
            return out, None
        return out, self._head(rms_norm(u, self._norm_f, self.eps_f))

    @classmethod
    def random(cls, d_model: int, d_state: int = 4, d_conv: int = 4, expand: int = 2, layers: int = 1,
               dt_rank: int | None = None, fmt: NumberFormat | str = "16", vocab: int = 2, classes: int = 2,
               seed: int = 0, spec: str = "") -> "SelectiveSSM":
        """Seeded weights (module docstring); linear layers uniform in ±1/sqrt(inputs), as torch's default."""
        rng = np.random.default_rng(seed)
        d, n, k = d_model, d_state, d_conv
        e, r = expand * d, dt_rank or math.ceil(d / 16)

        def uniform(rows, cols):
            bound = 1.0 / math.sqrt(rows)
            return rng.uniform(-bound, bound, (rows, cols))
        stack = []
        for _ in range(layers):
            dt = np.exp(rng.uniform(math.log(1e-3), math.log(1e-1), e))
            stack.append({"norm": np.ones(d), "in_w": uniform(d, 2 * e), "in_b": None,
                          "conv_w": rng.uniform(-1 / math.sqrt(k), 1 / math.sqrt(k), (e, k)),
                          "conv_b": rng.uniform(-1 / math.sqrt(k), 1 / math.sqrt(k), e),
                          "x_w": uniform(e, r + 2 * n), "dt_w": rng.uniform(-r ** -0.5, r ** -0.5, (r, e)),
                          "dt_b": dt + np.log(-np.expm1(-dt)), "A_log": np.log(np.tile(np.arange(1, n + 1.0), (e, 1))),
                          "D": np.ones(e), "out_w": uniform(e, d), "out_b": None})
        return cls(rng.normal(size=(vocab, d)), stack, np.ones(d), uniform(d, classes), None, fmt, spec=spec)
