"""A one-layer Hugging Face Llama (issue 25, item 4): ``LlamaForCausalLM`` from a local ``save_pretrained`` directory
(tiny configs, no download) and as an object through ``from_torch`` / ``python:`` factories, folded into the
attention exchange: RMSNorm before the attention is phi, RoPE in transformers' rotate_half layout, grouped-query
attention (2 key/value heads for 4 query heads: the exchange's bits are per query head), and the residual,
post-attention RMSNorm, gated MLP, final norm and lm_head are psi.  protocol = model bit for bit, ``--audit`` = the
in-process run, torch agreement within the documented tolerance, bits_used = the hand count, a narrow fixed-point
variant gets a verified certificate on index-idxl; rope_scaling is refused naming it, and two layers are refused by
``run`` with Lemma 5 while ``commsim matrix`` reads their function from the module's own forward."""
from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
torch.set_num_threads(1)

from agreement_checks import assert_trusted  # noqa: E402
from cli_helpers import run_main  # noqa: E402
from commsim.core.errors import NotApplicable  # noqa: E402
from commsim.plugins import load_plugins  # noqa: E402
from commsim.runs.run import run_reduction  # noqa: E402
from examples.real_models import save_tiny_llama, tiny_llama  # noqa: E402
from protocols.adapters.torch import agreement, from_torch  # noqa: E402
from protocols.adapters.torch.layers import AdapterError  # noqa: E402
from protocols.adapters.torch.llama import LayeredLlama  # noqa: E402

N = 4                                   # index-idxl at n = 4: vocabulary n + 2, length n + 1
D, H, H_KV, M, P = 16, 4, 2, 4, 32      # hidden, query heads, key/value heads, head width, float32 bits


def cli(args, capsys):
    return run_main(capsys, *args)


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("llama")
    return {"gqa": save_tiny_llama(str(root / "gqa")),
            # hidden 1, one head of width 2 (RoPE rotates pairs): x_N as a message is the stream, 1 number
            "narrow": save_tiny_llama(str(root / "narrow"), vocab_size=130, hidden=1, heads=1, kv_heads=1,
                                      head_dim=2, seq_len=129),
            "two": save_tiny_llama(str(root / "two"), layers=2)}


def test_the_fold_is_the_module_rope_and_grouped_query_heads_included():
    hf = tiny_llama()
    model = from_torch(hf)
    # the table row is RMSNorm(wte[s]) and the stream wte[s] (no bias coordinate: Llama has no q/k/v biases);
    # x_N as a message is the stream alone (d numbers): the receiver computes its RMSNorm at the public position
    assert (model.heads, model.width, model.residual_width, model.dim) == (H, M, D, 2 * D)
    assert model.config.message_dim == D
    assert model.config.rope and model.config.rope_base == hf.config.rope_parameters["rope_theta"]
    assert agreement(model)["ok"] is True
    # repeat_kv: query heads 0, 1 read key/value head 0; heads 2, 3 read head 1 (and the two differ)
    W_K, W_V = model.arithmetic.to_values(model.W_K), model.arithmetic.to_values(model.W_V)
    for W in (W_K, W_V):
        assert np.array_equal(W[0], W[1]) and np.array_equal(W[2], W[3]) and not np.array_equal(W[0], W[2])
    # the rotation is what the module computes: the same layer without it does not follow the module
    model.config = model.config.replace(rope=False)
    assert agreement(model)["ok"] is False


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_half_precision_llama_agrees_within_its_format_s_tolerance(dtype):
    model = from_torch(tiny_llama().to(getattr(torch, dtype)))      # inv_freq too is cast to the dtype
    assert model.format.name == dtype
    result = agreement(model)
    assert result["ok"] is True, result["note"]
    assert run_reduction("eq-ineq", model, 2, instances=8, certify=False).protocol_matches_model


