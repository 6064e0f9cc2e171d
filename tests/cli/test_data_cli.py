"""``commsim data``: the vocabulary and the exact samples (tokens, labels) of a reduction's task."""
from __future__ import annotations

import numpy as np

import commsim
from tests.cli.cli_helpers import invoke, run_main


def test_json_is_the_sample_api():
    d = invoke("data", "index-idxl", "--n", "6", "--count", "7", "--seed", "2", "--json")
    assert {"reduction", "n", "vocabulary", "tokens", "labels", "seq_len"} <= set(d)
    tokens, labels = commsim.sample("index-idxl", n=6, size=7, seed=2)
    assert d["reduction"] == "index-idxl" and d["n"] == 6 and d["seq_len"] == 7
    assert np.array_equal(np.array(d["tokens"]), tokens) and np.array_equal(np.array(d["labels"]), labels)
    assert d["vocabulary"] == ["0", "1"] + [f"#{i}" for i in range(1, 7)]


def test_table_names_the_tokens():
    out = invoke("data", "disj-mqar", "--n", "3", "--count", "2")
    assert "vocabulary: 0=0  1=1  2=v1  3=v2  4=v3" in out
    tokens, labels = commsim.sample("disj-mqar", n=3, size=2, seed=0)
    names = ["0", "1", "v1", "v2", "v3"]
    for row, label in zip(tokens, labels):
        assert " ".join(names[t] for t in row) in out and " ".join(map(str, label)) in out


def test_bad_input_is_one_line_and_exit_2(capsys):
    for args, flag in ((["--count", "100001"], "--count"), (["--count", "0"], "--count"),
                       (["--n", "0"], "--n"), (["--n", "100000000"], "--n"), (["--seed", "-1"], "--seed")):
        code, out, err = run_main(capsys, "data", "index-idxl", *args)
        assert code == 2 and out == "" and err.count("\n") == 1 and flag in err, (args, err)
    code, out, err = run_main(capsys, "data", "no-such-reduction")
    assert code == 2 and "unknown reduction" in err
