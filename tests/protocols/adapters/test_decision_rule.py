"""A trained model is decided the way it was trained (commsim.core.decision): one logit by its sign, a sigmoid
probability at 1/2, V logits by argmax -- in the protocol, the direct forward, the agreement check and the
certificate re-check alike; and the agreement check fails when the module's decisions are not commsim's."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import commsim  # noqa: E402
from commsim.core.decision import Decision  # noqa: E402
from commsim.core.errors import InputError  # noqa: E402
from protocols.adapters.torch.adapt import agreement, from_torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent / "data"))
from bce_nets import BCEClassifier, instances, load  # noqa: E402


@pytest.mark.parametrize("cell, task, n", [("lstm", "index-idxl", 8), ("gru", "index-idxl", 8)])
def test_a_bce_classifier_right_on_every_instance_is_reported_correct(cell, task, n):
    net, data = load(cell, task, n)
    tokens, labels, _ = instances(task, n)
    with torch.no_grad():
        assert np.array_equal((net(torch.as_tensor(tokens))[:, 0] > 0).numpy(), labels == 1)   # torch: all right
    d = commsim.run(task, net, n=n).to_dict()
    assert d["decision"] == "sign" and "one logit" in d["decision_note"]
    assert d["model_accuracy"] == 1.0 and d["model_correct"] and d["verdict"]["outcome"] == "correct"
    assert d["protocol_matches_model"]
    agreed = d["torch_agreement"]
    assert agreed["ok"] and agreed["decisions_differ"] == 0 and agreed["framework_accuracy"] == 1.0
    assert agreed["commsim_accuracy"] == 1.0


def test_a_sigmoid_head_is_decided_at_one_half():
    net, _ = load("lstm", "index-idxl", 8, probability=True)
    d = commsim.run("index-idxl", net, n=8).to_dict()
    assert d["decision"] == "threshold" and d["model_accuracy"] == 1.0 and d["torch_agreement"]["ok"]


def test_the_rule_is_stated_in_the_terminal_and_can_be_overridden():
    net, _ = load("lstm", "index-idxl", 8)
    given = commsim.run("index-idxl", net, n=8, decision="threshold").to_dict()
    assert given["decision"] == "threshold" and "(given)" in given["decision_note"]
    with pytest.raises(InputError, match="argmax needs two or more outputs") as err:
        commsim.run("index-idxl", net, n=8, decision="argmax")
    assert err.value.param == "decision"
    with pytest.raises(InputError, match="decision must be one of"):
        commsim.run("index-idxl", net, n=8, decision="softmax")


def test_the_decision_spec_key_and_the_cli():
    out = subprocess.run([sys.executable, "-m", "commsim", "run", "index-idxl", "--model", "elman:width=8,decision=sign",
                          "--n", "4"], capture_output=True, text=True)
    assert out.returncode == 2 and "decision" in out.stderr and "has 2" in out.stderr
    out = subprocess.run([sys.executable, "-m", "commsim", "run", "index-idxl", "--model", "elman:width=8",
                          "--n", "4", "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["decision"] == "argmax"
    text = subprocess.run([sys.executable, "-m", "commsim", "run", "index-idxl", "--n", "4"], capture_output=True,
                          text=True).stdout
    assert "decision" in text and "largest output" in text


class Flipped(nn.Module):
    """``net``'s outputs, with the decision flipped on every input whose first token is ``token``."""

    def __init__(self, net, token: int):
        super().__init__()
        self.net, self.token = net, token

    def forward(self, tokens):
        out = self.net(tokens)
        flip = (tokens[:, 0] == self.token)[:, None]
        flipped = -out if out.shape[-1] == 1 else out.flip(-1)
        return torch.where(flip, flipped, out)


@pytest.mark.parametrize("outputs", [1, 2])
def test_the_agreement_check_fails_with_the_count_when_decisions_differ(outputs):
    torch.manual_seed(3)
    net = BCEClassifier(10, "lstm", 8)
    net.head = nn.Linear(8, outputs)
    net.eval()
    model = from_torch({"core": net.rnn, "embedding": net.emb, "head": net.head, "module": Flipped(net, 1)})
    tokens = np.random.default_rng(0).integers(0, 10, size=(200, 6))
    flipped = int((tokens[:, 0] == 1).sum())
    with torch.no_grad():
        logits = net(torch.as_tensor(tokens)).numpy()
    decided = Decision.for_outputs(outputs)
    clear = decided.margin(logits) > 1e-3          # flipping a near-tie may leave the decision as it was
    result = agreement(model, tokens)
    assert result["ok"] is False
    assert result["decision"] == ("sign" if outputs == 1 else "argmax")
    assert result["decisions_differ"] == int(((tokens[:, 0] == 1) & clear).sum()) > 0
    assert result["decisions_differ"] <= flipped
    assert result["label_agreement"] == pytest.approx(1 - result["decisions_differ"] / 200)
    unflipped = from_torch({"core": net.rnn, "embedding": net.emb, "head": net.head, "module": Flipped(net, 99)})
    same = agreement(unflipped, tokens)
    assert same["ok"] is True and same["decisions_differ"] == 0


