"""A user's nn.Module exposing initial_state / step / readout (the step contract) as a recurrent model."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
nn = torch.nn
torch.set_num_threads(1)

import commsim  # noqa: E402
from commsim.core.precision import FixedPoint, FloatFormat  # noqa: E402
from commsim.core.runner import run_protocol  # noqa: E402
from commsim.contract import Encoded  # noqa: E402
from commsim.runs.run import run_reduction  # noqa: E402
from examples.step_modules import GatedSSM, TwoPartCell, gated_ssm, two_part_cell  # noqa: E402
from protocols.adapters.torch import from_torch  # noqa: E402
from protocols.adapters.torch.layers import AdapterError  # noqa: E402
from protocols.adapters.torch.step import StepForward, TorchStepModel, is_step_module  # noqa: E402
from protocols.simulators.rnn_handoff import RNN_HANDOFF  # noqa: E402


class RowMixer(nn.Module):
    """Breaks the contract: its step mixes the rows of a batch (a batch mean)."""

    vocab_size = 3

    def initial_state(self, batch):
        return torch.zeros(batch, 2)

    def step(self, state, tokens):
        return state + tokens[:, None].float() - tokens.float().mean()

    def readout(self, state):
        return state


def test_a_step_module_is_wrapped_and_follows_its_own_torch_loop():
    module = gated_ssm(vocab_size=6, width=3)
    assert is_step_module(module) and not is_step_module(nn.LSTM(2, 2))
    model = commsim.make_model(module, vocab_size=6)
    assert isinstance(model, TorchStepModel) and model.format == FloatFormat("float32")
    assert (model.state_units, model.state_bits, model.vocab_size, model.num_classes) == (3, 96, 6, 2)
    tokens = np.random.default_rng(0).integers(0, 6, size=(20, 7))
    ours = model.forward_batch(tokens, range(7))
    theirs = StepForward(module)(tokens)
    assert ours.shape == theirs.shape and np.allclose(ours, theirs, rtol=2e-6, atol=2e-6)
    agreement = model.framework_agreement(tokens, output_positions=range(7))
    assert agreement["ok"] is True and agreement["max_abs_diff"] <= 2e-6


def test_a_two_part_state_is_handed_off_whole():
    model = from_torch(two_part_cell(vocab_size=4, width=3), vocab_size=4)
    assert model.state_shapes == [(3,), (3,)] and model.state_bits == 2 * 3 * 32
    assert "3 + 3 = 6 numbers of float32" in model.describe_state()
    enc = Encoded(np.random.default_rng(1).integers(0, 4, size=(3, 6)), np.arange(4), (5,))
    for i in range(3):
        alice, bob = enc.shares(i)
        result = run_protocol(RNN_HANDOFF.protocol(model, enc), alice, bob)
        assert result.transcript.total_bits == 192
        assert np.array_equal(result.output[1], model.forward_batch(enc.tokens[i:i + 1], (5,))[0])


@st.composite
def cases(draw):
    fmt = draw(st.one_of(st.integers(3, 16).flatmap(lambda p: st.integers(0, p - 1).map(lambda f: FixedPoint(p, f))),
                         st.sampled_from([None, FloatFormat("bfloat16"), FloatFormat("float16")])))
    module = gated_ssm(vocab_size=4, width=draw(st.integers(1, 3)), seed=draw(st.integers(0, 1000)))
    model = from_torch(module, precision=fmt)
    length = draw(st.integers(1, 6))
    split = draw(st.integers(0, length - 1))
    tokens = np.random.default_rng(draw(st.integers(0, 10 ** 6))).integers(0, 4, size=(3, length))
    return model, Encoded(tokens, np.arange(split), (length - 1,))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_handoff_equals_direct_forward_at_any_precision(case):
    model, encoded = case
    direct = model.forward_batch(encoded.tokens, encoded.output_positions)
    protocol = RNN_HANDOFF.protocol(model, encoded)
    for i in range(encoded.batch):
        alice, bob = encoded.shares(i)
        result = run_protocol(protocol, alice, bob)
        assert np.array_equal(np.asarray(result.output[1]).view(np.uint64), direct[i].view(np.uint64))
        assert result.transcript.total_bits == model.state_units * model.precision
    assert RNN_HANDOFF.run_batch(model, encoded).exact_match.all()
    states = model.final_states(encoded.tokens)
    assert np.array_equal(model.format.quantize(states), states)


def test_precision_override_rounds_a_copy_and_a_narrow_module_gets_a_certificate():
    module = gated_ssm(vocab_size=7, width=2)
    before = [p.detach().clone() for p in module.parameters()]
    report = run_reduction("index-idxl", "python:examples.step_modules:gated_ssm:width=1,precision=4", 5)
    assert report.bits_used == 1 * 4 and not report.budget_ok and report.protocol_matches_model
    assert report.certificate.kind == "collision" and report.certificate.verified
    model = from_torch(module, precision="fixed3.1")
    assert model.rounded and all(torch.equal(a, b) for a, b in zip(before, module.parameters()))
    grid = np.concatenate([p.detach().double().numpy().ravel() for p in model.module.parameters()])
    assert np.array_equal(grid, FixedPoint(3, 1).quantize(grid))


def test_the_model_pickles_with_its_module_by_reference():
    model = commsim.make_model("python:examples.step_modules:gated_ssm:width=2", vocab_size=6)
    state = model.__getstate__()
    assert state["module"] is model.module                # an importable class: pickled by reference
    copy = pickle.loads(pickle.dumps(model))
    tokens = np.random.default_rng(3).integers(0, 6, size=(5, 5))
    assert np.array_equal(copy.forward_batch(tokens), model.forward_batch(tokens))
    assert np.array_equal(copy.torch_forward(tokens), model.torch_forward(tokens))


FILE_MODULE = """
import torch
import torch.nn as nn


class Leaky(nn.Module):
    vocab_size = 6

    def __init__(self):
        super().__init__()
        self.embed, self.head = nn.Embedding(6, 2), nn.Linear(2, 2)

    def initial_state(self, batch):
        return torch.zeros(batch, 2)

    def step(self, state, tokens):
        return 0.5 * state + self.embed(tokens)

    def readout(self, state):
        return self.head(state)


def factory():
    torch.manual_seed(0)
    return Leaky()
"""


def test_audit_equals_in_process_run_for_a_module_of_a_factory_file(tmp_path, shared_audit_workers):
    """The module's class exists only in this process (its file loaded by path): it travels by value."""
    pytest.importorskip("cloudpickle")
    path = tmp_path / "leaky.py"
    path.write_text(FILE_MODULE)
    spec = f"python:{path}:factory"
    plain = run_reduction("index-idxl", spec, 4, instances=6, seed=0, certify=False)
    audited = run_reduction("index-idxl", spec, 4, instances=6, seed=0, certify=False, audit=True)
    assert audited.audited and audited.protocol_matches_model and audited.bits_used == plain.bits_used == 64
    assert audited.model_accuracy == plain.model_accuracy


def test_contract_violations_are_refused_with_a_reason():
    with pytest.raises(AdapterError, match="mix the rows"):
        from_torch(RowMixer())
    with pytest.raises(AdapterError, match="vocab_size"):
        from_torch(TwoPartCell(4))                       # no vocab_size attribute and no task

    class BadReadout(GatedSSM):
        def readout(self, state):
            return self.head(state)[0]
    with pytest.raises(AdapterError, match="readout"):
        from_torch(BadReadout(4))
