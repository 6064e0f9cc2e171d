"""``commsim matrix --model`` at any depth: a two-layer nanoGPT-style GPT (``python:`` factory)
and two-layer Hugging Face Llamas (a vocabulary head answering tokens, a one-logit head decided by its sign) get
the matrix of their own function -- checked cell by cell against the torch module's own forward -- while ``run``
refuses them (Lemma 5); the matrix is in ``--json`` up to a bound and whole in ``--out FILE``."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from cli_helpers import run_main
from test_model_matrix import gf2_rank

from commsim.plugins import load_plugins
from commsim.theory.model_matrix import JSON_MATRIX_CELLS
from commsim.theory.problems import make_problem

torch = pytest.importorskip("torch")

NANOGPT = "python:tests/cli/nanogpt_deep.py:gpt:seed=1"


def invoke(args, capsys):
    """(exit status, stdout, stderr) of the command line ``args``."""
    return run_main(capsys, *args)


def torch_matrix(module, reduction_id: str, n: int, decide) -> np.ndarray:
    """The model's answers on every (Alice, Bob) pair, one instance at a time: the reduction's tokens through the
    torch module's own forward, its last position's outputs decided by ``decide``, decoded by the reduction."""
    reduction = load_plugins().get("reduction", reduction_id)
    problem = reduction.problem(n)
    A, B = problem.alice_inputs(), problem.bob_inputs()
    rows = []
    for a in A:
        row = []
        for b in B:
            encoded = reduction.encode(problem, a[None], np.asarray(b)[None])
            with torch.no_grad():
                out = module(torch.as_tensor(encoded.tokens, dtype=torch.long))
            out = out[0] if isinstance(out, tuple) else getattr(out, "logits", out)
            label = decide(out[0, -1].double().numpy())
            row.append(int(reduction.decode(np.array([[label]]), np.asarray(b)[None])[0]))
        rows.append(row)
    return np.array(rows, dtype=np.int64)


def check_bounds(d: dict, M: np.ndarray) -> None:
    """The report's bounds against M: real rank, GF(2) rank (the largest of the answers' indicators'), distinct
    rows, the answers counted, a verified fooling set of one of M's answers."""
    own = d["model_function"]
    assert own["rank_real"] == int(np.linalg.matrix_rank(M.astype(float)))
    binary = np.isin(M, (0, 1)).all()
    assert own["rank_gf2"] == (gf2_rank(M) if binary else max(gf2_rank((M == v).astype(int)) for v in np.unique(M)))
    assert own["distinct_rows"] == len({tuple(r) for r in M})
    assert d["model_answers"] == {str(v): int(c) for v, c in zip(*np.unique(M, return_counts=True))}
    fs = own["fooling_search"]
    assert fs["verified"] and fs["size"] >= 1 and (M == fs["value"]).any()


