"""The papers' constructions (REFERENCE section 7): each verified exactly on every input of small
sizes, its sizes checked against their formulas, and the two-layer model refused by the protocols."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commsim.core.errors import InputError, NotApplicable
from commsim.core.precision import FixedPoint
from commsim.runs.run import run_reduction
from commsim.plugins import load_plugins, make_model
from commsim.theory.dyck import DyckLanguage
from protocols.constructions import orthogonal as orth
from protocols.constructions.eq2 import NO_PROTOCOL_REASON, TwoLayerEquality, build_eq2
from protocols.constructions.idxl import build_idxl, eta_for
from protocols.constructions.lookup import build_lookup
from protocols.constructions.match2 import (
    build_match2,
    match2,
    match2_outputs,
    match2_scale,
)
from protocols.models.attention import AttentionLayer
from protocols.simulators.attention import ATTENTION_EXCHANGE

DYCK = DyckLanguage(2, 2)


def bit_strings(n: int) -> np.ndarray:
    return np.array(list(itertools.product([0, 1], repeat=n)), dtype=np.int64).reshape(-1, n)


# ---- nearly orthogonal vectors (Lemma 2) ------------------------------------------------------------
def test_theorem_k_is_lemma_2():
    assert orth.theorem_k(256) == math.ceil(8 * math.log(512) * 16)
    assert orth.theorem_k(2 ** 16, 0.5) == math.ceil(8 * math.log(2 ** 17) * 4)


@pytest.mark.parametrize("k", [1, 4, 7, 12])
def test_pair_violation_probability_by_enumeration(k):
    t = orth._threshold(k, 0.25)
    bad = sum(1 for s in itertools.product([-1, 1], repeat=k) if abs(sum(s)) > t)  # <s, t> ~ sum of k signs
    assert orth.pair_violation_probability(k, 0.25) == pytest.approx(bad / 2 ** k, abs=1e-15)


def test_gram_checks_agree_with_integer_gram(monkeypatch):
    monkeypatch.setattr(orth, "_TILE_ROWS", 16)     # exercise many tiles and the diagonal tiles
    monkeypatch.setattr(orth, "_TILE_COLS", 40)
    rng = np.random.default_rng(3)
    signs = rng.choice(np.array([-1, 1], dtype=np.int8), size=(150, 24))
    G = signs.astype(np.int64) @ signs.T.astype(np.int64)
    off = G - np.diag(np.diag(G))
    assert orth.max_abs_inner(signs) == np.abs(off).max()
    thr = 8
    want = {(i, j) for i, j in zip(*np.nonzero(np.abs(off) > thr)) if i < j}
    got = {tuple(p) for p in orth.gram_violations(signs.astype(np.float32), thr).tolist()}
    assert got == want
    rows = np.array([3, 77, 149])
    want_rows = {(i, j) for (i, j) in want if i in rows or j in rows}
    got_rows = {tuple(p) for p in orth.gram_violations(signs.astype(np.float32), thr, rows=rows).tolist()}
    assert got_rows == want_rows


@pytest.mark.parametrize("n,gamma", [(2, 0.25), (64, 0.25), (300, 0.25), (300, 0.5)])
def test_search_is_verified_exactly(n, gamma):
    found = orth.find(n, gamma, 0)
    s = found.signs.astype(np.int64)
    assert s.shape == (n, found.k) and set(np.unique(s)) <= {-1, 1}
    G = s @ s.T
    assert (np.diag(G) == found.k).all()                       # <T(i), T(i)> = 1
    off = np.abs(G - np.diag(np.diag(G))).max() if n > 1 else 0
    assert off == found.max_abs_inner_int <= math.floor(gamma * found.k)
    assert found.verify()
    T = found.vectors()
    assert np.allclose(np.abs(T), 1 / math.sqrt(found.k))
    assert found.k < orth.theorem_k(n, gamma)


def test_smallest_k_walks_down_and_beats_the_theorem():
    result = orth.smallest_k(256)
    d = result.to_dict()
    assert d["k_found"] == result.best.k <= orth.start_k(256)
    assert result.best.verify()
    assert d["k_found"] < orth.lll_k(256) < d["k_theorem"]
    assert d["ratio_to_theorem"] < 0.3
    assert [a["k"] for a in d["attempts"]][0] == orth.start_k(256)


def test_search_gives_up_when_k_is_hopeless():
    assert orth.search(500, 8, 0.25, 0) is None


# ---- index lookup (Theorem 1) ---------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_idxl_correct_on_every_input(n):
    model = build_idxl(n)
    A = bit_strings(n)
    for b in range(n):
        tokens = np.concatenate([A, np.full((len(A), 1), b + 2)], axis=1)
        assert np.array_equal(model.decide(tokens), A[:, b])


def test_idxl_sizes_match_the_formulas():
    for n in (4, 64, 1024):
        model = build_idxl(n)
        info, k = model.info, model.info["k"]
        assert isinstance(model, AttentionLayer) and model.heads == 1
        assert model.width == k and model.dim == 1 + 2 * k           # d = r + 2k, r = 1 for two symbols
        assert info["eta"] >= eta_for(n) == 2 * math.log(3 * (n + 1))
        assert info["eta"] == info["scale_c"] * k <= model.format.max_value
        assert info["exact_by_analysis"] and info["width_bits"] == k * model.precision
        assert info["parameter_count"] == (n + 2) * model.dim + (n + 1) * model.dim + 3 * k * model.dim + k + \
            sum(W.size + b.size for W, b in model.psi_layers)
        assert info["parameter_bits"] == info["parameter_count"] * model.precision
        assert k < info["k_theorem"]
    # the width grows like log N, the precision barely at all
    assert build_idxl(1024).width < 3 * build_idxl(8).width
    assert build_idxl(1024).precision <= 16


def test_idxl_more_symbols_and_other_gammas():
    n = 6
    rng = np.random.default_rng(0)
    for symbols, gamma in ((5, 0.25), (2, 0.5), (3, 0.9)):
        model = build_idxl(n, symbols=symbols, gamma=gamma)
        S = rng.integers(0, symbols, size=(400, n))
        p = rng.integers(0, n, size=400)
        tokens = np.concatenate([S, (p + symbols)[:, None]], axis=1)
        assert np.array_equal(model.decide(tokens), S[np.arange(400), p])


def test_idxl_through_the_reduction_exhaustive():
    report = run_reduction("index-idxl", "construct:idxl", 6, instances=None)
    assert report.model_correct and report.protocol_matches_model
    assert report.instances_run == 6 * 2 ** 6
    assert report.protocol == "attention-exchange"
    # only Bob (the index and query holder) speaks: INDEX one-way from Bob needs ceil(log2 n) bits
    assert report.bits_by_direction["alice_to_bob"] == 0
    assert report.lower_bound.applies and report.lower_bound.bits == 3 and report.budget_ok


def test_idxl_contract_sampled():
    d = run_reduction("index-idxl", "construct:idxl", 256, instances=300, seed=1).to_dict()
    assert d["model_correct"] is True and d["protocol_matches_model"] is True
    assert d["seq_len"] == 257


@pytest.mark.slow
def test_idxl_contract_full():
    d = run_reduction("index-idxl", "construct:idxl", 256, instances=2000).to_dict()
    assert d["model_correct"] is True and d["protocol_matches_model"] is True


@pytest.mark.slow
@pytest.mark.parametrize("n", [512, 4096])
def test_idxl_sampled_up_to_4096(n):
    model = build_idxl(n)
    rng = np.random.default_rng(n)
    A = rng.integers(0, 2, size=(300, n))
    b = rng.integers(0, n, size=300)
    tokens = np.concatenate([A, (b + 2)[:, None]], axis=1)
    assert np.array_equal(model.decide(tokens), A[np.arange(300), b])


def test_idxl_spec_errors():
    with pytest.raises(InputError, match="n=N"):
        make_model("construct:idxl")
    with pytest.raises(InputError, match="fixed point"):
        make_model("construct:idxl:n=4,dtype=float32")
    with pytest.raises(InputError, match="gamma"):
        make_model("construct:idxl:n=4,gamma=1.5")
    with pytest.raises(InputError, match="unknown key"):
        make_model("construct:idxl:n=4,heads=2")


@pytest.mark.parametrize("kind", ["construct:idxl:n=4", "construct:match2:modulus=7,length=5",
                                  "construct:eq2:n=2", "construct:lookup:length=4"])
def test_constructions_read_the_precision_keys_like_every_model(kind):
    """No format key: the construction's own (narrowest exact) format; precision=P[,frac=F]: that fixed
    point; frac= alone: refused for want of precision=, as for every model kind (one parser, ModelSpec)."""
    default = make_model(kind).format
    assert isinstance(default, FixedPoint)
    assert make_model(f"{kind},precision=20,frac=9").format == FixedPoint(20, 9)
    assert make_model(f"{kind},precision=20").format == FixedPoint(20, 10)
    with pytest.raises(InputError, match="frac= needs precision="):
        make_model(f"{kind},frac=3")


# ---- Match2 ([SHT23]) ------------------------------------------------------------------------------------
def test_match2_reference_function():
    Z = np.array([[1, 2, 3], [2, 2, 0], [1, 1, 1]])
    M = 4
    want = [[int(any((a + b) % M == 0 for b in row)) for a in row] for row in Z.tolist()]
    assert match2(Z, M).tolist() == want


@pytest.mark.parametrize("N,M", [(1, 2), (2, 5), (3, 4), (3, 6), (4, 5), (2, 16)])
def test_match2_correct_on_every_input(N, M):
    model = build_match2(N, M)
    Z = np.array(list(itertools.product(range(M), repeat=N)))
    assert np.array_equal(match2_outputs(model, Z), match2(Z, M))


@pytest.mark.parametrize("N,M", [(8, 16), (16, 33), (24, 64)])
def test_match2_random_inputs(N, M):
    model = build_match2(N, M)
    rng = np.random.default_rng(N * M)
    Z = rng.integers(0, M, size=(150, N))
    Z[::2, -1] = (-Z[::2, 0]) % M                               # plant matches in half the rows
    assert np.array_equal(match2_outputs(model, Z), match2(Z, M))


def test_match2_sizes():
    model = build_match2(10, 32)
    assert model.width == 3 and model.heads == 1 and model.dim == 5
    assert model.info["scale_c"] == match2_scale(10, 32) == math.ceil(32 ** 2 * math.log(60))
    assert model.info["exact_by_analysis"]
    assert isinstance(make_model("construct:match2:modulus=7,length=5"), AttentionLayer)


# ---- equality in two layers (Theorem 6) -------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 4, 6])
def test_eq2_correct_on_every_input(n):
    model = build_eq2(n)
    X = bit_strings(2 * n)
    ineq = (X[:, :n] != X[:, n:]).any(axis=1).astype(int)
    assert np.array_equal(model.forward(X), ineq)


def test_eq2_sizes_and_hard_attention():
    for n in (2, 16, 128):
        model = build_eq2(n)
        k = model.info["k"]
        assert model.num_layers == 2 and model.embedding_dim == 2 * k + 5 and model.width == k + 1
        assert model.format.frac == math.ceil(math.log2(2 * n)) + 1 and model.info["exact_by_analysis"]
    t = build_eq2(4).trace([1, 0, 1, 1, 1, 0, 0, 1])
    assert t["layer1_target"] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert t["layer1_target_weight"] == [1.0] * 8 and t["layer1_other_weight_max"] == 0.0   # hard attention
    assert t["xor"] == [0, 0, 0, 0, 0, 0, 1, 0] and t["ineq"] == 1


def test_eq2_fails_when_one_over_n_rounds_to_zero():
    model = build_eq2(8, fmt=FixedPoint(10, 3))                 # 1/16 is below the grid 1/8
    X = np.zeros((2, 16), dtype=np.int64)
    X[1, 0] = 1                                                 # halves differ
    assert model.forward(X).tolist() == [0, 0]


def test_eq2_refused_by_the_protocols():
    model = make_model("construct:eq2", **load_plugins().get("reduction", "eq-ineq").model_context(4))
    assert isinstance(model, TwoLayerEquality) and not ATTENTION_EXCHANGE.accepts(model)
    with pytest.raises(NotApplicable) as info:
        run_reduction("eq-ineq", "construct:eq2", 4)
    assert str(info.value) == NO_PROTOCOL_REASON
    assert "Lemma 5" in NO_PROTOCOL_REASON and "N/2" in NO_PROTOCOL_REASON


def test_eq2_cli_refusal(capsys):
    from commsim.cli import main
    with pytest.raises(SystemExit) as exc:
        main(["run", "eq-ineq", "--model", "construct:eq2", "--n", "4"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "two-layer" in err and "Lemma 5" in err and len(err.strip().splitlines()) == 1


# ---- whole-string lookup (Dyck-(2,2) by default) -------------------------------------------------------------
@pytest.mark.parametrize("N", [1, 2, 4, 6, 8])
def test_lookup_correct_on_every_string(N):
    model = build_lookup(N)
    S = np.array(list(itertools.product(range(4), repeat=N)), dtype=np.uint8)
    assert np.array_equal(model.decide(S), DYCK.is_member(S))
    assert model.width == N + 4 and model.info["width"] == N + 4


def test_lookup_other_language():
    model = build_lookup(6, "dyck13")
    S = np.array(list(itertools.product(range(2), repeat=6)), dtype=np.uint8)
    assert np.array_equal(model.decide(S), DyckLanguage(1, 3).is_member(S))


def test_lookup_through_the_fooling_set():
    N = 10
    report = run_reduction("dyck22-fooling", "construct:lookup", N, instances=None)
    assert report.protocol == "attention-exchange"
    assert report.model_correct and report.protocol_matches_model
    assert report.instances_run == 2 ** (N - 1)
    assert report.bits_used >= N - 1 and report.budget_ok and report.certificate is None


def test_lookup_low_precision_fails_with_a_certificate():
    report = run_reduction("dyck22-fooling", "construct:lookup:precision=6,frac=3", 10, instances=None)
    assert not report.model_correct and report.protocol_matches_model
    assert report.certificate is not None and report.certificate.verified


def test_lookup_reduced_width_is_a_bag_of_letters():
    model = build_lookup(8, width=4)
    assert model.width == 4 and model.info["reduced"]
    S = DYCK.encode("()[]()[]")[None]
    assert model.decide(S).tolist() == [1]
    assert model.decide(DYCK.encode(")([]()[]")[None]).tolist() == [1]   # a non-member it accepts


@pytest.mark.slow
def test_lookup_reduced_width_rectangle_certificate():
    report = run_reduction("dyck22-fooling", "construct:lookup:width=1,precision=2,frac=0", 20, instances=300)
    assert report.bits_used < 19 and report.budget_ok is False
    assert report.certificate is not None and report.certificate.kind == "rectangle" and report.certificate.verified


# ---- registration --------------------------------------------------------------------------------------------
def test_registered():
    reg = load_plugins()
    for kind in ("construct:idxl", "construct:match2", "construct:eq2", "construct:lookup"):
        assert kind in reg.names("model")
    assert {"idxl", "dyck22", "eq"} <= set(reg.names("separation"))


# ---- the multi-layer model's arithmetic is the attention module's ------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(st.integers(4, 16), st.integers(0, 6), st.integers(1, 9), st.integers(1, 4), st.integers(1, 3),
       st.integers(0, 2 ** 16))
def test_one_layer_multilayer_matches_attention_layer(bits, frac, L, m, extra, seed):
    """The multi-layer model and the one-layer AttentionLayer run one attention kernel: with the same
    weights (the output landing in the last m coordinates), the same codes, for random formats and sizes."""
    from protocols.models.transformer import Layer, MultiLayerAttention
    fmt = FixedPoint(bits, min(frac, bits - 2))          # W_O = I: 1 must be on the grid
    rng = np.random.default_rng(seed)
    V, d = 5, m + extra
    q = fmt.quantize
    tok, pos = q(rng.normal(size=(V, d))), q(rng.normal(scale=0.5, size=(L, d)))
    tok[:, -m:] = pos[:, -m:] = 0.0                      # the output lands in the last m coordinates
    W_Q, W_K, W_V = (q(rng.normal(scale=0.8, size=(m, d))) for _ in range(3))
    W_Q[:, -m:] = W_K[:, -m:] = W_V[:, -m:] = 0.0
    ref = AttentionLayer(fmt, tok, pos, W_Q[None], W_K[None], W_V[None], np.eye(m), None)
    W_O = np.zeros((m, d))
    W_O[:, -m:] = np.eye(m)
    ours = MultiLayerAttention(tok, pos, [Layer(W_Q.T, W_K.T, W_V.T, W_O)], fmt, lambda h: h[:, 0])
    tokens = rng.integers(0, V, size=(60, L))
    assert np.array_equal(ours.hidden(tokens)[:, -m:], ref.forward(tokens))