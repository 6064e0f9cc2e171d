"""Hugging Face decoders by architecture: ``hf:DIR`` reads ``config.model_type`` of a local ``save_pretrained``
directory (tiny one-layer configs, no download) and folds Qwen2 (q/k/v biases), Mistral (sliding window), Phi-3
(fused qkv and gate-up, partial rotary), Gemma (sqrt(d) embedding scale, (1 + w) RMSNorm, GeGLU), GPT-NeoX (fused
per-head qkv, partial rotary, parallel residual) and GPT-J (interleaved partial rotary, shared ln_1, parallel
residual).  Each: protocol = model bit for bit, torch agreement judged and decisions compared, the bits the hand
count; each feature shown to matter (the fold without it disagrees with the module); the architectures commsim
cannot fold are refused naming what stops them, an unknown model_type listing the supported ones."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
torch.set_num_threads(1)

from agreement_checks import assert_trusted  # noqa: E402
from cli_helpers import run_main  # noqa: E402
from commsim.core.errors import NotApplicable  # noqa: E402
from commsim.runs.run import run_reduction  # noqa: E402
from examples.hf_decoders import save_tiny_decoder, tiny_decoder  # noqa: E402
from protocols.adapters.torch import agreement, from_torch, hf_decoders  # noqa: E402
from protocols.adapters.torch.fold import FoldedPsi  # noqa: E402
from protocols.adapters.torch.layers import AdapterError  # noqa: E402
from protocols.adapters.torch.llama import LayeredLlama  # noqa: E402

N, D, P = 4, 16, 32                     # index-idxl at n = 4 (vocabulary 6, length 5); hidden 16; float32
FOLDED = ["qwen2", "mistral", "phi3", "gemma", "gpt_neox", "gptj"]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("decoders")
    return {t: save_tiny_decoder(t, str(root / t)) for t in FOLDED}


@pytest.mark.parametrize("model_type", FOLDED)
def test_hf_dir_folds_the_architecture_exactly(dirs, model_type, capsys):
    spec = f"hf:{dirs[model_type]}"
    report = run_reduction("index-idxl", spec, N, instances=16, seed=0, certify=False)
    assert_trusted(report)
    agreed = report.torch_agreement
    assert agreed["decisions_differ"] == 0 and agreed["decision"] == "argmax"
    # one-way (Bob holds the query): the message is the query position's residual stream, d numbers of p bits
    assert report.details["bits_by_step"] == {"embedding": D * P} and report.bits_used == D * P
    code, out, err = run_main(capsys, "run", "index-idxl", "--model", spec, "--n", str(N), "--instances", "8",
                              "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["protocol_matches_model"] is True and shown["torch_agreement"]["ok"] is True
    assert shown["bits_used"] == D * P


@pytest.mark.parametrize("model_type", FOLDED)
def test_two_way_exchange_of_each_architecture_matches_its_module(model_type):
    """eq-ineq splits the input: the full two-way exchange (query, maxima, Z, U per head) = the model."""
    hf = tiny_decoder(model_type, vocab_size=8, seq_len=8)
    report = run_reduction("eq-ineq", from_torch(hf, vocab_size=4, seq_len=5), 2, instances=16, certify=False)
    assert_trusted(report)
    assert report.details["mode"] == "two-way" and report.details["H"] == 4


def _disagrees(model) -> bool:
    result = agreement(model)
    return result["ok"] is False and result["max_abs_diff"] > result["max_allowed"]


def test_q_k_v_biases_ride_on_the_constant_coordinate_and_matter():
    hf = tiny_decoder("qwen2")
    model = from_torch(hf, vocab_size=8, seq_len=6)
    assert model.dim == 2 * D + 1 and agreement(model)["ok"] is True     # x, the stream, the constant 1
    with torch.no_grad():                                                 # the module without its k/v biases
        hf.model.layers[0].self_attn.k_proj.bias.zero_()
        hf.model.layers[0].self_attn.v_proj.bias.zero_()
    assert _disagrees(model)


@pytest.mark.parametrize("model_type", ["phi3", "gpt_neox", "gptj"])
def test_partial_rotary_rotates_only_the_first_coordinates(model_type):
    model = from_torch(tiny_decoder(model_type), vocab_size=8, seq_len=8)
    assert model.config.rope and model.config.rope_dims == 2 and model.width == 4
    assert agreement(model)["ok"] is True
    model.config = model.config.replace(rope_dims=None)                  # every coordinate rotated: not the module
    assert _disagrees(model)


def test_gpt_j_s_interleaved_pairs_are_folded_as_halves(monkeypatch):
    hf = tiny_decoder("gptj", rotary_dim=4)
    assert agreement(from_torch(hf, vocab_size=8, seq_len=8))["ok"] is True
    monkeypatch.setattr(hf_decoders, "_halves", lambda dims, m: np.arange(m))   # pairs read as halves unpermuted
    assert _disagrees(from_torch(hf, vocab_size=8, seq_len=8))


@pytest.mark.parametrize("model_type", ["gpt_neox", "gptj"])
def test_the_parallel_residual_feeds_the_mlp_the_block_s_input(model_type):
    model = from_torch(tiny_decoder(model_type), vocab_size=8, seq_len=8)
    psi = model.psi_fn
    assert isinstance(psi, hf_decoders.ParallelPsi) and agreement(model)["ok"] is True
    post = psi.post                                                      # the same pieces, read sequentially
    model.psi_fn = FoldedPsi(psi.d_out, psi.b_O, psi.d_res,
                             hf_decoders.SequentialPost(post.norm, post.mlp, post.final_norm, post.out_fn))
    assert _disagrees(model)


def test_gpt_neox_s_sequential_residual_is_read_too():
    model = from_torch(tiny_decoder("gpt_neox", use_parallel_residual=False), vocab_size=8, seq_len=8)
    assert not isinstance(model.psi_fn, hf_decoders.ParallelPsi) and agreement(model)["ok"] is True


def test_gemma_s_embedding_scale_and_one_plus_w_norms_matter(monkeypatch):
    hf = tiny_decoder("gemma")
    model = from_torch(hf, vocab_size=8, seq_len=6)
    assert agreement(model)["ok"] is True
    hf.model.embed_tokens.embed_scale.fill_(1.0)                          # the module without the sqrt(d) scale
    assert _disagrees(model)
    hf = tiny_decoder("gemma")
    plain = hf_decoders._rms
    monkeypatch.setattr(hf_decoders, "_rms", lambda norm, fmt, offset=False: plain(norm, fmt))
    assert _disagrees(from_torch(hf, vocab_size=8, seq_len=6))           # RMSNorms read as x w, not x (1 + w)


def test_a_sliding_window_shorter_than_the_input_is_refused_and_one_as_long_is_exact(tmp_path, capsys):
    L = N + 1
    exact = from_torch(tiny_decoder("mistral", sliding_window=L), vocab_size=N + 2, seq_len=L)
    assert agreement(exact)["ok"] is True
    short = tiny_decoder("mistral", sliding_window=L - 1)
    tokens = torch.as_tensor(np.random.default_rng(0).integers(0, N + 2, size=(16, L)))
    with torch.no_grad():                                   # the window changes what the module computes
        full = tiny_decoder("mistral")(tokens).logits[:, -1]
        assert not torch.allclose(short(tokens).logits[:, -1], full)
    with pytest.raises(AdapterError, match="sliding window of 4 positions, shorter than the 5") as refused:
        from_torch(short, vocab_size=N + 2, seq_len=L)
    assert refused.value.param == "sliding_window"
    short.save_pretrained(tmp_path / "short")
    code, _, err = run_main(capsys, "run", "index-idxl", "--model", f"hf:{tmp_path / 'short'}", "--n", str(N))
    assert code == 2 and "sliding window" in err and "Traceback" not in err


def _tiny_config(tmp_path, name: str, config) -> str:
    path = tmp_path / name
    path.mkdir()
    config.save_pretrained(path)
    return str(path)


@pytest.mark.parametrize("config_cls, feature", [("Gemma2Config", "soft-capped attention scores"),
                                                 ("Qwen3Config", "q_norm / k_norm")])
def test_architectures_commsim_cannot_fold_are_refused_naming_the_feature(tmp_path, capsys, config_cls, feature):
    config = getattr(transformers, config_cls)(vocab_size=8, hidden_size=8, intermediate_size=16,
                                               num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                               head_dim=4)
    path = _tiny_config(tmp_path, config_cls, config)
    code, _, err = run_main(capsys, "run", "index-idxl", "--model", f"hf:{path}", "--n", str(N))
    assert code == 2 and feature in err and "qwen2 (Qwen2)" in err and "Traceback" not in err


def test_an_unknown_model_type_is_refused_listing_the_supported_ones(tmp_path, capsys):
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 8}))
    code, _, err = run_main(capsys, "run", "index-idxl", "--model", f"hf:{tmp_path / 'bert'}", "--n", str(N))
    assert code == 2 and "does not know the model_type 'bert'" in err
    assert all(t in err for t in ("qwen2", "mistral", "phi3", "gemma", "gpt_neox", "gptj", "llama", "gpt2"))
    with pytest.raises(AdapterError, match="does not know the model_type 'bert'"):
        from_torch(transformers.BertModel(transformers.BertConfig(vocab_size=8, hidden_size=8, num_hidden_layers=1,
                                                                  num_attention_heads=2, intermediate_size=8)))


def test_a_kind_of_one_class_points_to_hf_for_another_architecture(dirs, capsys):
    for kind, other in (("hf-llama", "qwen2"), ("hf-gpt2", "gptj"), ("hf-mamba", "gemma")):
        code, _, err = run_main(capsys, "run", "index-idxl", "--model", f"{kind}:{dirs[other]}", "--n", str(N))
        assert code == 2 and f"describes a '{other}' model" in err and "hf:DIR reads the model type" in err
        assert "use the kind of that model" not in err


def test_hf_reads_llama_gpt2_and_mamba_directories_too(tmp_path):
    from examples.real_models import save_tiny_llama, save_tiny_mamba
    llama = run_reduction("index-idxl", f"hf:{save_tiny_llama(str(tmp_path / 'l'))}", N, instances=8,
                          certify=False)
    assert_trusted(llama)
    transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=8,
                                                         n_positions=8)).save_pretrained(tmp_path / "g")
    assert_trusted(run_reduction("index-idxl", f"hf:{tmp_path / 'g'}", N, instances=8, certify=False))
    mamba = run_reduction("index-idxl", f"hf:{save_tiny_mamba(str(tmp_path / 'm'))}", N, instances=8,
                          certify=False)
    assert mamba.protocol_matches_model and mamba.protocol == "rnn-handoff"       # a recurrence, as hf-mamba


def test_a_two_layer_decoder_keeps_its_function_and_decides_by_its_output_shape(tmp_path, capsys):
    hf = tiny_decoder("qwen2", layers=2)
    layered = from_torch(hf)
    assert isinstance(layered, LayeredLlama) and "this Qwen2 has 2 layers" in layered.no_protocol_reason
    tokens = np.random.default_rng(1).integers(0, 32, size=(12, 5))
    with torch.no_grad():
        own = hf(torch.as_tensor(tokens)).logits[:, -1].argmax(-1).numpy()
    assert np.array_equal(layered.forward(tokens), own) and layered.decision.rule == "argmax"
    with pytest.raises(NotApplicable, match="Qwen2 has 2 layers.*Lemma 5"):
        run_reduction("index-idxl", layered, N, instances=4, certify=False)
    one = tiny_decoder("qwen2", layers=2)
    one.lm_head = torch.nn.Linear(D, 1, bias=False)                      # one logit: decided by its sign
    layered = from_torch(one)
    with torch.no_grad():
        sign = (one(torch.as_tensor(tokens)).logits[:, -1, 0] > 0).long().numpy()
    assert layered.decision.rule == "sign" and np.array_equal(layered.forward(tokens), sign)


def test_a_directory_whose_name_holds_an_equals_sign_is_a_directory(dirs, tmp_path, capsys):
    odd = tmp_path / "run=1"
    shutil.copytree(dirs["qwen2"], odd)
    code, out, err = run_main(capsys, "run", "index-idxl", "--model", f"hf:{odd}", "--n", str(N), "--instances",
                              "4", "--json")
    assert code == 0, err
    assert json.loads(out)["protocol_matches_model"] is True
    code, out, err = run_main(capsys, "run", "index-idxl", "--model", f"hf:{odd}:precision=8", "--n", str(N),
                              "--instances", "4", "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["details"]["p"] == 8 and shown["bits_used"] == D * 8 and shown["protocol_matches_model"] is True


@pytest.mark.parametrize("model_type", ["phi3", "gpt_neox", "gptj"])
def test_partial_rotary_at_fixed_point_runs_bit_for_bit(dirs, model_type):
    """The rotation of the first coordinates only, in a fixed-point format: the two-way exchange = the model."""
    report = run_reduction("eq-ineq", f"hf:{dirs[model_type]}:precision=12", 2, instances=16, certify=False)
    assert report.protocol_matches_model and report.details["p"] == 12 and report.details["mode"] == "two-way"


def test_rope_dims_must_be_even_and_within_the_head():
    from commsim.core.errors import InputError
    config = from_torch(tiny_decoder("gpt_neox"), vocab_size=8, seq_len=6).config
    for bad in (3, 0, 6, True):
        with pytest.raises(InputError, match="rope_dims"):
            config.replace(rope_dims=bad)


@pytest.mark.parametrize("model_type", FOLDED)
def test_a_bfloat16_decoder_agrees_within_its_format_s_tolerance(model_type):
    model = from_torch(tiny_decoder(model_type).to(torch.bfloat16), vocab_size=4, seq_len=5)
    assert model.format.name == "bfloat16"
    result = agreement(model)
    assert result["ok"] is True, result["note"]
    assert run_reduction("eq-ineq", model, 2, instances=8, certify=False).protocol_matches_model


@pytest.mark.parametrize("model_type", ["qwen2", "gpt_neox", "gptj"])
def test_a_bare_decoder_takes_a_given_head(model_type):
    hf = tiny_decoder(model_type, seed=2)
    body = hf.get_decoder() if model_type != "gptj" else hf.transformer
    head = torch.nn.Linear(D, 2)
    model = from_torch(body, head=head, vocab_size=32, seq_len=6)
    tokens = np.random.default_rng(3).integers(0, 32, size=(6, 5))
    with torch.no_grad():
        theirs = head(body(torch.as_tensor(tokens)).last_hidden_state[:, -1]).double().numpy()
    assert np.allclose(model.forward(tokens), theirs, rtol=2e-4, atol=2e-4)
    with pytest.raises(AdapterError, match="no output head"):
        from_torch(body)