def test_a_run_says_when_the_module_is_right_where_commsims_reading_is_not():
    net, _ = load("lstm", "index-idxl", 8)
    model = from_torch({"core": net.rnn, "embedding": net.emb, "head": net.head, "module": Flipped(net, 1)},
                       vocab_size=10)
    d = commsim.run("index-idxl", model, n=8).to_dict()["torch_agreement"]
    assert d["ok"] is False and d["framework_accuracy"] < 1.0 and d["commsim_accuracy"] == 1.0
    assert "is not the module's" in d["note"]


def test_a_fixed_point_override_still_judges_how_the_module_is_read():
    net, _ = load("lstm", "index-idxl", 8)
    d = commsim.run("index-idxl", net, n=8, precision=12).to_dict()["torch_agreement"]
    assert d["reading"]["format"] == "float32" and d["reading"]["ok"] is True and d["ok"] is True
    assert "fixed12.6 rounding of that reading is not judged" in d["note"]
    wrong = from_torch({"core": net.rnn, "embedding": net.emb, "head": net.head, "module": Flipped(net, 1)},
                       vocab_size=10, precision=12)
    d = commsim.run("index-idxl", wrong, n=8).to_dict()["torch_agreement"]
    assert d["ok"] is False and d["reading"]["ok"] is False   # a misreading cannot hide behind the format


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), cell=st.sampled_from(["lstm", "gru"]), hidden=st.integers(2, 12),
       probability=st.booleans())
def test_commsim_decides_every_instance_as_torch_does(seed, cell, hidden, probability):
    torch.manual_seed(seed)
    net = BCEClassifier(10, cell, hidden, probability=probability).eval()
    tokens, labels, _ = instances("index-idxl", 6)
    with torch.no_grad():
        out = net(torch.as_tensor(tokens))[:, 0].double().numpy()
    theirs = out >= 0.5 if probability else out > 0
    model = commsim.make_model(net, vocab_size=10)
    raw = model.forward_batch(tokens, (tokens.shape[1] - 1,))[:, 0]
    ours = model.labels(raw) == 1
    tie = np.abs(out - (0.5 if probability else 0.0)) <= 1e-5      # float32 vs commsim's float32 steps
    assert np.array_equal(ours[~tie], theirs[~tie])
    d = commsim.run("index-idxl", net, n=6).to_dict()
    torch_accuracy = float(np.mean(theirs == (labels == 1)))
    assert abs(d["model_accuracy"] - torch_accuracy) <= tie.mean() + 1e-12


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_a_one_logit_model_on_eq_ineq_has_torch_s_accuracy(cell):
    torch.manual_seed(7)
    tokens, labels, vocab = instances("eq-ineq", 4)
    net = BCEClassifier(vocab, cell, 8).eval()
    with torch.no_grad():
        out = net(torch.as_tensor(tokens))[:, 0].double().numpy()
    assert np.abs(out).min() > 1e-4                                # no decision at a float32 tie
    d = commsim.run("eq-ineq", net, n=4).to_dict()
    assert d["decision"] == "sign" and d["protocol_matches_model"]
    assert d["model_accuracy"] == pytest.approx(float(np.mean((out > 0) == (labels == 1))), abs=1e-12)
    assert d["torch_agreement"]["ok"] and d["torch_agreement"]["decisions_differ"] == 0


def test_decision_rules():
    assert Decision.for_outputs(5).rule == "argmax" and Decision.for_outputs(1).rule == "sign"
    assert Decision.for_outputs(1, probability=True).rule == "threshold"
    assert np.array_equal(Decision("sign")(np.array([[0.0], [1e-9], [-2.0]])), [0, 1, 0])
    assert np.array_equal(Decision("threshold")(np.array([[0.5], [0.49], [0.9]])), [1, 0, 1])
    assert np.array_equal(Decision("argmax")(np.array([[1.0, 1.0], [0.0, 2.0]])), [0, 1])
    assert np.allclose(Decision("argmax").margin(np.array([[3.0, 1.0, 2.5]])), [0.5])
    assert np.allclose(Decision("threshold").margin(np.array([[0.2]])), [0.3])
    with pytest.raises(InputError):
        Decision("argmax").check_width(1)
    with pytest.raises(InputError):
        Decision("sign").check_width(3)


def test_a_sample_as_large_as_the_instance_space_runs_each_instance_once():
    report = commsim.run("disj-3cycle", n=2, instances=2000).to_dict()
    assert report["instances_run"] == 256 and "each once" in report["instances"]
