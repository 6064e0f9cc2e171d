"""Attention written one head per module (the makemore / nanoGPT-lecture style): Karpathy's ``Head`` --
softmax(q @ k^T * scale) @ v over (batch, length, length) scores -- is one head; ``MultiHead(heads=
ModuleList([Head, Head]), proj)`` whose heads read the same input and are concatenated before one projection is
the H heads of one layer (Theorem 4 of [BHBK24]), not two layers.  Stacked heads, or heads combined otherwise,
are refused with the true reason."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional
torch.set_num_threads(1)

from commsim.runs.run import run_reduction  # noqa: E402
from protocols.adapters.torch import agreement, from_torch  # noqa: E402
from protocols.adapters.torch.layers import AdapterError  # noqa: E402

D, V, L = 8, 12, 12


class Head(nn.Module):
    """Karpathy's head: 3-D scores, a causal tril buffer, the value projected after the softmax."""

    def __init__(self, size, bias=False):
        super().__init__()
        self.key, self.query, self.value = (nn.Linear(D, size, bias=bias) for _ in range(3))
        self.register_buffer("tril", torch.tril(torch.ones(L, L)))

    def forward(self, x):
        T = x.shape[1]
        k, q = self.key(x), self.query(x)
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        wei = F.softmax(wei.masked_fill(self.tril[:T, :T] == 0, float("-inf")), dim=-1)
        return wei @ self.value(x)


class MultiHead(nn.Module):
    def __init__(self, n, size, combine="cat", bias=False):
        super().__init__()
        self.heads = nn.ModuleList([Head(size, bias) for _ in range(n)])
        self.proj = nn.Linear(n * size if combine == "cat" else size, D)
        self.combine = combine

    def forward(self, x):
        if self.combine == "stack":   # each head reads the previous one's output: two layers
            y = x
            for h in self.heads:
                y = h(y)
            return self.proj(y)
        outs = [h(x) for h in self.heads]
        return self.proj(torch.cat(outs, dim=-1) if self.combine == "cat" else sum(outs))


class Model(nn.Module):
    def __init__(self, core, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.tok, self.pos, self.core, self.head = nn.Embedding(V, D), nn.Embedding(L, D), core, nn.Linear(D, 2)
        for prm in self.parameters():   # a fresh draw per seed, whatever order the modules were made in
            nn.init.normal_(prm, std=0.5)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        return self.head(self.core(x))[:, -1]


def test_karpathy_head_is_one_head():
    model = from_torch(Model(Head(D)), seq_len=L)
    assert (model.heads, model.width) == (1, D)
    assert agreement(model)["ok"] is True
    r = run_reduction("eq-ineq", model, 4, instances=16, certify=False)
    assert r.protocol_matches_model and r.details["H"] == 1


@pytest.mark.parametrize("n, size, bias", [(2, 4, False), (4, 2, True), (3, 2, False)])
def test_a_module_list_of_heads_is_one_layer_of_h_heads(n, size, bias):
    model = from_torch(Model(MultiHead(n, size, bias=bias), seed=n), seq_len=L)
    assert (model.heads, model.width) == (n, size)
    assert "read as the" in model.source and f"{n} heads of one attention" in model.source
    assert agreement(model)["ok"] is True
    two = run_reduction("eq-ineq", model, 4, instances=16, certify=False)
    assert two.protocol_matches_model and two.details["mode"] == "two-way" and len(two.details["bits_by_head"]) == n


def test_heads_combined_otherwise_or_stacked_are_refused_with_the_true_reason():
    with pytest.raises(AdapterError, match="besides concatenating them"):
        from_torch(Model(MultiHead(2, 4, combine="sum")), seq_len=L)
    with pytest.raises(AdapterError, match="not the heads of one layer.*Lemma 5"):
        from_torch(Model(MultiHead(2, D, combine="stack")), seq_len=L)
