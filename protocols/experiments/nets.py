"""The trained models of the replication, in PyTorch.  Each has ``logits(tokens) -> (batch, classes)``, the
scores at the last position (what training and the float evaluation use).  The recurrent ones also expose the
step contract of :mod:`protocols.adapters.torch.step` (``initial_state`` / ``step`` / ``readout``), so that
``commsim.make_model(net, vocab_size=..., precision=p)`` runs exactly that recurrence in p-bit fixed point and
hands off exactly its state; ``logits`` computes the same function in parallel form (tested to agree).

* :class:`Transformer` -- L pre-LN encoder layers (``nn.TransformerEncoderLayer``), learned absolute positions,
  the class head at the last position ([BHBK24]'s GPT-2-style backbone, without causal masking: only the last
  position is read).  Its ``forward`` is ``logits``: a one-layer one is what commsim's torch adapter folds into
  its attention model (``commsim.make_model(net, vocab_size=..., precision=p)``), run through the attention
  exchange of Theorem 4.
* :class:`LSTMNet` -- ``nn.LSTM`` (one layer); state (h, c): 2·width numbers; commsim wraps it through its
  ``nn.LSTM`` adapter (``commsim_parts``), batched, rather than through the step contract.
* :class:`DiagonalSSM` -- one diagonal linear state-space layer h_t = a ⊙ h_{t-1} + B e(x_t), a = sigmoid(λ) in
  (0, 1)^width (a real-diagonal S4D/DSS-style layer; DSS itself is complex-diagonal), read by an MLP; state:
  width numbers.
* :class:`LinearAttention` -- one causal linear-attention layer (Katharopoulos et al.: φ = elu + 1), positions as
  sinusoidal phases advanced by a rotation each step; state: S (d×d), z (d), the phases (2F) and the layer's
  output at the current position (d), read by the head.
"""
from __future__ import annotations


import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["Transformer", "LSTMNet", "DiagonalSSM", "LinearAttention", "build", "ARCHES"]


class Transformer(nn.Module):
    """``layers`` pre-LN encoder layers of width ``width`` and ``heads`` heads; scores at the last position."""

    recurrent = False

    def __init__(self, vocab: int, classes: int, max_len: int, width: int, layers: int = 1, heads: int = 4):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(max_len, width)
        layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=2 * width, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.layers = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.layers(self.embed(tokens) + self.pos(positions)[None])
        return self.head(self.norm(x[:, -1]))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """The scores at the last position: the forward commsim's torch adapter reads (a one-layer encoder is
        folded into commsim's attention model; two layers are refused)."""
        return self.logits(tokens)


class LSTMNet(nn.Module):
    """Embedding, a one-layer ``nn.LSTM`` of hidden size ``width``, a linear head on h."""

    recurrent = True

    def __init__(self, vocab: int, classes: int, width: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.lstm = nn.LSTM(width, width, batch_first=True)
        self.head = nn.Linear(width, classes)

    def logits(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out[:, -1])

    def initial_state(self, batch: int):
        zeros = torch.zeros(batch, self.lstm.hidden_size, dtype=self.head.weight.dtype)
        return (zeros, zeros.clone())

    def step(self, state, tokens):
        h, c = state
        _, (h, c) = self.lstm(self.embed(tokens)[:, None], (h[None], c[None]))
        return (h[0], c[0])

    def readout(self, state):
        return self.head(state[0])

    def commsim_parts(self) -> dict:
        """The parts commsim's torch adapter wraps as an LSTM (``nn.LSTM`` with its embedding and head): the
        same recurrence as the step contract, run batched in numpy."""
        return {"core": self.lstm, "embedding": self.embed, "head": self.head}


class DiagonalSSM(nn.Module):
    """h_t = a ⊙ h_{t-1} + B e(x_t) (a = sigmoid(λ), ``width`` channels), scores = MLP(h_t)."""

    recurrent = True

    def __init__(self, vocab: int, classes: int, width: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.decay = nn.Parameter(torch.linspace(0.0, 6.0, width))     # a in (0.5, 0.998): long and short memory
        self.B = nn.Linear(width, width, bias=False)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, classes))

    def logits(self, tokens):
        a = torch.sigmoid(self.decay)                                   # (width,)
        L = tokens.shape[1]
        powers = a[None, :] ** torch.arange(L - 1, -1, -1, dtype=a.dtype)[:, None]   # a^(L-1-t): (L, width)
        h = (self.B(self.embed(tokens)) * powers[None]).sum(dim=1)
        return self.mlp(h)

    def initial_state(self, batch: int):
        return torch.zeros(batch, self.decay.shape[0], dtype=self.decay.dtype)

    def step(self, state, tokens):
        return torch.sigmoid(self.decay) * state + self.B(self.embed(tokens))

    def readout(self, state):
        return self.mlp(state)


