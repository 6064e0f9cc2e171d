"""Recurrences as research code writes them (issue 25, items 4-5): a complex S4D-Lin step module, mambapy's Mamba,
Hugging Face MambaForCausalLM and RwkvForCausalLM from a local directory (tiny configs, no download) -- each
through the hidden-state handoff with its state exactly what the model carries between tokens.  (The
one-layer Llama, an attention model, is tested in test_hf_llama.py.)"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from commsim.cli import main as cli_main  # noqa: E402
from commsim.core.errors import InputError  # noqa: E402
from commsim.runs.run import run_reduction  # noqa: E402
from examples.real_models import S4DLin, save_tiny_mamba, save_tiny_rwkv  # noqa: E402
from protocols.adapters.torch import from_torch  # noqa: E402
from protocols.adapters.torch.layers import AdapterError  # noqa: E402
from protocols.adapters.torch.step import StepForward  # noqa: E402

from handoff_checks import handoff_matches_direct, random_split  # noqa: E402


def cli(args, capsys):
    try:
        cli_main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if exc.code is not None else 0
    out, err = capsys.readouterr()
    return code, out, err


def checked_run(spec: str, n: int, bits: int, instances: int = 16, audit: bool = True) -> None:
    """run index-idxl: protocol == model, bits_used the hand count, torch agreement judged ok, and (``audit``)
    --audit (each party in its own process) equal to the in-process run."""
    plain = run_reduction("index-idxl", spec, n, instances=instances, seed=0, certify=False)
    assert plain.protocol_matches_model and plain.bits_used == bits
    assert plain.torch_agreement["ok"] is True, plain.torch_agreement["note"]
    assert plain.torch_agreement["max_abs_diff"] <= plain.torch_agreement["atol"]
    if not audit:
        return
    audited = run_reduction("index-idxl", spec, n, instances=instances, seed=0, certify=False, audit=True)
    assert audited.audited and audited.protocol_matches_model and audited.bits_used == bits
    assert audited.model_accuracy == plain.model_accuracy


def certified(spec: str, n: int, bits: int, **kw) -> None:
    """A narrow / low-precision variant: bits_used the hand count, below the bound, and a verified certificate."""
    report = run_reduction("index-idxl", spec, n, **kw)
    assert report.bits_used == bits and report.protocol_matches_model and not report.budget_ok
    assert report.certificate.kind == "collision" and report.certificate.verified


# ---- complex S4D step module (item 5) -------------------------------------------------------------------------
def test_a_complex_state_is_counted_as_real_and_imaginary_parts_exactly():
    module = S4DLin(vocab_size=4, width=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # no "Casting complex values to real discards the imaginary part"
        model = from_torch(module)
        tokens = np.random.default_rng(0).integers(0, 4, size=(6, 7))
        states = model.final_states(tokens)
    assert (model.state_units, model.state_bits) == (2 * 3, 2 * 3 * 32)
    assert "2·3" in model.describe_state()
    with torch.no_grad():                           # the module's own complex state, as Re then Im
        h = module.initial_state(6)
        for j in range(7):
            h = module.step(h, torch.as_tensor(tokens[:, j]))
    assert np.array_equal(states, np.concatenate([h.real.double().numpy(), h.imag.double().numpy()], axis=1))
    ours = model.forward_batch(tokens, range(7))
    assert np.array_equal(ours, StepForward(module)(tokens))
    assert model.framework_agreement(tokens, range(7))["ok"] is True


def test_complex_step_module_handoff_at_any_format():
    from hypothesis import strategies as st
    from hypothesis import given, settings, HealthCheck

    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from([None, "fixed6.3", "bfloat16", "12"]), st.data())
    def check(fmt, data):
        model = from_torch(S4DLin(vocab_size=4, width=2, seed=3), precision=fmt)
        handoff_matches_direct(model, random_split(data.draw, st, 4, max_length=6, batch=3))
    check()


def test_complex_s4d_runs_exactly_and_a_narrow_one_gets_a_certificate(shared_audit_workers):
    checked_run("python:examples.real_models:s4d_lin:width=3", 5, 2 * 3 * 32)
    certified("python:examples.real_models:s4d_lin:width=1,precision=2", 5, 2 * 1 * 2)


def test_a_complex_readout_is_refused_with_a_reason():
    class ComplexScores(S4DLin):
        def readout(self, state):
            return state @ torch.view_as_complex(self.c)
    with pytest.raises(AdapterError, match="complex scores"):
        from_torch(ComplexScores())


# ---- mambapy (item 5) -------------------------------------------------------------------------------------------
def test_mambapy_mamba_runs_exactly_and_a_narrow_one_gets_a_certificate(shared_audit_workers):
    pytest.importorskip("mambapy")
    # 1 layer, d_inner = 2 · 8 = 16, d_state 4, d_conv 3: 16·4 + 16·2 = 96 numbers of float32
    checked_run("python:examples.real_models:mambapy_lm", 5, 96 * 32)
    checked_run("python:examples.real_models:mambapy_lm:layers=2", 5, 2 * 96 * 32, instances=8, audit=False)
    # d_model 1: d_inner 2, d_state 1, d_conv 2: 2·1 + 2·1 = 4 numbers of 2 bits
    certified("python:examples.real_models:mambapy_lm:d_model=1,d_state=1,d_conv=2,precision=2", 10, 8)


def test_a_mambapy_core_without_its_parts_is_refused():
    pytest.importorskip("mambapy")
    from mambapy.mamba import Mamba, MambaConfig
    with pytest.raises(AdapterError, match="embedding="):
        from_torch(Mamba(MambaConfig(d_model=4, n_layers=1)))


# ---- Hugging Face Mamba and RWKV from a local directory (item 4) ---------------------------------------------------
@pytest.fixture(scope="module")
def hf_dirs(tmp_path_factory):
    pytest.importorskip("transformers")
    root = tmp_path_factory.mktemp("hf")
    return {"mamba": save_tiny_mamba(str(root / "mamba"), vocab_size=16, hidden=8, state=4, conv=3, layers=2),
            "mamba1": save_tiny_mamba(str(root / "mamba1"), vocab_size=16, hidden=1, state=1, conv=2, layers=1,
                                      expand=1),
            "rwkv": save_tiny_rwkv(str(root / "rwkv"), vocab_size=16, hidden=8, layers=2),
            "rwkv2": save_tiny_rwkv(str(root / "rwkv2"), vocab_size=64, hidden=2, layers=2)}


def test_hf_mamba_hands_off_every_layer_s_ssm_state_and_convolution_window(hf_dirs):
    from transformers import MambaForCausalLM
    hf = MambaForCausalLM.from_pretrained(hf_dirs["mamba"]).eval()
    model = from_torch(hf)
    e, n, k, layers = 16, 4, 3, 2
    assert model.state_units == layers * (e * n + e * (k - 1)) == 192 and model.state_bits == 192 * 32
    tokens = np.random.default_rng(1).integers(0, 16, size=(3, 6))
    ours = model.final_states(tokens)
    with torch.no_grad():
        cache = hf(torch.as_tensor(tokens), use_cache=True).cache_params
    for layer in range(layers):
        ssm = cache.get_recurrent_state(layer, state_idx=0).double().numpy().reshape(3, -1)
        window = cache.get_conv_state(layer, state_idx=0).double().numpy()[:, :, 1:]   # the oldest is never read
        off = layer * model.per_layer
        assert np.allclose(ours[:, off:off + e * n], ssm, rtol=1e-5, atol=1e-6)
        assert np.allclose(ours[:, off + e * n:off + model.per_layer], window.reshape(3, -1), rtol=1e-5, atol=1e-6)


def test_hf_mamba_from_a_local_directory_end_to_end(hf_dirs, capsys, shared_audit_workers):
    checked_run(f"hf-mamba:{hf_dirs['mamba']}", 5, 192 * 32)
    code, out, err = cli(["run", "index-idxl", "--model", f"hf-mamba:{hf_dirs['mamba']}", "--n", "5",
                          "--instances", "8", "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["protocol_matches_model"] is True and report["bits_used"] == 192 * 32
    # hidden 1, expand 1: d_inner 1, d_state 1, d_conv 2 -> 1 + 1 numbers of 2 bits
    certified(f"hf-mamba:{hf_dirs['mamba1']}:precision=2", 5, 4)


def test_hf_rwkv_hands_off_its_five_state_vectors_per_layer(hf_dirs):
    from transformers import RwkvForCausalLM
    hf = RwkvForCausalLM.from_pretrained(hf_dirs["rwkv"]).eval()
    model = from_torch(hf)
    assert model.state_units == 2 * 5 * 8 and model.state_bits == 80 * 32
    tokens = np.random.default_rng(2).integers(0, 16, size=(3, 6))
    ours = model.final_states(tokens)
    with torch.no_grad():
        state = hf(torch.as_tensor(tokens), use_cache=True).state      # five (batch, hidden, layers)
    for layer in range(2):
        theirs = np.concatenate([s[:, :, layer].double().numpy() for s in state], axis=1)
        assert np.allclose(ours[:, layer * 40:(layer + 1) * 40], theirs, rtol=1e-4, atol=1e-5)


def test_hf_rwkv_from_a_local_directory_end_to_end(hf_dirs):
    checked_run(f"hf-rwkv:{hf_dirs['rwkv']}", 5, 80 * 32, audit=False)


@pytest.mark.slow
def test_hf_rwkv_audit_equals_the_in_process_run(hf_dirs):
    # --audit starts a process per party, each importing torch and transformers: the Mamba test above keeps one
    # Hugging Face audit in the default run
    checked_run(f"hf-rwkv:{hf_dirs['rwkv']}", 5, 80 * 32)


@pytest.mark.slow
def test_a_narrow_hf_rwkv_gets_a_certificate(hf_dirs):
    # the smallest RWKV transformers builds: 2 layers, hidden 2 -> 2 · 5 · 2 = 20 numbers of 2 bits, below n = 48
    certified(f"hf-rwkv:{hf_dirs['rwkv2']}:precision=2", 48, 40, instances=64)


def test_hf_kinds_check_the_directory_before_loading(hf_dirs, tmp_path):
    with pytest.raises(InputError, match="not a mamba"):
        run_reduction("index-idxl", f"hf-mamba:{hf_dirs['rwkv']}", 4, instances=4, certify=False)
    with pytest.raises(InputError, match="needs a local directory"):
        run_reduction("index-idxl", "hf-rwkv", 4, instances=4, certify=False)
    big = tmp_path / "big"
    big.mkdir()
    (big / "config.json").write_text(json.dumps({"model_type": "mamba", "hidden_size": 1 << 20,
                                                 "num_hidden_layers": 64, "vocab_size": 1 << 20}))
    with pytest.raises(InputError, match="memory|budget|GiB"):
        run_reduction("index-idxl", f"hf-mamba:{big}", 4, instances=4, certify=False)
    with pytest.raises(InputError, match="unknown key"):
        run_reduction("index-idxl", f"hf-mamba:{hf_dirs['mamba']}:layers=3", 4, instances=4, certify=False)