def test_a_two_layer_nanogpt_gets_its_function_s_matrix_and_run_refuses_it(capsys):
    from nanogpt_deep import gpt
    code, _, err = invoke(["run", "eq-ineq", "--model", NANOGPT, "--n", "3"], capsys)
    assert code == 2 and "Lemma 5" in err and "commsim matrix" in err
    code, out, err = invoke(["matrix", "--model", NANOGPT, "--reduction", "eq-ineq", "--n", "3", "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    M = torch_matrix(gpt(2, 6, seed=1), "eq-ineq", 3, lambda v: int(np.argmax(v)))
    assert 1 < int(np.linalg.matrix_rank(M.astype(float)))       # a function with structure, not a constant
    assert d["matrix"]["cells"] == M.tolist() and d["matrix"]["omitted"] is None
    assert d["matrix"]["alice_inputs"][:2] == ["000", "001"]
    check_bounds(d, M)
    assert d["disagreements"] == int((M != np.eye(8, dtype=int)).sum())
    code, out, err = invoke(["matrix", "--model", NANOGPT, "--reduction", "eq-ineq", "--n", "3"], capsys)
    assert code == 0 and "decided by its decision rule" in " ".join(out.split())


def test_a_precision_for_a_module_no_protocol_simulates_is_refused(capsys):
    code, _, err = invoke(["matrix", "--model", NANOGPT + ",precision=8", "--reduction", "eq-ineq", "--n", "3"],
                          capsys)
    assert code == 2 and "precision" in err and "own dtype" in err


@pytest.fixture(scope="module")
def llamas(tmp_path_factory):
    pytest.importorskip("transformers")
    from examples.real_models import save_tiny_llama, tiny_llama
    root = tmp_path_factory.mktemp("llamas")
    vocab = save_tiny_llama(str(root / "vocab"), layers=2, seq_len=8)
    return vocab, tiny_llama(layers=2, seq_len=8, classes=1)


def test_a_two_layer_llama_answering_tokens_gets_a_many_valued_matrix(llamas, capsys):
    from transformers import LlamaForCausalLM
    directory, _ = llamas
    code, out, err = invoke(["matrix", "--model", f"hf-llama:{directory}", "--reduction", "eq-ineq", "--n", "3",
                             "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    M = torch_matrix(LlamaForCausalLM.from_pretrained(directory).eval(), "eq-ineq", 3, lambda v: int(np.argmax(v)))
    assert d["matrix"]["cells"] == M.tolist()
    assert not np.isin(M, (0, 1)).all()             # this Llama answers vocabulary tokens: a many-valued function
    check_bounds(d, M)
    fs = d["model_function"]["fooling_search"]   # searched over every answer the model gives
    assert set(map(int, fs["best_size_by_value"])) == set(np.unique(M).tolist())
    code, out, _ = invoke(["matrix", "--model", f"hf-llama:{directory}", "--reduction", "eq-ineq", "--n", "3"], capsys)
    text = " ".join(out.split())
    assert code == 0 and "▒ = another answer" in text and "many-valued" in out.replace("\n", "")


def test_a_two_layer_llama_with_one_logit_is_decided_by_its_sign(llamas, capsys, monkeypatch, tmp_path):
    _, module = llamas
    (tmp_path / "one_logit.py").write_text(
        "from examples.real_models import tiny_llama\n"
        "def llama(seq_len):\n    return tiny_llama(layers=2, seq_len=8, classes=1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, err = invoke(["matrix", "--model", "python:one_logit:llama", "--reduction", "eq-ineq", "--n", "3",
                             "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    M = torch_matrix(module, "eq-ineq", 3, lambda v: int(v[0] > 0))
    assert d["matrix"]["cells"] == M.tolist() and np.isin(M, (0, 1)).all()
    check_bounds(d, M)


def test_the_json_matrix_is_bounded_and_out_writes_it_whole(capsys, tmp_path):
    code, out, _ = invoke(["matrix", "disj", "--n", "6", "--json"], capsys)
    d = json.loads(out)
    assert code == 0 and d["matrix"]["rows"] * d["matrix"]["cols"] == JSON_MATRIX_CELLS
    disj = make_problem("disj", 6)
    A, B = disj.alice_inputs(), disj.bob_inputs()
    assert d["matrix"]["cells"] == [[int(disj.evaluate(a, b)) for b in B] for a in A]
    target = tmp_path / "disj8.csv"
    code, out, _ = invoke(["matrix", "disj", "--n", "8", "--json", "--out", str(target)], capsys)
    d = json.loads(out)
    assert code == 0 and d["matrix"]["cells"] is None and "--out FILE" in d["matrix"]["omitted"]
    rows = list(csv.reader(target.read_text().splitlines()))
    disj8 = make_problem("disj", 8)
    A, B = disj8.alice_inputs(), disj8.bob_inputs()
    assert rows[0][1:] == ["".join(map(str, b)) for b in B] and len(rows) == len(A) + 1
    assert all(int(rows[1 + i][1 + j]) == int(disj8.evaluate(A[i], B[j])) for i in range(0, 256, 17)
               for j in range(256))
    code, _, err = invoke(["matrix", "disj", "--n", "4", "--out", str(tmp_path) + "/"], capsys)
    assert code == 2 and "--out" in err


def test_a_deep_core_whose_forward_cannot_read_tokens_is_refused_with_its_error(capsys, monkeypatch, tmp_path):
    (tmp_path / "bare_encoder.py").write_text(
        "import torch.nn as nn\n"
        "def encoder():\n"
        "    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)\n"
        "    return nn.TransformerEncoder(layer, num_layers=2).eval()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = invoke(["matrix", "--model", "python:bare_encoder:encoder", "--reduction", "eq-ineq", "--n", "2"],
                          capsys)
    assert code == 2 and "--model" in err and "own forward on token ids" in err and "internal error" not in err
