"""``--audit`` on every torch adapter kind (issue 14, item 1).

The audit runs each party of the exchange in its own spawned process, so the model travels by
pickle.  A model wrapped from torch must therefore be made of plain arrays and module-level
callables (no closures), and the audited run must be the in-process run: same bits (the protocol of
Theorem 2 / Theorem 4 of [BHBK24] is deterministic), same answers, protocol output = model output.
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
torch.set_num_threads(1)

from commsim.runs.run import run_reduction  # noqa: E402
from commsim.runs.stages import prepare  # noqa: E402
from protocols.adapters.torch import save_parts  # noqa: E402

N = 4
INSTANCES = 12


def _torch_file(tmp_path_factory) -> str:
    """A ``torch:`` file of standard parts (embedding, GRU, linear head), saved with save_parts."""
    torch.manual_seed(3)
    path = tmp_path_factory.mktemp("parts") / "gru.pt"
    save_parts(str(path), nn.GRU(6, 8, batch_first=True), nn.Embedding(10, 6), nn.Linear(8, 5))
    return f"torch:{path}"


FILE_FACTORY = """
import torch
import torch.nn as nn


class GruIdx(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.gru, self.out = nn.Embedding(10, 6), nn.GRU(6, 8, batch_first=True), nn.Linear(8, 5)

    def forward(self, t):
        return self.out(self.gru(self.emb(t))[0])


def factory(vocab_size=10, **context):
    torch.manual_seed(0)
    return GruIdx()
"""


def _file_factory(tmp_path_factory) -> str:
    """A ``python:FILE.py:factory`` whose module class exists only in this process (loaded by path)."""
    path = tmp_path_factory.mktemp("factory") / "gru_idx.py"
    path.write_text(FILE_FACTORY)
    return f"python:{path}:factory"


SPECS = {
    "python-recurrent": "python:examples.factories:lstm_index",
    "python-attention": "python:examples.factories:attention_index",
    "hf-gpt2": "hf-gpt2:dim=16,heads=2",
    "tl": "tl:dim=16,heads=2",
}


KINDS = ["python-recurrent", "python-attention", "python-file", "torch-file", "hf-gpt2", "tl"]


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    return {**SPECS, "torch-file": _torch_file(tmp_path_factory), "python-file": _file_factory(tmp_path_factory)}


def _needs(spec: str) -> None:
    if spec.startswith("hf-gpt2") or spec.startswith("tl"):
        pytest.importorskip("transformers")
    if spec.startswith("tl"):
        pytest.importorskip("transformer_lens")


@pytest.mark.parametrize("kind", KINDS)
def test_audit_equals_in_process_run(kind, specs, shared_audit_workers):
    spec = specs[kind]
    _needs(spec)
    model = _adapted(spec)          # one model for both runs: the audit alone differs
    plain = run_reduction("index-idxl", model, N, instances=INSTANCES, seed=1, certify=False)
    audited = run_reduction("index-idxl", model, N, instances=INSTANCES, seed=1, certify=False, audit=True)
    assert audited.audited and not plain.audited
    assert audited.protocol_matches_model and plain.protocol_matches_model
    assert audited.bits_used == plain.bits_used > 0
    assert audited.bits_by_direction == plain.bits_by_direction
    assert audited.model_accuracy == plain.model_accuracy
    assert audited.accuracy_by_set == plain.accuracy_by_set
    assert [s["wrong"] for s in audited.evaluation_sets] == [s["wrong"] for s in plain.evaluation_sets]


def _adapted(spec: str):
    """The commsim model the spec builds for index-idxl at size N (as ``commsim run`` builds it)."""
    return prepare("index-idxl", spec, N).model


@pytest.mark.parametrize("kind", KINDS)
def test_pickle_round_trip_same_outputs(kind, specs):
    spec = specs[kind]
    _needs(spec)
    model = _adapted(spec)
    copy = pickle.loads(pickle.dumps(model))
    assert type(copy) is type(model)
    length = min(6, getattr(model, "max_positions", 6))
    tokens = np.random.default_rng(5).integers(0, model.vocab_size, size=(16, length))
    run = "forward_batch" if hasattr(model, "forward_batch") else "forward"   # recurrent / attention models
    ours, theirs = getattr(model, run)(tokens), getattr(copy, run)(tokens)
    assert ours.shape[0] == 16 and np.isfinite(ours).all()
    assert np.array_equal(ours, theirs)


def test_unimportable_torch_reference_stays_behind(specs):
    """A module class defined in a factory file loaded by path cannot be imported by a spawned process:
    the pickled model leaves its torch reference forward behind (the protocol needs none of it), while
    an importable module's forward travels with the model."""
    from_file = _adapted(specs["python-file"])
    assert from_file.torch_forward is not None
    assert pickle.loads(pickle.dumps(from_file)).torch_forward is None
    importable = _adapted(specs["python-recurrent"])
    copy = pickle.loads(pickle.dumps(importable))
    tokens = np.random.default_rng(2).integers(0, importable.vocab_size, size=(3, 5))
    assert np.array_equal(copy.torch_forward(tokens), importable.torch_forward(tokens))
