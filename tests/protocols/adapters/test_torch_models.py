"""Real models wrapped for commsim (protocols.adapters.torch): PyTorch RNN/LSTM/GRU and
MultiheadAttention, one-layer Hugging Face GPT-2, TransformerLens, and user factories / files.

For every kind: the protocol's output equals commsim's direct forward bit for bit (run_reduction's
``protocol_matches_model``), and commsim's forward agrees with the torch module's own forward within
the documented dtype tolerance (``protocols.adapters.torch.layers.TOLERANCE``).
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections:UserWarning")
torch.set_num_threads(1)  # tiny tensors: one thread is fastest (and far faster on a busy machine)

ROOT = Path(__file__).resolve().parents[3]

from agreement_checks import follows_parts  # noqa: E402

from commsim.cli import main as cli_main  # noqa: E402
from commsim.core.errors import InputError  # noqa: E402
from commsim.core.precision import FixedPoint, FloatFormat  # noqa: E402
from commsim.runs.run import run_reduction  # noqa: E402
from protocols.adapters.torch import agreement, from_torch, load_torch_file, save_parts  # noqa: E402
from protocols.adapters.torch.layers import AdapterError  # noqa: E402
from protocols.models.attention import AttentionLayer  # noqa: E402
from protocols.models.recurrent import RecurrentModel  # noqa: E402

N = 4                      # INDEX size for the end-to-end runs: 64 instances, sequence length 5
VOCAB = N + 2              # the index-idxl vocabulary at n = 4


def run_idxl(model, n: int = N, instances=None):
    return run_reduction("index-idxl", model, n, instances=instances, certify=False)


def cli(args, capsys, cwd=None, monkeypatch=None):
    if cwd is not None:
        monkeypatch.chdir(cwd)
    try:
        cli_main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if exc.code is not None else 0
    out, err = capsys.readouterr()
    return code, out, err


# ---- recurrent cores -----------------------------------------------------------------------------------
RECURRENT = [(nn.RNN, {}), (nn.RNN, {"nonlinearity": "relu"}), (nn.LSTM, {}), (nn.GRU, {}),
             (nn.LSTM, {"proj_size": 2})]


@pytest.mark.parametrize("cls, extra", RECURRENT, ids=["rnn-tanh", "rnn-relu", "lstm", "gru", "lstm-proj"])
@pytest.mark.parametrize("layers, batch_first, hidden", [(1, True, 5), (2, False, 4), (3, True, 3)])
def test_recurrent_core_agrees_with_torch_and_protocol_is_exact(cls, extra, layers, batch_first, hidden):
    torch.manual_seed(layers * 10 + hidden)
    core = cls(6, hidden, num_layers=layers, batch_first=batch_first, **extra)
    embedding = nn.Embedding(VOCAB, 6)
    top = extra.get("proj_size") or hidden
    head = nn.Sequential(nn.Linear(top, 7), nn.Tanh(), nn.Linear(7, 2))
    model = from_torch(core, embedding=embedding, head=head)
    assert isinstance(model, RecurrentModel)
    assert model.format == FloatFormat("float32") and model.precision == 32
    per_layer = top + (hidden if cls is nn.LSTM else 0)
    assert model.state_units == per_layer * layers
    tokens = np.random.default_rng(0).integers(0, VOCAB, size=(12, 7))
    result = agreement(model, tokens)
    assert follows_parts(result), result["note"]       # a core with its parts: not the user's module
    report = run_idxl(model)
    assert report.protocol == "rnn-handoff"
    assert report.protocol_matches_model
    assert report.bits_used == per_layer * layers * 32


@pytest.mark.parametrize("dtype, name, bits", [(torch.float64, "float64", 64), (torch.bfloat16, "bfloat16", 16)])
def test_recurrent_precision_from_dtype(dtype, name, bits):
    torch.manual_seed(1)
    core = nn.GRU(4, 5, num_layers=2, batch_first=True).to(dtype)
    model = from_torch(core, embedding=nn.Embedding(VOCAB, 4).to(dtype), head=nn.Linear(5, 2).to(dtype))
    assert model.format == FloatFormat(name) and model.precision == bits
    assert follows_parts(agreement(model))
    report = run_idxl(model)
    assert report.protocol_matches_model and report.bits_used == 2 * 5 * bits


def test_precision_override_fixed_point_is_exact():
    torch.manual_seed(2)
    core = nn.LSTM(4, 3, batch_first=True)
    model = from_torch(core, embedding=nn.Embedding(VOCAB, 4), head=nn.Linear(3, 2), precision="12")
    assert model.format == FixedPoint(12, 6)
    report = run_idxl(model)
    assert report.protocol_matches_model and report.bits_used == 2 * 3 * 12


def test_bidirectional_is_refused():
    with pytest.raises(AdapterError, match="bidirectional"):
        from_torch(nn.LSTM(4, 3, bidirectional=True), embedding=nn.Embedding(VOCAB, 4))


class Tagger(nn.Module):
    """A wrapping module: embedding, a time-major LSTM, a head; the decision at every position."""

    def __init__(self, vocab=VOCAB, hidden=6, layers=2, scale=1.0):
        super().__init__()
        self.embed = nn.Embedding(vocab, 5)
        self.drop = nn.Dropout(0.1)
        self.lstm = nn.LSTM(5, hidden, layers)          # batch_first=False
        self.out = nn.Linear(hidden, 2)
        self.scale = scale

    def forward(self, tokens):
        h, _ = self.lstm(self.drop(self.embed(tokens)).transpose(0, 1))
        return self.out(h.transpose(0, 1)) * self.scale


def test_wrapping_module_is_discovered_and_verified():
    torch.manual_seed(3)
    model = from_torch(Tagger())
    assert model.num_layers == 2 and model.state_units == 2 * 2 * 6
    assert agreement(model)["ok"]
    assert run_idxl(model).protocol_matches_model


def test_wrapping_module_whose_forward_differs_is_refused():
    torch.manual_seed(3)
    with pytest.raises(AdapterError, match="does not match"):
        from_torch(Tagger(scale=3.0))


def test_dict_of_parts_and_sequential():
    torch.manual_seed(4)
    parts = {"embedding": nn.Embedding(VOCAB, 4), "core": nn.RNN(4, 3, batch_first=True), "head": nn.Linear(3, 2)}
    assert follows_parts(agreement(from_torch(parts)))
    seq = nn.Sequential(nn.Embedding(VOCAB, 4), nn.GRU(4, 3, batch_first=True), nn.Linear(3, 2))
    model = from_torch(seq)   # its forward cannot run as a pipeline; its layers in order are the reference
    result = agreement(model)
    assert result["ok"] is True and "layers applied in order" in result["reference"], result
    with pytest.raises(AdapterError, match="unknown part"):
        from_torch({"core": nn.GRU(4, 3), "readout": nn.Linear(3, 2)})


# ---- nn.MultiheadAttention ----------------------------------------------------------------------------
class AttentionModel(nn.Module):
    def __init__(self, dim=8, heads=2, residual=False, bias=True, positions=N + 1):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, dim)
        self.pos_emb = nn.Embedding(positions, dim)
        self.attn = nn.MultiheadAttention(dim, heads, bias=bias, batch_first=True)
        self.head = nn.Sequential(nn.Linear(dim, 8), nn.ReLU(), nn.Linear(8, 2))
        self.residual = residual

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos_emb(torch.arange(tokens.shape[1]))
        y = self.attn(x, x, x, need_weights=False)[0]
        if self.residual:
            y = y + x
        return self.head(y)[:, -1]


@pytest.mark.parametrize("dim, heads, residual, bias", [(8, 2, False, True), (6, 3, True, True), (4, 1, False, False),
                                                        (12, 4, True, False)])
def test_multihead_attention_module(dim, heads, residual, bias):
    torch.manual_seed(dim + heads)
    model = from_torch(AttentionModel(dim, heads, residual, bias))
    assert isinstance(model, AttentionLayer) and model.heads == heads
    assert agreement(model)["ok"]
    report = run_idxl(model)
    assert report.protocol == "attention-exchange" and report.protocol_matches_model


def test_multihead_attention_separate_projections_and_two_way_split():
    torch.manual_seed(5)
    mha = nn.MultiheadAttention(8, 2, kdim=5, vdim=3, batch_first=True)
    assert not mha._qkv_same_embed_dim
    parts = dict(embedding=nn.Embedding(VOCAB, 8), positions=nn.Embedding(N + 1, 8), head=nn.Linear(8, 2),
                 key_embedding=nn.Embedding(VOCAB, 5), value_embedding=nn.Embedding(VOCAB, 3))
    model = from_torch(mha, **parts)

    def reference(tokens):
        t = torch.as_tensor(tokens, dtype=torch.long)
        with torch.no_grad():
            x = parts["embedding"](t) + parts["positions"](torch.arange(t.shape[1]))
            y = mha(x, parts["key_embedding"](t), parts["value_embedding"](t))[0]
            return parts["head"](y[:, -1]).double().numpy()
    model.torch_forward = reference
    assert agreement(model)["ok"]
    # eq-ineq gives each party half of the sequence: the two-way exchange
    report = run_reduction("eq-ineq", model if model.vocab_size >= 2 else None, 2, certify=False)
    assert report.protocol_matches_model


def test_multihead_attention_refusals():
    with pytest.raises(AdapterError, match="add_bias_kv"):
        from_torch(nn.MultiheadAttention(4, 1, add_bias_kv=True), embedding=nn.Embedding(VOCAB, 4))

    class TwoLayers(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(VOCAB, 4)
            self.a1, self.a2 = nn.MultiheadAttention(4, 1), nn.MultiheadAttention(4, 1)
    with pytest.raises(AdapterError, match="Lemma 5"):
        from_torch(TwoLayers())



@pytest.mark.parametrize("core", [nn.LSTM(4, 3, batch_first=True), nn.MultiheadAttention(4, 1)])
def test_embeddings_are_read_alike_by_every_core(core):
    """One reader of embeddings for recurrent and attention cores: an nn.Embedding with max_norm (its weights
    change during the forward) and a table of the wrong width are refused with the same reasons."""
    with pytest.raises(AdapterError, match="max_norm"):
        from_torch(core, embedding=nn.Embedding(VOCAB, 4, max_norm=1.0))
    with pytest.raises(AdapterError, match=r"must be a \(rows, 4\) matrix|must be a \(rows, dim\) matrix"):
        from_torch(core, embedding=np.zeros((VOCAB, 4, 1)))
    with pytest.raises(AdapterError, match="must be an nn.Embedding or a"):
        from_torch(core, embedding=nn.Linear(4, 4))

# ---- Hugging Face GPT-2 ----------------------------------------------------------------------------------
def gpt2(layers=1, dim=8, heads=2, seed=0, **extra):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(seed)
    config = transformers.GPT2Config(n_layer=layers, n_embd=dim, n_head=heads, vocab_size=VOCAB, n_positions=N + 1,
                                     bos_token_id=0, eos_token_id=0, **extra)
    return transformers.GPT2LMHeadModel(config).eval()


@pytest.mark.parametrize("dim, heads", [(8, 2), (12, 3)])
def test_gpt2_one_layer(dim, heads):
    hf = gpt2(dim=dim, heads=heads)
    model = from_torch(hf)
    assert isinstance(model, AttentionLayer) and model.heads == heads
    result = agreement(model)
    assert result["ok"] and result["label_agreement"] == 1.0, result["note"]
    report = run_idxl(model)
    assert report.protocol_matches_model


def test_gpt2_bfloat16_and_two_layers_refused():
    hf = gpt2(seed=1).to(torch.bfloat16)
    model = from_torch(hf)
    assert model.format == FloatFormat("bfloat16") and agreement(model)["ok"]
    with pytest.raises(AdapterError, match="2 layers"):
        from_torch(gpt2(layers=2))


def test_hf_gpt2_kind_from_a_local_directory(tmp_path, capsys, monkeypatch):
    gpt2(seed=2).save_pretrained(tmp_path / "gpt2")
    code, out, _ = cli(["run", "index-idxl", "--model", f"hf-gpt2:{tmp_path / 'gpt2'}", "--n", str(N), "--json"],
                       capsys)
    assert code == 0, out
    assert json.loads(out)["protocol_matches_model"] is True


# ---- TransformerLens -----------------------------------------------------------------------------------
def _hooked_transformer():
    pytest.importorskip("transformer_lens")
    try:
        from transformer_lens import HookedTransformer, HookedTransformerConfig
    except ImportError:
        from importlib.metadata import version
        pytest.skip(f"TransformerLens {version('transformer-lens')} has no HookedTransformer (removed in 4.0); "
                    f"the TransformerBridge tests cover 4.x (HookedTransformer is tested with 3.x)")
    return HookedTransformer, HookedTransformerConfig


@pytest.mark.parametrize("attn_only, norm", [(True, None), (False, "LN")])
def test_hooked_transformer_one_layer(attn_only, norm):
    HookedTransformer, HookedTransformerConfig = _hooked_transformer()
    torch.manual_seed(6)
    cfg = HookedTransformerConfig(n_layers=1, d_model=8, n_ctx=N + 1, d_head=4, n_heads=2, d_vocab=VOCAB,
                                  attn_only=attn_only, normalization_type=norm, act_fn="gelu")
    model = from_torch(HookedTransformer(cfg))
    assert model.width == cfg.d_head and model.residual_width == cfg.d_model
    assert agreement(model)["ok"]
    assert run_idxl(model).protocol_matches_model


def _bridge():
    pytest.importorskip("transformer_lens")
    try:
        from transformer_lens.model_bridge import TransformerBridge
        from transformer_lens.model_bridge.sources._bridge_builder import (
            build_bridge_from_module,
        )
    except ImportError:
        pytest.skip("this TransformerLens has no TransformerBridge")
    return TransformerBridge, build_bridge_from_module


def test_transformer_bridge_around_gpt2():
    _, build_bridge_from_module = _bridge()
    hf = gpt2(seed=3)
    bridge = build_bridge_from_module(hf, "GPT2LMHeadModel", hf_config=hf.config)
    model = from_torch(bridge)
    assert model.width == hf.config.n_embd // hf.config.n_head
    assert agreement(model)["ok"]   # against the bridge's own forward
    assert run_idxl(model).protocol_matches_model


def test_transformer_bridge_native_attention_only():
    TransformerBridge, _ = _bridge()
    try:
        import transformer_lens.model_bridge.sources.native  # noqa: F401
    except ImportError:
        pytest.skip("this TransformerLens has no native models")
    if not hasattr(TransformerBridge, "boot_native"):
        pytest.skip("this TransformerLens has no boot_native")
    bridge = TransformerBridge.boot_native({"d_model": 8, "n_layers": 1, "n_heads": 2, "d_head": 4, "n_ctx": N + 1,
                                           "d_vocab": VOCAB, "attn_only": True, "normalization_type": None,
                                           "seed": 0})
    model = from_torch(bridge)
    assert model.width == 4 and model.residual_width == 8
    assert agreement(model)["ok"]
    assert run_idxl(model).protocol_matches_model


# ---- the residual stream at the query position reaches psi (not through the heads) ----------------------
@pytest.mark.parametrize("kind", ["gpt2", "mha-residual"])
def test_residual_stream_reaches_psi_without_widening_the_heads(kind):
    """psi reads the query's own residual stream through the layer's residual path: the reported width m
    is the real head width; the embedding costs d·p bits in the one-way exchange and nothing in the
    two-way one; bits_used is the plan's itemized total."""
    dim, heads = 8, 2
    if kind == "gpt2":
        model = from_torch(gpt2(dim=dim, heads=heads, seed=4))
    else:
        torch.manual_seed(7)
        model = from_torch(AttentionModel(dim, heads, residual=True))
    assert model.width == dim // heads and model.residual_width == dim
    result = agreement(model)
    assert result["ok"] and result["label_agreement"] == 1.0, result["note"]
    m, p, H = dim // heads, model.precision, heads
    one = run_idxl(model)                 # Bob holds only the query: the one-way exchange, Alice outputs
    d = one.details
    assert one.protocol_matches_model and (d["mode"], d["m"], d["residual"]) == ("one-way", m, dim)
    assert one.bits_used == d["total_bits"] == sum(d["bits_by_step"].values()) == one.bits_formula
    query_side = m * p * H + dim * p + (m + 1) * p * H     # q_N, psi's x_N coordinates, the query's own term
    # x_N as a message is the model's d numbers: not the bias coordinate both parties know, and (GPT-2) not
    # ln_1 of the stored stream, which the receiver computes from the stream at the public position
    assert model.config.message_dim == dim < model.dim
    whole = dim * p                                         # the cheaper wins
    assert d["one_way_message"] == ("embedding" if whole < query_side else "query")
    assert d["bits_by_step"] == ({"embedding": whole} if whole < query_side else
                                 {"query": m * p * H, "embedding": dim * p, "self": (m + 1) * p * H})
    labels = [msg.label for msg in one.transcript]
    assert labels.count("embedding") == 1
    two = run_reduction("eq-ineq", model, 2, certify=False)   # each party owns half: the query owner outputs
    d2 = two.details
    assert two.protocol_matches_model and d2["mode"] == "two-way" and d2["m"] == m
    assert two.bits_used == d2["total_bits"] == sum(d2["bits_by_step"].values())
    assert set(d2["bits_by_step"]) == {"query", "max", "Z", "U"}
    assert d2["bits_by_step"]["query"] == m * p * H


