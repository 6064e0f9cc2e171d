"""The one-layer attention model: its finite-precision semantics, float mode, specs, save/load."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.core.errors import InputError
from commsim.core.precision import FixedPoint, FloatFormat
from commsim.plugins import load_plugins, make_model
from commsim.theory.dyck import DyckLanguage
from protocols.models.attention import FLOAT_TOLERANCE, AttentionLayer, random_layer
from protocols.models.attention_spec import probe_layer


# ---- an independent, slow reference of the documented fixed-point semantics (Python integers) ----
def reference_codes(model: AttentionLayer, tokens, division: str = "once") -> list[int]:
    """The documented semantics with Python integers; ``division="per-weight"``: Appendix D of [BHBK24],
    a_i = [e_i / Z] rounded down, o = [sum_i [a_i v_i]]."""
    fmt = model.format
    F, lo, hi = fmt.frac, fmt.min_code, fmt.max_code
    code = lambda v: int(round(float(v) * 2 ** F))          # parameters are on the grid already
    clip = lambda c: max(lo, min(hi, c))
    rnd = lambda units: clip(units >> F)                      # exact sum in 2^-2F units, floor, saturate
    val = model.arithmetic.to_values
    tok, pos = val(model.token_table), None if model.position_table is None else val(model.position_table)
    N = len(tokens)
    qpos = model.query_position(N)
    x = [[clip(code(tok[t][k]) + (code(pos[i][k]) if pos is not None else 0)) for k in range(model.dim)]
         for i, t in enumerate(tokens)]
    WQ, WK, WV = val(model.W_Q), val(model.W_K), val(model.W_V)
    lin = lambda W, vec: [rnd(sum(code(W[j][k]) * vec[k] for k in range(len(vec)))) for j in range(len(W))]
    attended = [i for i in range(N) if model.attend_self or i != qpos]
    o = []
    for h in range(model.heads):
        q = lin(WQ[h], x[qpos])
        keys = {i: lin(WK[h], x[i]) for i in attended}
        vals = {i: lin(WV[h], x[i]) for i in attended}
        A = {i: rnd(sum(a * b for a, b in zip(q, keys[i]))) for i in attended}
        M = max(A.values())
        e = {i: min(math.floor(math.exp((A[i] - M) * 2.0 ** -F) * 2.0 ** F), hi) for i in attended}
        Z = sum(e.values())
        a = {i: clip((e[i] << F) // Z) for i in attended}    # per-weight: each weight rounded first
        for j in range(model.width):
            if division == "per-weight":
                o.append(clip(sum((a[i] * vals[i][j]) >> F for i in attended)))
            else:
                U = sum((e[i] * vals[i][j]) >> F for i in attended)
                o.append(clip((U << F) // Z))
    y = lin(val(model.W_O), o)
    for li, (W, b) in enumerate(model.psi_layers):
        Wv, bv = val(W), val(b)
        y = [rnd(sum(code(Wv[j][k]) * y[k] for k in range(len(y))) + (code(bv[j]) << F)) for j in range(len(Wv))]
        if li < len(model.psi_layers) - 1:
            y = [max(0, v) for v in y]
    return y


layer_params = st.fixed_dictionaries({
    "bits": st.integers(2, 24), "frac_share": st.floats(0, 0.99), "N": st.integers(1, 9), "V": st.integers(1, 5),
    "heads": st.integers(1, 3), "width": st.integers(1, 4), "dim": st.integers(1, 5), "classes": st.integers(1, 3),
    "seed": st.integers(0, 10 ** 6), "self": st.booleans(), "division": st.sampled_from(["once", "per-weight"])})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layer_params)
def test_fixed_point_forward_is_the_documented_semantics(p):
    fmt = FixedPoint(p["bits"], min(int(p["frac_share"] * p["bits"]), p["bits"] - 1))
    model = random_layer(fmt, vocab=p["V"], positions=p["N"], heads=p["heads"], width=p["width"], dim=p["dim"],
                         classes=p["classes"], seed=p["seed"], attend_self=p["self"] or p["N"] == 1,
                         division=p["division"])
    rng = np.random.default_rng(p["seed"])
    tokens = rng.integers(0, p["V"], size=(3, p["N"]))
    got = model.forward_rep(tokens)
    for row, want in zip(got, (reference_codes(model, t, p["division"]) for t in tokens)):
        assert row.tolist() == want


def test_parameters_are_rounded_down_and_saturated():
    fmt = FixedPoint(4, 2)  # grid 0.25, range [-2, 1.75]
    model = AttentionLayer(fmt, [[0.3, -0.3, 5.0]], None, [[[0.99, 0, 0]]], [[[0, 0, 0]]], [[[0, 0, 0]]], [[1.0]])
    assert model.arithmetic.to_values(model.token_table).tolist() == [[0.25, -0.5, 1.75]]
    assert model.arithmetic.to_values(model.W_Q).tolist() == [[[0.75, 0, 0]]]


def test_batch_paths_agree_row_by_row():
    """The (position, token) table path used for big batches gives the per-row values."""
    model = random_layer(FixedPoint.with_bits(12), vocab=3, positions=7, heads=2, width=3, dim=4, seed=3)
    tokens = np.random.default_rng(0).integers(0, 3, size=(50, 7))
    whole = model.forward_rep(tokens)
    rows = np.concatenate([model.forward_rep(t[None]) for t in tokens])
    assert np.array_equal(whole, rows)


@pytest.mark.parametrize("division", ["once", "per-weight"])
def test_wide_formats_use_exact_integers(division):
    for bits in (30, 40, 53):
        model = random_layer(FixedPoint.with_bits(bits), vocab=3, positions=5, heads=2, width=2, dim=3, seed=bits,
                             division=division)
        tokens = np.random.default_rng(bits).integers(0, 3, size=(2, 5))
        for row, t in zip(model.forward_rep(tokens), tokens):
            assert row.tolist() == reference_codes(model, t, division)


def test_per_weight_division_is_appendix_d_and_differs_from_dividing_once():
    """Appendix D of [BHBK24] rounds each weight a_i = [e_i / Z], then sums [a_i v_i]: a hand example.
    Two equal logits (e = 1, 1; Z = 2) at 2 fraction bits, values 0.75 and 0.25: once, o = [(0.75 + 0.25)
    / 2] = 0.5; per weight, a = [1/2] = 0.5 each, o = [0.5·0.75] + [0.5·0.25] = 0.25 + 0 = 0.25 (each
    product rounded down)."""
    fmt = FixedPoint(5, 2)
    tok = [[1.0, 0.75], [1.0, 0.25]]                        # x = (1, value)
    W_Q, W_K, W_V = [[[0.0, 0.0]]], [[[0.0, 0.0]]], [[[0.0, 1.0]]]   # all logits 0; v = value
    once = AttentionLayer(fmt, tok, None, W_Q, W_K, W_V, [[1.0]])
    per = AttentionLayer(fmt, tok, None, W_Q, W_K, W_V, [[1.0]], division="per-weight")
    assert once.forward([[0, 1]]).tolist() == [[0.5]] and per.forward([[0, 1]]).tolist() == [[0.25]]
    with pytest.raises(InputError, match="division"):
        AttentionLayer(fmt, tok, None, W_Q, W_K, W_V, [[1.0]], division="twice")
    with pytest.raises(ValueError, match="whole sum Z"):
        per.weighted_sum(np.zeros((1, 1, 2)), np.zeros((1, 2, 1, 1), dtype=np.int64), np.zeros((1, 1)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["float64", "float32", "float16", "bfloat16"]), st.integers(1, 16), st.integers(0, 10 ** 6))
def test_per_weight_float_semantics_stay_close_to_a_plain_float_forward(dtype, N, seed):
    model = random_layer(FloatFormat(dtype), vocab=5, positions=N, heads=2, width=3, dim=6, seed=seed,
                         division="per-weight")
    tokens = np.random.default_rng(seed).integers(0, 5, size=(8, N))
    ref, plain = model.forward(tokens), model.float_forward(tokens)
    assert np.all(np.abs(ref - plain) <= FLOAT_TOLERANCE[dtype] * (1 + np.abs(plain)))


def test_division_spec_key_save_and_load(tmp_path):
    model = make_model("attention:heads=2,width=2,dim=3,precision=10,division=per-weight", vocab_size=4, seq_len=6)
    assert model.division == "per-weight" and "division=per-weight" in model.spec
    assert make_model("attention:precision=10", vocab_size=4, seq_len=6).division == "once"
    model.save(tmp_path / "pw.npz")
    assert AttentionLayer.load(tmp_path / "pw.npz").division == "per-weight"
    assert make_model(f"attention:weights={tmp_path / 'pw.npz'},division=once").division == "once"
    with pytest.raises(InputError, match="division"):
        make_model("attention:division=twice", vocab_size=4, seq_len=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["float64", "float32", "float16", "bfloat16"]), st.integers(1, 24), st.integers(1, 3),
       st.integers(1, 4), st.integers(0, 10 ** 6))
def test_float_semantics_stay_close_to_a_plain_float_forward(dtype, N, heads, width, seed):
    model = random_layer(FloatFormat(dtype), vocab=5, positions=N, heads=heads, width=width, dim=6, seed=seed)
    tokens = np.random.default_rng(seed).integers(0, 5, size=(8, N))
    ref, plain = model.forward(tokens), model.float_forward(tokens)
    assert np.all(np.abs(ref - plain) <= FLOAT_TOLERANCE[dtype] * (1 + np.abs(plain)))


def test_float64_layer_matches_plain_forward_closely():
    model = random_layer(FloatFormat("float64"), vocab=4, positions=30, heads=3, width=4, dim=8, seed=1)
    tokens = np.random.default_rng(1).integers(0, 4, size=(20, 30))
    assert np.allclose(model.forward(tokens), model.float_forward(tokens), rtol=1e-12, atol=1e-12)


def test_labels_break_ties_to_the_lowest_class_and_single_outputs_threshold():
    model = random_layer(FixedPoint.with_bits(8), vocab=2, positions=3, classes=3, seed=0)
    assert model.labels(np.array([[3, 3, 1], [0, 5, 5]])).tolist() == [0, 1]
    one = random_layer(FixedPoint.with_bits(8), vocab=2, positions=3, classes=1, seed=0)   # one logit: its sign
    assert one.decision.rule == "sign" and one.labels(np.array([[0], [1], [-2]])).tolist() == [0, 1, 0]


def test_callable_embeddings_and_psi_equal_their_tables():
    fmt = FixedPoint.with_bits(10)
    base = random_layer(fmt, vocab=4, positions=6, heads=2, width=2, dim=3, seed=5)
    val = base.arithmetic.to_values
    tok, pos = val(base.token_table), val(base.position_table)
    (W, b), = base.psi_layers
    Wv, bv = val(W), val(b)
    fn = AttentionLayer(fmt, lambda t: tok[t], lambda i: pos[i], val(base.W_Q), val(base.W_K), val(base.W_V),
                        val(base.W_O), lambda y: y @ Wv.T + bv)
    tokens = np.random.default_rng(0).integers(0, 4, size=(9, 6))
    # grid values at 10 bits: the float64 products and sums of the callable psi are exact, so it
    # rounds to the same codes as the exact MLP layer
    assert np.array_equal(base.forward_rep(tokens), fn.forward_rep(tokens))
    with pytest.raises(InputError):
        fn.save("/tmp/never.npz")


def test_save_and_load_round_trip(tmp_path):
    model = random_layer(FixedPoint.with_bits(12, 5), vocab=5, positions=8, heads=2, width=3, dim=4, classes=3,
                         seed=9, query=-2, attend_self=False)
    path = tmp_path / "layer.npz"
    model.save(path)
    again = AttentionLayer.load(path)
    tokens = np.random.default_rng(2).integers(0, 5, size=(10, 8))
    assert again.format == model.format and again.query == -2 and not again.attend_self
    assert np.array_equal(model.forward_rep(tokens), again.forward_rep(tokens))
    spec = make_model(f"attention:weights={path}", vocab_size=5, seq_len=8)
    assert np.array_equal(spec.forward_rep(tokens), model.forward_rep(tokens))
    requant = make_model(f"attention:weights={path},precision=8,frac=3", vocab_size=5, seq_len=8)
    assert requant.format == FixedPoint(8, 3)
    with pytest.raises(InputError, match="heads=3 but the weights have 2"):
        make_model(f"attention:weights={path},heads=3")
    with pytest.raises(InputError, match="cannot read"):
        make_model(f"attention:weights={tmp_path / 'missing.npz'}")


def test_spec_factory_defaults_to_the_task_and_refuses_unknown_keys():
    model = make_model("attention:heads=2,width=3,dim=5,precision=10,frac=4,seed=1", vocab_size=7, seq_len=11)
    assert (model.heads, model.width, model.dim, model.vocab_size, model.max_positions) == (2, 3, 5, 7, 11)
    assert model.format == FixedPoint(10, 4)
    assert make_model("attention:dtype=bfloat16", vocab_size=3, seq_len=4).format == FloatFormat("bfloat16")
    with pytest.raises(InputError, match="unknown key"):
        make_model("attention:heads=2,colour=blue", vocab_size=3, seq_len=4)
    with pytest.raises(InputError, match="unknown attention construction"):
        make_model("attention:wizard:heads=1", vocab_size=3, seq_len=4)
    with pytest.raises(InputError):
        make_model("attention:heads=0", vocab_size=3, seq_len=4)
    with pytest.raises(InputError, match="fixed by the probe"):
        make_model("attention:probe:at=0,accept=0,heads=2", vocab_size=4, seq_len=4)


def test_query_position_and_inputs_are_checked():
    model = random_layer(FixedPoint.with_bits(8), vocab=3, positions=6, query=2, seed=0)
    tokens = np.random.default_rng(0).integers(0, 3, size=(4, 6))
    assert np.array_equal(model.forward_rep(tokens), model.forward_rep(tokens, 2))
    moved = tokens.copy()
    moved[:, 5] = (moved[:, 5] + 1) % 3   # the query attends to position 5 but reads its query at 2
    assert np.array_equal(model.query_vectors(tokens[:, 2], 2), model.query_vectors(moved[:, 2], 2))
    with pytest.raises(InputError, match="position embeddings for 6"):
        model.forward_rep(np.zeros((1, 7), dtype=int))
    with pytest.raises(InputError, match="outside the model's vocabulary"):
        model.forward_rep(np.full((1, 6), 3))


def test_probe_layer_accepts_every_dyck_member_and_reads_the_first_symbol():
    N = 10
    model = probe_layer(N, 4, at=[0], accepted=[0, 2])
    members = DyckLanguage().members(N)
    assert model.decide(members).all()
    strings = np.random.default_rng(0).integers(0, 4, size=(500, N))
    assert np.array_equal(model.decide(strings), np.isin(strings[:, 0], [0, 2]).astype(int))


@pytest.mark.parametrize("rule", ["all", "any", "differ"])
def test_probe_rules(rule):
    model = probe_layer(6, 3, at=[1, 4], accepted=[2], rule=rule)
    tokens = np.random.default_rng(1).integers(0, 3, size=(300, 6))
    acc = (tokens[:, [1, 4]] == 2)
    want = {"all": acc.all(axis=1), "any": acc.any(axis=1), "differ": acc.any(axis=1) & ~acc.all(axis=1)}[rule]
    assert np.array_equal(model.decide(tokens), want.astype(int))


# ---- the precision keys on the command line: the same for every model kind --------------------------------
def _run_cli(capsys, spec: str) -> tuple[int, dict | None, str]:
    """``commsim run index-idxl --model SPEC --n 4 --json`` through the console script's main."""
    from commsim.cli import main
    try:
        main(["run", "index-idxl", "--model", spec, "--n", "4", "--json"])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


