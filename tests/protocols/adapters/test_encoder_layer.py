"""``nn.TransformerEncoderLayer`` and one-layer ``nn.TransformerEncoder`` (issue 14, item 3).

Everything after the attention at the query position (residual, norms, feed-forward; dropout in eval) is psi;
a pre-LN layer's norm1 is folded into the embedding table.  norm_first and batch_first either way; the
protocol equals the direct forward bit for bit and the torch forward agrees within the tolerance.  A readout
that pools over positions (mean pooling, a CLS token at position 0) and two or more layers are refused
with the reason, exit 2.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
nn = torch.nn
torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[3]

from agreement_checks import assert_trusted, follows_parts  # noqa: E402
from cli_helpers import run_main  # noqa: E402

from commsim.runs.run import run_reduction  # noqa: E402
from commsim.runs.stages import prepare  # noqa: E402
from examples.transformer_blocks import EncoderClassifier  # noqa: E402
from protocols.adapters.torch import agreement, from_torch, save_parts  # noqa: E402
from protocols.adapters.torch.layers import AdapterError  # noqa: E402

N = 4
VOCAB, LENGTH = N + 2, N + 1
FACTORY = "python:examples.transformer_blocks:encoder_index"


def cli(args, capsys, monkeypatch):
    """The console script from the repository root (where a user's ``python:examples...`` spec resolves)."""
    monkeypatch.chdir(ROOT)
    return run_main(capsys, args)



def assert_follows_parts(report):
    """Parts without the module they come from: commsim follows them, reported but not judged."""
    assert report.protocol_matches_model
    assert follows_parts(report.torch_agreement), report.torch_agreement
    assert report.torch_agreement["instances"] == report.instances_run


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("batch_first", [True, False])
def test_encoder_layer_both_norm_orders_and_layouts(norm_first, batch_first):
    torch.manual_seed(int(norm_first) + 2 * int(batch_first))
    model = from_torch(EncoderClassifier(VOCAB, LENGTH, dim=8, ff=16, norm_first=norm_first, batch_first=batch_first))
    assert f"norm_first={norm_first}" in model.source and ("norm1 folded" in model.source) == norm_first
    assert agreement(model)["ok"]
    report = run_reduction("index-idxl", model, N, certify=False)
    assert report.protocol == "attention-exchange"
    assert_trusted(report)


def test_one_layer_encoder_with_final_norm_and_gelu():
    torch.manual_seed(5)
    layer = nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", batch_first=True, norm_first=True)
    encoder = nn.TransformerEncoder(layer, 1, norm=nn.LayerNorm(8), enable_nested_tensor=False)
    model = from_torch({"core": encoder, "embedding": nn.Embedding(VOCAB, 8), "positions": nn.Embedding(LENGTH, 8),
                        "head": nn.Linear(8, 3)})
    assert "final norm" in model.source
    assert_follows_parts(run_reduction("index-idxl", model, N, certify=False))


def test_bare_layer_with_parts_and_a_module_activation():
    torch.manual_seed(6)
    layer = nn.TransformerEncoderLayer(6, 3, 12, activation=nn.Tanh(), norm_first=False)   # time-major
    model = from_torch(layer, embedding=nn.Embedding(VOCAB, 6), positions=nn.Embedding(LENGTH, 6))
    assert model.psi_input_width == 12 and model.residual_width == 6   # psi reads (y, x_N): 6 + 6
    assert follows_parts(agreement(model))
    assert run_reduction("index-idxl", model, N, certify=False).protocol_matches_model


def test_two_way_split():
    """eq-ineq gives each party half of the sequence: the two-way exchange, psi with the residual stream."""
    report = run_reduction("eq-ineq", f"{FACTORY}:dim=8,ff=16", 2, certify=False)
    assert_trusted(report)


def test_saved_encoder_parts_load_safely(tmp_path):
    torch.manual_seed(8)
    path = tmp_path / "encoder.pt"
    save_parts(str(path), nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, activation="gelu"),
               nn.Embedding(VOCAB, 8), nn.Linear(8, 2), positions=nn.Embedding(LENGTH, 8), norm=nn.RMSNorm(8))
    assert_follows_parts(run_reduction("index-idxl", f"torch:{path}", N, certify=False))


@pytest.mark.parametrize("readout, reason", [("mean", "pools the attention output over positions"),
                                             ("cls", "position 0 only")])
def test_pooled_readouts_are_refused(readout, reason, capsys, monkeypatch):
    code, out, err = cli(["run", "index-idxl", "--model", f"{FACTORY}:readout={readout}", "--n", "4"], capsys,
                         monkeypatch)
    assert code == 2 and "single-query protocol does not apply" in err and reason in err
    assert len(err.strip().splitlines()) == 1


def test_two_layers_are_refused(capsys, monkeypatch):
    code, out, err = cli(["run", "index-idxl", "--model", f"{FACTORY}:layers=2", "--n", "4"], capsys, monkeypatch)
    assert code == 2 and "num_layers=2" in err and "Lemma 5" in err and "[BHBK24]" in err
    assert "commsim teach two-layers" in err
    with pytest.raises(AdapterError, match="Lemma 5"):
        from_torch(nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 3, enable_nested_tensor=False),
                   embedding=nn.Embedding(VOCAB, 8))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(heads=st.sampled_from([1, 2]), width=st.integers(1, 4), ff=st.integers(1, 12), norm_first=st.booleans(),
       batch_first=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_random_encoder_layers(heads, width, ff, norm_first, batch_first, seed):
    torch.manual_seed(seed)
    module = EncoderClassifier(VOCAB, LENGTH, dim=heads * width, heads=heads, ff=ff, norm_first=norm_first,
                               batch_first=batch_first)
    report = run_reduction("index-idxl", from_torch(module), N, instances=24, seed=seed, certify=False)
    assert_trusted(report)


def test_audit_equals_in_process_run(shared_audit_workers):
    model = prepare("index-idxl", f"{FACTORY}:dim=8,ff=16,norm_first=false", N).model
    plain = run_reduction("index-idxl", model, N, instances=3, seed=1, certify=False)
    audited = run_reduction("index-idxl", model, N, instances=3, seed=1, certify=False, audit=True)
    assert audited.audited and audited.protocol_matches_model and plain.protocol_matches_model
    assert (audited.bits_used, audited.bits_by_direction, audited.model_accuracy) == \
        (plain.bits_used, plain.bits_by_direction, plain.model_accuracy)