def test_multihead_attention_without_residual_has_no_residual_path():
    torch.manual_seed(3)
    model = from_torch(AttentionModel(8, 2, residual=False))
    assert model.width == 4 and model.residual_width == 0 and model.residual_coords is None
    report = run_idxl(model)
    assert report.protocol_matches_model and report.details["residual"] == 0
    # one-way, the only embedding message is x_N (its d = 8 numbers, not the bias coordinate), sent when it is
    # cheaper than q_N and the query's own term
    assert report.details["bits_by_step"].get("embedding", 0) in (0, 8 * model.precision)


# ---- factories, files and the command line ---------------------------------------------------------------
def test_readme_lstm_factory_from_the_repository_root(capsys, monkeypatch):
    code, out, err = cli(["run", "index-idxl", "--model", "python:examples.factories:lstm_index", "--n", "8",
                          "--json"], capsys, ROOT, monkeypatch)
    assert code == 0, err
    report = json.loads(out)
    hidden, layers = 32, 1
    assert report["bits_used"] == 2 * hidden * 32 * layers
    assert report["protocol_matches_model"] is True
    code, out, err = cli(["run", "index-idxl", "--model", "python:examples.factories:lstm_index:layers=2,hidden=4",
                          "--n", "8", "--json"], capsys, ROOT, monkeypatch)
    assert json.loads(out)["bits_used"] == 2 * 4 * 32 * 2