@pytest.mark.parametrize("kind", ["attention", "elman"])
def test_frac_is_accepted_like_precision_by_every_kind(kind, capsys, tmp_path):
    """``precision=8,frac=3`` is 8-bit fixed point with 3 fraction bits for the attention layer as for a
    recurrent model: random weights or weights from a file, in-process and on the command line."""
    from protocols.models.trainable import random_model
    context = load_plugins().get("reduction", "index-idxl").model_context(4)
    spec = f"{kind}:seed=1,frac=3,precision=8"
    assert make_model(spec, **context).format == FixedPoint(8, 3)
    code, report, err = _run_cli(capsys, spec)
    assert code == 0, err
    assert report["model"] == spec and report["protocol_matches_model"]
    path = tmp_path / "weights.npz"
    if kind == "attention":
        random_layer(FixedPoint(16, 8), vocab=context["vocab_size"], positions=context["seq_len"]).save(path)
    else:
        random_model("elman", 3, "16", vocab=context["vocab_size"]).save(str(path))
    loaded = f"{kind}:weights={path},precision=8,frac=3"
    assert make_model(loaded, **context).format == FixedPoint(8, 3)  # the stored weights re-rounded
    code, report, err = _run_cli(capsys, loaded)
    assert code == 0, err
    assert report["protocol_matches_model"]
    code, _, err = _run_cli(capsys, f"{kind}:weights={path},frac=3")  # frac alone: the same clear refusal
    assert code == 2 and "frac= needs precision=" in err and "unknown key" not in err


def test_division_spec_key_passes_through_the_torch_adapters():
    """division=per-weight on an adapted torch model (hf-gpt2) sets the attention layer's division; the
    exchange stays exact under it, and a recurrent model refuses the key."""
    pytest.importorskip("transformers")
    from commsim.runs.run import run_reduction
    once = make_model("hf-gpt2:dim=8,heads=2,seed=0,precision=10", vocab_size=4, seq_len=6)
    per = make_model("hf-gpt2:dim=8,heads=2,seed=0,precision=10,division=per-weight", vocab_size=4, seq_len=6)
    assert (once.division, per.division) == ("once", "per-weight")
    tokens = np.random.default_rng(0).integers(0, 4, size=(30, 6))
    once.division = "per-weight"                  # the key does exactly this to the adapted layer
    assert np.array_equal(once.forward(tokens), per.forward(tokens))
    report = run_reduction("eq-ineq", "hf-gpt2:dim=8,heads=2,seed=0,division=per-weight", 3, certify=False)
    assert report.protocol_matches_model and report.details["division"] == "per-weight"
    with pytest.raises(InputError, match="division"):
        make_model("torch:/nonexistent.pt,division=sometimes")
