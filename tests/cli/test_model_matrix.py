"""``commsim matrix --model SPEC --reduction R --n N`` (issue 25 item 6): the communication matrix of a model's own
function under the reduction's partition, at any depth, checked against an independent computation."""
from __future__ import annotations

import json

import numpy as np
import pytest

import commsim
from commsim.cli import main as cli_main
from commsim.runs.model_function import model_answers
from commsim.plugins import load_plugins, make_model
from commsim.theory.model_matrix import WHAT_IT_BOUNDS, analyze_model_matrix

#: (reduction, model, n): a two-layer transformer no simulator wraps, a one-layer attention construction, a
#: recurrent memory and a narrow selective SSM
CASES = [("eq-ineq", "construct:eq2", 3), ("index-idxl", "construct:idxl", 4),
         ("index-idxl", "memorize:capacity=3", 4), ("index-idxl", "mamba:d_model=2,d_state=1,precision=4,seed=3", 4)]


def invoke(args, capsys):
    try:
        cli_main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if exc.code is not None else 0
    out, err = capsys.readouterr()
    return code, out, err


def independent_matrix(reduction_id: str, spec: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The model's and the task's matrices one instance at a time: the reduction's encoding of (x, y), the model's
    forward (the simulator's direct_labels, or the model's own forward when none wraps it), decoded."""
    reduction = load_plugins().get("reduction", reduction_id)
    problem = reduction.problem(n)
    A, B = problem.alice_inputs(), problem.bob_inputs()
    try:
        setup = commsim.prepare(reduction_id, spec, n)
        decide = lambda a, b: setup.direct_answers(a[None], np.asarray(b)[None])[0]  # noqa: E731
    except commsim.NotApplicable:
        model = make_model(spec, **reduction.model_context(n))
        decide = lambda a, b: reduction.decode(  # noqa: E731
            np.asarray(model.forward(reduction.encode(problem, a[None], np.asarray(b)[None]).tokens))[:, None],
            np.asarray(b)[None])[0]
    model_m = np.array([[decide(a, b) for b in B] for a in A], dtype=np.int64)
    task_m = np.array([[problem.evaluate(a, b) for b in B] for a in A], dtype=np.int64)
    return model_m, task_m


def gf2_rank(M: np.ndarray) -> int:
    """Gaussian elimination over GF(2) on Python integers (one per row)."""
    rows = [int("".join(map(str, r)), 2) for r in M.astype(int)]
    rank = 0
    for bit in reversed(range(M.shape[1])):
        pivot = next((i for i in range(rank, len(rows)) if rows[i] >> bit & 1), None)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        rows = [r ^ rows[rank] if i != rank and r >> bit & 1 else r for i, r in enumerate(rows)]
        rank += 1
    return rank


def real_rank(M: np.ndarray) -> int:
    scipy_linalg = pytest.importorskip("scipy.linalg")
    if not M.any():
        return 0
    s = scipy_linalg.svdvals(M.astype(float))
    return int((s > s.max() * max(M.shape) * np.finfo(float).eps).sum())


@pytest.mark.parametrize("reduction, spec, n", CASES)
def test_model_matrix_agrees_with_an_independent_rank_computation(reduction, spec, n, capsys):
    model_m, task_m = independent_matrix(reduction, spec, n)
    code, out, err = invoke(["matrix", "--model", spec, "--reduction", reduction, "--n", str(n), "--json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    own, task = d["model_function"], d["task"]
    assert (own["rows"], own["cols"], own["ones"]) == (*model_m.shape, int(model_m.sum()))
    assert own["rank_real"] == real_rank(model_m) and own["rank_gf2"] == gf2_rank(model_m)
    assert task["rank_real"] == real_rank(task_m) and task["rank_gf2"] == gf2_rank(task_m)
    assert d["disagreements"] == int((model_m != task_m).sum()) and d["bounds"] == WHAT_IT_BOUNDS
    assert own["distinct_rows"] == len({tuple(r) for r in model_m})
    # the fooling set: re-checked cell by cell (Definition 1 of [BHBK24])
    problem, answers, _ = model_answers(reduction, spec, n)
    report = analyze_model_matrix(problem, answers, reduction=reduction, model=spec, evaluated_by="")
    fs = report.model_matrix.fooling
    assert fs.verified and fs.size == own["fooling_search"]["size"]
    cells = list(zip(fs.rows.tolist(), fs.cols.tolist()))
    assert all(model_m[r, c] == fs.value for r, c in cells)
    assert all(model_m[r1, c2] != fs.value or model_m[r2, c1] != fs.value
               for i, (r1, c1) in enumerate(cells) for (r2, c2) in cells[i + 1:])
    assert own["two_way_lower_bound_bits"] >= max(int(np.ceil(np.log2(max(fs.size, 1)))), 0)


def test_a_two_layer_transformer_gets_its_function_s_full_rank_not_a_refusal(capsys):
    # run refuses it (Lemma 5); its function on eq-ineq is INEQ: full rank 2^n, a fooling set of 2^n
    code, _, err = invoke(["run", "eq-ineq", "--model", "construct:eq2", "--n", "3"], capsys)
    assert code == 2 and "two-layer" in err
    code, out, err = invoke(["matrix", "--model", "construct:eq2", "--reduction", "eq-ineq", "--n", "3"], capsys)
    assert code == 0, err
    assert "own forward (no simulator wraps it)" in out.replace("\n", " ")
    assert "not its size" in out.replace("\n", " ")
    d = json.loads(invoke(["matrix", "--model", "construct:eq2", "--reduction", "eq-ineq", "--n", "3", "--json"],
                          capsys)[1])
    assert d["model_function"]["rank_real"] == 8 and d["model_function"]["fooling_search"]["size"] == 8
    assert d["model_function_lower_bound_bits"] == 3 and d["disagreements"] == 0


@pytest.mark.parametrize("args, where", [
    (["matrix", "--model", "lstm", "--n", "3"], "--reduction"),
    (["matrix", "--reduction", "index-idxl", "--n", "3"], "--model"),
    (["matrix", "--n", "3"], "give a problem"),
    (["matrix", "disj", "--model", "lstm", "--reduction", "index-idxl", "--n", "3"], "reduces index"),
    (["matrix", "--model", "lstm", "--reduction", "index-idxl", "--n", "20"], "at most 65536"),
    (["matrix", "--model", "lstm", "--reduction", "index-idxl", "--n", "99999999999"], "--n"),
    (["matrix", "--model", "lstm", "--reduction", "nope", "--n", "3"], "unknown reduction"),
    (["matrix", "--model", "lstm", "--reduction", "index-idxl", "--n", "3", "--html", "x.html"], "--html"),
    # a construction on another task's encoding, or sized for another n: refused (was an internal ValueError)
    (["matrix", "--model", "construct:eq2", "--reduction", "dyck22-fooling", "--n", "4"],
     "--model: construct:eq2 reads the eq-ineq encoding"),
    (["matrix", "--model", "construct:idxl", "--reduction", "eq-ineq", "--n", "3"],
     "--model: construct:idxl reads the index-idxl encoding"),
    (["matrix", "--model", "construct:eq2:n=4", "--reduction", "eq-ineq", "--n", "3"],
     "--model: construct:eq2:n=4 reads sequences of length 8; eq-ineq at n = 3 encodes sequences of length 6"),
])
def test_model_matrix_errors_exit_2_with_one_line(args, where, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = invoke(args, capsys)
    assert code == 2 and where in err and len(err.strip().splitlines()) == 1, err