class LinearAttention(nn.Module):
    """One causal linear-attention layer of width ``width`` (φ = elu + 1) over token + sinusoidal position
    embeddings; the head reads x_t + attention output at the last position."""

    recurrent = True

    def __init__(self, vocab: int, classes: int, width: int, frequencies: int = 8):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        omega = 1.0 / (100.0 ** (torch.arange(frequencies, dtype=torch.float32) / frequencies))
        self.register_buffer("omega", omega)
        self.pos = nn.Linear(2 * frequencies, width, bias=False)
        self.q = nn.Linear(width, width)
        self.k = nn.Linear(width, width)
        self.v = nn.Linear(width, width)
        self.head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, classes))

    def _phases(self, length: int):
        angle = torch.arange(length, dtype=self.omega.dtype)[:, None] * self.omega[None]
        return torch.cat([torch.cos(angle), torch.sin(angle)], dim=1)          # (L, 2F)

    def logits(self, tokens):
        x = self.embed(tokens) + self.pos(self._phases(tokens.shape[1]))[None]
        k, v = F.elu(self.k(x)) + 1, self.v(x)
        q = F.elu(self.q(x[:, -1])) + 1                                         # (B, d)
        S = torch.einsum("bti,btj->bij", k, v)
        z = k.sum(dim=1)
        out = torch.einsum("bi,bij->bj", q, S) / (torch.einsum("bi,bi->b", q, z)[:, None] + 1e-6)
        return self.head(x[:, -1] + out)

    def initial_state(self, batch: int):
        d, f = self.q.in_features, self.omega.shape[0]
        dtype = self.q.weight.dtype
        phase = torch.cat([torch.ones(batch, f, dtype=dtype), torch.zeros(batch, f, dtype=dtype)], dim=1)
        return (torch.zeros(batch, d, d, dtype=dtype), torch.zeros(batch, d, dtype=dtype), phase,
                torch.zeros(batch, d, dtype=dtype))

    def step(self, state, tokens):
        S, z, phase, _ = state
        x = self.embed(tokens) + self.pos(phase)
        k, v = F.elu(self.k(x)) + 1, self.v(x)
        S = S + k[:, :, None] * v[:, None, :]
        z = z + k
        q = F.elu(self.q(x)) + 1
        out = torch.einsum("bi,bij->bj", q, S) / (torch.einsum("bi,bi->b", q, z)[:, None] + 1e-6)
        f = self.omega.shape[0]
        cos, sin = phase[:, :f], phase[:, f:]
        c, s = torch.cos(self.omega), torch.sin(self.omega)                    # rotate every phase by omega
        phase = torch.cat([cos * c - sin * s, sin * c + cos * s], dim=1)
        return (S, z, phase, x + out)

    def readout(self, state):
        return self.head(state[3])


#: architecture name -> (class, what its width means)
ARCHES = {"tf": (Transformer, "model width"), "lstm": (LSTMNet, "hidden size"),
          "dss": (DiagonalSSM, "state channels"), "linattn": (LinearAttention, "model width")}


def build(arch: str, vocab: int, classes: int, width: int, *, layers: int = 1, max_len: int = 0, heads: int = 4):
    """A fresh model of ``arch`` (the caller seeds torch first)."""
    if arch == "tf":
        return Transformer(vocab, classes, max_len, width, layers=layers, heads=heads)
    if layers != 1:
        raise ValueError(f"{arch}: only one layer is built here, got layers={layers}")
    return ARCHES[arch][0](vocab, classes, width)
