"""Issue 13: huge sizes, huge model keys, huge --instances and negative seeds are refused at once.

Each invocation must exit 2 with one short line naming the flag and its limit (``{"error": ...}`` under
--json), quickly and under a 2 GiB address-space limit: sizes are checked before anything is allocated,
through :mod:`commsim.core.limits`.  Sizes that are fine lazily (a formula, a constant-size automaton)
stay accepted.

All invocations run in one worker subprocess (``fuzz_worker.py``, shared with the fuzz test: limits set
with ``resource.setrlimit``, one ``signal.alarm`` per invocation), each in-process through
``commsim.cli.main``; the parametrized tests read its answers.
"""
from __future__ import annotations

import json

import pytest
from fuzz_worker import Worker

BIG = "1" + "0" * 30                                 # 10^30

RUN = ["run", "index-idxl", "--n", "8"]
REDUCTIONS = ["index-idxl", "index-assoc", "index-qsa", "eq-ineq", "disj-mqar", "disj-match3", "disj-qsa",
              "dyck22-fooling"]
BUDGET = ["budget", "--arch", "rnn", "--width", "4", "--precision", "8", "--task", "eq-ineq"]

#: (item of the issue, argv, the flag the one line must name)
REFUSED = [
    # hangs and memory blow-ups on huge sizes
    *[("huge-size", ["matrix", p, "--n", n], "--n") for p in ("eq", "index", "disj", "dyck22")
      for n in ("1000000000", "1000000", "1" + "0" * 100)],
    *[("huge-size", ["tree", "eq", "--n", n, "--protocol", "one-way"], "--n") for n in ("1000000000", BIG)],
    ("huge-size", [*BUDGET, "--n-range", "0:8"], "--n-range"),
    ("huge-size", [*BUDGET, "--n-range", "-5:8"], "--n-range"),
    ("huge-size", [*BUDGET, "--n-range", "1:1000000000:1"], "--n-range"),
    ("huge-size", [*BUDGET, "--n-range", "8:4"], "--n-range"),
    *[("huge-size", ["run", r, "--n", "1000000000"], "--n") for r in REDUCTIONS],
    ("huge-size", ["run", "eq-ineq", "--n", BIG], "--n"),
    ("huge-size", ["cc", "index", "--n", "1000000000", "--protocol", "two-way", "--instances", "5"], "--n"),
    ("huge-size", ["cc", "index", "--n", "100", "--protocol", "two-way"], "--instances"),
    ("huge-size", ["fooling", "dyck22", "--n", "100", "--members", "1000000000"], "--members"),
    # huge model keys
    *[("model-key", [*RUN, "--model", spec], "--model") for spec in (
        "elman:vocab=1000000000", "elman:classes=1000000000", "lstm:width=4096,vocab=200000",
        "attention:heads=100000,width=1000", f"attention:heads={BIG}", "attention:positions=1000000000",
        f"memorize:capacity={BIG}", "construct:idxl:n=1000000000", "construct:lookup:length=1000000000",
        "hf-gpt2:dim=1000000,heads=1", "attention:seed=-1", f"elman:seed={BIG}", "gru:width=" + "9" * 5000)],
    # --instances 10**12
    ("instances", [*RUN, "--instances", "1000000000000"], "--instances"),
    ("instances", [*RUN, "--instances", "1000001"], "--instances"),
    ("instances", ["cc", "index", "--n", "8", "--protocol", "two-way", "--instances", "1000000000000"],
     "--instances"),
    ("instances", ["separate", "idxl", "--n", "8", "--instances", "1000000000000"], "--instances"),
    # negative seeds
    ("seed", [*RUN, "--seed", "-1"], "--seed"),
    ("seed", ["cc", "index", "--n", "8", "--protocol", "two-way", "--seed", "-1"], "--seed"),
    ("seed", ["matrix", "eq", "--n", "4", "--seed", "-1"], "--seed"),
    ("seed", ["separate", "idxl", "--n", "8", "--seed", "-1"], "--seed"),
    ("seed", [*RUN, "--seed", BIG], "--seed"),
]

#: sizes that are fine lazily: a counting formula, a constant-size automaton
ACCEPTED = [
    ["fooling", "dyck22", "--n", "100000", "--members", "0", "--json"],
    ["fooling", "eq", "--n", "100000", "--json"],
    ["automaton", "dyck22", "--n", "1000000", "--json"],
    [*BUDGET, "--n-range", "4:64", "--json"],
]


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> dict:
    """argv (as a tuple) -> the worker's answer, for every invocation plain and with --json."""
    argvs = [argv for _, argv, _ in REFUSED] + [[*argv, "--json"] for _, argv, _ in REFUSED] + ACCEPTED
    worker = Worker(tmp_path_factory.mktemp("sizes"))
    try:
        return {tuple(argv): worker.run(argv) for argv in argvs}
    finally:
        worker.close()


def _id(case) -> str:
    item, argv, _ = case
    return f"{item}:{' '.join(argv)[:70]}"


@pytest.mark.parametrize("case", REFUSED, ids=[_id(c) for c in REFUSED])
def test_refused_at_once_in_one_short_line(answers, case):
    item, argv, flag = case
    got = answers[tuple(argv)]
    assert got["code"] == 2, got
    lines = got["stderr"].strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in got["stderr"], got["stderr"][:500]
    assert flag in lines[0] and len(lines[0]) < 400, lines[0][:500]
    assert any(word in lines[0] for word in ("at most", "at least", "largest", "<=", ">=")), lines[0]


@pytest.mark.parametrize("case", REFUSED, ids=[_id(c) for c in REFUSED])
def test_refused_with_one_json_error_object(answers, case):
    _, argv, flag = case
    got = answers[(*argv, "--json")]
    assert got["code"] == 2, got
    data = json.loads(got["stdout"])                  # exactly one object
    assert flag in data["error"] and len(data["error"]) < 400


@pytest.mark.parametrize("argv", ACCEPTED, ids=[" ".join(a)[:60] for a in ACCEPTED])
def test_lazy_sizes_stay_accepted(answers, argv):
    got = answers[tuple(argv)]
    assert got["code"] == 0, got["stderr"][:500]
    json.loads(got["stdout"])
