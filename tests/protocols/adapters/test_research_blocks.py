"""Transformer blocks as research code writes them (issue 25, item 1): the standard pre-LN block with an MLP.

``x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)); logits = lm_head(ln_f(x))[:, -1]`` with the unembedding tied to
the token embedding (nanoGPT): everything after the attention at the query position -- the residual, ln_2, the
MLP on its own residual branch, ln_f and the unembedding -- is psi, as for GPT-2.  The forward does not say
which layers sit on the MLP branch: each reading is built and the one matching the module's own forward kept.
Every model: protocol = model bit for bit, ``--audit`` = the in-process run, torch agreement within the
documented tolerance (trust.py's ``judge``).
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
torch.set_num_threads(1)

from agreement_checks import assert_trusted  # noqa: E402
from commsim.runs.run import run_reduction  # noqa: E402
from commsim.runs.stages import prepare  # noqa: E402
from examples.research_blocks import MLP, nanogpt  # noqa: E402
from protocols.adapters.torch import agreement, from_torch  # noqa: E402
from protocols.adapters.torch.blocks import ResidualBranch, sequential_reading  # noqa: E402
from protocols.adapters.torch.layers import AdapterError, numpy_steps  # noqa: E402

N = 4
VOCAB, LENGTH = N + 2, N + 1        # index-idxl at n = 4



@pytest.mark.parametrize("slice_first", [False, True])
@pytest.mark.parametrize("heads", [1, 2])
def test_prenorm_block_with_mlp_and_tied_unembedding_is_psi(slice_first, heads):
    module = nanogpt(VOCAB, LENGTH, dim=8, heads=heads, attn="mha", slice_first=slice_first, seed=heads)
    assert module.lm_head.weight is module.transformer.wte.weight
    model = from_torch(module)
    assert "pre-norm residual" in model.source
    assert agreement(model)["ok"] is True
    # the MLP module was read as its children in call order (numpy), not run in torch row by row
    assert "row by row" not in model.source
    report = run_reduction("index-idxl", model, N, instances=24, certify=False)
    assert report.protocol == "attention-exchange"
    assert_trusted(report)


def test_the_mlp_is_read_as_its_children_only_when_bitwise_equal():
    torch.manual_seed(0)
    mlp = MLP(4)
    reading = sequential_reading(mlp, 4)
    assert isinstance(reading, nn.Sequential) and [type(m) for m in reading] == [nn.Linear, nn.GELU, nn.Linear,
                                                                                 nn.Dropout]

    class Swapped(MLP):       # calls its children in order but adds a skip: not a sequence of them
        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x))) + x

    assert sequential_reading(Swapped(4), 4).__class__ is Swapped
    assert numpy_steps(ResidualBranch(Swapped(4))) is None     # then torch runs it, row by row


def test_dict_of_parts_with_an_mlp_branch_matches_the_module():
    module = nanogpt(VOCAB, LENGTH, dim=8, heads=2, attn="mha", seed=3)
    block, t = module.transformer.h[0], module.transformer
    parts = {"embedding": t.wte, "positions": t.wpe, "norm": block.ln_1, "core": block.attn.mha, "residual": True,
             "mlp": [block.ln_2, block.mlp], "head": nn.Sequential(t.ln_f, module.lm_head), "module": module}
    model = from_torch(parts)
    assert agreement(model)["ok"] is True and "row by row" not in model.source   # the MLP read as its children
    assert run_reduction("index-idxl", model, N, instances=8, certify=False).protocol_matches_model


class ScaledMlp(nn.Module):
    """A block whose MLP output is scaled by a learned gate outside any layer: no reading matches."""

    def __init__(self):
        super().__init__()
        self.inner = nanogpt(VOCAB, LENGTH, dim=8, heads=2, attn="mha", seed=5)
        self.gate = nn.Parameter(torch.tensor(3.0))

    def forward(self, idx):
        t, block = self.inner.transformer, self.inner.transformer.h[0]
        x = t.wte(idx) + t.wpe(torch.arange(idx.shape[1]))
        x = x + block.attn(block.ln_1(x))
        x = x + self.gate * block.mlp(block.ln_2(x))
        return self.inner.lm_head(t.ln_f(x[:, -1]))


def test_a_block_no_reading_matches_is_refused_with_every_part_named():
    with pytest.raises(AdapterError) as err:
        from_torch(ScaledMlp())
    message = str(err.value)
    assert "does not match" in message and "MLP branch" in message
    for part in ("'embedding'", "'positions'", "'norm'", "'core'", "'residual': True", "'mlp'", "'head'", "'module'"):
        assert part in message, part


def test_audit_equals_in_process_run(shared_audit_workers):
    model = prepare("index-idxl", "python:examples.research_blocks:nanogpt:attn=mha,dim=8", N).model
    plain = run_reduction("index-idxl", model, N, instances=3, seed=1, certify=False)
    audited = run_reduction("index-idxl", model, N, instances=3, seed=1, certify=False, audit=True)
    assert audited.audited and audited.protocol_matches_model and plain.protocol_matches_model
    assert (audited.bits_used, audited.bits_by_direction, audited.model_accuracy) == \
        (plain.bits_used, plain.bits_by_direction, plain.model_accuracy)
    assert audited.torch_agreement == plain.torch_agreement
