"""Declared attention parts whose head width m differs from d and that have no ``out`` projection: psi reads
the attention's H·m outputs; a head of another width, or a residual connection that would add d values to
H·m, is refused naming ``head`` / ``out`` (exit 2), never a raw IndexError from inside the fold."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
torch.set_num_threads(1)

import commsim  # noqa: E402
from commsim.core.errors import InputError  # noqa: E402
from protocols.adapters.torch import from_torch  # noqa: E402


def _parts(head_in: int, d: int = 8, m: int = 3, **extra):
    torch.manual_seed(0)
    emb, pos = nn.Embedding(16, d), nn.Embedding(16, d)
    q, k, v = (nn.Linear(d, m, bias=False) for _ in range(3))
    return {"embedding": emb, "positions": pos, "core": {"query": q, "key": k, "value": v, "heads": 1},
            "head": nn.Linear(head_in, 2), **extra}


def test_no_out_projection_psi_reads_the_heads_outputs():
    r = commsim.run("eq-ineq", _parts(3), n=4, instances=16, certify=False)
    assert r.protocol_matches_model and r.details["m"] == 3 and r.details["mode"] == "two-way"
    model = from_torch(_parts(3), vocab_size=16, seq_len=8, precision=16)
    assert (model.width, model.out_dim, model.dim) == (3, 3, 8)


def test_a_head_of_the_wrong_width_is_refused_naming_head():
    with pytest.raises(InputError) as exc:
        commsim.run("eq-ineq", _parts(8), n=4, instances=16)
    assert exc.value.param == "head" and "cannot read the 3 values" in str(exc.value)


def test_a_residual_without_out_is_refused_naming_out():
    with pytest.raises(InputError) as exc:
        from_torch(_parts(3, residual=True), vocab_size=16, seq_len=8, precision=16)
    assert exc.value.param == "out" and "declare 'out'" in str(exc.value)
