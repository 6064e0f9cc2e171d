"""Trust signals for torch models (issue 14, item 6).

``Report.torch_agreement`` compares commsim's model with the torch module's own forward on the run's
instances (a seeded subset of at most 256) under the documented tolerance, for every torch adapter kind; a
fixed-point override is reported, not judged; a disagreeing forward fails it.  A certificate on a torch
model is re-checked with the torch forward, and its explanation says so.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[3]

from agreement_checks import follows_parts  # noqa: E402

from commsim.cli import main as cli_main  # noqa: E402
from commsim.runs.framework import (  # noqa: E402
    AGREEMENT_INSTANCES,
    FrameworkBacked,
    recheck_certificate,
)
from commsim.runs.run import run_reduction  # noqa: E402
from commsim.runs.stages import prepare  # noqa: E402
from protocols.adapters.torch import save_parts  # noqa: E402
from protocols.adapters.torch.layers import TOLERANCE  # noqa: E402

N = 4

KINDS = {
    "recurrent": "python:examples.factories:lstm_index:hidden=4",
    "attention": "python:examples.factories:attention_index:dim=8",
    "prenorm": "python:examples.transformer_blocks:prenorm_index:dim=8,norm=rms",
    "encoder": "python:examples.transformer_blocks:encoder_index:dim=8,ff=16",
    "hf-gpt2": "hf-gpt2:dim=8,heads=2",
    "tl": "tl:dim=8,heads=2",
    "step": "python:examples.step_modules:gated_ssm",     # a module exposing initial_state / step / readout
}


def _needs(spec: str) -> None:
    if spec.startswith(("hf-gpt2", "tl")):
        pytest.importorskip("transformers")
    if spec.startswith("tl"):
        pytest.importorskip("transformer_lens")


#: the one rule's keys (protocols.adapters.torch.trust.judge), in every torch_agreement and agreement()
RULE_KEYS = {"ok", "atol", "rtol", "max_abs_diff", "reference", "note"}


@pytest.mark.parametrize("kind", [*KINDS, "torch-file"])
def test_every_adapter_kind_reports_a_passing_agreement(kind, tmp_path):
    if kind == "torch-file":      # a dict of parts: compared with the parts composed, not judged
        torch.manual_seed(3)
        path = tmp_path / "gru.pt"
        save_parts(str(path), nn.GRU(6, 5, batch_first=True), nn.Embedding(N + 2, 6), nn.Linear(5, 2))
        spec = f"torch:{path}"
    else:
        spec = KINDS[kind]
    _needs(spec)
    report = run_reduction("index-idxl", spec, N, instances=40, seed=2, certify=False)
    agreed = report.torch_agreement
    assert isinstance(prepare("index-idxl", spec, N).model, FrameworkBacked)
    assert RULE_KEYS <= set(agreed) and agreed["framework"] == "torch", agreed
    assert agreed["ok"] is (None if kind == "torch-file" else True), agreed
    assert agreed["instances"] == 40 and agreed["sampled"] is False
    atol, rtol = TOLERANCE["float32"]
    assert (agreed["atol"], agreed["rtol"]) == (atol, rtol)              # DESIGN section 4's flat keys
    assert 0 <= agreed["max_abs_diff"] <= agreed["max_allowed"]
    assert json.loads(report.to_json())["torch_agreement"]["ok"] is agreed["ok"]
    if kind == "torch-file":
        assert follows_parts(agreed) and "parts composed" in agreed["reference"]
    else:
        assert "own" in agreed["reference"]        # the user's module's own forward (or its own step loop)


def test_large_runs_compare_a_seeded_subset():
    report = run_reduction("index-idxl", "python:examples.factories:lstm_index:hidden=2", 6, certify=False)
    agreed = report.torch_agreement
    assert report.instances_run == 6 * 2 ** 6 > AGREEMENT_INSTANCES
    assert agreed["instances"] == AGREEMENT_INSTANCES and agreed["of_instances"] == report.instances_run
    assert agreed["sampled"] and agreed["ok"] is True


def test_fixed_point_override_judges_the_reading_not_the_rounding():
    report = run_reduction("index-idxl", "python:examples.factories:lstm_index:hidden=3,precision=8,frac=4", N,
                           instances=16, certify=False)
    agreed = report.torch_agreement
    assert agreed["atol"] is None and "fixed8.4 rounding of that reading is not judged" in agreed["note"]
    assert agreed["max_abs_diff"] > 0
    assert agreed["ok"] is True and agreed["reading"] == {**agreed["reading"], "ok": True, "format": "float32"}


def test_a_disagreeing_forward_fails_the_check():
    model = prepare("index-idxl", KINDS["attention"], N).model
    own = model.torch_forward
    model.torch_forward = lambda tokens: own(tokens) * 1.01 + 0.01
    report = run_reduction("index-idxl", model, N, instances=16, certify=False)
    assert report.torch_agreement["ok"] is False and report.protocol_matches_model
    assert "OUTSIDE" in report.torch_agreement["note"]


def test_models_not_from_torch_have_no_agreement():
    report = run_reduction("index-idxl", "lstm:width=2,precision=8", N, instances=8, certify=False)
    assert report.torch_agreement is None


def test_collision_certificate_is_rechecked_with_the_torch_forward():
    """A one-unit LSTM at 2-bit fixed point hands off 4 bits, below the bound: the pigeonhole certificate's
    two inputs are re-run through the torch module (a float32 model of another format: reported, not
    judged, so the certificate stays verified either way)."""
    spec = "python:examples.factories:lstm_index:hidden=1,precision=2,frac=1"
    report = run_reduction("index-idxl", spec, 6)
    cert = report.certificate
    assert cert is not None and cert.kind == "collision" and cert.verified
    check = cert.details["framework_check"]
    assert check["framework"] == "torch" and len(check["checks"]) == 2
    assert "Re-checked with the torch module's own forward" in cert.explanation


def test_error_certificate_agrees_with_torch_and_a_disagreement_unverifies_it():
    setup = prepare("index-idxl", KINDS["attention"], N)
    report = run_reduction("index-idxl", setup.model, N)
    cert = report.certificate
    assert cert is not None and cert.kind == "error" and cert.verified      # a random model is wrong somewhere
    assert cert.details["framework_check"]["agrees"] is True
    assert "as commsim's model does" in cert.explanation
    own = setup.model.torch_forward
    setup.model.torch_forward = lambda tokens: -own(tokens)                 # a module that answers otherwise
    flipped = recheck_certificate(setup, cert)
    assert not flipped.verified and flipped.details["framework_check"]["agrees"] is False
    assert "not a failure of the module itself" in flipped.explanation


def test_run_text_and_json_show_the_agreement(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    args = ["run", "index-idxl", "--model", KINDS["encoder"], "--n", "4", "--instances", "12", "--no-certificate"]
    cli_main(args)
    out = capsys.readouterr().out
    assert "torch agreement" in out and "passed" in out and "12 instances" in out
    cli_main([*args, "--json"])
    agreed = json.loads(capsys.readouterr().out)["torch_agreement"]
    assert agreed["ok"] is True and agreed["instances"] == 12
    assert np.isfinite(agreed["max_abs_diff"])
