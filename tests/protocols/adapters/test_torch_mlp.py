"""A torch MLP (nn.Sequential of Linear layers) read through from_torch as an fnn: it agrees with the module's own
forward, and qsa-approx judges it as it judges the fnn kind (the kernel certificate checked by a direct forward)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import commsim  # noqa: E402
from protocols.adapters.torch import from_torch  # noqa: E402
from protocols.adapters.torch.layers import AdapterError  # noqa: E402
from protocols.models.fnn import FullyConnected  # noqa: E402
from commsim.core.errors import InputError  # noqa: E402
from kernel_checks import check_certificate  # noqa: E402

N, Q, DV = 6, 1, 1
D = DV + Q + 1


def _qsa_batch(rng, count):
    """Random qSA inputs (values in [-1, 1], q-sets uniform) flattened, and their targets."""
    X = np.zeros((count, N, D))
    Y = np.zeros((count, N, DV))
    for b in range(count):
        z = rng.uniform(-1, 1, size=(N, DV))
        sets = [rng.choice(N, size=Q, replace=False) for _ in range(N)]
        X[b, :, :DV] = z
        X[b, :, DV:DV + Q] = np.array([np.sort(s) + 1 for s in sets])
        X[b, :, -1] = np.arange(1, N + 1)
        Y[b] = np.array([z[s].mean(axis=0) for s in sets])
    return X.reshape(count, -1), Y.reshape(count, -1)


def _trained(width: int, seed: int = 0):
    """A small MLP trained for a few hundred steps on qSA (it cannot reach 1/(2q) at this width: the point)."""
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(N * D, width), torch.nn.ReLU(), torch.nn.Linear(width, N * DV))
    X, Y = _qsa_batch(np.random.default_rng(seed), 256)
    X, Y = torch.tensor(X, dtype=torch.float32), torch.tensor(Y, dtype=torch.float32)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    first = None
    for _ in range(200):
        opt.zero_grad()
        loss = ((net(X) - Y) ** 2).mean()
        first = float(loss.detach()) if first is None else first
        loss.backward()
        opt.step()
    assert float(loss.detach()) < first          # it did train
    return net


def test_the_mlp_reads_as_an_fnn_that_follows_the_modules_forward():
    net = _trained(4)
    model = from_torch(net, precision="fixed32.16")
    assert isinstance(model, FullyConnected) and model.width == 4 and model.depth == 2
    task = model.for_task(N, D, DV)
    X, _ = _qsa_batch(np.random.default_rng(5), 8)
    want = net(torch.tensor(X, dtype=torch.float32)).detach().numpy()
    for x, w in zip(X, want):
        got = np.array([float(v) for row in task.forward(x.reshape(N, D).tolist()) for v in row])
        assert np.abs(got - w).max() < 1e-3          # weights rounded to 2^-16, one rounding per layer


def test_a_trained_mlp_below_the_bound_must_fail_with_a_verified_kernel_certificate():
    net = _trained(2)
    report = commsim.run("qsa-approx", net, n=N, q=Q)
    assert report.outcome == "must_fail" and report.lower_bound.bits == 3 and report.lower_bound.measured == 2
    cert = report.certificate.to_dict()
    assert cert["kind"] == "kernel" and cert["verified"]
    model = from_torch(net).for_task(N, D, DV)       # the default reading, fixed32.16, as the run read it
    check_certificate(model, cert, N, Q, DV)


def test_a_hand_set_mlp_at_the_bound_is_not_held_to_it():
    """Width N·d'/2 = 3: the paper's bound does not apply; a kernel pair, if found, is a wrong answer shown."""
    net = torch.nn.Sequential(torch.nn.Linear(N * D, 3), torch.nn.Tanh(), torch.nn.Linear(3, N * DV))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape))
    report = commsim.run("qsa-approx", net, n=N, q=Q, precision="fixed24.12")
    assert not report.lower_bound.applies and report.outcome != "must_fail"
    assert report.certificate is not None and report.certificate.kind == "kernel" and report.certificate.verified
    check_certificate(from_torch(net, precision="fixed24.12").for_task(N, D, DV), report.certificate.to_dict(),
                      N, Q, DV)


def test_what_is_not_an_mlp_is_refused():
    with pytest.raises(AdapterError, match="depth >= 2"):
        from_torch(torch.nn.Sequential(torch.nn.Linear(4, 2)))
    with pytest.raises(AdapterError, match="after the last Linear"):
        from_torch(torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.ReLU(), torch.nn.Linear(2, 2), torch.nn.ReLU()))
    net = torch.nn.Sequential(torch.nn.Linear(5, 2), torch.nn.ReLU(), torch.nn.Linear(2, 6))
    with pytest.raises(InputError, match="N·d"):
        commsim.run("qsa-approx", net, n=N, q=Q)
