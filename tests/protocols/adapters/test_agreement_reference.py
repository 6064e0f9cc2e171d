"""One torch-agreement rule, judged against the user's own module (issue 23; issue 24, defect 3).

* ``agreement()`` and the report's ``torch_agreement`` are one rule with one set of keys (``ok``, ``atol``,
  ``rtol``, ``max_abs_diff``, ``reference``, ``note``); a fixed-point override is not judged by either.
* A dict of parts is compared with the user's module when the factory hands it over (``{"module": net,
  ...parts}`` or ``from_torch(parts, reference=net)``); without one the parts are not judged.  A dict that left
  out the residual connection differs from the module by about 0.24 -- that must show.
* A step module's own ``forward`` is compared with iterating its ``step``: a buggy parallel forward makes the
  run's ``ok`` False, and the note says so.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
torch.set_num_threads(1)

from agreement_checks import follows_parts  # noqa: E402

from commsim.core.precision import FixedPoint  # noqa: E402
from commsim.runs.run import run_reduction  # noqa: E402
from protocols.adapters.torch import agreement, from_torch  # noqa: E402
from protocols.adapters.torch.layers import TOLERANCE, AdapterError  # noqa: E402
from protocols.adapters.torch.trust import NO_REFERENCE  # noqa: E402

N = 4
VOCAB, LENGTH = N + 2, N + 1
RULE_KEYS = {"ok", "atol", "rtol", "max_abs_diff", "reference", "note"}


class PreLN(nn.Module):
    """A pre-LN block: x + MHA(norm(x)), its head at the last position."""

    def __init__(self, dim: int = 8):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, dim), nn.Embedding(LENGTH, dim)
        self.norm = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.head = nn.Linear(dim, 2)

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1]))
        h = self.norm(x)
        return self.head((x + self.attn(h, h, h, need_weights=False)[0])[:, -1])


def _net():
    torch.manual_seed(0)
    return PreLN().eval()


def _parts(net, residual):
    parts = {"embedding": net.tok, "positions": net.pos, "norm": net.norm, "core": net.attn, "head": net.head}
    return {**parts, "residual": "stream"} if residual else parts


def _run(model):
    return run_reduction("index-idxl", model, N, instances=32, certify=False)


def test_parts_without_the_module_are_not_judged():
    agreed = _run(from_torch(_parts(_net(), residual=False))).torch_agreement   # passed on main: compared with itself
    assert agreed["ok"] is None and agreed["note"].startswith(NO_REFERENCE), agreed
    assert follows_parts(agreed) and "parts composed" in agreed["reference"]
    assert "'module'" in agreed["note"] and "reference=" in agreed["note"]       # says how to give the module


@pytest.mark.parametrize("how", ["module-key", "reference-argument"])
def test_parts_that_left_out_the_residual_fail_against_the_users_module(how):
    net = _net()
    parts = _parts(net, residual=False)
    model = from_torch({**parts, "module": net}) if how == "module-key" else from_torch(parts, reference=net)
    agreed = _run(model).torch_agreement
    assert agreed["ok"] is False and agreed["reference"] == "PreLN's own forward", agreed
    assert agreed["max_abs_diff"] > 0.1 and "OUTSIDE" in agreed["note"]
    assert (agreed["atol"], agreed["rtol"]) == TOLERANCE["float32"]


def test_the_right_parts_pass_against_the_users_module():
    net = _net()
    report = _run(from_torch({**_parts(net, residual=True), "module": net}))
    agreed = report.torch_agreement
    assert report.protocol_matches_model
    assert agreed["ok"] is True and agreed["max_abs_diff"] <= agreed["max_allowed"], agreed
    assert RULE_KEYS <= set(agreed) and agreed["reference"] == "PreLN's own forward"


def test_agreement_and_the_report_are_one_rule():
    """The public helper and the report's hook give the same keys and values on the same rows -- including a
    fixed-point override, whose rounding neither judges while both judge commsim's reading of the module at its
    own dtype (on main the helper judged it with a loose (0.1, 0.1))."""
    net = _net()
    tokens = np.random.default_rng(1).integers(0, VOCAB, size=(12, LENGTH))
    for precision in (None, "12"):
        model = from_torch({**_parts(net, residual=True), "module": net}, precision=precision)
        helper = agreement(model, tokens)
        hook = model.framework_agreement(tokens)
        assert RULE_KEYS <= set(helper) and {k: helper[k] for k in hook} == hook
        assert "agrees" not in helper and "allowed" not in helper
    assert model.format == FixedPoint(12, 6)
    assert helper["atol"] is None and "fixed12.6 rounding of that reading is not judged" in helper["note"]
    assert helper["ok"] is True and helper["reading"]["ok"] is True and helper["reading"]["format"] == "float32"
    assert helper["max_abs_diff"] > helper["reading"]["max_abs_diff"]


def test_a_reference_that_is_not_a_module_or_does_not_run_is_refused():
    net = _net()
    with pytest.raises(AdapterError, match="reference=") as info:
        from_torch(_parts(net, residual=True), reference="net")
    assert info.value.param == "reference"

    class NoTokens(nn.Module):
        def forward(self, x, mask):
            return x

    with pytest.raises(AdapterError, match="did not run on token ids") as info:
        from_torch({**_parts(net, residual=True), "module": NoTokens()})
    assert info.value.param == "model"


# ---- step modules: iterating step against the module's own forward -------------------------------------------
class DecaySSM(nn.Module):
    """h_t = a h_{t-1} + E[x_t], scores = W h_t; ``forward`` is the parallel form h_t = sum_s a^(t-s) E[x_s]
    (``buggy``: the kernel transposed, so each position reads the future)."""

    vocab_size = VOCAB

    def __init__(self, buggy: bool = False, width: int = 3):
        super().__init__()
        torch.manual_seed(2)
        self.emb, self.out, self.a, self.buggy = nn.Embedding(VOCAB, width), nn.Linear(width, 2), 0.5, buggy

    def initial_state(self, batch):
        return torch.zeros(batch, self.emb.embedding_dim)

    def step(self, state, tokens):
        return self.a * state + self.emb(tokens)

    def readout(self, state):
        return self.out(state)

    def forward(self, tokens):
        t = torch.arange(tokens.shape[1])
        gap = t[:, None] - t[None, :]
        kernel = torch.where(gap >= 0, torch.tensor(self.a) ** gap.clamp(min=0).float(), torch.tensor(0.0))
        if self.buggy:
            kernel = kernel.T
        return self.out(torch.einsum("ts,bsd->btd", kernel, self.emb(tokens)))


def test_a_step_module_whose_forward_matches_its_step_passes():
    agreed = _run(from_torch(DecaySSM())).torch_agreement
    assert agreed["ok"] is True, agreed
    assert agreed["forward_vs_step"]["ok"] is True and agreed["forward_vs_step"]["max_abs_diff"] < 1e-5
    assert "own forward agrees with iterating its step" in agreed["note"]


@pytest.mark.parametrize("precision", [None, "8"])
def test_a_buggy_parallel_forward_is_reported(precision):
    """On main this passed silently: the step loop was the only reference.  At a fixed-point override the
    step loop is not judged, but the module's forward against its own step (both torch, its dtype) still is."""
    agreed = _run(from_torch(DecaySSM(buggy=True), precision=precision)).torch_agreement
    assert agreed["ok"] is False, agreed
    check = agreed["forward_vs_step"]
    assert check["ok"] is False and check["max_abs_diff"] > 0.1 and check["reference"] == "DecaySSM's own forward"
    assert agreed["note"].startswith("DecaySSM's own forward differs from iterating its step")


def test_a_step_module_forward_that_takes_no_token_ids_is_not_compared_and_says_so():
    class OtherForward(DecaySSM):
        def forward(self, features, lengths):
            return features

    agreed = _run(from_torch(OtherForward())).torch_agreement
    assert agreed["ok"] is True and "forward_vs_step" not in agreed
    assert "its own forward was not compared" in agreed["note"]
