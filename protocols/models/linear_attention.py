"""Linear attention (linear transformer / RetNet style) as a finite-precision recurrence.

One layer of causal linear attention over one-hot tokens: the token ``x_t`` gives a query, key and value
(rows of (vocab, d) tables: ``q_t = W_q[x_t]``, ...), and

    S_t = γ S_{t-1} + v_t k_tᵀ                  (the d×d state; γ = 1 is the linear transformer,
                                                 γ < 1 RetNet's decay)
    o_t = S_t q_t                                (the attention output, d numbers)
    y_t = W_o o_t + b                            (the readout, ``classes`` logits)

With ``normalize=true`` the state also keeps the normaliser ``z_t = γ z_{t-1} + k_t`` (d numbers) and
``o_t = S_t q_t / (z_tᵀ q_t)`` (o_t = 0 when the denominator is not positive), as in Katharopoulos et al.'s
linear transformer; ``feature=elu`` applies φ(u) = elu(u) + 1 to the query and key tables first (so
they are positive).  The output at t reads the state and the current token's query only, so Theorem 2
of [BHBK24] applies: Alice hands Bob S_t (and z_t), **d·d·p bits** (``(d·d + d)·p`` with the normaliser).
State layout: S row by row (S[i, j] = Σ γ^{t-s} v_s[i] k_s[j]), then z.

Finite precision: the tables, γ, W_o and b are numbers of the format; the state is rounded to the format
after every step by the shared quantizer, o_t (and z_tᵀ q_t) before the readout, and the logits.  Every
sum runs in one fixed order, so protocol runs, batched sweeps and direct forwards agree bit for bit.
"""
from __future__ import annotations

import numpy as np

from commsim.contract import Dense, ModelError
from commsim.core.precision import NumberFormat, parse_format
from protocols.models.recurrent import RecurrentModel

#: RetNet's decay for its first head, 1 - 2^-5 (rounded to the model's format like every parameter)
DEFAULT_DECAY = 1.0 - 2.0 ** -5


def elu_plus_one(u: np.ndarray) -> np.ndarray:
    """φ(u) = elu(u) + 1: u + 1 for u > 0, exp(u) otherwise (positive features)."""
    u = np.asarray(u, dtype=np.float64)
    return np.where(u > 0, u + 1.0, np.exp(np.minimum(u, 0.0)))


