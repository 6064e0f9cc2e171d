"""A GPT laid out as nanoGPT's model.py lays one out (``tests/nanogpt_style.py``: its own ``LayerNorm`` class, packed
``c_attn`` + SDPA, ``lm_head(x[:, [-1], :])`` and ``(logits, loss)``) at one layer runs through ``commsim.run``
with protocol = model and the module's own forward judged; every output form a module returns is read by the one
function (``trust.module_output``); the CLI runs a factory returning the GPT and exits 0.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
nn = torch.nn
torch.set_num_threads(1)

import commsim  # noqa: E402
from agreement_checks import assert_trusted  # noqa: E402
from nanogpt_style import GPT, GPTConfig  # noqa: E402
from protocols.adapters.torch import agreement, from_torch  # noqa: E402
from protocols.adapters.torch.trust import ModuleForward, at_positions, module_output  # noqa: E402

N = 8
VOCAB, LENGTH = N + 2, N + 1        # index-idxl at n = 8
ROOT = Path(__file__).resolve().parents[3]


def nanogpt(seed=0, n_head=2, n_embd=8, bias=True, flash=True, vocab=VOCAB):
    """The nanoGPT-style GPT at n_layer = 1, randomly initialised by its own _init_weights (no training), in eval mode;
    ``flash=False``: the explicit masked-softmax path nanoGPT takes when SDPA is missing."""
    torch.manual_seed(seed)
    model = GPT(GPTConfig(block_size=16, vocab_size=vocab, n_layer=1, n_head=n_head, n_embd=n_embd, dropout=0.0,
                          bias=bias))
    if not flash:
        model.transformer.h[0].attn.use_mask_buffer(16)
    with torch.no_grad():   # the LayerNorms away from (1, 0), so reading them wrong shows
        for ln in (model.transformer.h[0].ln_1, model.transformer.h[0].ln_2, model.transformer.ln_f):
            ln.weight.uniform_(0.5, 1.5)
            if ln.bias is not None:
                ln.bias.uniform_(-0.5, 0.5)
    return model.eval()


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("flash", [True, False])
def test_nanogpt_runs_with_protocol_equal_to_model(bias, flash):
    model = nanogpt(bias=bias, flash=flash)
    logits, loss = model(torch.zeros(2, LENGTH, dtype=torch.long))
    assert logits.shape == (2, 1, VOCAB) and loss is None          # the output that crashed the run
    report = commsim.run("index-idxl", model, n=N, instances=64)
    assert report.protocol == "attention-exchange"
    assert_trusted(report)
    built = from_torch(model, vocab_size=VOCAB, seq_len=LENGTH)
    assert "LayerNorm before the attention folded into the embedding" in built.source
    kind = "scaled_dot_product_attention" if flash else "explicit softmax"
    assert f"hand-written: {kind}, q/k/v from c_attn, out c_proj" in built.source
    assert agreement(built)["max_abs_diff"] < 1e-5


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 16), heads=st.sampled_from([1, 2, 4]), width=st.sampled_from([2, 4]))
def test_random_nanogpts_agree(seed, heads, width):
    model = nanogpt(seed=seed, n_head=heads, n_embd=heads * width)
    assert_trusted(commsim.run("index-idxl", model, n=N, instances=24, seed=seed, certify=False))


class Returns(nn.Module):
    """The nanoGPT-style GPT with its output given back in another form."""

    def __init__(self, gpt, form):
        super().__init__()
        self.gpt, self.form = gpt, form

    def forward(self, idx):
        if self.form in ("btv", "list"):   # every position's logits, as with targets
            t = self.gpt.transformer
            every = self.gpt.lm_head(t.ln_f(t.h[0](t.wte(idx) + t.wpe(torch.arange(idx.shape[1])))))
            return every if self.form == "btv" else [every]
        logits, _ = self.gpt(idx)                                   # (B, 1, V)
        return {"b1v": logits, "bv": logits[:, 0], "tuple": (logits, None),
                "dict": {"logits": logits, "loss": None}}[self.form]


@pytest.mark.parametrize("form", ["b1v", "bv", "btv", "tuple", "dict", "list"])
def test_every_output_form_is_read_at_the_last_position(form):
    gpt = nanogpt(seed=3)
    module = Returns(gpt, form).eval()
    tokens = np.random.default_rng(0).integers(0, VOCAB, size=(5, LENGTH))
    last = ModuleForward(gpt)(tokens)
    assert last.shape == (5, VOCAB)
    theirs = ModuleForward(module)(tokens)
    picked = at_positions(theirs, (LENGTH - 1,), LENGTH)
    assert picked.shape == (5, 1, VOCAB)
    np.testing.assert_allclose(picked[:, 0], last, rtol=1e-5, atol=1e-6)
    assert_trusted(commsim.run("index-idxl", module, n=N, instances=16, certify=False))


def test_module_output_shapes():
    t = torch.arange(24.0)
    assert module_output((t.reshape(2, 1, 12), None)).shape == (2, 12)
    assert module_output(t.reshape(2, 3, 4)).shape == (2, 3, 4)
    assert module_output(t.reshape(4, 6)).shape == (4, 6)
    assert module_output(t[:4]).shape == (4, 1)                    # one logit per row
    assert module_output({"logits": t.reshape(2, 12)}).shape == (2, 12)
    with pytest.raises(commsim.InputError, match="returned a str"):
        module_output("logits")
    with pytest.raises(commsim.InputError, match="empty tuple"):
        module_output(())


FACTORY = '''
import torch
from nanogpt_style import GPT, GPTConfig

def gpt(vocab_size, seq_len):
    torch.manual_seed(0)
    return GPT(GPTConfig(block_size=seq_len, vocab_size=vocab_size, n_layer=1, n_head=2, n_embd=8, dropout=0.0,
                         bias=True))
'''


def test_the_cli_runs_the_nanogpt_style_gpt(tmp_path):
    (tmp_path / "factory.py").write_text(FACTORY)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    done = subprocess.run([sys.executable, "-m", "commsim", "run", "index-idxl", "--model",
                           f"python:{tmp_path / 'factory.py'}:gpt", "--n", str(N), "--instances", "64", "--json"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["protocol_matches_model"] is True
    assert report["torch_agreement"]["ok"] is True
    assert report["torch_agreement"]["reference"] == "GPT's own forward"


def test_audit_equals_in_process_run(shared_audit_workers):
    model = nanogpt(seed=5)
    plain = commsim.run("index-idxl", model, n=N, instances=4, seed=1, certify=False)
    audited = commsim.run("index-idxl", model, n=N, instances=4, seed=1, certify=False, audit=True)
    assert audited.audited and audited.protocol_matches_model and plain.protocol_matches_model
    assert (audited.bits_used, audited.bits_by_direction, audited.model_accuracy) == \
        (plain.bits_used, plain.bits_by_direction, plain.model_accuracy)
    assert audited.torch_agreement == plain.torch_agreement and plain.torch_agreement["ok"] is True


def test_two_layers_are_refused_as_stacked_blocks_with_lemma_5():
    torch.manual_seed(0)
    model = GPT(GPTConfig(block_size=16, vocab_size=VOCAB, n_layer=2, n_head=2, n_embd=8, dropout=0.0)).eval()
    with pytest.raises(commsim.InputError, match=r"one inside each of transformer\.h\.0, transformer\.h\.1: stacked "
                                                 r"layers; .*Lemma 5"):
        commsim.run("index-idxl", model, n=N, instances=8)