def test_attention_factory_and_precision_override(capsys, monkeypatch):
    code, out, err = cli(["run", "index-idxl", "--model", "python:examples.factories:attention_index:dtype=float64",
                          "--n", str(N), "--json"], capsys, ROOT, monkeypatch)
    assert code == 0, err
    report = json.loads(out)
    assert report["protocol"] == "attention-exchange" and report["protocol_matches_model"] is True
    assert report["details"]["p"] == 64


def test_torch_files_safe_loading(tmp_path, capsys):
    torch.manual_seed(7)
    embed, core, head = nn.Embedding(VOCAB, 4), nn.LSTM(4, 3, num_layers=2, batch_first=True), nn.Linear(3, 2)
    save_parts(str(tmp_path / "parts.pt"), core, embed, head)
    code, out, err = cli(["run", "index-idxl", "--model", f"torch:{tmp_path / 'parts.pt'}", "--n", str(N), "--json"],
                         capsys)
    assert code == 0, err
    assert json.loads(out)["bits_used"] == 2 * 3 * 32 * 2
    torch.save(Tagger(), tmp_path / "pickled.pt")                # a user class: arbitrary pickle
    torch.save(core.state_dict(), tmp_path / "state.pt")         # weights without modules
    (tmp_path / "text.pt").write_text("not a checkpoint")
    for name, reason in (("pickled.pt", "will not load"), ("state.pt", "state_dict"), ("text.pt", "torch.save"),
                         ("missing.pt", "does not exist")):
        code, out, err = cli(["run", "index-idxl", "--model", f"torch:{tmp_path / name}", "--n", str(N)], capsys)
        assert code == 2, (name, err)
        assert reason in " ".join(err.split()), (name, err)
    with pytest.raises(AdapterError):
        load_torch_file(str(tmp_path / "pickled.pt"))


