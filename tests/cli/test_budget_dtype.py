"""``commsim budget --dtype``: the plan of a floating-point layer equals the bits ``run`` really sends for that layer
(``attention:...,dtype=float32`` and the like) at two sizes each; the number format planned for is printed; and
``--solve`` gives the paper's answer beside commsim's own protocol's."""
from __future__ import annotations

import json

import pytest
from cli_helpers import run_main

from commsim.budget.compute import budget


def invoke(args, capsys):
    """(exit status, stdout, stderr) of the command line ``args``."""
    return run_main(capsys, *args)


def as_json(args, capsys) -> dict:
    code, out, err = invoke(args + ["--json"], capsys)
    assert code == 0, err
    return json.loads(out)


#: (reduction, budget --arch and sizes, run's model spec, run --n of two sizes, the dtypes)
CASES = [
    ("dyck22-fooling", ["--arch", "attention", "--width", "4", "--heads", "2"], "attention:width=4,heads=2", (16, 32),
     ("float32", "bfloat16", "float16")),
    ("dyck22-fooling", ["--arch", "attention", "--width", "8", "--heads", "2"], "attention:width=8,heads=2", (64,),
     ("float32",)),
    ("eq-ineq", ["--arch", "attention", "--width", "2"], "attention:width=2,heads=1", (4, 8),
     ("float32", "bfloat16", "float16")),
    ("index-idxl", ["--arch", "lstm", "--width", "4"], "lstm:width=4", (8, 16), ("float32", "float16")),
]


@pytest.mark.parametrize("reduction, arch, spec, sizes, dtype",
                         [(*case[:4], dtype) for case in CASES for dtype in case[4]])
def test_budget_dtype_equals_the_bits_run_sends(reduction, arch, spec, sizes, dtype, capsys):
    for n in sizes:
        ran = as_json(["run", reduction, "--model", f"{spec},dtype={dtype}", "--n", str(n), "--instances", "4",
                       "--no-certificate"], capsys)
        planned = as_json(["budget", *arch, "--dtype", dtype, "--reduction", reduction, "--n", str(ran["seq_len"])],
                          capsys)
        assert planned["protocol_bits"] == ran["bits_used"], (n, planned["protocol_text"])
        assert planned["number_format"] == dtype and planned["precision"] == {"float32": 32}.get(dtype, 16)


def test_a_float32_layer_sends_far_more_than_fixed32_and_budget_says_which_it_plans(capsys):
    fixed = as_json(["budget", "--arch", "attention", "--width", "8", "--heads", "2", "--precision", "32",
                     "--reduction", "dyck22-fooling", "--n", "64"], capsys)
    floating = as_json(["budget", "--arch", "attention", "--width", "8", "--heads", "2", "--dtype", "float32",
                        "--reduction", "dyck22-fooling", "--n", "64"], capsys)
    assert fixed["number_format"] == "fixed32.16" and floating["protocol_bits"] > 4 * fixed["protocol_bits"]
    code, out, _ = invoke(["budget", "--arch", "attention", "--width", "8", "--heads", "2", "--precision", "32",
                           "--reduction", "dyck22-fooling", "--n", "64"], capsys)
    text = " ".join(out.replace("│", " ").split())
    assert code == 0 and "number format fixed32.16: p = 32 bits per number, 16 of them fraction bits" in text
    code, out, _ = invoke(["budget", "--arch", "attention", "--width", "8", "--heads", "2", "--dtype", "float32",
                           "--reduction", "dyck22-fooling", "--n", "64"], capsys)
    assert code == 0 and "float32: p = 32 bits per number (floating point)" in " ".join(out.replace("│", " ").split())


@pytest.mark.parametrize("args, param", [
    (["--precision", "32", "--dtype", "float32"], "--dtype"),
    (["--dtype", "float32", "--solve", "precision", "--n", "64"], "--dtype"),
    (["--dtype", "float8"], "--dtype"),
])
def test_dtype_with_precision_or_solve_precision_is_refused(args, param, capsys):
    code, _, err = invoke(["budget", "--arch", "attention", "--width", "2", "--reduction", "eq-ineq", *args], capsys)
    assert code == 2 and param in err


def test_solve_gives_the_paper_s_answer_beside_the_protocol_s(capsys):
    N, m, p = 256, 2, 8
    d = as_json(["budget", "--arch", "attention", "--width", str(m), "--precision", str(p), "--reduction",
                 "dyck22-fooling", "--solve", "heads", "--n", str(N)], capsys)
    needed = d["lower_bound_bits"]
    # the paper's: the smallest H with Theorem 4's 3m(p + ceil(log2 N))H >= the bound
    paper = next(H for H in range(1, 64) if 3 * m * (p + 8) * H >= needed)
    assert d["solve"]["paper"]["value"] == paper == 3
    assert d["solve"]["paper"]["bits_formula"] == 3 * m * (p + 8) * paper
    # commsim's: the smallest H whose protocol, as run sends it, meets the bound -- one more head than the paper's
    ours = d["solve"]["value"]
    assert ours == 4
    at = {H: budget("attention", m, p, "dyck22-fooling", heads=H, n=N).judgement.protocol_bits for H in (3, 4)}
    assert at[4] >= needed > at[3]
    code, out, _ = invoke(["budget", "--arch", "attention", "--width", str(m), "--precision", str(p), "--reduction",
                           "dyck22-fooling", "--solve", "heads", "--n", str(N)], capsys)
    text = " ".join(out.replace("│", " ").split())
    assert code == 0 and "the paper's answer 3: heads = 3 is the smallest whose paper count meets the bound" in text


def test_solve_has_no_paper_answer_where_the_papers_give_no_count(capsys):
    d = as_json(["budget", "--arch", "attention", "--width", "1", "--precision", "8", "--reduction", "disj-qsa",
                 "--solve", "heads", "--n", "64"], capsys)
    assert d["solve"]["paper"] is None and d["bits_formula"] is None