class LinearAttention(RecurrentModel):
    """One causal linear-attention layer as a recurrence over its d×d state (module docstring).

    ``wq``, ``wk``, ``wv``: (vocab, d) tables; ``wo``: (d, classes); ``bias``: (classes,); ``decay``: γ."""

    kind = "linear-attention"

    def __init__(self, wq, wk, wv, wo, bias=None, decay: float = DEFAULT_DECAY, fmt: NumberFormat | str = "16", *,
                 normalize: bool = False, feature: str = "identity", spec: str = ""):
        fmt = parse_format(fmt) if isinstance(fmt, str) else fmt
        wq, wk, wv, wo = (np.asarray(w, dtype=np.float64) for w in (wq, wk, wv, wo))
        if wq.ndim != 2 or wk.shape != wq.shape or wv.shape != wq.shape or wo.ndim != 2 or wo.shape[0] != wq.shape[1]:
            raise ModelError(f"linear-attention: W_q, W_k, W_v must be (vocab, d) and W_o (d, classes); got "
                             f"{wq.shape}, {wk.shape}, {wv.shape}, {wo.shape}", "model")
        if feature not in ("identity", "elu"):
            raise ModelError(f"linear-attention: feature must be identity or elu, got {feature!r}", "model")
        if not all(np.isfinite(w).all() for w in (wq, wk, wv, wo)) or not np.isfinite(decay):
            raise ModelError("linear-attention: the weights and the decay must be finite numbers", "model")
        vocab, d = wq.shape
        classes = wo.shape[1]
        units = d * d + (d if normalize else 0)
        super().__init__(fmt, d, units, vocab, classes,
                         spec or f"linear-attention:dim={d}" + (",normalize=true" if normalize else ""))
        self.dim, self.normalize, self.feature = d, bool(normalize), feature
        q = self.quantize
        if feature == "elu":
            wq, wk = elu_plus_one(wq), elu_plus_one(wk)
        self.wq, self.wk, self.wv = q(wq), q(wk), q(wv)
        self.decay = float(q(np.array([decay]))[0])
        bias = np.zeros(classes) if bias is None else np.asarray(bias, dtype=np.float64).reshape(-1)
        if bias.shape != (classes,):
            raise ModelError(f"linear-attention: the readout bias must have {classes} entries", "model")
        self.wo, self.bias = q(wo), q(bias)
        self._out = Dense.for_format(self.wo, self.bias, fmt)

    @classmethod
    def random(cls, dim: int, fmt: NumberFormat | str = "16", vocab: int = 2, classes: int = 2, seed: int = 0,
               decay: float = DEFAULT_DECAY, normalize: bool = False, feature: str = "identity",
               spec: str = "") -> "LinearAttention":
        """Seeded weights: tables uniform in [-1, 1], W_o and b uniform in [-1/sqrt(d), 1/sqrt(d)]."""
        rng = np.random.default_rng(seed)
        tables = [rng.uniform(-1, 1, (vocab, dim)) for _ in range(3)]
        scale = 1.0 / np.sqrt(dim)
        wo, bias = rng.uniform(-scale, scale, (dim, classes)), rng.uniform(-scale, scale, classes)
        return cls(*tables, wo, bias, decay, fmt, normalize=normalize, feature=feature, spec=spec)

    def describe_state(self) -> str:
        """S (d×d) and, with the normaliser, z (d)."""
        d, name = self.dim, self.format.name
        extra = f" + z: {d}" if self.normalize else ""
        return f"S: {d}×{d}{extra} = {self.state_units} numbers of {name}"

    def _step(self, h, x, t):
        """S ← γ S + v kᵀ (and z ← γ z + k), elementwise."""
        d, batch = self.dim, h.shape[0]
        out = h * self.decay
        S = out[:, :d * d].reshape(batch, d, d)
        S += self.wv[x][:, :, None] * self.wk[x][:, None, :]
        if self.normalize:
            out[:, d * d:] += self.wk[x]
        return out

    def _ordered_dot(self, M: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Σ_j M[:, ..., j] q[:, j], summed j = 0, 1, ... (the same bits whatever the batch)."""
        acc = M[..., 0] * (q[:, 0:1] if M.ndim == 3 else q[:, 0])
        for j in range(1, self.dim):
            acc += M[..., j] * (q[:, j:j + 1] if M.ndim == 3 else q[:, j])
        return acc

    def attention_output(self, h: np.ndarray, x: np.ndarray) -> np.ndarray:
        """o_t = [S q] (normalised: [[S q] / [zᵀ q]], 0 where zᵀ q <= 0) for states h and current tokens x."""
        d, batch = self.dim, h.shape[0]
        q = self.wq[np.asarray(x)]
        o = self._q(self._ordered_dot(h[:, :d * d].reshape(batch, d, d), q))
        if self.normalize:
            den = self._q(self._ordered_dot(h[:, d * d:], q))
            positive = den > 0
            o = np.divide(o, den[:, None], out=np.zeros_like(o), where=positive[:, None])
            self._q(o)
        return o

    def readout_at(self, h, x, t):
        """y_t = [W_o o_t + b]: reads the state and the current token's query."""
        return self._q(self._out(self.attention_output(np.asarray(h, dtype=np.float64), x)))

    def _readout(self, h):
        """Linear attention has no readout of the state alone: its output reads the current token's query."""
        raise ModelError("linear attention's output reads the current token's query: use readout_at(h, x, t)",
                         "model")