def test_hf_llama_from_a_local_directory_runs_exactly_with_the_hand_counted_bits(dirs, capsys,
                                                                                 shared_audit_workers):
    spec = f"hf-llama:{dirs['gqa']}"
    plain = run_reduction("index-idxl", spec, N, instances=16, seed=0, certify=False)
    assert_trusted(plain)
    # Bob holds only the query: one-way, the cheaper message is x_N -- the residual stream wte[s] (d numbers;
    # the receiver computes RMSNorm(wte[s]) from it exactly) -- d·p bits, below q_N and what it needs
    assert plain.details["bits_by_step"] == {"embedding": D * P}
    assert plain.bits_used == D * P < M * P * H + D * P + (M + 1) * P * H
    audited = run_reduction("index-idxl", spec, N, instances=16, seed=0, certify=False, audit=True)
    assert audited.audited and audited.protocol_matches_model
    assert (audited.bits_used, audited.bits_by_direction, audited.model_accuracy) == \
        (plain.bits_used, plain.bits_by_direction, plain.model_accuracy)
    assert audited.torch_agreement == plain.torch_agreement
    code, out, err = cli(["run", "index-idxl", "--model", spec, "--n", str(N), "--instances", "8", "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["protocol_matches_model"] is True and report["bits_used"] == D * P
    assert report["torch_agreement"]["ok"] is True


def test_grouped_query_attention_sends_its_messages_per_query_head():
    """Two-way each query head has its own q_N, logits, max, Z and U: 4 heads' messages, not 2."""
    report = run_reduction("eq-ineq", "python:examples.real_models:tiny_llama", 2, instances=16, certify=False)
    assert_trusted(report)
    d = report.details
    assert d["mode"] == "two-way" and (d["H"], d["m"]) == (H, M) and len(d["bits_by_head"]) == H
    z, u = d["message_widths"]["Z"], d["message_widths"]["U_value"]
    per_head = M * P + 2 * P + z + M * u           # q_N, both maxima, Z, U (m sums)
    assert d["bits_by_step"] == {"query": H * M * P, "max": 2 * H * P, "Z": H * z, "U": H * M * u}
    assert report.bits_used == H * per_head


def test_a_narrow_fixed_point_llama_gets_a_verified_certificate_on_index_idxl(dirs):
    # 1 number of 2 bits from Bob, below ceil(log2 128) = 7: Alice cannot tell every index apart
    report = run_reduction("index-idxl", f"hf-llama:{dirs['narrow']}:precision=2", 128, instances=32)
    assert report.protocol_matches_model and report.bits_used == 1 * 2 < report.lower_bound.bits == 7
    assert not report.budget_ok and report.certificate is not None and report.certificate.verified


def test_a_llama_model_without_its_lm_head_takes_a_given_head():
    hf = tiny_llama(seed=1)
    head = torch.nn.Linear(D, 2)
    model = from_torch(hf.model, head=head)
    tokens = np.random.default_rng(3).integers(0, 32, size=(6, 5))
    with torch.no_grad():
        theirs = head(hf.model(torch.as_tensor(tokens)).last_hidden_state[:, -1]).double().numpy()
    assert np.allclose(model.forward(tokens), theirs, rtol=2e-4, atol=2e-4)
    with pytest.raises(AdapterError, match="no output head"):
        from_torch(hf.model)


def test_rope_scaling_is_refused_naming_it(tmp_path, capsys):
    hf = tiny_llama()
    config = transformers.LlamaConfig(**{**hf.config.to_dict(),
                                         "rope_parameters": {"rope_type": "linear", "factor": 2.0,
                                                             "rope_theta": 10000.0}})
    scaled = transformers.LlamaForCausalLM(config).eval()
    with pytest.raises(AdapterError, match="rope_scaling 'linear'") as refused:
        from_torch(scaled)
    assert refused.value.param == "rope_scaling"
    scaled.save_pretrained(tmp_path / "scaled")
    code, _, err = cli(["run", "index-idxl", "--model", f"hf-llama:{tmp_path / 'scaled'}", "--n", str(N)], capsys)
    assert code == 2 and "rope_scaling 'linear'" in err and "Traceback" not in err


def test_two_layers_are_refused_with_lemma_5_and_keep_their_function_for_the_matrix(dirs, capsys):
    layered = from_torch(tiny_llama(layers=2))
    assert isinstance(layered, LayeredLlama) and "2 layers" in layered.no_protocol_reason
    with pytest.raises(NotApplicable, match="2 layers.*Lemma 5.*commsim matrix"):
        run_reduction("index-idxl", layered, N, instances=4, certify=False)
    code, _, err = cli(["run", "index-idxl", "--model", f"hf-llama:{dirs['two']}", "--n", str(N)], capsys)
    assert code == 2 and "Lemma 5" in err and "commsim matrix" in err and "Traceback" not in err
    with pytest.raises(AdapterError, match="2 layers") as refused:       # its function is its own float32 forward
        run_reduction("index-idxl", f"hf-llama:{dirs['two']}:precision=8", N, instances=4, certify=False)
    assert refused.value.param == "precision"
    with pytest.raises(AdapterError, match="2 layers"):                   # a LlamaModel has no function to keep
        from_torch(tiny_llama(layers=2).model, head=torch.nn.Linear(D, 2))


def test_the_matrix_of_a_two_layer_llama_s_function_is_its_own_forward(capsys):
    """commsim matrix on a two-layer Llama with a two-class head: every (Alice, Bob) instance of index-idxl at n = 3
    through the module's own forward, one at a time, gives the same matrix and ranks."""
    spec, n = "python:examples.real_models:tiny_llama:layers=2,classes=2", 3
    reduction = load_plugins().get("reduction", "index-idxl")
    context = reduction.model_context(n)          # what the python: factory receives: the task's sizes
    hf = tiny_llama(vocab_size=context["vocab_size"], seq_len=context["seq_len"], layers=2, classes=2)
    problem = reduction.problem(n)
    own = np.zeros((len(problem.alice_inputs()), len(problem.bob_inputs())), dtype=np.int64)
    for i, a in enumerate(problem.alice_inputs()):
        for j, b in enumerate(problem.bob_inputs()):
            tokens = reduction.encode(problem, a[None], np.asarray(b)[None]).tokens
            with torch.no_grad():
                logits = hf(torch.as_tensor(tokens, dtype=torch.long)).logits[0, -1]
            own[i, j] = reduction.decode(np.array([[int(torch.argmax(logits))]]), np.asarray(b)[None])[0]
    code, out, err = cli(["matrix", "--model", spec, "--reduction", "index-idxl", "--n", str(n), "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)["model_function"]
    assert (d["rows"], d["cols"], d["ones"]) == (*own.shape, int(own.sum()))
    assert d["rank_real"] == np.linalg.matrix_rank(own.astype(float))
    assert d["distinct_rows"] == len({tuple(r) for r in own}) and 0 < own.sum() < own.size