def test_unsupported_models_exit_2(tmp_path, capsys, monkeypatch):
    pytest.importorskip("transformers")
    code, out, err = cli(["run", "index-idxl", "--model", "hf-gpt2:layers=2", "--n", str(N)], capsys)
    assert code == 2 and "Lemma 5" in " ".join(err.split())
    (tmp_path / "mymodels.py").write_text(textwrap.dedent("""
        import torch.nn as nn
        def conv():
            return nn.Conv1d(3, 3, 2)
        def broken():
            raise RuntimeError("boom")
    """))
    for spec, reason in (("python:mymodels:conv", "holds no"), ("python:mymodels:broken", "boom"),
                         ("python:mymodels:missing", "no function"), ("python:nosuchmodule:f", "cannot import"),
                         ("python:examples.factories:lstm_index:bogus=1", "no argument")):
        code, out, err = cli(["run", "index-idxl", "--model", spec, "--n", str(N)], capsys, tmp_path
                             if "mymodels" in spec else ROOT, monkeypatch)
        assert code == 2, (spec, err)
        assert reason in " ".join(err.split()), (spec, err)


def test_python_loader_does_not_import_torch_for_commsim_models(tmp_path):
    (tmp_path / "plain.py").write_text(textwrap.dedent("""
        from protocols.models.trainable import random_model
        def lstm(vocab_size):
            return random_model("lstm", width=2, fmt="8", vocab=vocab_size)
    """))
    code = textwrap.dedent("""
        import json, sys
        from commsim.runs.run import run_reduction
        report = run_reduction("index-idxl", "python:plain:lstm", 4, certify=False)
        print(json.dumps({"torch": "torch" in sys.modules, "bits": report.bits_used,
                          "match": report.protocol_matches_model}))
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"torch": False, "bits": 2 * 2 * 8, "match": True}


def test_commsim_model_passes_through_and_refuses_a_precision_override():
    from protocols.models.trainable import random_model
    model = random_model("gru", width=2, fmt="8", vocab=VOCAB)
    assert from_torch(model) is model
    with pytest.raises(InputError, match="fixes its own number format"):
        from_torch(model, precision="16")
