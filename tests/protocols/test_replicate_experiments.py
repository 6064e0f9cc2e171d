"""The replication's pieces: the paper's data generators (Appendix H.1 of [BHBK24]), the recurrent models'
parallel form against their step (what commsim runs), the restriction of a k-ary index lookup model to INDEX_N's
tokens, training's determinism, and the registry entries."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import commsim  # noqa: E402
from protocols.experiments import data  # noqa: E402
from protocols.experiments.bounds import commsim_accuracy, commsim_model, restricted_to_index  # noqa: E402
from protocols.experiments.nets import build  # noqa: E402
from protocols.experiments.train import predictions, torch_deterministic, train  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 30), st.integers(0, 2**32 - 1))
def test_dyck_members_and_negatives(half, seed):
    rng = np.random.default_rng(seed)
    N = 2 * half
    member = data.dyck_member(rng, N)
    assert len(member) == N and data.is_member(member)
    tokens, labels = data.dyck_batch(rng, N, 16)
    assert tokens.shape == (16, N)
    assert all(data.is_member(t) == bool(y) for t, y in zip(tokens, labels))


def test_is_member_is_dyck22():
    assert data.is_member([0, 2, 3, 1, 2, 3])            # ( [ ] ) [ ]
    assert not data.is_member([0, 2, 0, 1, 3, 1])        # depth 3
    assert not data.is_member([0, 3])                    # ( ]
    assert not data.is_member([0, 2])                    # unclosed


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 64), st.integers(1, 60), st.integers(0, 2**32 - 1))
def test_index_batches(k, N, seed):
    tokens, labels = data.index_batch(np.random.default_rng(seed), k, N, 8)
    L = tokens.shape[1] - 1
    assert min(10, N) <= L <= N
    assert (tokens[:, :L] < k).all() and (tokens[:, L] >= k).all() and (tokens[:, L] < k + L).all()
    assert (tokens[np.arange(8), tokens[:, L] - k] == labels).all()


@pytest.mark.parametrize("arch", ["lstm", "dss", "linattn"])
def test_parallel_form_equals_the_step(arch):
    torch.manual_seed(1)
    net = build(arch, 20, 5, 6).double()
    tokens = torch.randint(0, 20, (4, 13))
    with torch.no_grad():
        state = net.initial_state(4)
        for t in range(tokens.shape[1]):
            state = net.step(state, tokens[:, t])
        assert torch.allclose(net.readout(state), net.logits(tokens), atol=1e-10)


@pytest.mark.parametrize("arch", ["lstm", "dss"])
def test_commsim_runs_the_trained_model(arch):
    """At float32 commsim's model decides as the torch module does; the restricted copy answers INDEX_N as the
    full model does on binary strings."""
    torch_deterministic(0)
    k, N = 4, 6
    net = build(arch, k + N, k, 3)
    tokens, labels = data.index_batch(np.random.default_rng(0), k, N, 32, length=N)
    model = commsim_model(net, k + N)
    raw = model.forward_batch(tokens, (N,))[:, 0]
    assert (raw.argmax(axis=1) == predictions(net, tokens)).mean() >= 0.95     # float64 vs float32 ties aside
    assert 0 <= commsim_accuracy(model, tokens, labels) <= 1
    small = restricted_to_index(net, k, N)
    binary = np.concatenate([np.random.default_rng(1).integers(0, 2, (16, N)), np.arange(16)[:, None] % N + k], 1)
    mapped = binary.copy()
    mapped[:, N] = binary[:, N] - k + 2                   # index-idxl's ids: 0, 1, then #1..#N from 2
    assert np.array_equal(predictions(net, binary), predictions(small, mapped))


def test_training_is_deterministic():
    def once():
        torch_deterministic(3)
        net = build("dss", 10, 4, 3)
        log = train(net, lambda rng: data.index_batch(rng, 4, 6, 16), steps=5, lr=1e-2, seed=3)
        return log["final_loss"], [p.detach().clone() for p in net.parameters()]
    (loss1, p1), (loss2, p2) = once(), once()
    assert loss1 == loss2 and all(torch.equal(a, b) for a, b in zip(p1, p2))


def test_registered_experiments():
    registry = commsim.load_plugins()
    names = ("bhbk24-index", "bhbk24-width", "bhbk24-dyck", "bhbk24-equality")
    assert set(names) <= set(registry.names("experiment"))
    for name in names:
        experiment = registry.get("experiment", name)
        assert set(experiment.scales) == {"quick", "cpu", "paper"}
        for scale in experiment.scales:
            cells = experiment.cells(scale)
            assert cells and all({"model", "layers", "width", "N", "seed"} <= set(c) for c in cells)


def test_a_dyck_cell_measures_its_lstm():
    """One quick Dyck cell end to end: trained, evaluated, its quantised state measured through commsim."""
    registry = commsim.load_plugins()
    dyck = registry.get("experiment", "bhbk24-dyck")
    cell = next(c for c in dyck.cells("quick") if c["model"] == "lstm")
    row = dyck.run_cell(cell)
    assert 0 <= row["accuracy"] <= 1 and row["steps_run"] <= cell["steps"]
    assert row["state_numbers"] == 2 * cell["width"]
    assert row["p_eff"] is None or row["state_bits"] == row["state_numbers"] * row["p_eff"]


def test_odd_dyck_lengths_are_refused():
    with pytest.raises(ValueError):
        data.dyck_member(np.random.default_rng(0), 7)


def test_the_one_layer_transformer_on_dyck_gets_theorem_5s_line_from_its_real_exchange():
    """The trained 1-layer transformer, quantised at its p_eff, run through commsim's attention exchange on the
    odd/even split: the bits it really sends and the paper's count beside the N - 1 Lemma 1 needs, Theorem 5's
    line at p_eff; the row in the page and the figure's exchange panel."""
    from protocols.theorems import dyck_min_width, exchange_bits
    from commsim.render.replicate_page import replicate_figure
    dyck = commsim.load_plugins().get("experiment", "bhbk24-dyck")
    cell = next(c for c in dyck.cells("quick") if c["model"] == "tf" and c["layers"] == 1 and c["N"] == 8)
    row = {**cell, **dyck.run_cell(cell)}
    N, p = cell["N"], row["p_eff"]
    assert row["run_protocol"] == "attention-exchange" and row["run_protocol_matches_model"] is True
    assert row["run_lower_bound_bits"] == N - 1 and 0 < row["run_bits_used"] <= row["run_bits_formula"]
    m = cell["width"] // 4                           # four heads of width m: d = mH
    assert row["run_bits_formula"] == exchange_bits(m, p, 4, N) and row["mH"] == cell["width"]
    assert row["theorem5_p"] == p and row["theorem5_min_mH"] == round(float(dyck_min_width(N, p)), 4)
    assert row["run_certificate"] is None or row["run_certificate_verified"] is True
    assert dyck.check([row]) == []
    claim = dyck.claims([row])[-1]
    assert claim["claim"].startswith("(commsim, not the paper) Theorem 5") and claim["status"] == "smoke test"
    judged = dyck.claims([{**row, "scale": "cpu"}])[-1]         # the same row at a real scale is judged
    assert judged["status"] == "reproduced" and "exact count" in judged["test"]
    figure = replicate_figure([row], {}, dyck.title)
    assert len(figure.axes) == 2 and "exchange" in figure.axes[1].get_title()


@pytest.mark.parametrize("Ns,accuracies,status", [
    ([20, 50], [0.1, 0.2, 0.3], "not tested at this scale"),  # the paper's LSTM claim is about N > 100
    ([200], [0.06, 0.06, 0.06], "reproduced"),              # at chance whatever the width
    ([200], [0.06, 0.1, 0.3], "not reproduced"),            # rises with width above N = 100
])
def test_the_width_claim_on_lstms_is_judged_above_n_100(Ns, accuracies, status):
    width = commsim.load_plugins().get("experiment", "bhbk24-width")
    rows = [{"model": "lstm", "layers": 1, "width": w, "N": N, "accuracy": a, "error": None, "eval": 1000,
             "scale": "cpu"}
            for N in Ns for w, a in zip((4, 16, 64), accuracies)]
    (claim,) = width.claims(rows)
    assert claim["claim"].startswith("LSTM accuracy does not rise with width") and claim["status"] == status
